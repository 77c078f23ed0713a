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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestRollingRebootPassesTheGate asks for a rolling reboot of a 3+3
// Cluster that runs its target already (spec.reboot.after), while its
// health check fails and a pre-drain hold is on a worker. Nothing reboots
// while the check fails; then the control plane reboots first and one at a
// time, the workers within maxUnavailable, the held worker only once its
// hold is gone, each node exactly once with a Reboot call and no upgrade
// call, its preReboot hook run once, and nothing is left cordoned. A
// reboot asked for one Machine by its annotation then reboots that node
// alone, and a reboot asked for a time the nodes booted after reboots
// none.
func TestRollingRebootPassesTheGate(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 3, workers: 3, version: toVersion})
	failing := r.failingCheck(g, "ceph")
	two := intstr.FromInt32(2)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = toVersion
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
		p.Spec.Rollout.Workers.MaxUnavailable = &two
		p.Spec.Hooks = []upgradev1.ActionHook{{Name: "osd-noout", Point: upgradev1.HookPointPreReboot, Template: jobTemplate("ceph", "osd", "set", "noout")}}
	}))).To(Succeed())
	r.startManager()

	// On its target and with no reboot asked, the Cluster is left alone.
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Boots()).To(BeZero(), "node %s", n.Name())
	}

	// A hold on a worker, and a rolling reboot asked for now.
	held := ""
	for _, n := range r.sim.Nodes() {
		if !strings.Contains(n.Name(), "-cp-") {
			held = n.Name()
			break
		}
	}
	m := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: held}, m)).To(Succeed())
	g.Expect(hooks.SetHold(ctx, mgmt.Client, m, upgradev1.HoldPointPreDrain, "storage-operator", "rebalancing")).To(Succeed())
	s := r.sample(ctx)
	asked := time.Now()
	policy := &upgradev1.TalosUpgradePolicy{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "to-1-13"}, policy)).To(Succeed())
	patch := client.MergeFrom(policy.DeepCopy())
	policy.Spec.Reboot.After = metav1.NewTime(asked)
	g.Expect(mgmt.Client.Patch(ctx, policy, patch)).To(Succeed())

	// Nothing reboots while the check fails.
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseWaitingForHealthChecks), "blockedBy: %s", u.Status.BlockedBy)
		for _, st := range u.Status.Machines {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhasePending), "Machine %s", st.Machine)
			g.Expect(st.Action).To(Equal(upgradev1.MachineActionReboot), "Machine %s", st.Machine)
			g.Expect(st.BootTime).NotTo(BeNil(), "Machine %s: when its node booted is read from the node", st.Machine)
		}
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, n := range r.sim.Nodes() {
			g.Expect(n.Boots()).To(BeZero(), "node %s rebooted while the check fails", n.Name())
		}
	}, 6*time.Second, 200*time.Millisecond).Should(Succeed())
	failing.Store(false)

	// The held worker waits at its hold; the others reboot.
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		st := machineRecord(u, held)
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
		g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreDrain))
		g.Expect(st.HeldBy).To(ConsistOf("storage-operator"))
		booted := 0
		for _, n := range r.sim.Nodes() {
			booted += n.Boots()
		}
		g.Expect(booted).To(Equal(5), "every node but the held one rebooted")
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.Node(held).Boots()).To(BeZero())
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: held}, m)).To(Succeed())
	g.Expect(hooks.ReleaseHold(ctx, mgmt.Client, m, upgradev1.HoldPointPreDrain, "storage-operator")).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	u := r.upgrade(g)
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Boots()).To(Equal(1), "node %s rebooted once", n.Name())
		g.Expect(n.Version()).To(Equal(toVersion))
		g.Expect(r.upgradeCalls(n.Name())).To(BeZero(), "node %s: a reboot installs nothing", n.Name())
		g.Expect(r.sim.Calls(n.Name(), talossim.RPCReboot)).To(Equal(1), "node %s", n.Name())
		st := machineRecord(u, n.Name())
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(st.Action).To(Equal(upgradev1.MachineActionReboot))
		g.Expect(st.RebootAfter.Time).To(BeTemporally("==", asked.Truncate(time.Second)))
		g.Expect(st.Hooks).To(ContainElement(And(HaveField("Name", "osd-noout"), HaveField("Phase", upgradev1.HookRunSucceeded))))
	}
	g.Expect(r.driver.SeenMatching(jobdriver.NamePrefix("tollgate-hook-osd-noout-"))).To(HaveLen(6), "the preReboot hook ran once per node")
	g.Expect(s.maxControlPlane()).To(Equal(1), "control plane one at a time")
	g.Expect(s.maxWorkers()).To(BeNumerically("<=", 2), "workers within maxUnavailable")
	g.Expect(s.maxTotal()).To(BeNumerically("<=", 2))
	for i, name := range s.firstDisrupted() {
		g.Expect(strings.Contains(name, "-cp-")).To(Equal(i < 3), "control plane first: %v", s.firstDisrupted())
	}
	nodes := &corev1.NodeList{}
	g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
	for _, n := range nodes.Items {
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "node %s left cordoned", n.Name)
	}

	// One Machine's reboot, asked for by its annotation: that node alone.
	one := r.sim.Nodes()[0].Name()
	time.Sleep(time.Second) // The request must be a later second than the boots above.
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: one}, m)).To(Succeed())
	patch = client.MergeFrom(m.DeepCopy())
	m.Annotations[upgradev1.RebootAfterAnnotation] = time.Now().UTC().Format(time.RFC3339)
	g.Expect(mgmt.Client.Patch(ctx, m, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(r.sim.Node(one).Boots()).To(Equal(2))
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// A reboot asked for a time every node booted after: none reboots.
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "to-1-13"}, policy)).To(Succeed())
	patch = client.MergeFrom(policy.DeepCopy())
	policy.Spec.Reboot.After = metav1.NewTime(asked.Add(time.Second))
	g.Expect(mgmt.Client.Patch(ctx, policy, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
		for _, st := range u.Status.Machines {
			if st.Machine == one {
				continue // Its own later reboot answers the request.
			}
			g.Expect(st.RebootAfter.Time).To(BeTemporally("==", asked.Add(time.Second).Truncate(time.Second)))
			g.Expect(st.Message).To(ContainSubstring("after the reboot asked for"), "Machine %s", st.Machine)
		}
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	for _, n := range r.sim.Nodes() {
		want := 1
		if n.Name() == one {
			want = 2
		}
		g.Expect(n.Boots()).To(Equal(want), "node %s", n.Name())
	}
}
