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

package disruption

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// This file holds what moves a Machine's record from phase to phase, and
// the small helpers of the decisions.

// Fail records that the Machine failed; the controller's executor undoes its
// disruption once the failure is persisted.
func Fail(now time.Time, st *upgradev1.MachineUpgradeStatus, msg string) Decision {
	MoveTo(now, st, upgradev1.MachinePhaseFailed, "", msg)
	st.CompletionTime = ptrTime(now)
	return Decision{Fail: msg}
}

// phaseDeadline is when a Machine rebooting or verifying has run out of
// timeout: counted from its reboot request, or from the start of its phase
// when it was never rebooted by Tollgate (a node found on the target).
func phaseDeadline(now time.Time, st *upgradev1.MachineUpgradeStatus, timeout time.Duration) time.Time {
	switch {
	case st.RebootRequestedTime != nil:
		return st.RebootRequestedTime.Add(timeout)
	case st.PhaseStartTime != nil:
		return st.PhaseStartTime.Add(timeout)
	}
	return now.Add(timeout)
}

// MoveTo moves a Machine's record to a phase at now, adding the time spent
// in the previous one to its phase durations.
func MoveTo(now time.Time, st *upgradev1.MachineUpgradeStatus, phase upgradev1.MachinePhase, point upgradev1.HoldPoint, msg string) {
	at := metav1.NewTime(now)
	if st.PhaseStartTime != nil && st.Phase != phase {
		addPhaseDuration(st, st.Phase, now.Sub(st.PhaseStartTime.Time))
	}
	if st.Phase != phase || st.HoldPoint != point {
		st.PhaseStartTime = &at
		st.UnreachableSince = nil
	}
	if st.StartTime == nil {
		st.StartTime = &at
	}
	st.Phase, st.HoldPoint, st.Message = phase, point, msg
	if phase != upgradev1.MachinePhaseWaitingForHold {
		st.HeldBy = nil
	}
}

func addPhaseDuration(st *upgradev1.MachineUpgradeStatus, phase upgradev1.MachinePhase, d time.Duration) {
	for i := range st.PhaseDurations {
		if st.PhaseDurations[i].Phase == phase {
			st.PhaseDurations[i].Seconds += int64(d.Seconds())
			return
		}
	}
	st.PhaseDurations = append(st.PhaseDurations, upgradev1.PhaseDuration{Phase: phase, Seconds: int64(d.Seconds())})
}

// atLeastASecond is a requeue delay that is never zero or negative.
func atLeastASecond(d time.Duration) time.Duration {
	return max(d, time.Second)
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// durationOr is d, or def when d is unset or not positive.
func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return def
	}
	return d.Duration
}

// QuoteAll quotes names and joins them with commas, for messages.
func QuoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// NodeReady reports whether a Node is Ready.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasAnnotation(o metav1.Object, key string) bool {
	_, ok := o.GetAnnotations()[key]
	return ok
}
