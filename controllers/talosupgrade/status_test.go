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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

const (
	pending   = upgradev1.MachinePhasePending
	draining  = upgradev1.MachinePhaseDraining
	completed = upgradev1.MachinePhaseCompleted
	failed    = upgradev1.MachinePhaseFailed
)

// statusScope returns the scope of a rollout of policy "p" on Cluster
// "alpha", observed, with Machines in the given phases; mutate changes it.
func statusScope(phases []upgradev1.MachinePhase, mutate ...func(s *scope)) *scope {
	u := &upgradev1.TalosUpgrade{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"},
		Spec:       upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "p", UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}},
	}
	conditions.Set(u, metav1.Condition{Type: upgradev1.PreflightSucceededCondition, Status: metav1.ConditionTrue, Reason: upgradev1.PreflightPassedReason})
	u.Status.PreflightTarget = disruption.PreflightTarget(u)
	for i, p := range phases {
		u.Status.Machines = append(u.Status.Machines, upgradev1.MachineUpgradeStatus{Machine: string(rune('a' + i)), Phase: p})
	}
	s := &scope{Rollout: disruption.Rollout{Upgrade: u, Now: time.Now(), Cluster: builder.Cluster("ns", "alpha", builder.WithPolicy("p")), Machines: map[string]*clusterv1.Machine{}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func TestRolloutPhase(t *testing.T) {
	tests := []struct {
		name   string
		scope  *scope
		reason string
		want   upgradev1.UpgradePhase
	}{
		{name: "every Machine on the target", scope: statusScope([]upgradev1.MachinePhase{completed, completed}), want: upgradev1.UpgradePhaseCompleted},
		{name: "a Machine in flight", scope: statusScope([]upgradev1.MachinePhase{completed, draining}), want: upgradev1.UpgradePhaseInProgress},
		{name: "halted by a failure", scope: statusScope([]upgradev1.MachinePhase{failed, pending}), want: upgradev1.UpgradePhaseFailed},
		{
			name:  "cancelled",
			scope: statusScope([]upgradev1.MachinePhase{completed, pending}, func(s *scope) { s.Upgrade.Spec.Cancel = true }),
			want:  upgradev1.UpgradePhaseFailed,
		},
		{
			name:  "left the policy, nothing in flight",
			scope: statusScope([]upgradev1.MachinePhase{completed, pending}, func(s *scope) { delete(s.Cluster.Labels, upgradev1.PolicyLabel) }),
			want:  upgradev1.UpgradePhaseDetached,
		},
		{
			name:  "left the policy, a Machine in flight finishes",
			scope: statusScope([]upgradev1.MachinePhase{draining, pending}, func(s *scope) { delete(s.Cluster.Labels, upgradev1.PolicyLabel) }),
			want:  upgradev1.UpgradePhaseInProgress,
		},
		{
			name:  "left the policy after it completed",
			scope: statusScope([]upgradev1.MachinePhase{completed}, func(s *scope) { delete(s.Cluster.Labels, upgradev1.PolicyLabel) }),
			want:  upgradev1.UpgradePhaseCompleted,
		},
		{
			name:  "a paused Cluster with a Machine in flight is Paused",
			scope: statusScope([]upgradev1.MachinePhase{draining, pending}, func(s *scope) { s.Cluster.Spec.Paused = ptrTo(true) }),
			want:  upgradev1.UpgradePhasePaused,
		},
		{
			name:  "paused by a user",
			scope: statusScope([]upgradev1.MachinePhase{pending}, func(s *scope) { s.Upgrade.Spec.Paused = true }),
			want:  upgradev1.UpgradePhasePaused,
		},
		{
			name:  "preflight not passed",
			scope: statusScope([]upgradev1.MachinePhase{pending}, func(s *scope) { s.Upgrade.Status.PreflightTarget = "" }),
			want:  upgradev1.UpgradePhasePreflight,
		},
		{name: "held by the health checks", scope: statusScope([]upgradev1.MachinePhase{pending}), reason: upgradev1.WaitingForHealthChecksReason, want: upgradev1.UpgradePhaseWaitingForHealthChecks},
		{name: "not started", scope: statusScope([]upgradev1.MachinePhase{pending}), want: upgradev1.UpgradePhasePending},
		{
			name:  "started, between Machines",
			scope: statusScope([]upgradev1.MachinePhase{completed, pending}, func(s *scope) { s.Upgrade.Status.StartTime = ptrTime(s.Now) }),
			want:  upgradev1.UpgradePhaseInProgress,
		},
		{
			name:  "a joiner after completion goes back to work",
			scope: statusScope([]upgradev1.MachinePhase{completed, pending}, func(s *scope) { s.Upgrade.Status.Phase = upgradev1.UpgradePhaseCompleted }),
			want:  upgradev1.UpgradePhasePending,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			counts := disruption.CountMachines(tt.scope.Upgrade.Status.Machines)
			g.Expect(rolloutPhase(tt.scope, counts, tt.scope.End(counts), tt.reason)).To(Equal(tt.want))
		})
	}
}

func TestSetProgressingCondition(t *testing.T) {
	tests := []struct {
		name       string
		phase      upgradev1.UpgradePhase
		counts     disruption.MachineCounts
		message    string
		reason     string
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "completed", phase: upgradev1.UpgradePhaseCompleted, counts: disruption.MachineCounts{Total: 2, Completed: 2}, wantStatus: metav1.ConditionFalse, wantReason: upgradev1.UpgradeCompletedReason},
		{name: "Machines in flight", phase: upgradev1.UpgradePhaseInProgress, counts: disruption.MachineCounts{Total: 3, Running: 2}, wantStatus: metav1.ConditionTrue, wantReason: upgradev1.MachinesUpgradingReason, wantMsg: "2 Machines upgrading"},
		{
			name: "a Machine in flight held by a hook", phase: upgradev1.UpgradePhaseInProgress, counts: disruption.MachineCounts{Total: 3, Running: 1},
			message: `machine "a" held at preDrain by "x"`, reason: upgradev1.WaitingForHoldReason,
			wantStatus: metav1.ConditionTrue, wantReason: upgradev1.WaitingForHoldReason, wantMsg: `1 Machines upgrading; machine "a" held`,
		},
		{
			name: "waiting for a slot", phase: upgradev1.UpgradePhasePending, counts: disruption.MachineCounts{Total: 1},
			message: "waiting for the policy", reason: upgradev1.WaitingForClusterSlotReason,
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.WaitingForClusterSlotReason, wantMsg: "waiting for the policy",
		},
		{name: "preflight without a reason", phase: upgradev1.UpgradePhasePreflight, counts: disruption.MachineCounts{Total: 1}, wantStatus: metav1.ConditionFalse, wantReason: upgradev1.WaitingForPreflightReason},
		{
			name: "detached", phase: upgradev1.UpgradePhaseDetached, counts: disruption.MachineCounts{Total: 2, Completed: 1},
			message: "left", reason: upgradev1.ClusterLeftPolicyReason,
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.ClusterLeftPolicyReason, wantMsg: "left",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{}
			setProgressingCondition(u, tt.phase, tt.counts, tt.message, tt.reason)
			c := conditions.Get(u, upgradev1.ProgressingCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(ContainSubstring(tt.wantMsg))
		})
	}
}

