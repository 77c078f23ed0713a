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
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// TestDecideRemoval checks every decision on a held removal (removal.go)
// with no apiserver: what a Machine CAPI deletes waits for, by cause, and
// when it is released.
func TestDecideRemoval(t *testing.T) {
	// open is a world in which the removal passes every gate: the workload
	// cluster answers, it is the Machine's turn, the checks pass, the budget
	// has room, and the preRemoval hooks were not run yet.
	open := func() RemovalObservation {
		return RemovalObservation{Now: t0, Timeout: 30 * time.Minute, Reachable: true, ChecksPassed: true}
	}
	held := func(cause upgradev1.RemovalCause, since time.Duration) *upgradev1.MachineRemovalStatus {
		return &upgradev1.MachineRemovalStatus{Machine: "w-1", Group: "md/w", Cause: cause, Phase: upgradev1.RemovalPhaseHeld, StartTime: metav1.NewTime(t0.Add(-since))}
	}
	done := &hooks.RunResult{Done: true}
	withHooks := func(rec *upgradev1.MachineRemovalStatus, recorded ...upgradev1.HookRunStatus) *upgradev1.MachineRemovalStatus {
		rec.Hooks = recorded
		return rec
	}
	cpHeld := func(cause upgradev1.RemovalCause, since time.Duration) *upgradev1.MachineRemovalStatus {
		rec := held(cause, since)
		rec.Machine, rec.Group = "cp-2", ControlPlaneGroup
		return rec
	}
	// controlPlane makes the removal a control-plane Machine's, etcd
	// healthy or not.
	controlPlane := func(healthy bool) func(w *RemovalObservation) {
		return func(w *RemovalObservation) {
			w.ControlPlane, w.EtcdHealthy = true, healthy
			if !healthy {
				w.EtcdMessage = `waiting for etcd member "cp-1" to be healthy: unhealthy`
			}
		}
	}
	tests := []struct {
		name   string
		world  func(w *RemovalObservation)
		record *upgradev1.MachineRemovalStatus
		intent RemovalIntent
		// reason is the decision's reason, checked when set.
		reason string
		// message is a part of the decision's message.
		message string
		warn    bool
		retry   time.Duration
	}{
		{name: "a removal that passes every gate runs its hooks first", record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalRunHooks},
		{name: "once its hooks are done it is released", world: func(w *RemovalObservation) { w.Hooks = done },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalRelease, message: "its preRemoval hooks ran, the health checks pass"},
		{name: "a hook still running holds it", world: func(w *RemovalObservation) {
			w.Hooks = &hooks.RunResult{Message: `waiting for hook "osd-out"`}
		},
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, message: `waiting for its preRemoval hooks: waiting for hook "osd-out"`, retry: 29 * time.Minute},
		{name: "a failed hook holds it until the timeout", world: func(w *RemovalObservation) {
			w.Hooks = &hooks.RunResult{Failed: true, Message: `hook "osd-out" failed after 1 attempts: boom`}
		}, record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, message: `preRemoval hook "osd-out" failed`},
		{name: "failing checks hold a deletion, before its hooks run", world: func(w *RemovalObservation) { w.ChecksPassed, w.ChecksMessage = false, `check "ceph" failed` },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, message: `waiting for the health checks: check "ceph" failed; released at 2026-12-04T12:29:00Z at the latest`, retry: 29 * time.Minute},
		{name: "failing checks do not hold a remediation", world: func(w *RemovalObservation) { w.ChecksPassed = false },
			record: held(upgradev1.RemovalCauseRemediated, time.Minute), intent: RemovalRunHooks},
		{name: "a full budget holds a deletion", world: func(w *RemovalObservation) { w.Busy = "w-2 (upgrading)" },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, message: "waiting for room in the disruption budget: w-2 (upgrading)"},
		{name: "another removal of the group goes first", world: func(w *RemovalObservation) { w.Ahead = "w-0" },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, message: `waiting for the removal of Machine "w-0" first`},
		{name: "a node already unavailable waits for no turn", world: func(w *RemovalObservation) { w.Ahead, w.NodeUnavailable = "w-0", true },
			record: held(upgradev1.RemovalCauseRemediated, time.Minute), intent: RemovalRunHooks},
		{name: "an unreachable workload cluster holds it, and says so", world: func(w *RemovalObservation) { w.Reachable = false },
			record: held(upgradev1.RemovalCauseRemediated, time.Minute), intent: RemovalWait, message: "the workload cluster cannot be reached"},
		{name: "an unreachable workload cluster is released after the timeout", world: func(w *RemovalObservation) { w.Reachable = false },
			record: held(upgradev1.RemovalCauseDeleted, 30*time.Minute), intent: RemovalRelease, warn: true, message: "released after the removal timeout (30m0s) while the workload cluster cannot be reached"},
		{name: "failing checks release it after the timeout", world: func(w *RemovalObservation) { w.ChecksPassed, w.ChecksMessage = false, `check "ceph" failed` },
			record: held(upgradev1.RemovalCauseDeleted, time.Hour), intent: RemovalRelease, warn: true, message: `while waiting for the health checks: check "ceph" failed`},
		{name: "no hook is started past the timeout", record: held(upgradev1.RemovalCauseDeleted, time.Hour), intent: RemovalRelease, warn: true,
			message: "released after the removal timeout (30m0s) while its preRemoval hooks had not started"},
		{name: "a hook still running at the timeout is said to have not completed, not to have not run", record: withHooks(held(upgradev1.RemovalCauseDeleted, time.Hour),
			upgradev1.HookRunStatus{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunRunning, Attempts: 1, JobName: "tollgate-hook-osd-out-w-1"},
			upgradev1.HookRunStatus{Name: "notify", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunSucceeded, Attempts: 1}),
			intent: RemovalRelease, warn: true,
			message: `released after the removal timeout (30m0s) while its preRemoval hooks had not completed: hook "osd-out" was still running (Job tollgate-hook-osd-out-w-1)`},
		{name: "a hook to be retried at the timeout says so", record: withHooks(held(upgradev1.RemovalCauseDeleted, time.Hour),
			upgradev1.HookRunStatus{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunRunning, Attempts: 2, NextAttemptTime: &metav1.Time{Time: t0.Add(time.Minute)}}),
			intent: RemovalRelease, warn: true, message: `had not completed: hook "osd-out" had failed attempt 2 and was to be retried`},
		{name: "a Cluster being deleted is not held", world: func(w *RemovalObservation) { w.Reachable, w.ChecksPassed = false, false },
			record: held(upgradev1.RemovalCauseClusterDeleted, 0), intent: RemovalRelease, message: "the Cluster is being deleted"},
		{name: "a Cluster that left the policy is not held", world: func(w *RemovalObservation) { w.Detached, w.ChecksPassed = true, false },
			record: held(upgradev1.RemovalCauseDeleted, 0), intent: RemovalRelease, warn: true, message: "the Cluster left the policy"},
		{name: "a failed hook says how to bypass it", world: func(w *RemovalObservation) {
			w.Hooks = &hooks.RunResult{Failed: true, Message: `hook "osd-out" failed after 1 attempts: boom`}
		}, record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalHookFailedReason,
			message: "retry or skip the hook with spec.bypass.machines", retry: 29 * time.Minute},
		{name: "a failed hook is released after the timeout", world: func(w *RemovalObservation) {
			w.Hooks = &hooks.RunResult{Failed: true, Message: `hook "osd-out" failed after 1 attempts: boom`}
		}, record: held(upgradev1.RemovalCauseDeleted, 30*time.Minute), intent: RemovalRelease, warn: true,
			message: `released after the removal timeout (30m0s) while preRemoval hook "osd-out" failed`},
		{name: "a hook running says so in the reason", world: func(w *RemovalObservation) {
			w.Hooks = &hooks.RunResult{Message: `waiting for hook "osd-out"`}
		},
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForHooksReason},
		{name: "failing checks say so in the reason", world: func(w *RemovalObservation) { w.ChecksPassed = false },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForHealthChecksReason},
		{name: "a full budget says so in the reason", world: func(w *RemovalObservation) { w.Busy = "w-2 (upgrading)" },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForBudgetReason},
		{name: "the turn of another removal counts as the budget", world: func(w *RemovalObservation) { w.Ahead = "w-0" },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForBudgetReason},
		{name: "an unreachable workload cluster says so in the reason", world: func(w *RemovalObservation) { w.Reachable = false },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWorkloadUnreachableReason},
		{name: "a control-plane deletion waits for etcd, read again every EtcdRetry", world: controlPlane(false),
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForEtcdReason,
			message: `waiting for etcd member "cp-1" to be healthy: unhealthy`, retry: EtcdRetry},
		{name: "etcd is waited for only until the timeout, and read again then", world: controlPlane(false),
			record: cpHeld(upgradev1.RemovalCauseDeleted, 30*time.Minute-time.Second), intent: RemovalWait, reason: upgradev1.RemovalWaitingForEtcdReason, retry: time.Second},
		{name: "an unhealthy etcd releases a control-plane deletion after the timeout", world: controlPlane(false),
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Hour), intent: RemovalRelease, warn: true,
			message: `released after the removal timeout (30m0s) while waiting for etcd member "cp-1" to be healthy`},
		{name: "a control-plane Machine whose node left etcd and lost its Node before the hook waits for no etcd, no budget, no turn, and says the gate did not guard them",
			world: func(w *RemovalObservation) {
				controlPlane(false)(w)
				w.LeftEtcd, w.NodeGone, w.Busy, w.Ahead = true, true, "cp-0 (upgrading)", "cp-0"
				w.Hooks = &hooks.RunResult{Message: `waiting for hook "backup"`}
			},
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForHooksReason,
			message: UnguardedRemovalNote + ` (left etcd and lost its Node): waiting for its preRemoval hooks: waiting for hook "backup"`},
		{name: "its checks still hold it", world: func(w *RemovalObservation) { controlPlane(true)(w); w.LeftEtcd, w.ChecksPassed = true, false },
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForHealthChecksReason,
			message: UnguardedRemovalNote + " (left etcd): waiting for the health checks"},
		{name: "its release says what was not guarded", world: func(w *RemovalObservation) { controlPlane(true)(w); w.LeftEtcd, w.NodeGone, w.Hooks = true, true, done },
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalRelease, message: UnguardedRemovalNote},
		{name: "a control-plane deletion goes on once etcd is healthy", world: controlPlane(true),
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalRunHooks},
		{name: "the checks come before etcd", world: func(w *RemovalObservation) { controlPlane(false)(w); w.ChecksPassed = false },
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForHealthChecksReason},
		{name: "etcd comes before the budget", world: func(w *RemovalObservation) { controlPlane(false)(w); w.Busy = "cp-0 (upgrading)" },
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalWait, reason: upgradev1.RemovalWaitingForEtcdReason},
		{name: "a remediated control-plane Machine does not wait for etcd (its own member may be down)", world: controlPlane(false),
			record: cpHeld(upgradev1.RemovalCauseRemediated, time.Minute), intent: RemovalRunHooks},
		{name: "a control-plane node already unavailable does not wait for etcd", world: func(w *RemovalObservation) { controlPlane(false)(w); w.NodeUnavailable = true },
			record: cpHeld(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalRunHooks},
		{name: "a control-plane Machine of a Cluster being deleted does not wait for etcd", world: controlPlane(false),
			record: cpHeld(upgradev1.RemovalCauseClusterDeleted, 0), intent: RemovalRelease, message: "the Cluster is being deleted"},
		{name: "a worker does not wait for etcd", world: func(w *RemovalObservation) { w.EtcdMessage = "unhealthy" },
			record: held(upgradev1.RemovalCauseDeleted, time.Minute), intent: RemovalRunHooks},
		{name: "a released removal is left as it is", world: func(w *RemovalObservation) { w.ChecksPassed = false },
			record: &upgradev1.MachineRemovalStatus{Machine: "w-1", Phase: upgradev1.RemovalPhaseReleased, Message: "released: x"}, intent: RemovalWait, message: "released: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := open()
			if tt.world != nil {
				tt.world(&w)
			}
			d := DecideRemoval(w, tt.record)
			g.Expect(d.Intent).To(Equal(tt.intent), "decision: %+v", d)
			g.Expect(d.Message).To(ContainSubstring(tt.message))
			g.Expect(d.Warn).To(Equal(tt.warn))
			if tt.retry != 0 {
				g.Expect(d.Retry).To(Equal(tt.retry))
			}
			if tt.reason != "" {
				g.Expect(d.Reason).To(Equal(tt.reason))
			}
			if d.Intent == RemovalRelease {
				g.Expect(d.Reason).To(BeEmpty(), "a released removal waits for nothing")
				passed := !d.Warn && tt.record.Cause != upgradev1.RemovalCauseClusterDeleted
				g.Expect(d.Gated).To(Equal(passed), "a release that passed the gate, and only it, is asked again with the Machines read live")
			} else if tt.record.Phase == upgradev1.RemovalPhaseHeld {
				g.Expect(removalReasons).To(ContainElement(d.Reason), "a held removal says what it waits for")
			}
		})
	}
}

