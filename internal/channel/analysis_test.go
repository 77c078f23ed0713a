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

package channel_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
)

func ExampleExpand() {
	q := `max_over_time(sum by (cluster) (rate(http_errors_total{cluster="$cluster",namespace="$namespace"}[5m]))[$window:1m]) < 0.01`
	fmt.Println(channel.Expand(q, channel.Placeholders{Cluster: "prod-eu-1", Namespace: "fleet", Stage: "prod", Window: 90 * time.Minute}))
	// Output: max_over_time(sum by (cluster) (rate(http_errors_total{cluster="prod-eu-1",namespace="fleet"}[5m]))[5400s:1m]) < 0.01
}

// TestRecordSchedulesTheSoak: measurements come every interval from the
// start of the soak, the last one at its end, and a round taken late (the
// controller was down) is not made up for, but the one at the end is
// always taken.
func TestRecordSchedulesTheSoak(t *testing.T) {
	g := NewWithT(t)
	start := metav1.NewTime(t0)
	until := metav1.NewTime(t0.Add(150 * time.Second))
	rec := &upgradev1.VersionStageStatus{Phase: upgradev1.StageSoaking, CompletedTime: &start, SoakUntil: &until,
		Analysis: &upgradev1.AnalysisStatus{NextMeasurementTime: &start}}
	var taken []time.Duration
	for now := t0; now.Before(t0.Add(10 * time.Minute)); now = now.Add(10 * time.Second) {
		if now.Equal(t0.Add(60 * time.Second)) {
			now = now.Add(50 * time.Second) // Down for a while: the round of +60s is taken at +110s.
		}
		if channel.MeasurementDue(rec, now) {
			taken = append(taken, now.Sub(t0))
			channel.Record(rec, channel.Round{At: now, Queries: []channel.Tally{{Name: "errors", Measurements: 1}}}, time.Minute)
		}
	}
	g.Expect(taken).To(Equal([]time.Duration{0, 110 * time.Second, 150 * time.Second}))
	g.Expect(rec.Analysis.Queries).To(Equal([]upgradev1.MeasurementStatus{{Name: "errors", Measurements: 3}}))
	g.Expect(rec.Analysis.NextMeasurementTime).To(BeNil())
	g.Expect(rec.Analysis.LastMeasurementTime.Time).To(Equal(t0.Add(150 * time.Second)))
}
