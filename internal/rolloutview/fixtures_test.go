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

package rolloutview

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// t0 is the fixed now of the tests.
var t0 = time.Date(2026, time.March, 14, 22, 30, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(-d))
	return &t
}

// upgradeOption changes a TalosUpgrade fixture.
type upgradeOption func(*upgradev1.TalosUpgrade)

// newUpgrade returns the TalosUpgrade of Cluster fleet/name to v1.13.0
// with machines, counted in its status.
func newUpgrade(name string, phase upgradev1.UpgradePhase, machines []upgradev1.MachineUpgradeStatus, opts ...upgradeOption) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, Generation: 1},
		Spec: upgradev1.TalosUpgradeSpec{
			ClusterName: name, PolicyName: "talos-1-13",
			UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"},
		},
		Status: upgradev1.TalosUpgradeStatus{Phase: phase, ObservedGeneration: 1, Machines: machines},
	}
	for _, m := range machines {
		u.Status.TotalMachines++
		if m.Phase == upgradev1.MachinePhaseCompleted {
			u.Status.CompletedMachines++
		}
	}
	u.Status.Progress = fmt.Sprintf("%d/%d", u.Status.CompletedMachines, u.Status.TotalMachines)
	for _, o := range opts {
		o(u)
	}
	return u
}

func blockedBy(s string) upgradeOption {
	return func(u *upgradev1.TalosUpgrade) { u.Status.BlockedBy = s }
}

func withCondition(typ string, status metav1.ConditionStatus, reason string, since time.Duration) upgradeOption {
	return func(u *upgradev1.TalosUpgrade) {
		u.Status.Conditions = append(u.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: *ago(since)})
	}
}

// machineOption changes a Machine record fixture.
type machineOption func(*upgradev1.MachineUpgradeStatus)

func machine(name string, role upgradev1.MachineRole, phase upgradev1.MachinePhase, opts ...machineOption) upgradev1.MachineUpgradeStatus {
	m := upgradev1.MachineUpgradeStatus{Machine: name, Role: role, FromVersion: "v1.12.4", TargetVersion: "v1.13.0", Phase: phase}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func heldAt(point upgradev1.HoldPoint, owner string) machineOption {
	return func(m *upgradev1.MachineUpgradeStatus) {
		m.Phase, m.HoldPoint, m.HeldBy = upgradev1.MachinePhaseWaitingForHold, point, []string{owner}
		m.Message = fmt.Sprintf("held at %s by %q", point, owner)
	}
}

func inPhaseFor(d time.Duration) machineOption {
	return func(m *upgradev1.MachineUpgradeStatus) { m.StartTime, m.PhaseStartTime = ago(d+time.Minute), ago(d) }
}

func message(s string) machineOption {
	return func(m *upgradev1.MachineUpgradeStatus) { m.Message = s }
}

func hook(name string, point upgradev1.HookPoint, phase upgradev1.HookRunPhase, attempts int32, msg string) machineOption {
	return func(m *upgradev1.MachineUpgradeStatus) {
		m.Hooks = append(m.Hooks, upgradev1.HookRunStatus{Name: name, Point: point, Phase: phase, Attempts: attempts, Message: msg})
	}
}

func policy(name string, conds ...metav1.Condition) *upgradev1.TalosUpgradePolicy {
	return &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name},
		Spec:       upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}},
		Status: upgradev1.TalosUpgradePolicyStatus{
			Conditions: conds,
			Clusters:   upgradev1.FleetCounts{Selected: 3, Completed: 1, InProgress: 1, Pending: 1},
		},
	}
}

func condition(typ string, status metav1.ConditionStatus, reason, msg string, since time.Duration) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: *ago(since)}
}

