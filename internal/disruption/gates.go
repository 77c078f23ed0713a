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
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/maintenance"
)

// EtcdRetry is how often etcd health is read again while it is unhealthy:
// nothing sends an event when it heals.
const EtcdRetry = 10 * time.Second

// AtPreDrain reports whether a Machine waits at the pre-drain point.
func (r *Rollout) AtPreDrain() bool {
	for _, st := range r.Upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseWaitingForHold && st.HoldPoint == upgradev1.HoldPointPreDrain {
			return true
		}
	}
	return false
}

// FirstDisruption reports whether no Machine of the rollout has gone past
// the pre-drain point yet: the checks that gate the first Machine only
// still apply.
func (r *Rollout) FirstDisruption() bool {
	for _, st := range r.Upgrade.Status.Machines {
		if st.StartTime != nil && (st.Phase != upgradev1.MachinePhaseWaitingForHold || st.HoldPoint != upgradev1.HoldPointPreDrain) {
			return false
		}
	}
	return true
}

// Gate is what keeps the rollout from starting a Machine now.
type Gate struct {
	// Reason is the Progressing condition's reason; empty when open.
	Reason string
	// Message says what the rollout waits for.
	Message string
	// Retry is when to look again, for gates that send no event.
	Retry time.Duration
}

// StartGate says whether the rollout may start a Machine now; it has no
// side effect.
func (r *Rollout) StartGate() Gate {
	u := r.Upgrade
	if reason, msg := r.Pause(); reason != "" {
		return Gate{Reason: reason, Message: msg}
	}
	switch {
	case u.Spec.Cancel:
		return Gate{Reason: upgradev1.RolloutCancelledReason, Message: "the rollout was cancelled"}
	case r.Detached():
		return Gate{Reason: upgradev1.ClusterLeftPolicyReason, Message: fmt.Sprintf("Cluster %q no longer carries the label %s=%s: no Machine starts", u.Spec.ClusterName, upgradev1.PolicyLabel, u.Spec.PolicyName)}
	case r.Halted():
		return Gate{Reason: upgradev1.MachineFailedReason, Message: r.FailureMessage()}
	case u.Annotations[upgradev1.AdmittedAnnotation] == "":
		return r.AdmissionGate()
	case !r.Reachable:
		return Gate{Reason: upgradev1.WorkloadAPINotReadyReason, Message: fmt.Sprintf("workload cluster %q is not reachable yet", u.Spec.ClusterName)}
	case !r.PreflightPassed():
		return Gate{Reason: upgradev1.WaitingForPreflightReason, Message: "waiting for the preflight checks"}
	}
	if g := r.KubernetesVersionsGate(); g.Reason != "" {
		return g
	}
	if open, next := maintenance.Open(u.Spec.Maintenance, r.Now); !open && r.WindowsBypass() == nil {
		msg := "waiting for a maintenance window (" + maintenance.Describe(u.Spec.Maintenance) + ")"
		if next.IsZero() {
			return Gate{Reason: upgradev1.WaitingForMaintenanceWindowReason, Message: msg + ": none opens within a year"}
		}
		return Gate{Reason: upgradev1.WaitingForMaintenanceWindowReason, Message: fmt.Sprintf("%s: next opens at %s", msg, next.Format(time.RFC3339)), Retry: next.Sub(r.Now)}
	}
	if t := u.Status.NextMachineNotBefore; t != nil && r.Now.Before(t.Time) {
		return Gate{Reason: upgradev1.MachinesUpgradingReason, Message: fmt.Sprintf("waiting %s between Machines", t.Sub(r.Now).Round(time.Second)), Retry: t.Sub(r.Now)}
	}
	return Gate{}
}

// AdmissionGate says what a rollout its policy has not admitted waits for:
// the policy's admission gate when it is closed to the Cluster (the fleet's
// failure budget is spent, or the canaries go first), as the policy's
// Admitting condition says, else a slot of maxClustersInProgress. The
// controller watches that condition (see admittingChanged).
func (r *Rollout) AdmissionGate() Gate {
	slot := Gate{Reason: upgradev1.WaitingForClusterSlotReason, Message: "waiting for the policy's maxClustersInProgress to admit this Cluster"}
	if r.Policy == nil {
		return slot
	}
	c := conditions.Get(r.Policy, upgradev1.PolicyAdmittingCondition)
	if c == nil || c.Status != metav1.ConditionFalse {
		return slot
	}
	switch c.Reason {
	case upgradev1.FailureBudgetExhaustedReason:
		return Gate{Reason: upgradev1.WaitingForFailureBudgetReason, Message: fmt.Sprintf("TalosUpgradePolicy %q admits no new Cluster: %s", r.Policy.Name, c.Message)}
	case upgradev1.CanaryFailedReason:
		return Gate{Reason: upgradev1.WaitingForCanariesReason, Message: fmt.Sprintf("TalosUpgradePolicy %q admits no new Cluster: %s", r.Policy.Name, c.Message)}
	case upgradev1.WaitingForCanariesReason:
		if !slices.Contains(r.Policy.Status.Canaries, r.Upgrade.Spec.ClusterName) {
			return Gate{Reason: upgradev1.WaitingForCanariesReason, Message: fmt.Sprintf("TalosUpgradePolicy %q admits its canaries first: %s", r.Policy.Name, c.Message)}
		}
	}
	return slot
}

