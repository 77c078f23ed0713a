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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// ledgerHolder owns the pre-drain holds TestUpgradeAndScaleDownShareTheBudget
// puts on the workers.
const ledgerHolder = "ledger-test"

// TestUpgradeAndScaleDownShareTheBudget runs a Talos upgrade of four
// workers, one at a time (maxUnavailable 1), and scales their
// MachineDeployment down by one while a worker's upgrade holds the budget
// (it waits at a pre-drain hold). The Machine CAPI deletes waits at
// Tollgate's deletion hook for room in the budget, and says so; once the
// holds go, the upgrade and the removal take turns: at no time does the
// rollout's status count more than one worker disrupted, upgrading or
// released to CAPI's drain.
func TestUpgradeAndScaleDownShareTheBudget(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 4, time.Second)
	w.running(ctx, 4, "v1.12.4")
	hold := hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, ledgerHolder)
	workers := w.workerNames(ctx, g)
	g.Expect(workers).To(HaveLen(4))
	for _, m := range workers {
		setAnnotation(ctx, g, w.c, w.ns, m, hold, "held until the test lets it go")
	}
	w.optIn(ctx)
	defer startTollgate(ctx, t, w.mgmt)()
	first := w.heldAtPreDrain(ctx, nil)

	// CAPI deletes another worker (the one marked for deletion).
	var removed string
	for _, m := range workers {
		if m != first {
			removed = m
			break
		}
	}
	setAnnotation(ctx, g, w.c, w.ns, removed, clusterv1.DeleteMachineAnnotation, "")
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To[int32](3)
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Status.Removals).To(HaveLen(1))
		r := u.Status.Removals[0]
		g.Expect(r.Machine).To(Equal(removed))
		g.Expect(r.Phase).To(Equal(upgradev1.RemovalPhaseHeld))
		g.Expect(r.Message).To(ContainSubstring("waiting for room in the disruption budget"))
		g.Expect(r.Message).To(ContainSubstring(first + " (upgrading)"))
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), func() string { return w.describeRecords(ctx) })
	t.Logf("Machine %s waits for the budget that the upgrade of Machine %s holds", removed, first)

	// The holds go: upgrades and the removal share the one slot.
	for _, m := range workers {
		if m != removed {
			removeAnnotation(ctx, g, w.c, w.ns, m, hold)
		}
	}
	start := time.Now()
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		disrupted := 0
		for _, r := range u.Status.Machines {
			if r.Role == upgradev1.MachineRoleWorker && r.Phase.InFlight() {
				disrupted++
			}
		}
		for _, r := range u.Status.Removals {
			if r.Phase == upgradev1.RemovalPhaseReleased {
				disrupted++
			}
		}
		if disrupted > 1 {
			StopTrying("more than one worker disrupted at once").Now()
		}
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
		g.Expect(u.Status.Removals).To(BeEmpty())
		g.Expect(w.workerNames(ctx, g)).To(HaveLen(3))
		g.Expect(w.workerNames(ctx, g)).NotTo(ContainElement(removed))
	}, 4*time.Minute, 100*time.Millisecond).Should(Succeed(), func() string { return w.describeRecords(ctx) })
	t.Logf("The rollout completed and the scale-down ended %s after the holds went", time.Since(start).Round(time.Millisecond))
	w.running(ctx, 3, "v1.13.0")
}