// TestRemovalCause checks how the cause of a deletion is told apart from
// CAPI's objects.
func TestRemovalCause(t *testing.T) {
	now := metav1.NewTime(t0)
	live := &clusterv1.Cluster{}
	deleting := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}
	machine := func(conds ...metav1.Condition) *clusterv1.Machine {
		return &clusterv1.Machine{Status: clusterv1.MachineStatus{Conditions: conds}}
	}
	unhealthy := metav1.Condition{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionFalse, Reason: "UnhealthyNode"}
	healthy := metav1.Condition{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, Reason: "Succeeded"}
	remediated := metav1.Condition{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: "WaitingForRemediation"}
	tests := []struct {
		name     string
		cluster  *clusterv1.Cluster
		machine  *clusterv1.Machine
		previous upgradev1.RemovalCause
		want     upgradev1.RemovalCause
	}{
		{name: "a scale-down", cluster: live, machine: machine(healthy), want: upgradev1.RemovalCauseDeleted},
		{name: "an unhealthy Machine", cluster: live, machine: machine(unhealthy), want: upgradev1.RemovalCauseRemediated},
		{name: "a Machine its owner remediates", cluster: live, machine: machine(remediated), want: upgradev1.RemovalCauseRemediated},
		{name: "once remediated, always", cluster: live, machine: machine(), previous: upgradev1.RemovalCauseRemediated, want: upgradev1.RemovalCauseRemediated},
		{name: "a Cluster deleted wins", cluster: deleting, machine: machine(unhealthy), previous: upgradev1.RemovalCauseRemediated, want: upgradev1.RemovalCauseClusterDeleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(RemovalCause(tt.cluster, tt.machine, tt.previous)).To(Equal(tt.want))
		})
	}
}

