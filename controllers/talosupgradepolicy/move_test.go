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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// TestClusterMovesToAnotherPolicy moves a Cluster from policy a to policy b
// while a's rollout is at work there: b neither admits nor counts a's
// rollout as its own (its Cluster is pending), and once a's rollout is over
// b replaces it with its own at once, without waiting for a resync of b.
func TestClusterMovesToAnotherPolicy(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := "cluster-moves"
	_, err := builder.Create(ctx, mgmt.Client, nil, builder.ClusterFixture{Namespace: ns, Name: "alpha", Policy: "a", ControlPlanes: 1})
	g.Expect(err).NotTo(HaveOccurred())
	for name, version := range map[string]string{"a": "v1.13.0", "b": "v1.13.1"} {
		g.Expect(mgmt.Client.Create(ctx, &upgradev1.TalosUpgradePolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
				TalosVersion: version,
				Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
			}},
		})).To(Succeed())
	}
	startPolicyController(t, controller.Options{})

	// a's rollout is admitted and, as the TalosUpgrade controller would
	// say, at work.
	var old *upgradev1.TalosUpgrade
	g.Eventually(func(g Gomega) {
		old = upgrades(g, ns)["alpha"]
		g.Expect(old).NotTo(BeNil())
		g.Expect(old.Annotations).To(HaveKey(upgradev1.AdmittedAnnotation))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	old.Status.Phase = upgradev1.UpgradePhaseInProgress
	old.Status.ObservedGeneration = old.Generation
	g.Expect(mgmt.Client.Status().Update(ctx, old)).To(Succeed())

	// The Cluster moves to b: a's rollout stays until it is over, and b
	// counts the Cluster as pending, not in progress.
	cluster := &clusterv1.Cluster{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alpha"}, cluster)).To(Succeed())
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Labels[upgradev1.PolicyLabel] = "b"
	g.Expect(mgmt.Client.Patch(ctx, cluster, patch)).To(Succeed())
	policy := func(g Gomega, name string) *upgradev1.TalosUpgradePolicy {
		p := &upgradev1.TalosUpgradePolicy{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
		return p
	}
	g.Eventually(func(g Gomega) {
		g.Expect(policy(g, "b").Status.Clusters).To(Equal(upgradev1.FleetCounts{Selected: 1, Pending: 1}))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		u := upgrades(g, ns)["alpha"]
		g.Expect(u.UID).To(Equal(old.UID), "a rollout at work is not replaced")
		g.Expect(u.Spec.PolicyName).To(Equal("a"))
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())

	// a's rollout ends Detached: b takes the Cluster over at once.
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(old), old)).To(Succeed())
	old.Status.Phase = upgradev1.UpgradePhaseDetached
	g.Expect(mgmt.Client.Status().Update(ctx, old)).To(Succeed())
	g.Eventually(func(g Gomega) {
		u := upgrades(g, ns)["alpha"]
		g.Expect(u).NotTo(BeNil())
		g.Expect(u.UID).NotTo(Equal(old.UID))
		g.Expect(u.Spec.PolicyName).To(Equal("b"))
		g.Expect(u.Spec.TalosVersion).To(Equal("v1.13.1"))
		g.Expect(metav1.IsControlledBy(u, policy(g, "b"))).To(BeTrue())
		g.Expect(u.Annotations).To(HaveKey(upgradev1.AdmittedAnnotation))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed(), "b replaces the rollout as soon as a's is over, not at its next resync")
}
