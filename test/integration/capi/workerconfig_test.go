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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/sampler"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
)

// onDelete makes a MachineDeployment roll out OnDelete: CAPI replaces none
// of its Machines until a user deletes them.
func onDelete(md *clusterv1.MachineDeployment) {
	md.Spec.Rollout.Strategy = clusterv1.MachineDeploymentRolloutStrategy{Type: clusterv1.OnDeleteMachineDeploymentStrategyType}
}

// setWorkersPatches does what a user's Git change does to the patches of
// the workers of a Cluster made with Options.CAPI: TalosConfigTemplates are
// immutable, so it creates the template name, the MachineDeployment's
// current one with patches, and points the MachineDeployment at it; mutate
// changes the MachineDeployment in the same edit.
func setWorkersPatches(ctx context.Context, g Gomega, c *sandbox.Cluster, mgmt client.Client, name string, patches []string, mutate ...func(*clusterv1.MachineDeployment)) {
	md := &clusterv1.MachineDeployment{}
	g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: sandbox.WorkersName(c.Name)}, md)).To(Succeed())
	current := &bootstrapv1.TalosConfigTemplate{}
	g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: md.Spec.Template.Spec.Bootstrap.ConfigRef.Name}, current)).To(Succeed())
	template := &bootstrapv1.TalosConfigTemplate{}
	template.Namespace, template.Name = c.Namespace, name
	template.Spec = *current.Spec.DeepCopy()
	template.Spec.Template.Spec.StrategicPatches = patches
	g.Expect(mgmt.Create(ctx, template)).To(Succeed())
	before := md.DeepCopy()
	md.Spec.Template.Spec.Bootstrap.ConfigRef.Name = name
	for _, m := range mutate {
		m(md)
	}
	g.Expect(mgmt.Patch(ctx, md, client.MergeFrom(before))).To(Succeed())
}

// machineUIDs returns the UIDs of the Machines of the Cluster's role, by
// name.
func machineUIDs(ctx context.Context, g Gomega, c *sandbox.Cluster, mgmt client.Client, role sandbox.Role) map[string]types.UID {
	names, err := c.MachineNames(ctx, role)
	g.Expect(err).NotTo(HaveOccurred())
	uids := map[string]types.UID{}
	for _, name := range names {
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, m)).To(Succeed())
		uids[name] = m.UID
	}
	return uids
}

