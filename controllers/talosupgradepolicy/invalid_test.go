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

package talosupgradepolicy_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// TestInvalidPolicyIsNotReady stores, as an earlier Tollgate or a bypassed
// webhook would have let through, policies whose targets no Talos supports:
// with or without a Cluster selecting them, each reports Ready=False
// Invalid naming spec.kubernetesVersion, and none makes a rollout or admits
// a Cluster; fixed, the policy is Ready and its Cluster gets its rollout.
func TestInvalidPolicyIsNotReady(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := "invalid-policy"
	_, err := builder.Create(ctx, mgmt.Client, nil, builder.ClusterFixture{Namespace: ns, Name: "a", Policy: "pair", ControlPlanes: 1, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	policy := func(name string, mutate func(*upgradev1.UpgradePlan)) *upgradev1.TalosUpgradePolicy {
		p := &upgradev1.TalosUpgradePolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
				TalosVersion: "v1.13.0",
				Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
			}},
		}
		mutate(&p.Spec.UpgradePlan)
		return p
	}
	invalid := map[string]string{
		// The pair of targets, selected by Cluster "a".
		"pair": "spec.kubernetesVersion: Invalid value: \"v1.13.0\": unsupported Kubernetes version for the Talos version: Talos v1.13.0 supports Kubernetes 1.31 to 1.36, not Kubernetes v1.13.0",
		// The same pair, no Cluster selecting it yet.
		"pair-alone": "Talos v1.13.0 supports Kubernetes 1.31 to 1.36, not Kubernetes v1.13.0",
		// Kubernetes alone, a version no Talos runs.
		"kubernetes-alone": "spec.kubernetesVersion: Invalid value: \"v2.0.0\": unsupported Kubernetes version for the Talos version: no Talos version this Tollgate build knows supports Kubernetes v2.0.0",
	}
	g.Expect(mgmt.Client.Create(ctx, policy("pair", func(p *upgradev1.UpgradePlan) { p.KubernetesVersion = "v1.13.0" }))).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, policy("pair-alone", func(p *upgradev1.UpgradePlan) { p.KubernetesVersion = "v1.13.0" }))).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, policy("kubernetes-alone", func(p *upgradev1.UpgradePlan) { p.TalosVersion, p.KubernetesVersion = "", "v2.0.0" }))).To(Succeed())
	startPolicyController(t, controller.Options{})

	g.Eventually(func(g Gomega) {
		for name, msg := range invalid {
			p := &upgradev1.TalosUpgradePolicy{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
			ready := conditions.Get(p, upgradev1.PolicyReadyCondition)
			g.Expect(ready).NotTo(BeNil(), name)
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse), name)
			g.Expect(ready.Reason).To(Equal(upgradev1.PolicyInvalidReason), name)
			g.Expect(ready.Message).To(SatisfyAll(HavePrefix("the policy cannot be carried out as written, and starts no rollout until it is fixed: "), ContainSubstring(msg)), name)
			g.Expect(conditions.GetReason(p, upgradev1.PolicyAdmittingCondition)).To(Equal(upgradev1.PolicyInvalidReason), name)
			g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation), name)
		}
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(upgrades(g, ns)).To(BeEmpty(), "no rollout of a policy that is not valid")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// Fixed, the policy is Ready, and its Cluster gets its rollout.
	p := &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pair"}}
	setKubernetes(g, p, "v1.36.0")
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(conditions.IsTrue(p, upgradev1.PolicyReadyCondition)).To(BeTrue())
		g.Expect(conditions.GetReason(p, upgradev1.PolicyReadyCondition)).To(Equal(upgradev1.PolicyValidReason))
		us := upgrades(g, ns)
		g.Expect(us).To(HaveKey("a"))
		g.Expect(us["a"].Spec.KubernetesVersion).To(Equal("v1.36.0"))
		g.Expect(us["a"].Annotations).To(HaveKey(upgradev1.AdmittedAnnotation))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	// Made invalid again, it reports so and leaves its rollout's plan as
	// it was.
	setKubernetes(g, p, "v1.13.0")
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(conditions.GetReason(p, upgradev1.PolicyReadyCondition)).To(Equal(upgradev1.PolicyInvalidReason))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(upgrades(g, ns)["a"].Spec.KubernetesVersion).To(Equal("v1.36.0"))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
}

// setKubernetes sets the kubernetesVersion of policy p, read again until
// the write is not in conflict with the controller's status updates.
func setKubernetes(g Gomega, p *upgradev1.TalosUpgradePolicy, version string) {
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(p), p)).To(Succeed())
		p.Spec.KubernetesVersion = version
		g.Expect(mgmt.Client.Update(context.Background(), p)).To(Succeed())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}
