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
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// scaleUpHolder owns the pre-drain holds TestScaleUpMidRolloutWithCAPICore
// puts on the workers.
const scaleUpHolder = "scale-up-test"

// TestScaleUpMidRolloutWithCAPICore raises a MachineDeployment's replicas
// while a Tollgate rollout (a policy to v1.13.0, one worker at a time, every
// worker held before its drain by a pre-drain hold) is under way over its
// Machines. CAPI's MachineSet controller creates the new Machine, the
// infrastructure provider boots it on the old Talos of the
// MachineDeployment's template, and CAPI gives it its Node. Tollgate takes
// it into the rollout on that old version; it waits at its hold, not
// cordoned, not upgraded, until the test releases it; then its Node is
// cordoned and drained (a Pod evicted) and it is upgraded once, like the
// Machines that were there before. In the end CAPI reports v1.13.0 in every
// Machine's status.nodeInfo, and no Machine was replaced.
func TestScaleUpMidRolloutWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 2, time.Second)
	w.running(ctx, 2, "v1.12.4")
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())
	kube := startKubelet(ctx, t, w.workload)
	hold := hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, scaleUpHolder)

	// A Pod on each worker, and a hold on each before the rollout starts.
	workers := w.workerNames(ctx, g)
	g.Expect(workers).To(HaveLen(2))
	pods := map[string]string{}
	for _, m := range workers {
		pods[m] = kube.place(ctx, g, w.nodeOf(ctx, g, m))
		setAnnotation(ctx, g, w.c, w.ns, m, hold, "held until the test lets it go")
	}
	w.optIn(ctx)
	defer startTollgate(ctx, t, w.mgmt)()

	// The rollout is under way: the control plane is done, a worker waits
	// at its hold and takes the workers' one slot.
	first := w.heldAtPreDrain(ctx, nil)
	t.Logf("Machine %s waits at its pre-drain hold; scaling MachineDeployment %s up to 3", first, w.md.Name)

	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To[int32](3)
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())

	// CAPI makes the new Machine; the test holds it as it holds the others,
	// while the held worker keeps the budget from it.
	var joined string
	g.Eventually(func(g Gomega) {
		names := w.workerNames(ctx, g)
		g.Expect(names).To(HaveLen(3), "CAPI made the new Machine")
		for _, n := range names {
			if !slices.Contains(workers, n) {
				joined = n
			}
		}
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	setAnnotation(ctx, g, w.c, w.ns, joined, hold, "held until the test lets it go")
	t.Logf("CAPI made Machine %s", joined)

	// It boots the template's Talos, v1.12.4, and CAPI finds its Node.
	var joinedUID types.UID
	g.Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: joined}, m)).To(Succeed())
		g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "CAPI found the Node of Machine %s", joined)
		g.Expect(m.Status.NodeInfo).NotTo(BeNil())
		g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage("v1.12.4")), "Machine %s boots its template's Talos", joined)
		g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)))
		joinedUID = m.UID
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed(), func() string { return w.describeMachines(ctx) })
	g.Expect(sim.Node(joined).Version()).To(Equal("v1.12.4"))
	joinedNode := w.nodeOf(ctx, g, joined)
	pods[joined] = kube.place(ctx, g, joinedNode)

	// Tollgate takes it in, on the version it booted, and does not start
	// it while the held worker is in flight.
	g.Eventually(func(g Gomega) {
		r := record(w.upgrade(ctx, g), joined)
		g.Expect(r).NotTo(BeNil(), "Machine %s joined the rollout", joined)
		g.Expect(r.FromVersion).To(Equal("v1.12.4"))
		g.Expect(r.Node).To(Equal(joinedNode))
		g.Expect(r.Phase).To(Equal(upgradev1.MachinePhasePending), "Machine %s waits for the slot %s holds", joined, first)
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), func() string { return w.describeRecords(ctx) })
	uids := w.machineUIDs(ctx, g)

	// Each worker in turn waits at its hold until the test lets it go; the
	// one that joined is checked while it waits.
	released := map[string]bool{}
	for held := first; ; held = w.heldAtPreDrain(ctx, released) {
		if held == joined {
			t.Logf("Machine %s, which joined mid-rollout, waits at its pre-drain hold", joined)
			g.Consistently(func(g Gomega) {
				r := record(w.upgrade(ctx, g), joined)
				g.Expect(r.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
				g.Expect(r.HoldPoint).To(Equal(upgradev1.HoldPointPreDrain))
				g.Expect(r.HeldBy).To(ContainElement(scaleUpHolder))
				g.Expect(r.Cordoned).To(BeFalse())
				g.Expect(kube.sawCordoned(joinedNode)).To(BeFalse(), "Node %s is not cordoned before its hold is released", joinedNode)
				g.Expect(kube.evictedFrom(joinedNode)).To(BeEmpty())
				g.Expect(upgradeCalls(sim, joinedNode)).To(BeZero())
			}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), func() string { return w.describeRecords(ctx) })
		}
		removeAnnotation(ctx, g, w.c, w.ns, held, hold)
		released[held] = true
		if len(released) == 3 {
			break
		}
	}

	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "rollout %s: %v", u.Status.Phase, u.Status.Conditions)
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return w.describeRecords(ctx) })
	r := record(w.upgrade(ctx, g), joined)
	g.Expect(r.Phase).To(Equal(upgradev1.MachinePhaseCompleted))
	g.Expect(r.DrainSkipped).To(BeFalse(), "Machine %s was drained, not only cordoned", joined)
	for _, m := range append(workers, joined) {
		node := w.nodeOf(ctx, g, m)
		g.Expect(kube.sawCordoned(node)).To(BeTrue(), "Node %s of Machine %s was cordoned during its upgrade", node, m)
		g.Expect(kube.evictedFrom(node)).To(Equal([]string{pods[m]}), "Pod %s was evicted from Node %s", pods[m], node)
		g.Expect(upgradeCalls(sim, node)).To(Equal(1), "node %s was installed once", node)
		g.Expect(sim.Node(node).Version()).To(Equal("v1.13.0"))
	}
	g.Expect(kube.err()).NotTo(HaveOccurred())

	// CAPI reports the target in every Machine's nodeInfo, the control
	// plane's too, and the Machines are the ones there were: none replaced.
	w.running(ctx, 3, "v1.13.0")
	g.Expect(w.machineUIDs(ctx, g)).To(Equal(uids), "no Machine was replaced")
	g.Expect(uids).To(HaveKeyWithValue(joined, joinedUID))
}

