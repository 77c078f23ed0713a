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

package talosupgradepolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

func rolloutOf(cluster, version string, phase upgradev1.UpgradePhase) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Name: cluster, Generation: 1}}
	u.Spec.ClusterName, u.Spec.TalosVersion = cluster, version
	u.Status.Phase, u.Status.ObservedGeneration = phase, 1
	return u
}

func withKubernetes(u *upgradev1.TalosUpgrade, version string) *upgradev1.TalosUpgrade {
	u.Spec.KubernetesVersion = version
	return u
}

func TestAdmissionGate(t *testing.T) {
	const target = "v1.13.0"
	policy := func(mutate func(p *upgradev1.TalosUpgradePolicy)) *upgradev1.TalosUpgradePolicy {
		p := &upgradev1.TalosUpgradePolicy{}
		p.Spec.TalosVersion = target
		mutate(p)
		return p
	}
	tests := []struct {
		name       string
		policy     *upgradev1.TalosUpgradePolicy
		upgrades   []*upgradev1.TalosUpgrade
		wantReason string
		admits     map[string]bool
	}{
		{
			name:       "no budget, no canaries",
			policy:     policy(func(*upgradev1.TalosUpgradePolicy) {}),
			upgrades:   []*upgradev1.TalosUpgrade{rolloutOf("a", target, upgradev1.UpgradePhaseFailed), rolloutOf("b", target, upgradev1.UpgradePhasePending)},
			wantReason: upgradev1.AdmittingReason, admits: map[string]bool{"b": true},
		},
		{
			name:       "budget spent",
			policy:     policy(func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](1) }),
			upgrades:   []*upgradev1.TalosUpgrade{rolloutOf("a", target, upgradev1.UpgradePhaseFailed), rolloutOf("b", target, upgradev1.UpgradePhasePending)},
			wantReason: upgradev1.FailureBudgetExhaustedReason, admits: map[string]bool{"b": false},
		},
		{
			name:       "a failure of the previous target does not count",
			policy:     policy(func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](1) }),
			upgrades:   []*upgradev1.TalosUpgrade{rolloutOf("a", "v1.12.4", upgradev1.UpgradePhaseFailed), rolloutOf("b", target, upgradev1.UpgradePhasePending)},
			wantReason: upgradev1.AdmittingReason, admits: map[string]bool{"b": true},
		},
		{
			name: "a failure of the previous Kubernetes target does not count",
			policy: policy(func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](1)
				p.Spec.KubernetesVersion = "v1.36.0"
			}),
			upgrades:   []*upgradev1.TalosUpgrade{withKubernetes(rolloutOf("a", target, upgradev1.UpgradePhaseFailed), "v1.35.2"), withKubernetes(rolloutOf("b", target, upgradev1.UpgradePhasePending), "v1.36.0")},
			wantReason: upgradev1.AdmittingReason, admits: map[string]bool{"b": true},
		},
		{
			name: "Kubernetes alone: a failure on any Talos counts",
			policy: policy(func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](1)
				p.Spec.TalosVersion, p.Spec.KubernetesVersion = "", "v1.36.0"
			}),
			upgrades:   []*upgradev1.TalosUpgrade{withKubernetes(rolloutOf("a", "v1.12.4", upgradev1.UpgradePhaseFailed), "v1.36.0"), withKubernetes(rolloutOf("b", target, upgradev1.UpgradePhasePending), "v1.36.0")},
			wantReason: upgradev1.FailureBudgetExhaustedReason, admits: map[string]bool{"b": false},
		},
		{
			name: "canaries first",
			policy: policy(func(p *upgradev1.TalosUpgradePolicy) {
				p.Status.Canaries = []string{"c"}
			}),
			upgrades:   []*upgradev1.TalosUpgrade{rolloutOf("b", target, upgradev1.UpgradePhasePending), rolloutOf("c", target, upgradev1.UpgradePhaseInProgress)},
			wantReason: upgradev1.WaitingForCanariesReason, admits: map[string]bool{"b": false, "c": true},
		},
		{
			name:       "a failed canary stops the wave",
			policy:     policy(func(p *upgradev1.TalosUpgradePolicy) { p.Status.Canaries = []string{"c"} }),
			upgrades:   []*upgradev1.TalosUpgrade{rolloutOf("b", target, upgradev1.UpgradePhasePending), rolloutOf("c", target, upgradev1.UpgradePhaseFailed)},
			wantReason: upgradev1.CanaryFailedReason, admits: map[string]bool{"b": false},
		},
		{
			name:       "canaries done",
			policy:     policy(func(p *upgradev1.TalosUpgradePolicy) { p.Status.Canaries = []string{"c"} }),
			upgrades:   []*upgradev1.TalosUpgrade{rolloutOf("b", target, upgradev1.UpgradePhasePending), rolloutOf("c", target, upgradev1.UpgradePhaseCompleted)},
			wantReason: upgradev1.AdmittingReason, admits: map[string]bool{"b": true},
		},
		{
			name:       "a canary still on the previous target is not done",
			policy:     policy(func(p *upgradev1.TalosUpgradePolicy) { p.Status.Canaries = []string{"c"} }),
			upgrades:   []*upgradev1.TalosUpgrade{rolloutOf("b", target, upgradev1.UpgradePhasePending), rolloutOf("c", "v1.12.4", upgradev1.UpgradePhaseCompleted)},
			wantReason: upgradev1.WaitingForCanariesReason, admits: map[string]bool{"b": false, "c": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			gate := admissionGate(tt.policy, tt.upgrades, nil)
			g.Expect(gate.reason).To(Equal(tt.wantReason))
			for cluster, want := range tt.admits {
				g.Expect(gate.admits(cluster)).To(Equal(want), "admits %s", cluster)
			}
		})
	}
}

