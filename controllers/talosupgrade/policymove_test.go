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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestClusterMovesToAnotherPolicyMidRollout moves a Cluster to a policy with
// another target while a worker of its first rollout is about to reboot
// (held at preReboot): the first rollout lets that worker finish and ends
// Detached, the second policy counts the Cluster as pending meanwhile (not
// in progress: the rollout at work is not its own), and takes the Cluster
// over as soon as the first rollout is over, to finish it on its target.
func TestClusterMovesToAnotherPolicyMidRollout(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2})
	g.Expect(mgmt.Client.Create(ctx, sb.Policy(r.ns, "to-1-13-1", patchVersion))).To(Succeed())
	r.startHeldAt(g, "alpha-worker-0", upgradev1.HoldPointPreReboot, r.policy())
	first := r.upgrade(g)
	g.Expect(machineRecord(first, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted))

	// Opt out of to-1-13, then in to to-1-13-1 (the webhook refuses a move
	// in one step while the rollout is in progress).
	r.updateCluster(g, func(c *clusterv1.Cluster) { delete(c.Labels, upgradev1.PolicyLabel) })
	r.updateCluster(g, func(c *clusterv1.Cluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[upgradev1.PolicyLabel] = "to-1-13-1"
	})
	policy := func(g Gomega) *upgradev1.TalosUpgradePolicy {
		p := &upgradev1.TalosUpgradePolicy{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "to-1-13-1"}, p)).To(Succeed())
		return p
	}
	g.Eventually(func(g Gomega) {
		g.Expect(policy(g).Status.Clusters).To(Equal(upgradev1.FleetCounts{Selected: 1, Pending: 1}), "the rollout at work is not the new policy's")
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	// The worker about to reboot finishes; the first rollout ends Detached
	// and the second takes over at once.
	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPreReboot, false)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.UID).NotTo(Equal(first.UID))
		g.Expect(u.Spec.PolicyName).To(Equal("to-1-13-1"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), "the new policy takes the Cluster over once the old rollout is over, not at its next resync")
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(policy(g).Status.Clusters).To(Equal(upgradev1.FleetCounts{Selected: 1, Completed: 1}))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(patchVersion), "node %s", n.Name())
	}
	g.Expect(r.upgradeCalls("alpha-worker-1")).To(Equal(1), "the Machine the first rollout never started is upgraded once, by the second")
	g.Expect(r.tollgateJobs(g)).To(BeEmpty())
}
