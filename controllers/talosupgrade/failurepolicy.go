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
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// reconcileEnd applies the failure policy and ends the bypass of a rollout
// that is over. Its Jobs are deleted once it no longer needs the workload
// cluster, by reconcileDisconnect.
func (r *Reconciler) reconcileEnd(ctx context.Context, s *scope) (ctrl.Result, error) {
	u := s.Upgrade
	// A rollout the failure policy paused and a user unpaused is resumed:
	// the failures it paused for are acknowledged first, so that they do
	// not pause it again.
	if !u.Spec.Paused {
		if n, ok := u.Annotations[disruption.PausedByFailureAnnotation]; ok {
			var acknowledged int32
			_, _ = fmt.Sscan(n, &acknowledged)
			u.Status.AcknowledgedFailures = acknowledged
			delete(u.Annotations, disruption.PausedByFailureAnnotation)
		}
	}
	if s.Halted() && u.Spec.FailurePolicy.Action == upgradev1.FailureActionPause && !u.Spec.Paused {
		// Pausing is a spec change a user undoes to resume; the failures
		// seen so far are then acknowledged.
		u.Spec.Paused = true
		if u.Annotations == nil {
			u.Annotations = map[string]string{}
		}
		u.Annotations[disruption.PausedByFailureAnnotation] = fmt.Sprint(s.Failures() + u.Status.AcknowledgedFailures)
		r.event(s, corev1.EventTypeWarning, "RolloutPaused", "Pause", "Failure policy paused the rollout: %s", s.FailureMessage())
	}
	r.clearBypass(s)
	return ctrl.Result{}, nil
}