// nodeOf returns the name of the Node CAPI found for Machine name.
func (w *world) nodeOf(ctx context.Context, g Gomega, name string) string {
	m := &clusterv1.Machine{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m)).To(Succeed())
	g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "Machine %s has its Node", name)
	return m.Status.NodeRef.Name
}

// machineUIDs returns the UID of every Machine of the world, by name.
func (w *world) machineUIDs(ctx context.Context, g Gomega) map[string]types.UID {
	list := &clusterv1.MachineList{}
	g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
	out := make(map[string]types.UID, len(list.Items))
	for _, m := range list.Items {
		out[m.Name] = m.UID
	}
	return out
}

// heldAtPreDrain waits until a worker not in released waits at its
// pre-drain hold, and returns its name. Never more than one worker is in
// flight: the policy's maxUnavailable is 1.
func (w *world) heldAtPreDrain(ctx context.Context, released map[string]bool) string {
	w.t.Helper()
	var held string
	NewWithT(w.t).Eventually(func(g Gomega) {
		held = ""
		inFlight := 0
		for _, r := range w.upgrade(ctx, g).Status.Machines {
			if r.Role != upgradev1.MachineRoleWorker {
				continue
			}
			switch r.Phase {
			case upgradev1.MachinePhasePending, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseFailed:
			default:
				inFlight++
			}
			g.Expect(r.Phase).NotTo(Equal(upgradev1.MachinePhaseFailed), "Machine %s: %s", r.Machine, r.Message)
			if !released[r.Machine] && r.Phase == upgradev1.MachinePhaseWaitingForHold && r.HoldPoint == upgradev1.HoldPointPreDrain {
				held = r.Machine
			}
		}
		g.Expect(inFlight).To(BeNumerically("<=", 1), "one worker at a time")
		g.Expect(held).NotTo(BeEmpty(), "a worker waits at its pre-drain hold")
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed(), func() string { return w.describeRecords(ctx) })
	return held
}

// record returns the record of Machine name in u, nil when there is none.
func record(u *upgradev1.TalosUpgrade, name string) *upgradev1.MachineUpgradeStatus {
	for i := range u.Status.Machines {
		if u.Status.Machines[i].Machine == name {
			return &u.Status.Machines[i]
		}
	}
	return nil
}

// describeRecords says where the rollout and each Machine's record are,
// for a failure message.
func (w *world) describeRecords(ctx context.Context) string {
	u := &upgradev1.TalosUpgrade{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, u); err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "TalosUpgrade %s: phase %s", u.Name, u.Status.Phase)
	for _, c := range u.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s %q", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, r := range u.Status.Machines {
		fmt.Fprintf(&b, "\n  Machine %s (node %s, %s, from %s): %s %s held by %v, cordoned %t: %s",
			r.Machine, r.Node, r.Role, r.FromVersion, r.Phase, r.HoldPoint, r.HeldBy, r.Cordoned, r.Message)
	}
	return b.String() + w.describeMachines(ctx)
}
