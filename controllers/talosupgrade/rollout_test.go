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
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestRolloutEndToEnd upgrades 3 control-plane and 3 worker Machines: the
// control plane first and one at a time, then the workers within
// maxUnavailable, each with exactly one upgrade call, and nothing left
// cordoned or protected from remediation.
func TestRolloutEndToEnd(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 3, workers: 3})
	two := intstr.FromInt32(2)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Rollout.Workers.MaxUnavailable = &two
	}))).To(Succeed())
	s := r.sample(ctx)
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())

	u := r.upgrade(g)
	g.Expect(u.Status.Progress).To(Equal("6/6"))
	g.Expect(conditions.IsTrue(u, upgradev1.CompletedCondition)).To(BeTrue())
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(toVersion), "node %s", n.Name())
		g.Expect(r.upgradeCalls(n.Name())).To(Equal(1), "exactly one upgrade call on %s", n.Name())
		rec := machineRecord(u, n.Name())
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(rec.FromVersion).To(Equal(fromVersion))
		g.Expect(rec.PhaseDurations).NotTo(BeEmpty())
	}

	g.Expect(s.maxControlPlane()).To(Equal(1), "control plane one at a time")
	g.Expect(s.maxWorkers()).To(BeNumerically("<=", 2), "workers within maxUnavailable")
	g.Expect(s.maxTotal()).To(BeNumerically("<=", 2))
	g.Expect(s.firstDisrupted()).To(HaveLen(6))
	for i, name := range s.firstDisrupted() {
		g.Expect(strings.Contains(name, "-cp-")).To(Equal(i < 3), "control plane first: %v", s.firstDisrupted())
		g.Expect(s.protectedMachines()).To(HaveKey(name), "a disrupted Machine is protected from MachineHealthCheck remediation")
	}

	// Nothing is left cordoned or protected from remediation.
	nodes := &corev1.NodeList{}
	g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
	for _, n := range nodes.Items {
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "node %s left cordoned", n.Name)
	}
	machines := &clusterv1.MachineList{}
	g.Expect(mgmt.Client.List(ctx, machines, client.InNamespace(r.ns))).To(Succeed())
	for _, m := range machines.Items {
		g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.MachineSkipRemediationAnnotation))
	}
}

// TestHoldsStopMachineAtEachPoint holds a Machine at pre-drain, pre-reboot
// and post-upgrade in turn, and checks that it waits there, naming the
// owner, until the hold is removed; on both Talos API generations.
func TestHoldsStopMachineAtEachPoint(t *testing.T) {
	envtestOnly(t)
	tests := []struct {
		name     string
		from, to string
		// installedBeforePreReboot: on Talos 1.13 and later the image is
		// installed before the pre-reboot point; the legacy API of older
		// nodes installs and reboots in one call, after it.
		installedBeforePreReboot bool
	}{
		{name: "legacy upgrade API", from: fromVersion, to: toVersion},
		{name: "lifecycle API", from: toVersion, to: patchVersion, installedBeforePreReboot: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testHolds(t, tt.from, tt.to, tt.installedBeforePreReboot)
		})
	}
}

func testHolds(t *testing.T, from, to string, installedBeforePreReboot bool) {
	t.Helper()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, version: from})
	machine := r.fixture.Machines[0]
	points := []upgradev1.HoldPoint{upgradev1.HoldPointPreDrain, upgradev1.HoldPointPreReboot, upgradev1.HoldPointPostUpgrade}
	setHolds := func(points ...upgradev1.HoldPoint) {
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), m)).To(Succeed())
		for _, p := range []upgradev1.HoldPoint{upgradev1.HoldPointPreDrain, upgradev1.HoldPointPreReboot, upgradev1.HoldPointPostUpgrade} {
			delete(m.Annotations, hooks.HoldAnnotation(p, "backup-operator"))
		}
		for _, p := range points {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[hooks.HoldAnnotation(p, "backup-operator")] = ""
		}
		g.Expect(mgmt.Client.Update(ctx, m)).To(Succeed())
	}
	setHolds(points...)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TalosVersion = to }))).To(Succeed())
	r.startManager()

	node := r.sim.Node(machine.Name)
	for i, point := range points {
		g.Eventually(func(g Gomega) {
			u := r.upgrade(g)
			rec := machineRecord(u, machine.Name)
			g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
			g.Expect(rec.HoldPoint).To(Equal(point))
			g.Expect(rec.HeldBy).To(ConsistOf("backup-operator"))
			g.Expect(u.Status.BlockedBy).To(ContainSubstring(`held at ` + string(point) + ` by "backup-operator"`))
		}, time.Minute, 100*time.Millisecond).Should(Succeed())
		switch point {
		case upgradev1.HoldPointPreDrain:
			g.Expect(r.upgradeCalls(node.Name())).To(BeZero(), "nothing happens before the pre-drain hold goes")
		case upgradev1.HoldPointPreReboot:
			if installedBeforePreReboot {
				g.Expect(r.upgradeCalls(node.Name())).To(Equal(1))
			} else {
				g.Expect(r.upgradeCalls(node.Name())).To(BeZero(), "the legacy upgrade call reboots: it waits for the pre-reboot hold")
			}
			g.Expect(r.sim.Calls(node.Name(), talossim.RPCReboot)).To(BeZero(), "no reboot before the pre-reboot hold goes")
			g.Expect(node.Version()).To(Equal(from))
		case upgradev1.HoldPointPostUpgrade:
			g.Expect(node.Version()).To(Equal(to))
		}
		setHolds(points[i+1:]...)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls(node.Name())).To(Equal(1))
}

// TestRebootMode upgrades a node on each upgrade API with rebootMode
// PowerCycle: the mode reaches the node with the call that reboots it (the
// Reboot call on Talos 1.13, the upgrade call before).
func TestRebootMode(t *testing.T) {
	envtestOnly(t)
	for _, tt := range []struct {
		name, from, to string
	}{
		{name: "lifecycle API", from: toVersion, to: patchVersion},
		{name: "legacy API", from: fromVersion, to: toVersion},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r := newRollout(t, rolloutOptions{controlPlanes: 1, version: tt.from})
			g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.TalosVersion = tt.to
				p.Spec.RebootMode = upgradev1.RebootModePowerCycle
			}))).To(Succeed())
			r.startManager()
			g.Eventually(func(g Gomega) {
				g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
			}, time.Minute, 100*time.Millisecond).Should(Succeed())
			n := r.sim.Node("alpha-cp-0")
			g.Expect(n.Version()).To(Equal(tt.to))
			g.Expect(n.RebootModes()).To(Equal([]string{"POWERCYCLE"}))
		})
	}
}
