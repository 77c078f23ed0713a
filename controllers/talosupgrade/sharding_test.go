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
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// withShard labels a Cluster or a policy for the manager of shard.
func withShard(o client.Object, shard string) {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[clusterv1.WatchLabel] = shard
	o.SetLabels(l)
}

// startShardManager runs a second production manager, of shard, beside the
// suite's: as a second Deployment with --watch-filter=<shard> would run,
// without webhooks (the suite's manager serves them) and until the test
// ends.
func (r *rollout) startShardManager(g Gomega, shard string) {
	r.t.Helper()
	o := r.mgrConfig
	o.WatchFilterValue = shard
	o.TalosAPIPort = talossim.DefaultPort
	o.SkipControllerNameValidation = true
	o.LeaderElection = false
	o.WebhookPort = 0
	mgr, err := manager.New(r.t.Context(), rest.CopyConfig(sb.ControllerConfig), o)
	g.Expect(err).NotTo(HaveOccurred())
	mgmt.RunManager(r.t, mgr)
}

// TestShards runs two managers on two shards of one fleet, each Cluster
// and policy labelled with its shard and no Machine labelled, as users
// label them (docs/book/src/operations/sharding.md). Each manager moves its
// own Clusters on the events of their Machines at once, not at the caches'
// resync: a released hold and a joining Machine. A shard whose manager is
// stopped stands still while the other goes on.
func TestShards(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := context.Background()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, clusterOptions: []builder.ClusterOption{
		func(c *clusterv1.Cluster) { withShard(c, "a") },
	}})
	// The resync would hide a lost event: make it longer than the test.
	r.mgrConfig.SyncPeriod = time.Hour
	r.mgrConfig.WatchFilterValue = "a"

	beta, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: r.ns, Name: "beta", ControlPlanes: 1, Workers: 1, TalosVersion: fromVersion,
		ClusterOptions: []builder.ClusterOption{builder.WithPolicy("to-1-13-b"), func(c *clusterv1.Cluster) { withShard(c, "b") }},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = beta.Stop() })
	upgradeOf := func(g Gomega, cluster string) *upgradev1.TalosUpgrade {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: cluster}, u)).To(Succeed())
		return u
	}

	// Both control planes are held after their upgrade.
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPostUpgrade, true)
	r.setHold(g, "beta-cp-0", upgradev1.HoldPointPostUpgrade, true)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) { withShard(p, "a") }))).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, sb.Policy(r.ns, "to-1-13-b", toVersion, func(p *upgradev1.TalosUpgradePolicy) { withShard(p, "b") }))).To(Succeed())
	r.startManager()
	r.startShardManager(g, "b")
	for _, cluster := range []string{"alpha", "beta"} {
		g.Eventually(func(g Gomega) {
			u := upgradeOf(g, cluster)
			g.Expect(u.Labels).To(HaveKeyWithValue(clusterv1.WatchLabel, map[string]string{"alpha": "a", "beta": "b"}[cluster]))
			g.Expect(machineRecord(u, cluster+"-cp-0").HoldPoint).To(Equal(upgradev1.HoldPointPostUpgrade))
		}, time.Minute, 100*time.Millisecond).Should(Succeed(), "Cluster %s", cluster)
	}

	// Shard a: a Machine joins and the hold is released, on Machines that
	// carry no shard label. The rollout sees both at once.
	r.joinMachine(g, "alpha-worker-1")
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPostUpgrade, false)
	g.Eventually(func(g Gomega) {
		u := upgradeOf(g, "alpha")
		g.Expect(machineRecord(u, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(machineRecord(u, "alpha-worker-1").Message).To(ContainSubstring("waiting for the Machine's node"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	r.provisionMachine(g, "alpha-worker-1", fromVersion)
	g.Eventually(func(g Gomega) {
		u := upgradeOf(g, "alpha")
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls("alpha-worker-1")).To(Equal(1))

	// Shard b's hold is released while its manager runs: it goes on, and
	// shard a's manager never touched its rollout.
	bHeld := upgradeOf(g, "beta")
	r.setHold(g, "beta-cp-0", upgradev1.HoldPointPostUpgrade, false)
	g.Eventually(func(g Gomega) {
		u := upgradeOf(g, "beta")
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(bHeld.Status.Machines).NotTo(BeEmpty())
	g.Expect(beta.Simulator.Calls("beta-worker-0", talossim.RPCUpgrade) + beta.Simulator.Calls("beta-worker-0", talossim.RPCLegacyUpgrade)).To(Equal(1))

	// With shard a's manager stopped, a Machine joining shard a is not
	// served by shard b's: the rollout of alpha does not move.
	r.stopManager()
	before := upgradeOf(g, "alpha")
	r.joinMachine(g, "alpha-worker-2")
	g.Consistently(func(g Gomega) {
		u := upgradeOf(g, "alpha")
		g.Expect(u.ResourceVersion).To(Equal(before.ResourceVersion), "shard b's manager wrote shard a's rollout")
	}, 5*time.Second, 200*time.Millisecond).Should(Succeed())
}
