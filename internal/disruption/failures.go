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

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// PausedByFailureAnnotation records, on a TalosUpgrade the failure policy
// paused, how many failures a resume acknowledges.
const PausedByFailureAnnotation = "upgrade.tollgate.dev/paused-by-failure-policy"

// Failures counts the failed Machines not acknowledged by a resume.
func (r *Rollout) Failures() int32 {
	n := int32(0)
	for _, st := range r.Upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseFailed {
			n++
		}
	}
	return n - r.Upgrade.Status.AcknowledgedFailures
}

// MaxFailures is the failure policy's threshold.
func (r *Rollout) MaxFailures() int32 {
	if m := r.Upgrade.Spec.FailurePolicy.MaxFailures; m != nil && *m > 0 {
		return *m
	}
	return plan.DefaultMaxFailures
}

// Halted reports whether the failure policy stops new Machines.
func (r *Rollout) Halted() bool {
	return r.Failures() >= r.MaxFailures()
}

// FailureMessage names the first failed Machine and why it failed.
func (r *Rollout) FailureMessage() string {
	for _, st := range r.Upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseFailed {
			return fmt.Sprintf("Machine %q failed: %s", st.Machine, st.Message)
		}
	}
	return ""
}

// Over reports whether no Machine is in flight and none will start: every
// Machine is done, or the rollout was cancelled, its Cluster left the
// policy, or the failure policy halted it for good.
func (r *Rollout) Over() bool {
	pending := false
	for _, st := range r.Upgrade.Status.Machines {
		if st.Phase.InFlight() {
			return false
		}
		if st.Phase == upgradev1.MachinePhasePending {
			pending = true
		}
	}
	// A path with hops left is not over: its next hop waits only for what
	// ends the current one (kube-proxy, see reconcilePath).
	return (!pending && !r.HopsLeft()) || r.Upgrade.Spec.Cancel || r.Detached() ||
		(r.Halted() && r.Upgrade.Spec.FailurePolicy.Action != upgradev1.FailureActionPause)
}
