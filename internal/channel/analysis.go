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

package channel

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// DefaultAnalysisInterval is how often an analysis measures when its
// interval is unset.
const DefaultAnalysisInterval = time.Minute

// Placeholders are what the placeholders of a query stand for in one
// measurement.
type Placeholders struct {
	// Cluster and Namespace name the Cluster of a PerCluster query; empty
	// for a Stage query.
	Cluster, Namespace string
	// Stage names the stage.
	Stage string
	// Window is the time since the soak began.
	Window time.Duration
}

// Expand replaces $cluster, $namespace, $stage and $window in a query.
// $window becomes a PromQL duration in whole seconds, at least 1s, so that
// max_over_time(x[$window]) looks back over the soak.
func Expand(query string, p Placeholders) string {
	window := max(int64(p.Window/time.Second), 1)
	return strings.NewReplacer(
		"$namespace", p.Namespace,
		"$cluster", p.Cluster,
		"$stage", p.Stage,
		"$window", fmt.Sprintf("%ds", window),
	).Replace(query)
}

// ExampleExpansion expands a query as a measurement would, with example
// values: what the webhook parses.
func ExampleExpansion(query string) string {
	return Expand(query, Placeholders{Cluster: "cluster", Namespace: "namespace", Stage: "stage", Window: time.Hour})
}

// Interval is how often a stage's analysis measures.
func Interval(a *upgradev1.StageAnalysis) time.Duration {
	if a == nil || a.Interval == nil || a.Interval.Duration <= 0 {
		return DefaultAnalysisInterval
	}
	return a.Interval.Duration
}

// FailureLimit is how many measurements of a query may fail.
func FailureLimit(q *upgradev1.AnalysisQuery) int32 {
	if q.FailureLimit == nil {
		return 0
	}
	return *q.FailureLimit
}

// MeasurementDue reports whether the analysis of a version soaking in a
// stage is to be measured at now.
func MeasurementDue(rec *upgradev1.VersionStageStatus, now time.Time) bool {
	if rec.Phase != upgradev1.StageSoaking || rec.Analysis == nil || rec.Analysis.NextMeasurementTime == nil {
		return false
	}
	return !now.Before(rec.Analysis.NextMeasurementTime.Time)
}

// Tally is what one measurement round found for one query or health check:
// one measurement per Cluster (or one for a Stage query).
type Tally struct {
	// Name is the query's or the health check's.
	Name string
	// Measurements and Failures count the round's measurements.
	Measurements, Failures int32
	// LastFailure says why the last failed one failed, naming its Cluster.
	LastFailure string
}

// Round is a measurement round of a stage's analysis.
type Round struct {
	// At is when it was taken.
	At time.Time
	// Queries and HealthChecks are what it found.
	Queries, HealthChecks []Tally
}

// Record adds a round to the analysis record of a version soaking in a
// stage and schedules the next one: an interval later, but at the end of
// the soak when that comes first; none after a round at or past the end,
// which is the last.
func Record(rec *upgradev1.VersionStageStatus, round Round, interval time.Duration) {
	a := rec.Analysis
	a.Queries = addTallies(a.Queries, round.Queries)
	a.HealthChecks = addTallies(a.HealthChecks, round.HealthChecks)
	at := metav1.NewTime(round.At)
	a.LastMeasurementTime = &at
	a.NextMeasurementTime = nil
	if rec.SoakUntil == nil || !round.At.Before(rec.SoakUntil.Time) {
		return
	}
	next := round.At.Add(interval)
	if next.After(rec.SoakUntil.Time) {
		next = rec.SoakUntil.Time
	}
	t := metav1.NewTime(next)
	a.NextMeasurementTime = &t
}

func addTallies(records []upgradev1.MeasurementStatus, tallies []Tally) []upgradev1.MeasurementStatus {
	for _, t := range tallies {
		i := indexOfMeasurement(records, t.Name)
		if i < 0 {
			records = append(records, upgradev1.MeasurementStatus{Name: t.Name})
			i = len(records) - 1
		}
		r := &records[i]
		r.Measurements += t.Measurements
		r.Failures += t.Failures
		if t.Failures > 0 {
			r.LastFailure = upgradev1.Truncate(t.LastFailure, upgradev1.MaxMessageLength)
		}
	}
	return records
}

func indexOfMeasurement(records []upgradev1.MeasurementStatus, name string) int {
	for i := range records {
		if records[i].Name == name {
			return i
		}
	}
	return -1
}

// analysisVerdict judges the analysis record of a version in a stage:
// failed (and why) once a query failed more than its failureLimit or a
// health check failed at all; done once the last round, at or past the end
// of the soak, was taken.
func analysisVerdict(stage *upgradev1.ChannelStage, rec *upgradev1.VersionStageStatus) (failed bool, why string, done bool) {
	a := stage.Analysis
	if a == nil {
		return false, "", true
	}
	r := rec.Analysis
	if r == nil {
		return false, "", false
	}
	for i := range a.Queries {
		q := &a.Queries[i]
		if j := indexOfMeasurement(r.Queries, q.Name); j >= 0 && r.Queries[j].Failures > FailureLimit(q) {
			m := r.Queries[j]
			return true, fmt.Sprintf("query %q failed %d of %d measurements (failureLimit %d), last: %s", q.Name, m.Failures, m.Measurements, FailureLimit(q), m.LastFailure), false
		}
	}
	for _, name := range a.HealthChecks {
		if j := indexOfMeasurement(r.HealthChecks, name); j >= 0 && r.HealthChecks[j].Failures > 0 {
			m := r.HealthChecks[j]
			return true, fmt.Sprintf("health check %q failed %d of %d measurements (it must hold through the soak), last: %s", name, m.Failures, m.Measurements, m.LastFailure), false
		}
	}
	done = r.LastMeasurementTime != nil && rec.SoakUntil != nil && !r.LastMeasurementTime.Before(rec.SoakUntil)
	return false, "", done
}

// describeAnalysis sums an analysis record up for a message: "4 measurements,
// 0 failed".
func describeAnalysis(r *upgradev1.AnalysisStatus) string {
	if r == nil {
		return "no analysis"
	}
	var n, failed int32
	for _, m := range append(append([]upgradev1.MeasurementStatus(nil), r.Queries...), r.HealthChecks...) {
		n += m.Measurements
		failed += m.Failures
	}
	return fmt.Sprintf("analysis %d measurements, %d failed", n, failed)
}