// WaitingMachines says which Pending Machines of group cannot start yet, and
// why, or "" when none.
func (r *Rollout) WaitingMachines(group string) string {
	for _, st := range r.Upgrade.Status.Machines {
		if st.Group == group && st.Phase == upgradev1.MachinePhasePending && st.Message != "" {
			return fmt.Sprintf("Machine %q: %s", st.Machine, st.Message)
		}
	}
	return ""
}

// KubernetesVersionsGate says why no Machine starts while the Cluster's
// CAPI objects do not agree with the rollout's Kubernetes target; empty
// when they do or there is none.
func (r *Rollout) KubernetesVersionsGate() Gate {
	c := r.KubernetesVersions
	if r.Upgrade.Spec.KubernetesVersion == "" || (c != nil && c.Status == metav1.ConditionTrue) {
		return Gate{}
	}
	msg := "waiting to read the Cluster's CAPI objects"
	if c != nil {
		msg = c.Message
	}
	return Gate{Reason: upgradev1.WaitingForKubernetesVersionsReason, Message: msg}
}

// PreflightTarget identifies what a preflight checked.
func PreflightTarget(u *upgradev1.TalosUpgrade) string {
	in := u.Spec.Installer
	target := u.Spec.TalosVersion
	if u.Spec.KubernetesVersion != "" {
		target += " kubernetes=" + u.Spec.KubernetesVersion
	}
	return fmt.Sprintf("%s source=%s platform=%s schematic=%s secureBoot=%t repository=%s", target,
		in.Source, in.Platform, in.SchematicID, in.SecureBoot != nil && *in.SecureBoot, in.Repository)
}

// PreflightPassed reports whether the preflight passed for the current
// target and installer: in this reconcile, or as last recorded.
func (r *Rollout) PreflightPassed() bool {
	passed := conditions.IsTrue(r.Upgrade, upgradev1.PreflightSucceededCondition)
	if r.Preflight != nil {
		passed = r.Preflight.Status == metav1.ConditionTrue
	}
	return passed && r.Upgrade.Status.PreflightTarget == r.PreflightKey()
}

// PreflightKey is what the preflight checked, as status.preflightTarget
// records it: the rollout's target and installer (PreflightTarget), and the
// versions its Machines' objects declare, so that a version declared since
// is checked in turn.
func (r *Rollout) PreflightKey() string {
	key := PreflightTarget(r.Upgrade)
	if r.Upgrade.Spec.CAPIDriven() {
		return key
	}
	var declared []string
	for _, m := range r.Machines {
		t := r.TargetOf(m)
		switch {
		case t.Source != upgradev1.VersionSourceObject || t.Blocked != "":
		case t.Waiting != "":
			// A path to plan: the preflight plans it.
			declared = append(declared, t.Owner.String()+"="+t.Final+" (path to plan)")
		default:
			declared = append(declared, t.Owner.String()+"="+t.Final)
		}
	}
	if len(declared) == 0 {
		return key
	}
	slices.Sort(declared)
	return key + " declared=" + strings.Join(slices.Compact(declared), ",")
}

// NextCandidates returns the Pending Machines of the group under way that
// start now, as the ledger admits them one after the other, and the group's
// budget as counted without them (its group empty when every Machine is
// done). Only Machines whose node, version and role are known are
// candidates (see startBlocker), and none whose node is down already: it
// counts against the budget instead. A node that could not be read (the
// workload cluster not reached yet) does not keep its Machine out: the
// start gate then says what the rollout waits for (its admission, the
// workload cluster), which the rollout would not say with no candidate.
func (r *Rollout) NextCandidates() ([]*upgradev1.MachineUpgradeStatus, Budget) {
	records := r.Upgrade.Status.Machines
	// The group under way is the first with a Machine not done: control
	// plane first, then the worker groups in order.
	// A Machine that waits for its owner's declared version to be fixed
	// holds no group: the rest of the Cluster goes on.
	group := ""
	for i := range records {
		if st := &records[i]; !st.Phase.Ended() && !r.Blocked(st) {
			group = st.Group
			break
		}
	}
	if group == "" {
		return nil, Budget{}
	}
	l := r.Ledger()
	b := l.Budget(group, "")
	var starting []*upgradev1.MachineUpgradeStatus
	for i := range records {
		st := &records[i]
		if st.Group != group || st.Phase != upgradev1.MachinePhasePending || st.Message != "" || r.Nodes[st.Node].Down() {
			continue
		}
		if !l.Admit(st.Machine).Admitted {
			break
		}
		l.Disrupt(st.Machine, st.Action)
		starting = append(starting, st)
	}
	return starting, b
}
