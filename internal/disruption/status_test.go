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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

const (
	pending   = upgradev1.MachinePhasePending
	draining  = upgradev1.MachinePhaseDraining
	completed = upgradev1.MachinePhaseCompleted
	failed    = upgradev1.MachinePhaseFailed
)

// statusRollout returns a rollout of policy "p" on Cluster "alpha",
// observed, with Machines in the given phases; mutate changes it.
func statusRollout(phases []upgradev1.MachinePhase, mutate ...func(s *Rollout)) *Rollout {
	u := &upgradev1.TalosUpgrade{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"},
		Spec:       upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "p", UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}},
	}
	conditions.Set(u, metav1.Condition{Type: upgradev1.PreflightSucceededCondition, Status: metav1.ConditionTrue, Reason: upgradev1.PreflightPassedReason})
	u.Status.PreflightTarget = PreflightTarget(u)
	for i, p := range phases {
		u.Status.Machines = append(u.Status.Machines, upgradev1.MachineUpgradeStatus{Machine: string(rune('a' + i)), Phase: p})
	}
	s := &Rollout{Upgrade: u, Now: time.Now(), Cluster: builder.Cluster("ns", "alpha", builder.WithPolicy("p")), Machines: map[string]*clusterv1.Machine{}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func TestRolloutPhase(t *testing.T) {
	tests := []struct {
		name   string
		scope  *Rollout
		reason string
		want   upgradev1.UpgradePhase
	}{
		{name: "every Machine on the target", scope: statusRollout([]upgradev1.MachinePhase{completed, completed}), want: upgradev1.UpgradePhaseCompleted},
		{name: "a Machine in flight", scope: statusRollout([]upgradev1.MachinePhase{completed, draining}), want: upgradev1.UpgradePhaseInProgress},
		{name: "halted by a failure", scope: statusRollout([]upgradev1.MachinePhase{failed, pending}), want: upgradev1.UpgradePhaseFailed},
		{
			name:  "cancelled",
			scope: statusRollout([]upgradev1.MachinePhase{completed, pending}, func(s *Rollout) { s.Upgrade.Spec.Cancel = true }),
			want:  upgradev1.UpgradePhaseFailed,
		},
		{
			name:  "left the policy, nothing in flight",
			scope: statusRollout([]upgradev1.MachinePhase{completed, pending}, func(s *Rollout) { delete(s.Cluster.Labels, upgradev1.PolicyLabel) }),
			want:  upgradev1.UpgradePhaseDetached,
		},
		{
			name:  "left the policy, a Machine in flight finishes",
			scope: statusRollout([]upgradev1.MachinePhase{draining, pending}, func(s *Rollout) { delete(s.Cluster.Labels, upgradev1.PolicyLabel) }),
			want:  upgradev1.UpgradePhaseInProgress,
		},
		{
			name:  "left the policy after it completed",
			scope: statusRollout([]upgradev1.MachinePhase{completed}, func(s *Rollout) { delete(s.Cluster.Labels, upgradev1.PolicyLabel) }),
			want:  upgradev1.UpgradePhaseCompleted,
		},
		{
			name:  "a paused Cluster with a Machine in flight is Paused",
			scope: statusRollout([]upgradev1.MachinePhase{draining, pending}, func(s *Rollout) { s.Cluster.Spec.Paused = ptr.To(true) }),
			want:  upgradev1.UpgradePhasePaused,
		},
		{
			name:  "paused by a user",
			scope: statusRollout([]upgradev1.MachinePhase{pending}, func(s *Rollout) { s.Upgrade.Spec.Paused = true }),
			want:  upgradev1.UpgradePhasePaused,
		},
		{
			name:  "preflight not passed",
			scope: statusRollout([]upgradev1.MachinePhase{pending}, func(s *Rollout) { s.Upgrade.Status.PreflightTarget = "" }),
			want:  upgradev1.UpgradePhasePreflight,
		},
		{name: "held by the health checks", scope: statusRollout([]upgradev1.MachinePhase{pending}), reason: upgradev1.WaitingForHealthChecksReason, want: upgradev1.UpgradePhaseWaitingForHealthChecks},
		{name: "not started", scope: statusRollout([]upgradev1.MachinePhase{pending}), want: upgradev1.UpgradePhasePending},
		{
			name:  "started, between Machines",
			scope: statusRollout([]upgradev1.MachinePhase{completed, pending}, func(s *Rollout) { s.Upgrade.Status.StartTime = ptrTime(s.Now) }),
			want:  upgradev1.UpgradePhaseInProgress,
		},
		{
			name:  "a joiner after completion goes back to work",
			scope: statusRollout([]upgradev1.MachinePhase{completed, pending}, func(s *Rollout) { s.Upgrade.Status.Phase = upgradev1.UpgradePhaseCompleted }),
			want:  upgradev1.UpgradePhasePending,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			counts := CountMachines(tt.scope.Upgrade.Status.Machines)
			g.Expect(tt.scope.Phase(counts, tt.scope.End(counts), tt.reason)).To(Equal(tt.want))
		})
	}
}

