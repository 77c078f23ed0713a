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

package capi_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

// Patches of the control plane's configuration: one Talos applies without
// a reboot, one it takes only at a boot, one no running node may take.
const (
	sysctlPatch = "machine:\n  sysctls:\n    net.core.somaxconn: \"65535\"\n"
	filePatch   = "machine:\n  files:\n    - content: tollgate\n      permissions: 0o644\n      path: /var/etc/tollgate/hello\n      op: create\n"
	subnetPatch = "cluster:\n  network:\n    podSubnets:\n      - 10.250.0.0/16\n"
)

// TestControlPlaneConfigChangesPassTheGateWithCAPICore: CAPI core and the
// Talos providers' stand-ins make a Cluster whose TalosControlPlane rolls
// out OnDelete, so that a change of its patches replaces no Machine. Each
// change reaches the control-plane nodes in place, one at a time: a sysctl
// without a reboot, read back from each node; a file, which Talos takes
// only at a boot, staged and taken with the reboot of a Talos upgrade
// asked for at the same time, so each node is drained and rebooted once;
// and a change of the pod network, which no running node may take, is not
// applied, and the rollout's MachineConfigs condition says why. No Machine
// is replaced, and the worker, which the TalosControlPlane does not
// configure, gets only its upgrade.
func TestControlPlaneConfigChangesPassTheGateWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Managements: managements, InstallerVersions: []string{"v1.13.0"}, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(sb.Stop()).To(Succeed()) }()
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: "fleet", Name: "alpha", ControlPlanes: 3, Workers: 1, TalosVersion: "v1.12.4",
		ControlPlane: func(tcp *controlplanev1.TalosControlPlane) {
			tcp.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{Type: controlplanev1.OnDeleteStrategyType}
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	cps, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sb.StartManager(ctx, manager.Options{})).To(Succeed())
	policy := sb.Policy("fleet", "gate", "v1.12.4")
	g.Expect(sb.Management.Client.Create(ctx, policy)).To(Succeed())
	g.Expect(c.OptIn(ctx, "gate")).To(Succeed())
	upgrade := func(g Gomega) *upgradev1.TalosUpgrade {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		return u
	}
	g.Eventually(func(g Gomega) {
		g.Expect(upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	patchControlPlane := func(patches ...string) {
		tcp := &controlplanev1.TalosControlPlane{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha-control-plane"}, tcp)).To(Succeed())
		before := tcp.DeepCopy()
		tcp.Spec.ControlPlaneConfig.ControlPlaneConfig.StrategicPatches = patches
		g.Expect(sb.Management.Client.Patch(ctx, tcp, client.MergeFrom(before))).To(Succeed())
	}
	runs := func(node, what string) bool {
		cfg, err := c.Simulator.Node(node).MachineConfig()
		return err == nil && strings.Contains(string(cfg), what)
	}

	// A sysctl: applied without a reboot, one node at a time.
	patchControlPlane(sysctlPatch)
	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
		for _, name := range cps {
			st := record(u, name)
			g.Expect(st).NotTo(BeNil(), "Machine %s has a record", name)
			g.Expect(st.Config).NotTo(BeNil(), "Machine %s", name)
			g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigApplied), "Machine %s: %s", name, st.Message)
			g.Expect(st.Action).To(Equal(upgradev1.MachineActionConfigure))
		}
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	u := upgrade(g)
	for _, name := range cps {
		n := c.Simulator.Node(name)
		g.Expect(runs(name, "net.core.somaxconn")).To(BeTrue(), "node %s runs the sysctl", name)
		g.Expect(n.Boots()).To(BeZero(), "node %s: a sysctl needs no reboot", name)
		g.Expect(n.ApplyModes()).To(ContainElement("NO_REBOOT"))
	}
	g.Expect(record(u, workers[0]).Config).To(BeNil(), "the worker's configuration is not the TalosControlPlane's")
	g.Expect(runs(workers[0], "net.core.somaxconn")).To(BeFalse())
	oneAtATime(g, u, cps)
	g.Expect(conditions.IsTrue(u, upgradev1.MachineConfigsCondition)).To(BeTrue())

	// A file, and the next Talos: one drain and one reboot for both.
	patchControlPlane(sysctlPatch, filePatch)
	p := &upgradev1.TalosUpgradePolicy{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKeyFromObject(policy), p)).To(Succeed())
	before := p.DeepCopy()
	p.Spec.TalosVersion = "v1.13.0"
	g.Expect(sb.Management.Client.Patch(ctx, p, client.MergeFrom(before))).To(Succeed())
	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		g.Expect(u.Spec.TalosVersion).To(Equal("v1.13.0"))
		// The rollout of the new target, not the status of the one before
		// (on a loaded machine the policy writes the target well before
		// the rollout's controller reads it).
		g.Expect(u.Finished()).To(BeTrue(), "phase %s, observed generation %d of %d", u.Status.Phase, u.Status.ObservedGeneration, u.Generation)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 4*time.Minute, 200*time.Millisecond).Should(Succeed())
	u = upgrade(g)
	for _, name := range cps {
		n := c.Simulator.Node(name)
		g.Expect(n.Version()).To(Equal("v1.13.0"), "node %s", name)
		g.Expect(n.Boots()).To(Equal(1), "node %s: one reboot for the upgrade and the file", name)
		g.Expect(runs(name, "/var/etc/tollgate/hello")).To(BeTrue(), "node %s runs the file", name)
		g.Expect(n.ApplyModes()).To(ContainElement("STAGED"))
		st := record(u, name)
		g.Expect(st).NotTo(BeNil(), "Machine %s has a record", name)
		g.Expect(st.Action).To(Equal(upgradev1.MachineActionUpgrade))
		g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigApplied))
	}
	g.Expect(c.Simulator.Node(workers[0]).Boots()).To(Equal(1))
	g.Expect(runs(workers[0], "/var/etc/tollgate/hello")).To(BeFalse())

	// The pod network: not applied; the condition says why.
	patchControlPlane(sysctlPatch, filePatch, subnetPatch)
	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		c := conditions.Get(u, upgradev1.MachineConfigsCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(upgradev1.MachineConfigNotInPlaceReason))
		g.Expect(c.Message).To(ContainSubstring("cluster.network.podSubnets"))
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	for _, name := range cps {
		g.Expect(runs(name, "10.250.0.0/16")).To(BeFalse(), "node %s", name)
		g.Expect(c.Simulator.Node(name).Boots()).To(Equal(1))
	}

	// CAPI replaced no Machine.
	now, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now).To(ConsistOf(cps))
	machines := &clusterv1.MachineList{}
	g.Expect(sb.Management.Client.List(ctx, machines, client.InNamespace("fleet"))).To(Succeed())
	g.Expect(machines.Items).To(HaveLen(4))
}

// oneAtATime checks that the records of machines never overlapped: each
// started once the one before was done.
func oneAtATime(g Gomega, u *upgradev1.TalosUpgrade, machines []string) {
	type span struct{ start, end time.Time }
	var spans []span
	for _, name := range machines {
		st := record(u, name)
		g.Expect(st).NotTo(BeNil(), "Machine %s has a record", name)
		g.Expect(st.StartTime).NotTo(BeNil(), "Machine %s started", name)
		g.Expect(st.CompletionTime).NotTo(BeNil(), "Machine %s ended", name)
		spans = append(spans, span{st.StartTime.Time, st.CompletionTime.Time})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
	for i := 1; i < len(spans); i++ {
		g.Expect(spans[i].start).NotTo(BeTemporally("<", spans[i-1].end), "control-plane Machines one at a time")
	}
}