// TestRemovalLedger checks the one ledger of a group's disruption budget
// that removals and upgrades share, and the turn of the removals of a
// group, with no apiserver (no workload cluster: no node is NotReady).
func TestRemovalLedger(t *testing.T) {
	worker := func(name string, deleting bool) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1.MachineDeploymentNameLabel: "w"}}}
		m.Status.NodeRef = clusterv1.MachineNodeReference{Name: name}
		if deleting {
			now := metav1.NewTime(t0)
			m.DeletionTimestamp = &now
		}
		return m
	}
	removal := func(name string, phase upgradev1.RemovalPhase, since time.Duration) upgradev1.MachineRemovalStatus {
		return upgradev1.MachineRemovalStatus{Machine: name, Node: name, Group: "md/w", Cause: upgradev1.RemovalCauseDeleted, Phase: phase, StartTime: metav1.NewTime(t0.Add(-since))}
	}
	newScope := func(maxUnavailable int, records []upgradev1.MachineUpgradeStatus, removals ...upgradev1.MachineRemovalStatus) *Rollout {
		u := &upgradev1.TalosUpgrade{}
		budget := intstr.FromInt(maxUnavailable)
		u.Spec.Rollout.Workers.MaxUnavailable = &budget
		u.Status.Machines, u.Status.Removals = records, removals
		s := &Rollout{Upgrade: u, Now: t0, Machines: map[string]*clusterv1.Machine{}}
		for _, name := range []string{"w-0", "w-1", "w-2", "w-3"} {
			s.Machines[name] = worker(name, false)
		}
		for _, r := range removals {
			m := worker(r.Machine, true)
			if r.Phase == upgradev1.RemovalPhaseHeld {
				metav1.SetMetaDataAnnotation(&m.ObjectMeta, hooks.DeletionHookAnnotation, "")
			}
			s.Machines[r.Machine] = m
		}
		return s
	}
	upgrading := []upgradev1.MachineUpgradeStatus{{Machine: "w-0", Group: "md/w", Phase: upgradev1.MachinePhaseDraining}}

	t.Run("an upgrade in flight takes the room of a budget of one", func(t *testing.T) {
		g := NewWithT(t)
		s := newScope(1, upgrading, removal("w-3", upgradev1.RemovalPhaseHeld, time.Minute))
		b := s.Ledger().Budget("md/w", "w-3")
		g.Expect(b.Room()).To(Equal(0))
		g.Expect(b.Message()).To(Equal(`1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: w-0 (upgrading)`))
		g.Expect(newScope(2, upgrading).Ledger().Budget("md/w", "w-3").Room()).To(Equal(1), "a budget of two has room")
	})
	t.Run("a removal released and not gone takes the room of the removals and of the upgrade", func(t *testing.T) {
		g := NewWithT(t)
		s := newScope(1, nil, removal("w-2", upgradev1.RemovalPhaseReleased, 2*time.Minute), removal("w-3", upgradev1.RemovalPhaseHeld, time.Minute))
		g.Expect(s.Ledger().Budget("md/w", "w-3").Message()).To(ContainSubstring("w-2 (being removed)"))
		g.Expect(s.Ledger().Budget("md/w", "").Room()).To(Equal(0), "the upgrade's start counts it too")
		g.Expect(s.RemovalAhead(s.Removal("w-3"))).To(Equal("w-2"), "one removal of a group at a time")
	})
	t.Run("the removal whose hooks started goes first, then the oldest, then by name", func(t *testing.T) {
		g := NewWithT(t)
		s := newScope(2, nil, removal("w-2", upgradev1.RemovalPhaseHeld, time.Minute), removal("w-3", upgradev1.RemovalPhaseHeld, time.Minute))
		g.Expect(s.RemovalAhead(s.Removal("w-2"))).To(BeEmpty())
		g.Expect(s.RemovalAhead(s.Removal("w-3"))).To(Equal("w-2"))
		s.Removal("w-3").StartTime = metav1.NewTime(t0.Add(-time.Hour))
		g.Expect(s.RemovalAhead(s.Removal("w-2"))).To(Equal("w-3"))
		s.Removal("w-2").Hooks = []upgradev1.HookRunStatus{{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunRunning}}
		g.Expect(s.RemovalAhead(s.Removal("w-3"))).To(Equal("w-2"))
	})
}