func TestProgressingCondition(t *testing.T) {
	tests := []struct {
		name       string
		phase      upgradev1.UpgradePhase
		counts     MachineCounts
		message    string
		reason     string
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "completed", phase: upgradev1.UpgradePhaseCompleted, counts: MachineCounts{Total: 2, Completed: 2}, wantStatus: metav1.ConditionFalse, wantReason: upgradev1.UpgradeCompletedReason},
		{name: "Machines in flight", phase: upgradev1.UpgradePhaseInProgress, counts: MachineCounts{Total: 3, Running: 2}, wantStatus: metav1.ConditionTrue, wantReason: upgradev1.MachinesUpgradingReason, wantMsg: "2 Machines upgrading"},
		{
			name: "a Machine in flight held by a hook", phase: upgradev1.UpgradePhaseInProgress, counts: MachineCounts{Total: 3, Running: 1},
			message: `machine "a" held at preDrain by "x"`, reason: upgradev1.WaitingForHoldReason,
			wantStatus: metav1.ConditionTrue, wantReason: upgradev1.WaitingForHoldReason, wantMsg: `1 Machines upgrading; machine "a" held`,
		},
		{
			name: "waiting for a slot", phase: upgradev1.UpgradePhasePending, counts: MachineCounts{Total: 1},
			message: "waiting for the policy", reason: upgradev1.WaitingForClusterSlotReason,
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.WaitingForClusterSlotReason, wantMsg: "waiting for the policy",
		},
		{name: "preflight without a reason", phase: upgradev1.UpgradePhasePreflight, counts: MachineCounts{Total: 1}, wantStatus: metav1.ConditionFalse, wantReason: upgradev1.WaitingForPreflightReason},
		{
			name: "detached", phase: upgradev1.UpgradePhaseDetached, counts: MachineCounts{Total: 2, Completed: 1},
			message: "left", reason: upgradev1.ClusterLeftPolicyReason,
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.ClusterLeftPolicyReason, wantMsg: "left",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := ProgressingCondition(tt.phase, tt.counts, tt.message, tt.reason)
			g.Expect(c.Type).To(Equal(upgradev1.ProgressingCondition))
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(ContainSubstring(tt.wantMsg))
		})
	}
}

func TestCompletedCondition(t *testing.T) {
	tests := []struct {
		name       string
		phase      upgradev1.UpgradePhase
		counts     MachineCounts
		end        Ending
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "completed", phase: upgradev1.UpgradePhaseCompleted, counts: MachineCounts{Total: 2, Completed: 2}, wantStatus: metav1.ConditionTrue, wantReason: upgradev1.UpgradeCompletedReason, wantMsg: "all 2 Machines run v1.13.0"},
		{name: "in progress", phase: upgradev1.UpgradePhaseInProgress, counts: MachineCounts{Total: 3, Completed: 1}, wantStatus: metav1.ConditionFalse, wantReason: upgradev1.MachinesUpgradingReason, wantMsg: "1 of 3 Machines run v1.13.0"},
		{
			name: "failed", phase: upgradev1.UpgradePhaseFailed, counts: MachineCounts{Total: 3, Failed: 1},
			end:        Ending{Phase: upgradev1.UpgradePhaseFailed, Reason: upgradev1.MachineFailedReason, Message: `Machine "a" failed: boom`},
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.MachineFailedReason, wantMsg: `1 of 3 Machines failed; first: Machine "a" failed: boom`,
		},
		{
			name: "cancelled", phase: upgradev1.UpgradePhaseFailed, counts: MachineCounts{Total: 3},
			end:        Ending{Phase: upgradev1.UpgradePhaseFailed, Reason: upgradev1.RolloutCancelledReason, Message: "the rollout was cancelled"},
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.RolloutCancelledReason, wantMsg: "cancelled",
		},
		{
			name: "detached", phase: upgradev1.UpgradePhaseDetached, counts: MachineCounts{Total: 3},
			end:        Ending{Phase: upgradev1.UpgradePhaseDetached, Reason: upgradev1.ClusterLeftPolicyReason, Message: "left"},
			wantStatus: metav1.ConditionFalse, wantReason: upgradev1.ClusterLeftPolicyReason, wantMsg: "left",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := CompletedCondition("v1.13.0", tt.phase, tt.counts, tt.end)
			g.Expect(c.Type).To(Equal(upgradev1.CompletedCondition))
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.Message).To(ContainSubstring(tt.wantMsg))
		})
	}
}

func TestPausedCondition(t *testing.T) {
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
			c, paused := PausedCondition(tt.phase, "why", tt.reason)
			g.Expect(paused).To(Equal(tt.wantPaused))
			if tt.wantPaused {
				g.Expect(c.Type).To(Equal(upgradev1.PausedCondition))
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(Equal(tt.reason))
			}
		})
	}
}

