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

package healthchecks

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// httpCheck is an http check of generation 1 whose results the
// ClusterHealthCheck controller recorded at that generation.
func httpCheck(opts ...checkOption) upgradev1.ClusterHealthCheck {
	c := upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "ceph-http", Generation: 1},
		Spec: upgradev1.ClusterHealthCheckSpec{HTTP: &upgradev1.HTTPHealthCheck{
			HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: "http://ceph.example.com/health"},
		}},
		Status: upgradev1.ClusterHealthCheckStatus{ObservedGeneration: 1},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func at(t time.Time) *metav1.Time { return ptr.To(metav1.NewTime(t)) }

func TestRecordProbe(t *testing.T) {
	now := time.Date(2026, 5, 4, 22, 0, 0, 0, time.UTC)
	check := httpCheck(withInterval(10*time.Second), withSuccessThreshold(2))
	tests := []struct {
		name     string
		previous upgradev1.ClusterHealthCheckResult
		run      ProbeRun
		want     upgradev1.ClusterHealthCheckResult
	}{
		{
			name:     "a first pass of two is Running",
			previous: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckUnknown},
			run:      ProbeRun{Started: now, Passed: true},
			want: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckRunning, ConsecutiveSuccesses: 1,
				LastRunTime: at(now), NextRunTime: at(now.Add(11 * time.Second)), Message: "passed 1 of 2 times in a row"},
		},
		{
			name: "a second pass in a row is Passed",
			previous: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckRunning, ConsecutiveSuccesses: 1,
				NextRunTime: at(now), Message: "passed 1 of 2 times in a row"},
			run: ProbeRun{Started: now, Passed: true},
			want: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckPassed, ConsecutiveSuccesses: 2,
				LastRunTime: at(now), NextRunTime: at(now.Add(11 * time.Second))},
		},
		{
			name: "a pass long after it was due starts a new row",
			previous: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckRunning, ConsecutiveSuccesses: 1,
				NextRunTime: at(now.Add(-time.Hour))},
			run: ProbeRun{Started: now, Passed: true},
			want: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckRunning, ConsecutiveSuccesses: 1,
				LastRunTime: at(now), NextRunTime: at(now.Add(11 * time.Second)), Message: "passed 1 of 2 times in a row"},
		},
		{
			name:     "a failure resets the row and says why",
			previous: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckPassed, ConsecutiveSuccesses: 2, NextRunTime: at(now)},
			run:      ProbeRun{Started: now, Message: "HTTP 503 Service Unavailable: HEALTH_WARN"},
			want: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckFailed,
				LastRunTime: at(now), NextRunTime: at(now.Add(11 * time.Second)), Message: "HTTP 503 Service Unavailable: HEALTH_WARN"},
		},
		{
			name:     "a failure without a reason still fails",
			previous: upgradev1.ClusterHealthCheckResult{Cluster: "a"},
			run:      ProbeRun{Started: now},
			want: upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckFailed,
				LastRunTime: at(now), NextRunTime: at(now.Add(11 * time.Second)), Message: "failed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.previous
			// The run took 300ms: the next run is an interval after its end,
			// rounded up to the second.
			RecordProbe(&got, &check, tt.run, now.Add(300*time.Millisecond))
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

func TestEvaluateProbeChecks(t *testing.T) {
	now := time.Date(2026, 5, 4, 22, 0, 0, 0, time.UTC)
	failed := upgradev1.ClusterHealthCheckResult{Cluster: "alpha", Result: upgradev1.HealthCheckFailed, LastRunTime: at(now.Add(-2 * time.Second)),
		NextRunTime: at(now.Add(8 * time.Second)), Message: "HTTP 503 Service Unavailable: HEALTH_WARN"}
	passed := upgradev1.ClusterHealthCheckResult{Cluster: "alpha", Result: upgradev1.HealthCheckPassed, ConsecutiveSuccesses: 1,
		LastRunTime: at(now.Add(-2 * time.Second)), NextRunTime: at(now.Add(8 * time.Second))}
	stalePass := passed
	stalePass.NextRunTime = at(now.Add(-time.Second))
	withResults := func(rs ...upgradev1.ClusterHealthCheckResult) checkOption {
		return func(c *upgradev1.ClusterHealthCheck) { c.Status.Results = rs }
	}
	tests := []struct {
		name      string
		check     upgradev1.ClusterHealthCheck
		previous  []upgradev1.HealthCheckStatus
		passed    bool
		reason    string
		blockedBy string
		requeue   time.Duration
	}{
		{
			name: "no result yet holds, running", check: httpCheck(withInterval(10 * time.Second)),
			reason: upgradev1.HealthChecksRunningReason, blockedBy: `waiting for healthchecks to pass: "ceph-http": running`, requeue: 10 * time.Second,
		},
		{
			name: "another Cluster's result does not count", check: httpCheck(withResults(upgradev1.ClusterHealthCheckResult{Cluster: "beta", Result: upgradev1.HealthCheckPassed, NextRunTime: at(now.Add(time.Hour)), LastRunTime: at(now)})),
			reason: upgradev1.HealthChecksRunningReason, blockedBy: `waiting for healthchecks to pass: "ceph-http": running`, requeue: DefaultInterval,
		},
		{
			name: "a failure holds with its reason until the next run", check: httpCheck(withResults(failed)),
			reason: upgradev1.HealthChecksFailingReason, blockedBy: `waiting for healthchecks to pass: "ceph-http": HTTP 503 Service Unavailable: HEALTH_WARN`, requeue: 8 * time.Second,
		},
		{name: "a fresh pass lets the Machine go", check: httpCheck(withResults(passed)), passed: true, reason: upgradev1.HealthChecksPassedReason},
		{
			name: "a pass older than its interval holds until the next run", check: httpCheck(withResults(stalePass)),
			reason: upgradev1.HealthChecksRunningReason, blockedBy: `waiting for healthchecks to pass: "ceph-http": running`, requeue: DefaultInterval,
		},
		{
			name:   "a pass of an earlier spec does not count",
			check:  httpCheck(withResults(passed), func(c *upgradev1.ClusterHealthCheck) { c.Generation = 2 }),
			reason: upgradev1.HealthChecksRunningReason, blockedBy: `waiting for healthchecks to pass: "ceph-http": running`, requeue: DefaultInterval,
		},
		{
			name:     "a failure of an earlier spec keeps its reason until the new spec ran",
			check:    httpCheck(func(c *upgradev1.ClusterHealthCheck) { c.Generation = 2 }),
			previous: []upgradev1.HealthCheckStatus{{Name: "ceph-http", Result: upgradev1.HealthCheckFailed, Message: "HTTP 503 Service Unavailable: HEALTH_WARN", NextRunTime: at(now.Add(time.Hour))}},
			reason:   upgradev1.HealthChecksFailingReason, blockedBy: `waiting for healthchecks to pass: "ceph-http": HTTP 503 Service Unavailable: HEALTH_WARN`, requeue: DefaultInterval,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := Input{ClusterName: "alpha", Checks: []upgradev1.ClusterHealthCheck{tt.check}, Previous: tt.previous}
			st := upgradev1.HealthCheckStatus{Name: tt.check.Name, Result: upgradev1.HealthCheckUnknown}
			if len(tt.previous) > 0 {
				st = tt.previous[0]
			}
			requeue := evaluateProbe(in, &in.Checks[0], &st, now)
			res := Result{Statuses: []upgradev1.HealthCheckStatus{st}}
			summarize(&res, in.Checks, []time.Duration{requeue}, now)
			g.Expect(res.Passed).To(Equal(tt.passed))
			g.Expect(res.Reason).To(Equal(tt.reason))
			g.Expect(res.BlockedBy).To(Equal(tt.blockedBy))
			g.Expect(res.RequeueAfter).To(Equal(tt.requeue))
			g.Expect(st.JobName).To(BeEmpty(), "an http check runs no Job")
		})
	}
}

