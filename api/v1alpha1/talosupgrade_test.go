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

package v1alpha1_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestInProgress checks which rollouts may no longer change target: those
// that took a Machine down or are about to, until they end.
func TestInProgress(t *testing.T) {
	started := &metav1.Time{}
	tests := []struct {
		phase   upgradev1.UpgradePhase
		started bool
		want    bool
	}{
		{phase: "", want: false},
		{phase: upgradev1.UpgradePhasePending, want: false},
		{phase: upgradev1.UpgradePhasePreflight, want: false},
		{phase: upgradev1.UpgradePhasePreflight, started: true, want: true},
		{phase: upgradev1.UpgradePhaseWaitingForHealthChecks, want: true},
		{phase: upgradev1.UpgradePhaseInProgress, want: true},
		{phase: upgradev1.UpgradePhasePaused, want: true},
		{phase: upgradev1.UpgradePhaseDetached, want: false},
		{phase: upgradev1.UpgradePhaseDetached, started: true, want: true},
		{phase: upgradev1.UpgradePhaseCompleted, started: true, want: false},
		{phase: upgradev1.UpgradePhaseFailed, started: true, want: false},
	}
	for _, tt := range tests {
		u := &upgradev1.TalosUpgrade{Status: upgradev1.TalosUpgradeStatus{Phase: tt.phase}}
		if tt.started {
			u.Status.StartTime = started
		}
		NewWithT(t).Expect(u.InProgress()).To(Equal(tt.want), "phase %q, started %v", tt.phase, tt.started)
	}
}

// TestLifecycle checks the one meaning of each lifecycle word: a rollout has
// Ended in Completed, Failed or Detached, and is Finished once the
// controller saw its current spec end; a Machine is InFlight from its first
// hold point until it has Ended.
func TestLifecycle(t *testing.T) {
	g := NewWithT(t)
	ended := map[upgradev1.UpgradePhase]bool{
		upgradev1.UpgradePhasePending: false, upgradev1.UpgradePhasePreflight: false, upgradev1.UpgradePhaseWaitingForHealthChecks: false,
		upgradev1.UpgradePhaseInProgress: false, upgradev1.UpgradePhasePaused: false,
		upgradev1.UpgradePhaseCompleted: true, upgradev1.UpgradePhaseFailed: true, upgradev1.UpgradePhaseDetached: true,
	}
	for phase, want := range ended {
		g.Expect(phase.Ended()).To(Equal(want), "rollout phase %s", phase)
		u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: upgradev1.TalosUpgradeStatus{Phase: phase, ObservedGeneration: 2}}
		g.Expect(u.Finished()).To(Equal(want), "rollout phase %s, current spec seen", phase)
		u.Generation = 3
		g.Expect(u.Finished()).To(BeFalse(), "rollout phase %s, a new spec not seen yet", phase)
	}
	machines := map[upgradev1.MachinePhase][2]bool{ // InFlight, Ended
		upgradev1.MachinePhasePending: {false, false}, upgradev1.MachinePhaseWaitingForHold: {true, false},
		upgradev1.MachinePhaseDraining: {true, false}, upgradev1.MachinePhaseUpgrading: {true, false},
		upgradev1.MachinePhaseRebooting: {true, false}, upgradev1.MachinePhaseVerifying: {true, false},
		upgradev1.MachinePhaseCompleted: {false, true}, upgradev1.MachinePhaseFailed: {false, true},
	}
	for phase, want := range machines {
		g.Expect(phase.InFlight()).To(Equal(want[0]), "Machine phase %s", phase)
		g.Expect(phase.Ended()).To(Equal(want[1]), "Machine phase %s", phase)
	}
}

// TestPolicyTargets checks what a policy's rollouts go to: its Talos and
// Kubernetes targets, any Talos for a policy with a kubernetesVersion alone
// (KeepsTalos), and whatever CAPI asks for a CAPI-driven one. Whether a
// rollout is on them is the policy controller's onTarget.
func TestPolicyTargets(t *testing.T) {
	policy := func(talos, kubernetes string) *upgradev1.TalosUpgradePolicy {
		p := &upgradev1.TalosUpgradePolicy{}
		p.Spec.TalosVersion, p.Spec.KubernetesVersion = talos, kubernetes
		return p
	}
	capi := policy("", "")
	capi.Spec.TargetFrom = upgradev1.TargetFromCAPI
	following := policy("", "v1.36.0")
	following.Spec.Follow = &upgradev1.FollowSpec{}
	for _, tt := range []struct {
		name       string
		policy     *upgradev1.TalosUpgradePolicy
		keepsTalos bool
		targetName string
	}{
		{name: "Talos", policy: policy("v1.13.0", ""), targetName: "v1.13.0"},
		{name: "Talos and Kubernetes", policy: policy("v1.13.0", "v1.36.0"), targetName: "v1.13.0 with Kubernetes v1.36.0"},
		{name: "Kubernetes alone", policy: policy("", "v1.36.0"), keepsTalos: true, targetName: "Kubernetes v1.36.0"},
		{name: "following releases, none chosen yet", policy: following},
		{name: "CAPI decides", policy: capi},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.policy.KeepsTalos()).To(Equal(tt.keepsTalos))
			g.Expect(tt.policy.TargetName()).To(Equal(tt.targetName))
		})
	}
}
