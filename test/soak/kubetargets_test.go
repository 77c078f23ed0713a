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

package soak

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// rolloutOf builds a TalosUpgrade to Talos target with the Kubernetes
// target kubernetes, in phase, with one record per phase of machines.
func rolloutOf(t *testing.T, target, kubernetes string, phase upgradev1.UpgradePhase, machines ...upgradev1.MachinePhase) *upgradev1.TalosUpgrade {
	t.Helper()
	u := &upgradev1.TalosUpgrade{}
	u.Spec.TalosVersion, u.Spec.KubernetesVersion = target, kubernetes
	u.Status.Phase = phase
	for i, p := range machines {
		st := upgradev1.MachineUpgradeStatus{Machine: string(rune('a' + i)), Phase: p, FromVersion: "v1.13.0", TargetVersion: target}
		u.Status.Machines = append(u.Status.Machines, st)
	}
	return u
}

// TestMidRollout: a Kubernetes target comes mid-rollout once a Machine
// completed the Talos target and another has not started; not before, not
// once the rollout is over, not on a rollout with a Kubernetes target
// already, nor for a Machine that ran the target already (it settles).
func TestMidRollout(t *testing.T) {
	const target = "v1.13.1"
	onTarget := rolloutOf(t, target, "", upgradev1.UpgradePhaseInProgress, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhasePending)
	onTarget.Status.Machines[0].FromVersion = target
	tests := []struct {
		name string
		u    *upgradev1.TalosUpgrade
		want bool
	}{
		{name: "one done, one waiting", u: rolloutOf(t, target, "", upgradev1.UpgradePhaseInProgress, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseDraining, upgradev1.MachinePhasePending), want: true},
		{name: "none done yet", u: rolloutOf(t, target, "", upgradev1.UpgradePhaseInProgress, upgradev1.MachinePhaseDraining, upgradev1.MachinePhasePending)},
		{name: "none waiting", u: rolloutOf(t, target, "", upgradev1.UpgradePhaseInProgress, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseDraining)},
		{name: "over", u: rolloutOf(t, target, "", upgradev1.UpgradePhaseCompleted, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhasePending)},
		{name: "another Talos target", u: rolloutOf(t, "v1.13.2", "", upgradev1.UpgradePhaseInProgress, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhasePending)},
		{name: "a Kubernetes target already", u: rolloutOf(t, target, kubernetesTo, upgradev1.UpgradePhaseInProgress, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhasePending)},
		{name: "the Machine done ran the target already", u: onTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(midRollout(tt.u, target)).To(Equal(tt.want))
		})
	}
}

// TestRetargetState: invariant 16 takes a rollout given a Kubernetes
// target mid-rollout as retargeted once its path has the target (with its
// Talos target), waits retargetTimeout for it, and finds one still without
// it then, naming its preflight; a path of the Talos target alone, or of
// another Kubernetes target, is not a retarget; a rollout that ended
// otherwise than Completed (a terminal fault) is not judged.
func TestRetargetState(t *testing.T) {
	const target = "v1.13.1"
	inFlight := func() *upgradev1.TalosUpgrade {
		u := rolloutOf(t, target, kubernetesTo, upgradev1.UpgradePhaseInProgress, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseUpgrading, upgradev1.MachinePhasePending)
		u.Status.Conditions = []metav1.Condition{{Type: upgradev1.PreflightSucceededCondition, Status: metav1.ConditionFalse, Reason: upgradev1.UnsupportedVersionStepReason,
			Message: "the Machines of Cluster c run Talos v1.13.0, v1.13.1: a Kubernetes upgrade is planned from one Talos version"}}
		return u
	}
	withPath := func(talosTarget, kubernetesTarget string) *upgradev1.TalosUpgrade {
		u := inFlight()
		u.Status.Path = &upgradev1.UpgradePathStatus{Target: talosTarget, KubernetesTarget: kubernetesTarget, Hops: []upgradev1.UpgradeHop{
			{Version: target, KubernetesVersion: kubernetesTo, Stage: upgradev1.HopStageKubernetesControlPlane},
			{Version: target, KubernetesVersion: kubernetesTo, Stage: upgradev1.HopStageNodes},
		}}
		return u
	}
	failed := inFlight()
	failed.Status.Phase = upgradev1.UpgradePhaseFailed
	failed.Status.Machines[1].Phase = upgradev1.MachinePhaseFailed
	tests := []struct {
		name    string
		u       *upgradev1.TalosUpgrade
		waited  time.Duration
		state   string
		problem string
	}{
		{name: "planned", u: withPath(target, kubernetesTo), waited: time.Second, state: retargetPlanned},
		{name: "planned late is planned", u: withPath(target, kubernetesTo), waited: 10 * time.Minute, state: retargetPlanned},
		{name: "not yet", u: inFlight(), waited: retargetTimeout - time.Second, state: retargetWaiting},
		{name: "held at the preflight past the timeout", u: inFlight(), waited: retargetTimeout, state: retargetWaiting, problem: "a Kubernetes upgrade is planned from one Talos version"},
		{name: "a path of another Kubernetes target", u: withPath(target, "v1.35.9"), waited: retargetTimeout, state: retargetWaiting, problem: "not planned within"},
		{name: "a path of another Talos target", u: withPath("v1.13.2", kubernetesTo), waited: retargetTimeout, state: retargetWaiting, problem: "waiting to start: c"},
		{name: "failed by a terminal fault", u: failed, waited: retargetTimeout, state: retargetOver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			state, problem := retargetState(tt.u, kubernetesTo, kubeMidRollout, tt.waited)
			g.Expect(state).To(Equal(tt.state))
			if tt.problem == "" {
				g.Expect(problem).To(BeEmpty())
			} else {
				g.Expect(problem).To(ContainSubstring(tt.problem))
			}
		})
	}
}