// TestEvaluateDeletesTheJobOfACheckNowHTTP turns a Job check into an http
// check while its Job runs: the Job goes, the check is judged by its result.
func TestEvaluateDeletesTheJobOfACheckNowHTTP(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	ev := &Evaluator{Client: workload, Now: clock.Now}
	jobCheck := newCheck(t, "switching")
	in := Input{UpgradeName: "switch", ClusterName: "switch", Checks: []upgradev1.ClusterHealthCheck{jobCheck}}
	res, err := ev.Evaluate(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(jobsOf(g, in)).To(HaveLen(1))

	probe := httpCheck(func(c *upgradev1.ClusterHealthCheck) {
		c.Name = "switching"
		c.Status.Results = []upgradev1.ClusterHealthCheckResult{{Cluster: "switch", Result: upgradev1.HealthCheckPassed, ConsecutiveSuccesses: 1,
			LastRunTime: at(clock.Now()), NextRunTime: at(clock.Now().Add(time.Minute))}}
	})
	in.Checks, in.Previous = []upgradev1.ClusterHealthCheck{probe}, res.Statuses
	res, err = ev.Evaluate(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Passed).To(BeTrue())
	g.Expect(res.Statuses).To(ConsistOf(SatisfyAll(HaveField("JobName", ""), HaveField("Result", upgradev1.HealthCheckPassed))))
	g.Eventually(func(g Gomega) { g.Expect(jobsOf(g, in)).To(BeEmpty()) }, eventually, 50*time.Millisecond).Should(Succeed())
}