// TestUnguardedRemoval checks a control-plane removal whose provider took
// its node out of etcd, or deleted its Node, before CAPI consulted the
// deletion hook (the Talos control-plane provider v0.5.x does both first):
// what the rollout observes of it, and that its decision says, once, that
// the gate did not guard them.
func TestUnguardedRemoval(t *testing.T) {
	controlPlane := func(name string, deleting bool) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1.MachineControlPlaneLabel: ""}}}
		m.Status.NodeRef = clusterv1.MachineNodeReference{Name: name}
		if deleting {
			now := metav1.NewTime(t0)
			m.DeletionTimestamp = &now
		}
		return m
	}
	rollout := func(reachable bool, nodes ...string) *Rollout {
		u := &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{PolicyName: "p"}}
		u.Status.Removals = []upgradev1.MachineRemovalStatus{{Machine: "cp-2", Node: "cp-2", Group: ControlPlaneGroup,
			Cause: upgradev1.RemovalCauseDeleted, Phase: upgradev1.RemovalPhaseHeld, StartTime: metav1.NewTime(t0.Add(-time.Minute))}}
		cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "alpha", Labels: map[string]string{upgradev1.PolicyLabel: "p"}}}
		r := &Rollout{Upgrade: u, Now: t0, Cluster: cluster, Reachable: reachable, Nodes: map[string]NodeState{},
			Machines: map[string]*clusterv1.Machine{"cp-0": controlPlane("cp-0", false), "cp-1": controlPlane("cp-1", false), "cp-2": controlPlane("cp-2", true)}}
		for _, n := range nodes {
			r.Nodes[n] = NodeUp
		}
		return r
	}

	t.Run("a Node the workload cluster no longer lists is gone; one not read is not", func(t *testing.T) {
		g := NewWithT(t)
		r := rollout(true, "cp-0", "cp-1")
		g.Expect(r.NodeGone("cp-2")).To(BeTrue())
		g.Expect(r.NodeGone("cp-1")).To(BeFalse())
		g.Expect(r.ObserveRemoval(r.Removal("cp-2"), true, "").NodeGone).To(BeTrue())
		r = rollout(false)
		g.Expect(r.NodeGone("cp-2")).To(BeFalse(), "nothing is known of a workload cluster not reached")
		g.Expect(r.ObserveRemoval(r.Removal("cp-2"), true, "").NodeGone).To(BeFalse())
	})
	t.Run("etcd is read whatever the node, and a node no member lists left etcd", func(t *testing.T) {
		g := NewWithT(t)
		r := rollout(true, "cp-0", "cp-1")
		rec := r.Removal("cp-2")
		w := r.ObserveRemoval(rec, true, "")
		g.Expect(ReadsEtcd(w, rec)).To(BeTrue(), "its Node gone, its etcd membership still tells")
		ObserveEtcd(&w, rec, true, "", []string{"cp-0", "cp-1"})
		g.Expect(w.LeftEtcd).To(BeTrue())
		g.Expect(WaitsForEtcd(w, rec)).To(BeFalse())
		ObserveEtcd(&w, rec, false, "no control-plane node answered", nil)
		g.Expect(w.LeftEtcd).To(BeFalse(), "no member read: nothing is known")
		ObserveEtcd(&w, rec, true, "", []string{"cp-0", "cp-1", "cp-2"})
		g.Expect(w.LeftEtcd).To(BeFalse())

		remediated := rec.DeepCopy()
		remediated.Cause = upgradev1.RemovalCauseRemediated
		g.Expect(ReadsEtcd(w, remediated)).To(BeFalse(), "a remediation does not wait for etcd")
		worker := &upgradev1.MachineRemovalStatus{Machine: "w-1", Node: "w-1", Group: "md/w", Cause: upgradev1.RemovalCauseDeleted}
		g.Expect(ReadsEtcd(r.ObserveRemoval(worker, true, ""), worker)).To(BeFalse(), "a worker has no etcd member")
		w.Reachable = false
		g.Expect(ReadsEtcd(w, rec)).To(BeFalse())
	})
	t.Run("the first decision that says so asks for the Warning event, the next ones do not", func(t *testing.T) {
		g := NewWithT(t)
		r := rollout(true, "cp-0", "cp-1")
		rec := r.Removal("cp-2")
		w := r.ObserveRemoval(rec, false, "")
		ObserveEtcd(&w, rec, true, "", []string{"cp-0", "cp-1"})
		d := DecideRemoval(w, rec)
		g.Expect(d.Intent).To(Equal(RemovalWait))
		g.Expect(d.Message).To(HavePrefix(UnguardedRemovalNote + " (left etcd and lost its Node): waiting for the health checks"))
		g.Expect(d.NotGuarded).To(BeTrue())
		rec.Reason, rec.Message = d.Reason, d.Message
		g.Expect(DecideRemoval(w, rec).NotGuarded).To(BeFalse(), "said once")
	})
	t.Run("a worker whose Node is gone waits for no budget, and is not said unguarded", func(t *testing.T) {
		g := NewWithT(t)
		w := RemovalObservation{Now: t0, Timeout: 30 * time.Minute, Reachable: true, ChecksPassed: true, NodeGone: true, Busy: "w-0 (upgrading)", Ahead: "w-0"}
		rec := &upgradev1.MachineRemovalStatus{Machine: "w-1", Group: "md/w", Cause: upgradev1.RemovalCauseDeleted, Phase: upgradev1.RemovalPhaseHeld, StartTime: metav1.NewTime(t0)}
		d := DecideRemoval(w, rec)
		g.Expect(d.Intent).To(Equal(RemovalRunHooks))
		w.Hooks = &hooks.RunResult{Done: true}
		d = DecideRemoval(w, rec)
		g.Expect(d.Intent).To(Equal(RemovalRelease))
		g.Expect(d.Message).NotTo(ContainSubstring(UnguardedRemovalNote))
		g.Expect(d.NotGuarded).To(BeFalse())
	})
}

