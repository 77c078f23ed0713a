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

package talosupgrade

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// pausedByFailureAnnotation records, on a TalosUpgrade the failure policy
// paused, how many failures a resume acknowledges.
const pausedByFailureAnnotation = "upgrade.tollgate.dev/paused-by-failure-policy"

// reconcileEnd applies the failure policy and ends the bypass of a rollout
// that is over. Its Jobs are deleted once it no longer needs the workload
// cluster, by reconcileDisconnect.
func (r *Reconciler) reconcileEnd(ctx context.Context, s *scope) (ctrl.Result, error) {
	u := s.upgrade
	// A rollout the failure policy paused and a user unpaused is resumed:
	// the failures it paused for are acknowledged first, so that they do
	// not pause it again.
	if !u.Spec.Paused {
		if n, ok := u.Annotations[pausedByFailureAnnotation]; ok {
			var acknowledged int32
			_, _ = fmt.Sscan(n, &acknowledged)
			u.Status.AcknowledgedFailures = acknowledged
			delete(u.Annotations, pausedByFailureAnnotation)
		}
	}
	if s.halted() && u.Spec.FailurePolicy.Action == upgradev1.FailureActionPause && !u.Spec.Paused {
		// Pausing is a spec change a user undoes to resume; the failures
		// seen so far are then acknowledged.
		u.Spec.Paused = true
		if u.Annotations == nil {
			u.Annotations = map[string]string{}
		}
		u.Annotations[pausedByFailureAnnotation] = fmt.Sprint(s.failures() + u.Status.AcknowledgedFailures)
		r.event(s, corev1.EventTypeWarning, "RolloutPaused", "Pause", "Failure policy paused the rollout: %s", s.failureMessage())
	}
	r.clearBypass(s)
	return ctrl.Result{}, nil
}

// failures counts the failed Machines not acknowledged by a resume.
func (s *scope) failures() int32 {
	n := int32(0)
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseFailed {
			n++
		}
	}
	return n - s.upgrade.Status.AcknowledgedFailures
}

// maxFailures is the failure policy's threshold.
func (s *scope) maxFailures() int32 {
	if m := s.upgrade.Spec.FailurePolicy.MaxFailures; m != nil && *m > 0 {
		return *m
	}
	return plan.DefaultMaxFailures
}

// halted reports whether the failure policy stops new Machines.
func (s *scope) halted() bool {
	return s.failures() >= s.maxFailures()
}

// failureMessage names the first failed Machine and why it failed.
func (s *scope) failureMessage() string {
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseFailed {
			return fmt.Sprintf("Machine %q failed: %s", st.Machine, st.Message)
		}
	}
	return ""
}

// over reports whether no Machine is in flight and none will start: every
// Machine is done, or the rollout was cancelled, its Cluster left the
// policy, or the failure policy halted it for good.
func (s *scope) over() bool {
	pending := false
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase.InFlight() {
			return false
		}
		if st.Phase == upgradev1.MachinePhasePending {
			pending = true
		}
	}
	// A path with hops left is not over: its next hop waits only for what
	// ends the current one (kube-proxy, see reconcilePath).
	return (!pending && !s.hopsLeft()) || s.upgrade.Spec.Cancel || s.detached() ||
		(s.halted() && s.upgrade.Spec.FailurePolicy.Action != upgradev1.FailureActionPause)
}