func TestSetCompletedCondition(t *testing.T) {
	tests := []struct {
		name       string
		phase      upgradev1.UpgradePhase
		counts     disruption.MachineCounts
		end        disruption.Ending
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "completed", phase: upgradev1.UpgradePhaseCompleted, counts: disruption.MachineCounts{Total: 2, Completed: 2}, wantStatus: metav1.ConditionTrue, wantReason: upgradev1.UpgradeCompletedReason, wantMsg: "all 2 Machines run v1.13.0"},
		{name: "in progress", phase: upgradev1.UpgradePhaseInProgress, counts: disruption.MachineCounts{Total: 3, Completed: 1}, wantStatus: metav1.ConditionFalse, wantReason: upgradev1.MachinesUpgradingReason, wantMsg: "1 of 3 Machines run v1.13.0"},
		{
			name: "failed", phase: upgradev1.UpgradePhaseFailed, counts: disruption.MachineCounts{Total: 3, Failed: 1},
			end:        disruption.Ending{Phase: upgradev1.UpgradePhaseFailed, Reason: upgradev1.MachineFailedReason, Message: `Machine "a" failed: boom`},
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.MachineFailedReason, wantMsg: `1 of 3 Machines failed; first: Machine "a" failed: boom`,
		},
		{
			name: "cancelled", phase: upgradev1.UpgradePhaseFailed, counts: disruption.MachineCounts{Total: 3},
			end:        disruption.Ending{Phase: upgradev1.UpgradePhaseFailed, Reason: upgradev1.RolloutCancelledReason, Message: "the rollout was cancelled"},
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.RolloutCancelledReason, wantMsg: "cancelled",
		},
		{
			name: "detached", phase: upgradev1.UpgradePhaseDetached, counts: disruption.MachineCounts{Total: 3},
			end:        disruption.Ending{Phase: upgradev1.UpgradePhaseDetached, Reason: upgradev1.ClusterLeftPolicyReason, Message: "left"},
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.ClusterLeftPolicyReason, wantMsg: "left",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}}}
			setCompletedCondition(u, tt.phase, tt.counts, tt.end)
			c := conditions.Get(u, upgradev1.CompletedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(ContainSubstring(tt.wantMsg))
		})
	}
}