// TestRemovalsCondition checks the Removals condition a rollout's removal
// records give, with no apiserver.
func TestRemovalsCondition(t *testing.T) {
	rec := func(machine string, phase upgradev1.RemovalPhase, reason, message string) upgradev1.MachineRemovalStatus {
		return upgradev1.MachineRemovalStatus{Machine: machine, Cause: upgradev1.RemovalCauseDeleted, Phase: phase, Reason: reason, Message: message}
	}
	tests := []struct {
		name    string
		records []upgradev1.MachineRemovalStatus
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "no removal", status: metav1.ConditionTrue, reason: upgradev1.RemovalsNotHeldReason},
		{name: "only released removals", records: []upgradev1.MachineRemovalStatus{rec("w-1", upgradev1.RemovalPhaseReleased, "", "released: x")},
			status: metav1.ConditionTrue, reason: upgradev1.RemovalsNotHeldReason, message: `released, CAPI drains and deletes: "w-1"`},
		{name: "one held removal names its Machine, cause and why", records: []upgradev1.MachineRemovalStatus{
			rec("w-1", upgradev1.RemovalPhaseHeld, upgradev1.RemovalWaitingForHealthChecksReason, `waiting for the health checks: check "ceph" failed`),
			rec("w-0", upgradev1.RemovalPhaseReleased, "", "released: x"),
		}, status: metav1.ConditionFalse, reason: upgradev1.RemovalWaitingForHealthChecksReason,
			message: `1 removal(s) held: Machine "w-1" (Deleted): waiting for the health checks: check "ceph" failed`},
		{name: "a failed hook comes first, then the others in their order", records: []upgradev1.MachineRemovalStatus{
			rec("w-1", upgradev1.RemovalPhaseHeld, upgradev1.RemovalWaitingForBudgetReason, "waiting for room"),
			rec("w-2", upgradev1.RemovalPhaseHeld, upgradev1.RemovalHookFailedReason, `preRemoval hook "osd-out" failed`),
			rec("cp-0", upgradev1.RemovalPhaseHeld, upgradev1.RemovalWaitingForEtcdReason, "waiting for etcd"),
		}, status: metav1.ConditionFalse, reason: upgradev1.RemovalHookFailedReason,
			message: `3 removal(s) held: Machine "w-2" (Deleted): preRemoval hook "osd-out" failed; Machine "cp-0" (Deleted): waiting for etcd; Machine "w-1" (Deleted): waiting for room`},
		{name: "an unreachable workload cluster comes before what it keeps from being read", records: []upgradev1.MachineRemovalStatus{
			rec("w-1", upgradev1.RemovalPhaseHeld, upgradev1.RemovalWaitingForHooksReason, "waiting for its hooks"),
			rec("w-2", upgradev1.RemovalPhaseHeld, upgradev1.RemovalWorkloadUnreachableReason, "the workload cluster cannot be reached"),
		}, status: metav1.ConditionFalse, reason: upgradev1.RemovalWorkloadUnreachableReason},
		{name: "a record that does not say what for yet", records: []upgradev1.MachineRemovalStatus{rec("w-1", upgradev1.RemovalPhaseHeld, "", "")},
			status: metav1.ConditionFalse, reason: upgradev1.RemovalHeldReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := RemovalsCondition(tt.records)
			g.Expect(c.Type).To(Equal(upgradev1.RemovalsCondition))
			g.Expect(c.Status).To(Equal(tt.status))
			g.Expect(c.Reason).To(Equal(tt.reason))
			if tt.message != "" || tt.status == metav1.ConditionTrue {
				g.Expect(c.Message).To(Equal(tt.message))
			}
		})
	}
}

