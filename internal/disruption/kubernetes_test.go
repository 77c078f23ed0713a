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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestKeepsPodsRunning: which Kubernetes changes cordon a node without
// draining it.
func TestKeepsPodsRunning(t *testing.T) {
	kube := func(part upgradev1.KubernetesPart) *upgradev1.MachineKubernetesStatus {
		return &upgradev1.MachineKubernetesStatus{Part: part, Version: "v1.36.0", State: upgradev1.MachineConfigPending}
	}
	asked := metav1.NewTime(t0)
	tests := []struct {
		name  string
		drain upgradev1.KubeletDrain
		st    upgradev1.MachineUpgradeStatus
		want  bool
	}{
		{"the control plane's components", "", upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionKubernetes, Kubernetes: kube(upgradev1.KubernetesPartControlPlane)}, true},
		{"a kubelet, by default", "", upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionKubernetes, Kubernetes: kube(upgradev1.KubernetesPartKubelet)}, false},
		{"a kubelet, drain Drain", upgradev1.KubeletDrainDrain, upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionKubernetes, Kubernetes: kube(upgradev1.KubernetesPartKubelet)}, false},
		{"a kubelet, drain Never", upgradev1.KubeletDrainNever, upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionKubernetes, Kubernetes: kube(upgradev1.KubernetesPartKubelet)}, true},
		{"a kubelet with a Talos upgrade", upgradev1.KubeletDrainNever, upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionUpgrade, Kubernetes: kube(upgradev1.KubernetesPartKubelet)}, false},
		{"a kubelet with a reboot asked for", upgradev1.KubeletDrainNever, upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionKubernetes, Kubernetes: kube(upgradev1.KubernetesPartKubelet), RebootAfter: &asked}, false},
		{
			"the components with a configuration change",
			"",
			upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionKubernetes, Kubernetes: kube(upgradev1.KubernetesPartControlPlane), Config: &upgradev1.MachineConfigStatus{State: upgradev1.MachineConfigPending}},
			false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{Kubelet: upgradev1.KubeletSpec{Drain: tt.drain}}}
			NewWithT(t).Expect(KeepsPodsRunning(spec, &tt.st)).To(Equal(tt.want))
		})
	}
}

// TestSettleOnTargetWithKubernetes: a record on its Talos target with a
// Kubernetes change waits to read the node, is a Kubernetes action when
// the node's configuration does not name the version, and is done when it
// does.
func TestSettleOnTargetWithKubernetes(t *testing.T) {
	tests := []struct {
		name        string
		state       upgradev1.MachineConfigState
		wantSettled bool
		wantPhase   upgradev1.MachinePhase
		wantAction  upgradev1.MachineAction
		wantMessage string
	}{
		{"not read yet", upgradev1.MachineConfigUnknown, false, upgradev1.MachinePhasePending, "", `waiting to read the machine configuration of node "n-0": the Kubelet of Kubernetes v1.36.0`},
		{"to apply", upgradev1.MachineConfigPending, true, upgradev1.MachinePhasePending, upgradev1.MachineActionKubernetes, ""},
		{"runs it already", upgradev1.MachineConfigConverged, true, upgradev1.MachinePhaseCompleted, "", "already runs v1.13.1 and runs kubelet v1.36.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := &upgradev1.MachineUpgradeStatus{
				Machine: "m-0", Node: "n-0", FromVersion: "v1.13.1", TargetVersion: "v1.13.1", Phase: upgradev1.MachinePhasePending,
				Kubernetes: &upgradev1.MachineKubernetesStatus{Part: upgradev1.KubernetesPartKubelet, Version: "v1.36.0", State: tt.state},
			}
			g.Expect(SettleOnTarget(t0, st, "v1.13.1")).To(Equal(tt.wantSettled))
			g.Expect(st.Phase).To(Equal(tt.wantPhase))
			g.Expect(st.Action).To(Equal(tt.wantAction))
			g.Expect(st.Message).To(Equal(tt.wantMessage))
		})
	}
}

// TestKubernetesProven: a Ready node whose Kubernetes change was applied
// passes its verification once what runs is the version, waits before,
// and fails past rebootTimeout from the change.
func TestKubernetesProven(t *testing.T) {
	applied := metav1.NewTime(t0.Add(-time.Minute))
	tests := []struct {
		name       string
		part       upgradev1.KubernetesPart
		state      upgradev1.MachineConfigState
		read       *KubernetesRead
		now        time.Time
		wantOK     bool
		wantState  upgradev1.MachineConfigState
		wantFail   string
		wantRequeu time.Duration
	}{
		{name: "no Kubernetes change left to prove", part: upgradev1.KubernetesPartKubelet, state: upgradev1.MachineConfigConverged, now: t0, wantOK: true, wantState: upgradev1.MachineConfigConverged},
		{name: "the kubelet runs it", part: upgradev1.KubernetesPartKubelet, state: upgradev1.MachineConfigApplied, read: &KubernetesRead{Proven: true}, now: t0, wantOK: true, wantState: upgradev1.MachineConfigConverged},
		{name: "the kubelet does not yet: the Node's watch brings it", part: upgradev1.KubernetesPartKubelet, state: upgradev1.MachineConfigApplied, read: &KubernetesRead{Message: "kubelet v1.35.2"}, now: t0, wantState: upgradev1.MachineConfigApplied, wantRequeu: 15*time.Minute - time.Minute + time.Second},
		{name: "the static Pods do not yet: polled", part: upgradev1.KubernetesPartControlPlane, state: upgradev1.MachineConfigApplied, read: &KubernetesRead{Message: "kube-apiserver-n-0 runs v1.35.2"}, now: t0, wantState: upgradev1.MachineConfigApplied, wantRequeu: staticPodPoll},
		{name: "the static Pods never: failed", part: upgradev1.KubernetesPartControlPlane, state: upgradev1.MachineConfigApplied, read: &KubernetesRead{Message: "kube-apiserver-n-0 is not Ready"}, now: t0.Add(15 * time.Minute), wantState: upgradev1.MachineConfigApplied, wantFail: "its static Pods are not Ready on v1.36.0 within rebootTimeout 15m0s: kube-apiserver-n-0 is not Ready"},
		{name: "not read: waits", part: upgradev1.KubernetesPartControlPlane, state: upgradev1.MachineConfigApplied, now: t0, wantState: upgradev1.MachineConfigApplied, wantRequeu: rebootPoll},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := &upgradev1.MachineUpgradeStatus{
				Machine: "m-0", Node: "n-0", Phase: upgradev1.MachinePhaseVerifying, PhaseStartTime: &applied,
				Kubernetes: &upgradev1.MachineKubernetesStatus{Part: tt.part, Version: "v1.36.0", State: tt.state, AppliedTime: &applied},
			}
			w := &Observation{Now: tt.now, Spec: &upgradev1.TalosUpgradeSpec{}, Kube: tt.read}
			d, ok := kubernetesProven(w, st)
			g.Expect(ok).To(Equal(tt.wantOK))
			g.Expect(st.Kubernetes.State).To(Equal(tt.wantState))
			g.Expect(d.Fail).To(ContainSubstring(tt.wantFail))
			if tt.wantFail != "" {
				g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseFailed))
			}
			g.Expect(d.Requeue).To(Equal(tt.wantRequeu))
		})
	}
}
