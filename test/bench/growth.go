/*
Copyright 2026 The Tollgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bench

// Line is a figure as a function of the number of Clusters, through two
// measured sizes: Base + PerCluster × Clusters.
type Line struct {
	Base       float64 `json:"base"`
	PerCluster float64 `json:"perCluster"`
}

// At returns the line's value for clusters.
func (l Line) At(clusters int) float64 { return l.Base + l.PerCluster*float64(clusters) }

// lineThrough returns the line through (x1, y1) and (x2, y2); x1 != x2.
func lineThrough(x1, y1, x2, y2 float64) Line {
	slope := (y2 - y1) / (x2 - x1)
	return Line{Base: y1 - slope*x1, PerCluster: slope}
}

// Growth says how a converged fleet's figures grow from one measured size
// to the next.
type Growth struct {
	From int `json:"from"`
	To   int `json:"to"`
	// RSS, bytes: once converged, and after a cold start.
	RSSSteady    Line `json:"rssSteadyBytes"`
	RSSColdStart Line `json:"rssAfterColdStartBytes"`
	// Heap, bytes, after a cold start.
	HeapColdStart Line `json:"heapAfterColdStartBytes"`
	// ColdStart, seconds, from the Lease held (the wait for the Lease is
	// the same at every size).
	ColdStart Line `json:"coldStartAfterLeaderSeconds"`
	// ColdStartRequests, requests.
	ColdStartRequests Line `json:"coldStartRequests"`
	// IdleRequests, requests/s.
	IdleRequests Line `json:"idleRequestsPerSecond"`
}

// GrowthOf returns the growth between each two consecutive converged
// fleets of results that have their cold start (and idle cost) measured.
func GrowthOf(results []*FleetResult) []Growth {
	var out []Growth
	for i := 1; i < len(results); i++ {
		a, b := results[i-1], results[i]
		if !a.Converged || !b.Converged || a.ColdStart == nil || b.ColdStart == nil || a.Clusters == b.Clusters {
			continue
		}
		x1, x2 := float64(a.Clusters), float64(b.Clusters)
		g := Growth{
			From: a.Clusters, To: b.Clusters,
			RSSSteady:         lineThrough(x1, a.RSSSteady, x2, b.RSSSteady),
			RSSColdStart:      lineThrough(x1, a.ColdStart.RSSAfter, x2, b.ColdStart.RSSAfter),
			HeapColdStart:     lineThrough(x1, a.ColdStart.HeapAfter, x2, b.ColdStart.HeapAfter),
			ColdStart:         lineThrough(x1, a.ColdStart.AfterLeaderSeconds, x2, b.ColdStart.AfterLeaderSeconds),
			ColdStartRequests: lineThrough(x1, float64(a.ColdStart.Requests), x2, float64(b.ColdStart.Requests)),
		}
		if a.Idle != nil && b.Idle != nil {
			g.IdleRequests = lineThrough(x1, a.Idle.RequestsPerSecond, x2, b.Idle.RequestsPerSecond)
		}
		out = append(out, g)
	}
	return out
}