// TestBypassHook checks how a bypass of spec.bypass.machines changes the
// failed hook it names, for an upgrade's Machine and a removal alike.
func TestBypassHook(t *testing.T) {
	const gen = 3
	failed := func() []upgradev1.HookRunStatus {
		return []upgradev1.HookRunStatus{
			{Name: "drain-ok", Point: upgradev1.HookPointPreDrain, Phase: upgradev1.HookRunSucceeded},
			{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunFailed, Attempts: 2, JobName: "j-2", Message: "boom"},
		}
	}
	tests := []struct {
		name    string
		hooks   func() []upgradev1.HookRunStatus
		bypass  upgradev1.MachineBypass
		applied bool
		verb    string
		want    upgradev1.HookRunStatus
	}{
		{name: "skip counts the failed hook as succeeded", hooks: failed,
			bypass:  upgradev1.MachineBypass{Machine: "w-1", Hook: "osd-out", Action: upgradev1.HookBypassSkip},
			applied: true, verb: "skipped",
			want: upgradev1.HookRunStatus{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunSkipped, Attempts: 2, JobName: "j-2", Message: "boom", BypassedGeneration: gen}},
		{name: "retry makes the next attempt due now", hooks: failed,
			bypass:  upgradev1.MachineBypass{Machine: "w-1", Hook: "osd-out", Action: upgradev1.HookBypassRetry},
			applied: true, verb: "retried",
			want: upgradev1.HookRunStatus{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunRunning, Attempts: 2, JobName: "j-2", Message: "boom",
				BypassedGeneration: gen, NextAttemptTime: ptrTime(t0)}},
		{name: "a hook that did not fail is left alone", hooks: failed,
			bypass: upgradev1.MachineBypass{Machine: "w-1", Hook: "drain-ok", Action: upgradev1.HookBypassSkip}},
		{name: "a hook that did not run is left alone", hooks: failed,
			bypass: upgradev1.MachineBypass{Machine: "w-1", Hook: "other", Action: upgradev1.HookBypassSkip}},
		{name: "a bypass is applied once per generation of the spec", hooks: func() []upgradev1.HookRunStatus {
			h := failed()
			h[1].BypassedGeneration = gen
			return h
		}, bypass: upgradev1.MachineBypass{Machine: "w-1", Hook: "osd-out", Action: upgradev1.HookBypassRetry}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			hooks := tt.hooks()
			before := slices.Clone(hooks)
			verb, applied := BypassHook(hooks, tt.bypass, gen, t0)
			g.Expect(applied).To(Equal(tt.applied))
			g.Expect(verb).To(Equal(tt.verb))
			if !tt.applied {
				g.Expect(hooks).To(Equal(before), "nothing changes")
				return
			}
			g.Expect(hooks[1]).To(Equal(tt.want))
			g.Expect(hooks[0]).To(Equal(before[0]), "the other hooks are left alone")
		})
	}
}
