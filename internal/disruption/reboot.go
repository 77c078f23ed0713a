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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "how does a reboot pass the gate": a reboot asked for
// on a policy (spec.reboot.after) or on one Machine (the
// upgrade.tollgate.dev/reboot-after annotation) is a record of the Machine
// in its Cluster's rollout, whose kind reboots the node on the version it
// runs (rebootOnly). Every other step (holds, hooks, checks, budget, drain,
// the proof of the reboot, the release) is the upgrade's. Whether a node
// still needs the reboot is read from the node: when it last booted.

// rebootOnly is the kind of a reboot asked for on its own: the node is
// rebooted on the version it runs.
type rebootOnly struct{}

var _ Kind = rebootOnly{}

// drained records the node's version and boot ID, which the reboot is
// proven against. A node that turns out not to run the target (its
// Machine's status lagged) is upgraded instead: its upgrade's reboot
// answers the reboot asked for.
func (rebootOnly) drained(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	if d, onTarget := drainedOnTarget(w, st); !onTarget {
		return d
	}
	MoveTo(w.Now, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
	return Decision{}
}

// drainedOnTarget records, for a kind that changes no version, what the
// drained node runs: its version and its boot ID, which its reboot is
// proven against. A node that turns out not to run the target (its
// Machine's status lagged) is upgraded instead, and false is returned with
// the upgrade's decision.
func drainedOnTarget(w *Observation, st *upgradev1.MachineUpgradeStatus) (Decision, bool) {
	obs := w.Drain
	if !talos.SameVersion(obs.Version, st.TargetVersion) {
		st.Action = upgradev1.MachineActionUpgrade
		return install{}.drained(w, st), false
	}
	st.FromVersion, st.BootID = obs.Version, obs.BootID
	return Decision{}, true
}

// act is never reached: a reboot installs nothing, and goes from its drain
// to its pre-reboot point.
func (rebootOnly) act(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	MoveTo(w.Now, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
	return Decision{}
}

// reboot reboots the node with a Reboot call.
func (rebootOnly) reboot(*Observation, *upgradev1.MachineUpgradeStatus) Intent {
	return IntentReboot
}

// rebooted fails a node that came back on another version than it ran: a
// reboot changes nothing but the boot.
func (rebootOnly) rebooted(_ *Observation, st *upgradev1.MachineUpgradeStatus, version string) string {
	if talos.SameVersion(version, st.FromVersion) {
		return ""
	}
	return fmt.Sprintf("node %q came back on %s after its reboot, but ran %s before it (an install staged outside of Tollgate, or an A/B rollback); not retried automatically", st.Node, version, st.FromVersion)
}

// RebootRequest is the reboot asked for a Machine's node.
type RebootRequest struct {
	// Due is the latest reboot asked for that is due, nil when none is.
	Due *metav1.Time
	// Next is the earliest reboot asked for that is not due yet, zero when
	// none is.
	Next time.Time
	// Invalid says why the Machine's annotation could not be read, or "".
	Invalid string
}

// RebootAsked reads the reboots asked for m's node at now: the rollout's
// spec.reboot.after and the Machine's annotation. A reboot asked for a time
// still to come is due at that time.
func RebootAsked(u *upgradev1.TalosUpgrade, m *clusterv1.Machine, now time.Time) RebootRequest {
	var req RebootRequest
	asked := make([]time.Time, 0, 2)
	if after := u.Spec.Reboot.After; !after.IsZero() {
		asked = append(asked, after.Time)
	}
	if value, ok := m.Annotations[upgradev1.RebootAfterAnnotation]; ok {
		t, err := time.Parse(time.RFC3339, value)
		if err != nil {
			req.Invalid = fmt.Sprintf("annotation %s=%q of Machine %s is not an RFC 3339 time (for example %q); it is ignored", upgradev1.RebootAfterAnnotation, value, m.Name, now.UTC().Format(time.RFC3339))
		} else {
			asked = append(asked, t)
		}
	}
	for _, t := range asked {
		switch {
		case t.After(now):
			if req.Next.IsZero() || t.Before(req.Next) {
				req.Next = t
			}
		case req.Due == nil || t.After(req.Due.Time):
			req.Due = &metav1.Time{Time: t.UTC().Truncate(time.Second)}
		}
	}
	return req
}

// RebootAnswered reports whether the reboot a record was made for needs no
// reboot: none was asked, or the node booted after it. Both times are to
// the second, so a node that booted in the second the reboot was asked for
// is rebooted, as a MachineSet created in the second of a
// MachineDeployment's rollout.after is rolled out. It is false too while
// the node's boot time is not known.
func RebootAnswered(st *upgradev1.MachineUpgradeStatus) bool {
	return st.RebootAfter == nil || (st.BootTime != nil && st.BootTime.After(st.RebootAfter.Time))
}

// NewerReboot reports whether a reboot was asked for after the one an ended
// record was made for: the Machine's node is then looked at again.
func NewerReboot(st *upgradev1.MachineUpgradeStatus, due *metav1.Time) bool {
	return due != nil && (st.RebootAfter == nil || due.After(st.RebootAfter.Time))
}

// done says the node rebooted on what it runs.
func (rebootOnly) done(st *upgradev1.MachineUpgradeStatus) string {
	return "rebooted on " + st.FromVersion
}

// Words name a reboot.
func (rebootOnly) Words() Words { return wordsReboot }