func TestSetPausedCondition(t *testing.T) {
	tests := []struct {
		name       string
		phase      upgradev1.UpgradePhase
		reason     string
		wantPaused bool
	}{
		{name: "paused Cluster", phase: upgradev1.UpgradePhasePaused, reason: upgradev1.ClusterPausedReason, wantPaused: true},
		{name: "failure policy", phase: upgradev1.UpgradePhasePaused, reason: upgradev1.FailurePolicyPausedReason, wantPaused: true},
		{name: "not paused", phase: upgradev1.UpgradePhaseInProgress, reason: upgradev1.MachinesUpgradingReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{}
			conditions.Set(u, metav1.Condition{Type: upgradev1.PausedCondition, Status: metav1.ConditionTrue, Reason: "Old"})
			setPausedCondition(u, tt.phase, "why", tt.reason)
			g.Expect(conditions.IsTrue(u, upgradev1.PausedCondition)).To(Equal(tt.wantPaused))
			if tt.wantPaused {
				g.Expect(conditions.GetReason(u, upgradev1.PausedCondition)).To(Equal(tt.reason))
			}
		})
	}
}

func TestPause(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *scope)
		want   string
	}{
		{name: "not paused", mutate: func(*scope) {}},
		{name: "Cluster paused", mutate: func(s *scope) { s.Cluster.Spec.Paused = ptrTo(true) }, want: upgradev1.ClusterPausedReason},
		{name: "Cluster paused by annotation", mutate: func(s *scope) { s.Cluster.Annotations = map[string]string{clusterv1.PausedAnnotation: ""} }, want: upgradev1.ClusterPausedReason},
		{name: "rollout paused", mutate: func(s *scope) { s.Upgrade.Spec.Paused = true }, want: upgradev1.RolloutPausedReason},
		{
			name: "paused by the failure policy",
			mutate: func(s *scope) {
				s.Upgrade.Spec.Paused = true
				s.Upgrade.Annotations = map[string]string{disruption.PausedByFailureAnnotation: "1"}
			},
			want: upgradev1.FailurePolicyPausedReason,
		},
		{
			name: "policy paused",
			mutate: func(s *scope) {
				s.Policy = &upgradev1.TalosUpgradePolicy{Spec: upgradev1.TalosUpgradePolicySpec{Paused: true}}
			},
			want: upgradev1.RolloutPausedReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := statusScope([]upgradev1.MachinePhase{pending}, tt.mutate)
			reason, _ := s.Pause()
			g.Expect(reason).To(Equal(tt.want))
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestSetBypassedCondition(t *testing.T) {
	tests := []struct {
		name     string
		bypasses []*upgradev1.BypassSpec
		want     string
	}{
		{name: "nothing bypassed"},
		{
			name:     "health checks, by a named user",
			bypasses: []*upgradev1.BypassSpec{{HealthChecks: true, Reason: "INC-1", RequestedBy: "alice"}},
			want:     "health checks bypassed by alice: INC-1",
		},
		{
			name: "a hook and holds, requester unknown, and the policy's",
			bypasses: []*upgradev1.BypassSpec{
				{Machines: []upgradev1.MachineBypass{{Machine: "cp-0", Hook: "noout", Action: upgradev1.HookBypassSkip}}, HoldOwners: []string{"backup"}, Reason: "INC-2"},
				{HealthChecks: true, Reason: "INC-3", RequestedBy: "bob"},
			},
			want: `hook "noout" of Machine "cp-0" (Skip), the holds of backup bypassed by an administrator: INC-2; health checks bypassed by bob: INC-3`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{}
			conditions.Set(u, metav1.Condition{Type: upgradev1.BypassedCondition, Status: metav1.ConditionTrue, Reason: "Old"})
			setBypassedCondition(u, tt.bypasses)
			c := conditions.Get(u, upgradev1.BypassedCondition)
			if tt.want == "" {
				g.Expect(c).To(BeNil(), "the condition goes with the bypass")
				return
			}
			g.Expect(c.Reason).To(Equal(upgradev1.BypassRequestedReason))
			g.Expect(c.Message).To(Equal(tt.want))
		})
	}
}
