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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// ProbeRun is the outcome of one run of an http or prometheus check in one
// Cluster.
type ProbeRun struct {
	// Started is when the run started.
	Started time.Time
	// Passed is true when the check passed.
	Passed bool
	// Message is why it failed.
	Message string
}

// RecordProbe records run in r, the result of the http or prometheus check
// chk in one Cluster, ended at now, as a Job's outcome is recorded (see the
// package documentation): passes count in a row up to successThreshold, a
// failure resets them, and the check runs again an interval later. A run
// that starts more than an interval after it was due (the rollout did not
// need the check meanwhile) starts a new row. The ClusterHealthCheck
// controller calls it; Evaluate reads the result.
func RecordProbe(r *upgradev1.ClusterHealthCheckResult, chk *upgradev1.ClusterHealthCheck, run ProbeRun, now time.Time) {
	st := upgradev1.HealthCheckStatus{Result: r.Result, ConsecutiveSuccesses: r.ConsecutiveSuccesses}
	if r.NextRunTime == nil || run.Started.After(r.NextRunTime.Add(interval(chk))) {
		st.ConsecutiveSuccesses = 0
	}
	message := run.Message
	if !run.Passed && message == "" {
		message = "failed" // A failure always says so.
	}
	if run.Passed {
		message = ""
	}
	recordRun(&st, chk, message, "", now)
	started := metav1.NewTime(run.Started).Rfc3339Copy()
	r.LastRunTime = &started
	// Status times are stored to the second: round the next run up, so
	// that runs are at least an interval apart.
	next := metav1.NewTime(ceilSecond(st.NextRunTime.Time))
	r.NextRunTime = &next
	r.ConsecutiveSuccesses = st.ConsecutiveSuccesses
	r.Result = st.Result
	r.Message = st.Message
}

// ProbeDue reports whether the http or prometheus check whose result in a
// Cluster is r runs now: it never ran there, or its next run time came.
func ProbeDue(r *upgradev1.ClusterHealthCheckResult, now time.Time) bool {
	return r.NextRunTime == nil || !now.Before(r.NextRunTime.Time)
}

// evaluateProbe moves an http or prometheus check one step on: it copies
// the check's result in the Cluster, which the ClusterHealthCheck controller
// runs and records in the check's status.results, and returns when to look
// again. A result of an earlier spec of the check (the controller has not
// observed its generation yet) does not count: the check is Running until
// the controller ran the new spec.
func evaluateProbe(in Input, chk *upgradev1.ClusterHealthCheck, st *upgradev1.HealthCheckStatus, now time.Time) time.Duration {
	st.JobName = "" // A check that was a Job check runs no Job any more.
	var r *upgradev1.ClusterHealthCheckResult
	for i := range chk.Status.Results {
		if chk.Status.Results[i].Cluster == in.ClusterName {
			r = &chk.Status.Results[i]
		}
	}
	if r == nil || r.LastRunTime == nil || chk.Status.ObservedGeneration < chk.Generation {
		// Not run for this spec yet: the controller runs it as soon as the
		// rollout's status names it, and its status update brings the
		// rollout back.
		if st.Result != upgradev1.HealthCheckFailed {
			setResult(st, upgradev1.HealthCheckRunning, now)
			st.Message = ""
		}
		st.NextRunTime = nil
		st.ConsecutiveSuccesses = 0
		return interval(chk)
	}
	st.LastRunTime = r.LastRunTime.DeepCopy()
	st.NextRunTime = r.NextRunTime.DeepCopy()
	st.ConsecutiveSuccesses = r.ConsecutiveSuccesses
	st.Message = r.Message
	setResult(st, r.Result, now)
	if r.NextRunTime != nil && now.Before(r.NextRunTime.Time) {
		return r.NextRunTime.Sub(now)
	}
	return interval(chk)
}

// ceilSecond rounds t up to a whole second.
func ceilSecond(t time.Time) time.Time {
	if s := t.Truncate(time.Second); !s.Equal(t) {
		return s.Add(time.Second)
	}
	return t
}