func TestChooseCanaries(t *testing.T) {
	g := NewWithT(t)
	clusters := []clusterv1.Cluster{{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, {ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "c"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}
	p := &upgradev1.TalosUpgradePolicy{}
	p.Spec.TalosVersion = "v1.13.0"
	p.Spec.Rollout.Canaries = &upgradev1.CanarySpec{ClusterNames: []string{"c", "gone"}, Count: ptr.To[int32](2)}
	chooseCanaries(p, clusters, map[string]bool{"a": true})
	g.Expect(p.Status.Canaries).To(Equal([]string{"c", "b", "d"}), "the named one, then the first two others by name, paused ones left out")
	g.Expect(p.Status.CanaryTarget).To(Equal("v1.13.0"))

	// Chosen once per target: a new Cluster does not move the choice.
	chooseCanaries(p, append(clusters, clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "0"}}), nil)
	g.Expect(p.Status.Canaries).To(Equal([]string{"c", "b", "d"}))
	// A new target chooses again.
	p.Spec.TalosVersion = "v1.13.1"
	chooseCanaries(p, clusters, nil)
	g.Expect(p.Status.Canaries).To(Equal([]string{"c", "a", "b"}))
}

// TestCAPIDrivenRolloutKeepsItsSlot checks admit with a fleet of one slot:
// a finished rollout whose target comes from CAPI keeps its slot while its
// Cluster holds the workload connection (CAPI still rolls the Cluster out
// and hands its Machines over one after the other), and gives it back once
// the connection is given back; a policy's own rollout gives it back as it
// finishes, connected or not.
func TestCAPIDrivenRolloutKeepsItsSlot(t *testing.T) {
	for _, targetFrom := range []upgradev1.TargetSource{upgradev1.TargetFromCAPI, upgradev1.TargetFromPolicy} {
		t.Run(string(targetFrom), func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			const ns = "fleet"
			policy := &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
			policy.Spec.TargetFrom = targetFrom
			policy.Spec.TalosVersion = "v1.13.0"
			policy.Spec.Rollout.MaxClustersInProgress = ptr.To(int32(1))
			clusters := []clusterv1.Cluster{
				{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a", Annotations: map[string]string{upgradev1.WorkloadConnectionAnnotation: "a"}}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}},
			}
			a, b := rolloutOf("a", "v1.13.0", upgradev1.UpgradePhaseCompleted), rolloutOf("b", "v1.13.0", upgradev1.UpgradePhasePending)
			for _, u := range []*upgradev1.TalosUpgrade{a, b} {
				u.Namespace, u.Spec.PolicyName, u.Spec.TargetFrom = ns, policy.Name, targetFrom
			}
			a.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "true"}
			c := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(a, b).
				WithIndex(&upgradev1.TalosUpgrade{}, index.UpgradePolicyNameField, func(o client.Object) []string {
					return []string{o.(*upgradev1.TalosUpgrade).Spec.PolicyName}
				}).Build()
			r := &Reconciler{Client: c}
			admitted := func() map[string]bool {
				out := map[string]bool{}
				for _, name := range []string{"a", "b"} {
					u := &upgradev1.TalosUpgrade{}
					g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
					out[name] = u.Annotations[upgradev1.AdmittedAnnotation] != ""
				}
				return out
			}
			live := func() []*upgradev1.TalosUpgrade {
				list := &upgradev1.TalosUpgradeList{}
				g.Expect(c.List(ctx, list)).To(Succeed())
				out := make([]*upgradev1.TalosUpgrade, len(list.Items))
				for i := range list.Items {
					out[i] = &list.Items[i]
				}
				return out
			}

			g.Expect(r.admit(ctx, policy, clusters, live(), nil)).To(Succeed())
			if targetFrom == upgradev1.TargetFromCAPI {
				g.Expect(admitted()).To(Equal(map[string]bool{"a": true, "b": false}), "connected, CAPI's Cluster keeps its slot")
			} else {
				g.Expect(admitted()).To(Equal(map[string]bool{"a": false, "b": true}), "a policy's finished rollout gives its slot back")
				return
			}

			delete(clusters[0].Annotations, upgradev1.WorkloadConnectionAnnotation)
			g.Expect(r.admit(ctx, policy, clusters, live(), nil)).To(Succeed())
			g.Expect(admitted()).To(Equal(map[string]bool{"a": false, "b": true}), "disconnected, the slot goes to the next Cluster")
		})
	}
}
