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

import (
	"bufio"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Metrics are the samples of one scrape, by "name{labels}".
type Metrics map[string]float64

func parseMetrics(r io.Reader) (Metrics, error) {
	m := Metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// Sum adds the samples of metric whose labels contain every one of labels
// (as `key="value"`).
func (m Metrics) Sum(metric string, labels ...string) float64 {
	total := 0.0
	for k, v := range m {
		name, lbls, _ := strings.Cut(k, "{")
		if name != metric {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(lbls, l) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// Quantile estimates a quantile of a histogram from the difference of two
// scrapes, interpolating linearly within a bucket.
func Quantile(after, before Metrics, metric string, q float64, labels ...string) float64 {
	return histogramOf(after, before, metric, labels...).quantile(q)
}

// LabelValues returns the values label takes in the samples of metric,
// sorted.
func (m Metrics) LabelValues(metric, label string) []string {
	seen := map[string]bool{}
	for k := range m {
		name, lbls, _ := strings.Cut(k, "{")
		if name != metric {
			continue
		}
		i := strings.Index(lbls, label+`="`)
		if i < 0 {
			continue
		}
		v := lbls[i+len(label)+2:]
		seen[v[:strings.IndexByte(v, '"')]] = true
	}
	values := make([]string, 0, len(seen))
	for v := range seen {
		values = append(values, v)
	}
	sort.Strings(values)
	return values
}

// histogram is a Prometheus histogram between two scrapes: cumulative
// counts by upper bound, ascending, the last bound +Inf.
type histogram []bucket

type bucket struct{ le, count float64 }

// histogramOf reads the buckets of metric whose labels contain every one of
// labels; several label sets (controllers) sharing a bound are added up.
func histogramOf(after, before Metrics, metric string, labels ...string) histogram {
	var buckets []bucket
	for k := range after {
		name, lbls, _ := strings.Cut(k, "{")
		if name != metric+"_bucket" {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(lbls, l) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		i := strings.Index(lbls, `le="`)
		if i < 0 {
			continue
		}
		leStr := lbls[i+4:]
		leStr = leStr[:strings.IndexByte(leStr, '"')]
		le, err := strconv.ParseFloat(leStr, 64)
		if err != nil {
			continue
		}
		buckets = append(buckets, bucket{le: le, count: after[k] - before[k]})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	merged := histogram{}
	for _, b := range buckets {
		if n := len(merged); n > 0 && merged[n-1].le == b.le {
			merged[n-1].count += b.count
			continue
		}
		merged = append(merged, b)
	}
	return merged
}

// quantile estimates the q-quantile, interpolating linearly within a
// bucket; past the last finite bound it returns that bound.
func (h histogram) quantile(q float64) float64 {
	if len(h) == 0 {
		return 0
	}
	total := h[len(h)-1].count
	if total <= 0 {
		return 0
	}
	rank := q * total
	prevLe, prevCount := 0.0, 0.0
	for _, b := range h {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return prevLe
			}
			if b.count == prevCount {
				return b.le
			}
			return prevLe + (b.le-prevLe)*(rank-prevCount)/(b.count-prevCount)
		}
		prevLe, prevCount = b.le, b.count
	}
	return prevLe
}

// countAtMost returns how many observations were at most the largest bound
// not above le.
func (h histogram) countAtMost(le float64) float64 {
	count := 0.0
	for _, b := range h {
		if b.le <= le {
			count = b.count
		}
	}
	return count
}

// lastBound returns the largest finite bound.
func (h histogram) lastBound() float64 {
	for i := len(h) - 1; i >= 0; i-- {
		if !math.IsInf(h[i].le, 1) {
			return h[i].le
		}
	}
	return 0
}

// HistogramStats summarise a histogram between two scrapes.
type HistogramStats struct {
	Count float64 `json:"count"`
	// Mean is exact (the sum over the count); P50 and P99 are interpolated
	// within their buckets.
	Mean float64 `json:"meanSeconds"`
	P50  float64 `json:"p50Seconds"`
	P99  float64 `json:"p99Seconds"`
	// Within is the share of the observations at most a bound, by bound
	// (as the le label prints it): the bounds where it grows, up to the
	// first that holds them all.
	Within map[string]float64 `json:"within,omitempty"`
}

// HistogramStatsOf summarises the histogram metric whose labels contain
// every one of labels, between two scrapes.
func HistogramStatsOf(after, before Metrics, metric string, labels ...string) HistogramStats {
	h := histogramOf(after, before, metric, labels...)
	s := HistogramStats{Count: after.Sum(metric+"_count", labels...) - before.Sum(metric+"_count", labels...)}
	if s.Count <= 0 {
		return HistogramStats{}
	}
	s.Mean = (after.Sum(metric+"_sum", labels...) - before.Sum(metric+"_sum", labels...)) / s.Count
	s.P50, s.P99 = h.quantile(0.5), h.quantile(0.99)
	s.Within = map[string]float64{}
	for _, b := range h {
		if b.count <= 0 || math.IsInf(b.le, 1) {
			continue
		}
		s.Within[strconv.FormatFloat(b.le, 'g', -1, 64)] = b.count / s.Count
		if b.count >= s.Count {
			break
		}
	}
	return s
}