// TestWorkerConfigChangesPassTheGateWithCAPICore: CAPI core and the Talos
// providers' stand-ins make a Cluster whose MachineDeployment of three
// workers rolls out OnDelete, so that pointing it at a new
// TalosConfigTemplate replaces no Machine. Each change reaches the workers
// in place, within the workers' maxUnavailable of 2: a sysctl without a
// reboot, read back from each node; a file, which Talos takes only at a
// boot, staged and taken with exactly one reboot of each worker. No Machine
// is replaced and the control plane, whose TalosControlPlane did not
// change, is not touched. Then the MachineDeployment rolls out
// RollingUpdate to a new template: CAPI replaces the workers with Machines
// made from it, and Tollgate configures none in place.
func TestWorkerConfigChangesPassTheGateWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Managements: managements, InstallerVersions: []string{"v1.13.0"}, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(sb.Stop()).To(Succeed()) }()
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: "fleet", Name: "alpha", ControlPlanes: 1, Workers: 3, TalosVersion: "v1.13.0", MachineDeployment: onDelete,
	})
	g.Expect(err).NotTo(HaveOccurred())
	mgmt := sb.Management.Client
	cps, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	uids := machineUIDs(ctx, g, c, mgmt, sandbox.RoleWorker)
	g.Expect(sb.StartManager(ctx, manager.Options{})).To(Succeed())
	two := intstr.FromInt32(2)
	g.Expect(mgmt.Create(ctx, sb.Policy("fleet", "gate", "v1.13.0", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Rollout.Workers.MaxUnavailable = &two
	}))).To(Succeed())
	g.Expect(c.OptIn(ctx, "gate")).To(Succeed())
	upgrade := func(g Gomega) *upgradev1.TalosUpgrade {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		return u
	}
	g.Eventually(func(g Gomega) {
		g.Expect(upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	runs := func(node, what string) bool {
		cfg, err := c.Simulator.Node(node).MachineConfig()
		return err == nil && strings.Contains(string(cfg), what)
	}
	configured := func(g Gomega, u *upgradev1.TalosUpgrade, source string) {
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		for _, name := range workers {
			st := record(u, name)
			g.Expect(st).NotTo(BeNil(), "Machine %s has a record", name)
			g.Expect(st.Config).NotTo(BeNil(), "Machine %s: %s", name, st.Message)
			g.Expect(st.Config.Source).To(Equal(source), "Machine %s", name)
			g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigApplied), "Machine %s: %s", name, st.Message)
			g.Expect(st.Action).To(Equal(upgradev1.MachineActionConfigure), "Machine %s", name)
		}
	}
	disrupted := sampler.Nodes(ctx, c.Workload.Client, func(n *corev1.Node) bool { return slices.Contains(cps, n.Name) })

	// A sysctl: applied without a reboot, two workers at a time at most.
	setWorkersPatches(ctx, g, c, mgmt, "alpha-md-0-sysctl", []string{sysctlPatch})
	g.Eventually(func(g Gomega) {
		configured(g, upgrade(g), "TalosConfigTemplate alpha-md-0-sysctl of MachineDeployment alpha-md-0")
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	u := upgrade(g)
	for _, name := range workers {
		n := c.Simulator.Node(name)
		g.Expect(runs(name, "net.core.somaxconn")).To(BeTrue(), "node %s runs the sysctl", name)
		g.Expect(n.Boots()).To(BeZero(), "node %s: a sysctl needs no reboot", name)
		g.Expect(n.ApplyModes()).To(ContainElement("NO_REBOOT"))
	}
	g.Expect(conditions.IsTrue(u, upgradev1.MachineConfigsCondition)).To(BeTrue())

	// A file: staged, and taken with one reboot of each worker.
	setWorkersPatches(ctx, g, c, mgmt, "alpha-md-0-file", []string{sysctlPatch, filePatch})
	g.Eventually(func(g Gomega) {
		configured(g, upgrade(g), "TalosConfigTemplate alpha-md-0-file of MachineDeployment alpha-md-0")
	}, 4*time.Minute, 200*time.Millisecond).Should(Succeed())
	u = upgrade(g)
	for _, name := range workers {
		n := c.Simulator.Node(name)
		g.Expect(runs(name, "/var/etc/tollgate/hello")).To(BeTrue(), "node %s runs the file", name)
		g.Expect(n.Boots()).To(Equal(1), "node %s: one reboot for the file", name)
		g.Expect(n.ApplyModes()).To(ContainElement("STAGED"))
		g.Expect(record(u, name).Config.RebootRequired).To(BeTrue())
	}

	// Within the budget, the control plane untouched, no Machine replaced.
	cp, w, _ := disrupted.Max()
	g.Expect(cp).To(BeZero(), "the control plane is not disrupted")
	g.Expect(w).To(And(BeNumerically(">=", 1), BeNumerically("<=", 2)), "workers drained, within maxUnavailable")
	for _, name := range cps {
		n := c.Simulator.Node(name)
		g.Expect(record(u, name).Config).To(BeNil(), "the control plane's configuration is not the MachineDeployment's")
		g.Expect(n.Boots()).To(BeZero(), "node %s", name)
		g.Expect(n.ApplyModes()).To(BeEmpty(), "node %s", name)
		g.Expect(runs(name, "net.core.somaxconn")).To(BeFalse(), "node %s", name)
	}
	g.Expect(machineUIDs(ctx, g, c, mgmt, sandbox.RoleWorker)).To(Equal(uids), "no worker replaced")

	// RollingUpdate to a new template: CAPI replaces the workers, and
	// Tollgate configures none of them in place.
	setWorkersPatches(ctx, g, c, mgmt, "alpha-md-0-rolling", []string{rollingPatch}, func(md *clusterv1.MachineDeployment) {
		md.Spec.Rollout.Strategy = clusterv1.MachineDeploymentRolloutStrategy{
			Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
			RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
				MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0)),
			},
		}
	})
	var replaced []string
	g.Eventually(func(g Gomega) {
		now := machineUIDs(ctx, g, c, mgmt, sandbox.RoleWorker)
		g.Expect(now).To(HaveLen(3))
		for _, name := range workers {
			g.Expect(now).NotTo(HaveKey(name), "CAPI replaced Machine %s", name)
		}
		u := upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		replaced = replaced[:0]
		for name := range now {
			st := record(u, name)
			g.Expect(st).NotTo(BeNil(), "Machine %s has a record", name)
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseCompleted), "Machine %s: %s", name, st.Message)
			replaced = append(replaced, name)
		}
	}, 5*time.Minute, 250*time.Millisecond).Should(Succeed())
	u = upgrade(g)
	for _, name := range replaced {
		g.Expect(record(u, name).Config).To(BeNil(), "Machine %s: CAPI's, not Tollgate's", name)
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: name}, m)).To(Succeed())
		tc := &bootstrapv1.TalosConfig{}
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: m.Spec.Bootstrap.ConfigRef.Name}, tc)).To(Succeed())
		g.Expect(tc.Spec.StrategicPatches).To(Equal([]string{rollingPatch}), "Machine %s is made from the new template", name)
		g.Expect(c.Simulator.Node(name).ApplyModes()).To(BeEmpty(), "node %s is not configured in place", name)
	}
	g.Expect(conditions.Get(u, upgradev1.MachineConfigsCondition)).To(BeNil(), "no template whose changes Tollgate brings")
	for _, name := range cps {
		g.Expect(c.Simulator.Node(name).ApplyModes()).To(BeEmpty(), "node %s", name)
	}
}

// rollingPatch is a sysctl of a MachineDeployment that rolls out
// RollingUpdate: its new Machines boot with it.
const rollingPatch = "machine:\n  sysctls:\n    net.core.rmem_max: \"4194304\"\n"
