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

package talosupgrade_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestHeldBackByTheFailureBudget: a Cluster its policy does not admit
// because the fleet's failure budget is spent says so, with the policy's
// message, rather than that it waits for a slot of maxClustersInProgress;
// it said that while the other Cluster held the one slot.
func TestHeldBackByTheFailureBudget(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := namespaceFor(t)
	clusters := createFleet(ctx, t, ns, 2)
	clusters["c0"].Simulator.Node("c0-cp-0").InjectFault(talossim.Faults{Rollback: true})
	g.Expect(mgmt.Client.Create(ctx, sb.Policy(ns, "to-1-13", toVersion, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Rollout.MaxClustersInProgress = ptr.To[int32](1)
		p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](1)
	}))).To(Succeed())
	g.Expect(sb.StartManager(ctx, manager.Options{Namespace: ns, Concurrency: 4, TalosCallTimeout: 3 * time.Second})).To(Succeed())
	t.Cleanup(func() { _ = sb.StopManager() })
	upgrade := func(g Gomega, name string) *upgradev1.TalosUpgrade {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
		return u
	}

	// c0 holds the one slot: c1 waits for it.
	g.Eventually(func(g Gomega) {
		g.Expect(upgrade(g, "c0").Annotations).To(HaveKey(upgradev1.AdmittedAnnotation))
		c1 := upgrade(g, "c1")
		g.Expect(conditions.GetReason(c1, upgradev1.ProgressingCondition)).To(Equal(upgradev1.WaitingForClusterSlotReason))
		g.Expect(c1.Status.BlockedBy).To(ContainSubstring("maxClustersInProgress"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// c0 fails and spends the budget: the slot is free, and c1 says what
	// really holds it back.
	g.Eventually(func(g Gomega) {
		g.Expect(upgrade(g, "c0").Status.Phase).To(Equal(upgradev1.UpgradePhaseFailed))
		c1 := upgrade(g, "c1")
		g.Expect(c1.Annotations).NotTo(HaveKey(upgradev1.AdmittedAnnotation))
		g.Expect(conditions.GetReason(c1, upgradev1.ProgressingCondition)).To(Equal(upgradev1.WaitingForFailureBudgetReason))
		g.Expect(c1.Status.BlockedBy).To(ContainSubstring("maxFailedClusters is 1"))
		g.Expect(c1.Status.BlockedBy).To(ContainSubstring(`"c0"`))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
}