func TestPause(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *Rollout)
		want   string
	}{
		{name: "not paused", mutate: func(*Rollout) {}},
		{name: "Cluster paused", mutate: func(s *Rollout) { s.Cluster.Spec.Paused = ptr.To(true) }, want: upgradev1.ClusterPausedReason},
		{name: "Cluster paused by annotation", mutate: func(s *Rollout) { s.Cluster.Annotations = map[string]string{clusterv1.PausedAnnotation: ""} }, want: upgradev1.ClusterPausedReason},
		{name: "rollout paused", mutate: func(s *Rollout) { s.Upgrade.Spec.Paused = true }, want: upgradev1.RolloutPausedReason},
		{
			name: "paused by the failure policy",
			mutate: func(s *Rollout) {
				s.Upgrade.Spec.Paused = true
				s.Upgrade.Annotations = map[string]string{PausedByFailureAnnotation: "1"}
			},
			want: upgradev1.FailurePolicyPausedReason,
		},
		{
			name: "policy paused",
			mutate: func(s *Rollout) {
				s.Policy = &upgradev1.TalosUpgradePolicy{Spec: upgradev1.TalosUpgradePolicySpec{Paused: true}}
			},
			want: upgradev1.RolloutPausedReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := statusRollout([]upgradev1.MachinePhase{pending}, tt.mutate)
			reason, _ := s.Pause()
			g.Expect(reason).To(Equal(tt.want))
		})
	}
}

func TestBypassedCondition(t *testing.T) {
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
			c, bypassed := BypassedCondition(tt.bypasses)
			if tt.want == "" {
				g.Expect(bypassed).To(BeFalse(), "the condition goes with the bypass")
				return
			}
			g.Expect(bypassed).To(BeTrue())
			g.Expect(c.Type).To(Equal(upgradev1.BypassedCondition))
			g.Expect(c.Reason).To(Equal(upgradev1.BypassRequestedReason))
			g.Expect(c.Message).To(Equal(tt.want))
		})
	}
}

// TestBypassHistory: every bypass in force, the rollout's and its policy's,
// is recorded once with who, why, what and when; the record outlives the
// bypass (cleared when the rollout ends), and the oldest records go beyond
// MaxBypassHistory.
func TestBypassHistory(t *testing.T) {
	g := NewWithT(t)
	start := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	s := statusRollout([]upgradev1.MachinePhase{upgradev1.MachinePhasePending}, func(s *Rollout) {
		s.Upgrade.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true, RequestedBy: "alice", Reason: "ceph check is broken, see INC-42"}
		s.Policy = &upgradev1.TalosUpgradePolicy{}
		s.Policy.Spec.Bypass = &upgradev1.BypassSpec{HoldOwners: []string{"storage"}, RequestedBy: "bob", Reason: "the storage operator is down"}
	})
	s.Now = start
	s.RecordBypasses()
	s.Now = start.Add(time.Minute)
	s.RecordBypasses() // Still in force: recorded once.
	g.Expect(s.Upgrade.Status.BypassHistory).To(HaveLen(2))
	rec := s.Upgrade.Status.BypassHistory[0]
	g.Expect(rec.Source).To(Equal(upgradev1.BypassSourceUpgrade))
	g.Expect(rec.RequestedBy).To(Equal("alice"))
	g.Expect(rec.Reason).To(Equal("ceph check is broken, see INC-42"))
	g.Expect(rec.Bypassed).To(Equal("health checks"))
	g.Expect(rec.AppliedTime.Time).To(BeTemporally("==", start))
	g.Expect(s.Upgrade.Status.BypassHistory[1].Source).To(Equal(upgradev1.BypassSourcePolicy))
	g.Expect(s.Upgrade.Status.BypassHistory[1].Bypassed).To(Equal("the holds of storage"))

	// The bypasses are cleared: the records stay.
	s.Upgrade.Spec.Bypass, s.Policy.Spec.Bypass = nil, nil
	s.RecordBypasses()
	g.Expect(s.Upgrade.Status.BypassHistory).To(HaveLen(2))

	// Many more: the oldest go.
	for i := range MaxBypassHistory {
		s.Upgrade.Spec.Bypass = &upgradev1.BypassSpec{MaintenanceWindows: true, RequestedBy: "carol", Reason: fmt.Sprintf("run now #%d", i)}
		s.RecordBypasses()
	}
	g.Expect(s.Upgrade.Status.BypassHistory).To(HaveLen(MaxBypassHistory))
	g.Expect(s.Upgrade.Status.BypassHistory[0].Reason).To(Equal("run now #0"))
	g.Expect(s.Upgrade.Status.BypassHistory[MaxBypassHistory-1].Reason).To(Equal(fmt.Sprintf("run now #%d", MaxBypassHistory-1)))
}