// fleet is a policy with three Clusters: one held at a Machine's preDrain
// with a hold ahead of another Machine and a bypass, one whose Machine's
// hook failed, and one not started.
func fleet() Fleet {
	cp, w := upgradev1.MachineRoleControlPlane, upgradev1.MachineRoleWorker
	held := newUpgrade("prod-eu-1", upgradev1.UpgradePhaseInProgress, []upgradev1.MachineUpgradeStatus{
		machine("prod-eu-1-cp-0", cp, upgradev1.MachinePhaseCompleted, message("upgraded from v1.12.4 to v1.13.0")),
		machine("prod-eu-1-cp-1", cp, upgradev1.MachinePhaseCompleted),
		machine("prod-eu-1-cp-2", cp, upgradev1.MachinePhasePending, heldAt(upgradev1.HoldPointPreDrain, "backup-operator"), inPhaseFor(3*time.Minute)),
		machine("prod-eu-1-w-0", w, upgradev1.MachinePhasePending),
		machine("prod-eu-1-w-1", w, upgradev1.MachinePhasePending),
		machine("prod-eu-1-w-2", w, upgradev1.MachinePhasePending),
	}, blockedBy(`machine "prod-eu-1-cp-2" held at preDrain by "backup-operator"`),
		withCondition(upgradev1.ProgressingCondition, metav1.ConditionFalse, upgradev1.WaitingForHoldReason, 3*time.Minute),
		func(u *upgradev1.TalosUpgrade) {
			u.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true, Reason: "INC-4711: the check's image is gone", RequestedBy: "alice"}
			u.Status.HealthChecks = []upgradev1.HealthCheckStatus{{Name: "ceph-healthy", Result: upgradev1.HealthCheckPassed, LastTransitionTime: ago(5 * time.Minute)}}
		})
	failed := newUpgrade("prod-eu-2", upgradev1.UpgradePhaseFailed, []upgradev1.MachineUpgradeStatus{
		machine("prod-eu-2-cp-0", cp, upgradev1.MachinePhaseCompleted),
		machine("prod-eu-2-w-0", w, upgradev1.MachinePhaseFailed, inPhaseFor(time.Minute),
			message("preReboot hook failed: ceph-noout: Job failed after 2 attempts"),
			hook("ceph-noout", upgradev1.HookPointPreReboot, upgradev1.HookRunFailed, 2, "HEALTH_ERR 1 osds down")),
	}, blockedBy(`machine "prod-eu-2-w-0" failed: preReboot hook failed: ceph-noout: Job failed after 2 attempts`),
		withCondition(upgradev1.CompletedCondition, metav1.ConditionFalse, upgradev1.MachineFailedReason, time.Minute),
		func(u *upgradev1.TalosUpgrade) {
			u.Status.Conditions = append(u.Status.Conditions, condition(upgradev1.TemplatesOnTargetCondition, metav1.ConditionFalse, upgradev1.TemplatesDriftedReason,
				"MachineDeployment prod-eu-2-md-0 creates Machines from AWSMachineTemplate md-0, which boots v1.12.4", 2*time.Minute))
		})
	pending := newUpgrade("prod-us-1", upgradev1.UpgradePhasePending, nil,
		blockedBy("waiting for the policy's maxClustersInProgress to admit this Cluster"))
	return Fleet{Policies: []PolicyTree{{
		Namespace: "fleet", Name: "talos-1-13",
		Policy: policy("talos-1-13",
			condition(upgradev1.PolicyReadyCondition, metav1.ConditionTrue, upgradev1.PolicyValidReason, "", 10*time.Minute),
			condition(upgradev1.PolicyRolloutCompletedCondition, metav1.ConditionFalse, upgradev1.RolloutInProgressReason, "1 of 3 Clusters on v1.13.0", 6*time.Minute)),
		Rollouts: []Rollout{
			{Namespace: "fleet", Cluster: "prod-eu-1", Upgrade: held, Holds: map[string][]Hold{
				"prod-eu-1-cp-2": {{Point: upgradev1.HoldPointPreDrain, Owner: "backup-operator"}},
				"prod-eu-1-w-2":  {{Point: upgradev1.HoldPointPreReboot, Owner: "storage-operator"}},
			}},
			{Namespace: "fleet", Cluster: "prod-eu-2", Upgrade: failed},
			{Namespace: "fleet", Cluster: "prod-us-1", Upgrade: pending},
			{Namespace: "fleet", Cluster: "staging-1"},
		},
	}}}
}
