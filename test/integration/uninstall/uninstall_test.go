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

package uninstall_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// TestUninstallAsTheBookSays uninstalls Tollgate from a world whose Cluster
// opts in, in the order of the book: the Cluster leaves Tollgate while it
// runs (its policy deleted, its TalosUpgrade with it, its label removed),
// Tollgate releases its hooks and lets its TalosUpgrade go; then Tollgate
// is removed as clusterctl delete --addon removes it. CAPI's deletions then
// wait for nothing: a scale-down, then the Cluster's deletion.
func TestUninstallAsTheBookSays(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, "uninstall-in-order", 2)

	// 1. The Cluster leaves Tollgate while Tollgate runs. Kubernetes'
	// garbage collector deletes the TalosUpgrades a deleted policy owns;
	// envtest runs none, so the test deletes it.
	u := w.upgrade(ctx, g)
	g.Expect(u.OwnerReferences).To(ContainElement(HaveField("Kind", "TalosUpgradePolicy")), "the policy owns the TalosUpgrade")
	g.Expect(w.cl.OptOut(ctx)).To(Succeed())
	g.Expect(w.c.Delete(ctx, &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: policyName}})).To(Succeed())
	g.Expect(w.c.Delete(ctx, u)).To(Succeed())
	// 2. Wait: Tollgate releases its hooks, and its finalizer lets the
	// TalosUpgrade go once it undid what it did in the workload cluster.
	g.Eventually(func(g Gomega) {
		g.Expect(w.hooked(ctx, g)).To(BeEmpty(), "no Machine keeps Tollgate's hook")
		g.Expect(apierrors.IsNotFound(w.c.Get(ctx, client.ObjectKeyFromObject(u), u))).To(BeTrue(), "the TalosUpgrade is gone")
	}, timeout, 200*time.Millisecond).Should(Succeed())

	// 3. clusterctl delete --addon tollgate: the manager stops, the webhook
	// configurations go (what clusterctl deletes: TestDeleteAddon).
	w.crashTollgate()
	w.deleteWebhookConfigurations(ctx)
	r := w.kubectl(ctx, "release-hooks", clusterName, "--reason", "INC-5000: checking the uninstall")
	g.Expect(r.code).To(Equal(0), r.err)
	g.Expect(r.out).To(HavePrefix("No Machine of Cluster uninstall-in-order/alpha carries Tollgate's deletion hook (" + hooks.DeletionHookAnnotation + "): nothing to release.\n"))

	// CAPI's deletions wait for nothing: a scale-down goes at once.
	before := w.machineNames(ctx, g)
	w.scaleWorkers(ctx, 1)
	g.Eventually(func(g Gomega) {
		g.Expect(w.machineNames(ctx, g)).To(HaveLen(2))
	}, timeout, 200*time.Millisecond).Should(Succeed(), "the scale-down's Machine is deleted; before: %v", before)

	// And the Cluster's deletion.
	w.deleteCluster(ctx)
}

// TestBreakGlassWhileTollgateIsDown stops Tollgate abruptly in a world
// whose Cluster opts in. Its hooks stay: CAPI's deletion of a worker (a
// scale-down) waits before the drain. kubectl tollgate release-hooks
// refuses while Tollgate's Lease is held, says what it would release
// without --yes, and with it records who, when and why (an event on the
// Cluster, status.bypassHistory of its TalosUpgrade) and releases every
// Machine: the deletion completes. Tollgate comes back and puts its hook
// back on the Machines left, keeping the record. Stopped again, the
// Cluster's own deletion completes with the hooks on: CAPI does not wait
// for pre-drain hooks when it deletes a Cluster.
func TestBreakGlassWhileTollgateIsDown(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const reason = "INC-4713: Tollgate is down, the scale-down must go on"
	w := startWorld(ctx, t, "break-glass", 2)
	hooked := w.hooked(ctx, g)
	g.Expect(hooked).To(HaveLen(3))

	// While Tollgate runs: refused, and nothing changes.
	r := w.kubectl(ctx, "release-hooks", clusterName, "--reason", reason, "--yes")
	g.Expect(r.code).To(Equal(1), "%s\n%s", r.out, r.err)
	g.Expect(r.err).To(MatchRegexp(`^error: Tollgate is running: Lease tollgate-system/tollgate-controller-leader is held by \S+, renewed \d+s ago`))
	g.Expect(r.err).To(ContainSubstring("kubectl tollgate bypass alpha -n break-glass"))
	g.Expect(r.err).To(ContainSubstring("remove its label " + upgradev1.PolicyLabel))
	g.Expect(w.hooked(ctx, g)).To(Equal(hooked))

	// Tollgate stops abruptly; a scale-down waits at its hook.
	w.crashTollgate()
	w.scaleWorkers(ctx, 1)
	var removed string
	g.Eventually(func(g Gomega) {
		deleting := w.deleting(ctx, g)
		g.Expect(deleting).To(HaveLen(1))
		removed = deleting[0].Name
		c := conditions.Get(&deleting[0], clusterv1.MachineDeletingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(clusterv1.MachineDeletingWaitingForPreDrainHookReason), c.Message)
		g.Expect(c.Message).To(ContainSubstring(hooks.DeletionHookAnnotation))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(w.machineNames(ctx, g)).To(ContainElement(removed))
	}, 5*time.Second, 250*time.Millisecond).Should(Succeed(), "the deletion waits while the hook is on")

	// A dry run, once Tollgate's Lease has expired: it says what it would
	// release and changes nothing.
	var dry result
	g.Eventually(func(g Gomega) {
		dry = w.kubectl(ctx, "release-hooks", clusterName, "--reason", reason)
		g.Expect(dry.code).To(Equal(0), dry.err)
	}, time.Minute, time.Second).Should(Succeed(), "the Lease expires within its 15s")
	t.Logf("kubectl tollgate release-hooks alpha (dry run):\n%s", dry.out)
	g.Expect(dry.out).To(MatchRegexp(`^Tollgate is not running: Lease tollgate-system/tollgate-controller-leader, held by \S+, was last renewed \d+s ago and expired \d+s ago\.\n`))
	g.Expect(dry.out).To(ContainSubstring("Machines of Cluster break-glass/alpha that carry Tollgate's deletion hook (" + hooks.DeletionHookAnnotation + "):\n"))
	g.Expect(dry.out).To(MatchRegexp(`\n  ` + removed + ` +deleting for \d+s: CAPI waits for the hook before it drains the Machine\n`))
	g.Expect(dry.out).To(MatchRegexp(`\n  alpha-control-plane-\S+ +not deleting: the hook would hold its next deletion\n`))
	g.Expect(dry.out).To(ContainSubstring("Dry run: nothing was changed. Run again with --yes to release the hooks of 3 Machine(s), recorded in a Warning event DeletionHooksReleased on Cluster break-glass/alpha and in status.bypassHistory of TalosUpgrade break-glass/alpha.\n"))
	g.Expect(w.hooked(ctx, g)).To(Equal(hooked))
	g.Expect(w.clusterEvents(ctx, g, "DeletionHooksReleased")).To(BeEmpty())

	// Released: recorded, then every hook removed; the deletion completes.
	r = w.kubectl(ctx, "release-hooks", clusterName, "--reason", reason, "--yes")
	t.Logf("kubectl tollgate release-hooks alpha --yes:\n%s%s", r.out, r.err)
	g.Expect(r.code).To(Equal(0), r.err)
	for _, name := range hooked {
		g.Expect(r.out).To(ContainSubstring("machine.cluster.x-k8s.io/" + name + " released\n"))
	}
	g.Expect(r.out).To(ContainSubstring(`Recorded in a Warning event DeletionHooksReleased on Cluster break-glass/alpha and in status.bypassHistory of TalosUpgrade break-glass/alpha: by alice: "` + reason + `".`))
	g.Expect(r.out).To(ContainSubstring(`Cluster break-glass/alpha still opts in to policy "keep-1-12": a running Tollgate puts its hook back`))
	g.Eventually(func(g Gomega) {
		g.Expect(w.machineNames(ctx, g)).NotTo(ContainElement(removed))
	}, timeout, 200*time.Millisecond).Should(Succeed(), "CAPI drains and deletes the Machine once the hook is gone")
	left := w.machineNames(ctx, g)
	g.Expect(left).To(HaveLen(2))
	g.Expect(w.hooked(ctx, g)).To(BeEmpty())
	audited := func(g Gomega) {
		events := w.clusterEvents(ctx, g, "DeletionHooksReleased")
		g.Expect(events).To(HaveLen(1))
		e := events[0]
		g.Expect(e.Type).To(Equal("Warning"))
		g.Expect(e.Action).To(Equal("BreakGlass"))
		g.Expect(e.ReportingController).To(Equal("kubectl-tollgate"))
		g.Expect(e.Note).To(HavePrefix("alice released Tollgate's deletion hook (break-glass) from Machine(s) " + removed + ", "))
		g.Expect(e.Note).To(ContainSubstring(": " + reason + ". Tollgate is not running: Lease tollgate-system/tollgate-controller-leader"))
		g.Expect(e.Related).NotTo(BeNil())
		g.Expect(e.Related.Kind).To(Equal("TalosUpgrade"))
		g.Expect(w.upgrade(ctx, g).Status.BypassHistory).To(ContainElement(And(
			HaveField("Source", upgradev1.BypassSourceReleaseHooks),
			HaveField("RequestedBy", user),
			HaveField("Reason", reason),
			HaveField("Bypassed", ContainSubstring("Tollgate's deletion hook, released by kubectl tollgate release-hooks while Tollgate was not running, from Machine(s) "+removed+", ")),
		)))
	}
	audited(g)

	// Tollgate comes back: the Cluster still opts in, so its hook goes back
	// on the Machines left; the record stays.
	w.startTollgate(ctx)
	g.Eventually(func(g Gomega) {
		g.Expect(w.hooked(ctx, g)).To(Equal(left))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	audited(g)

	// Stopped again, then the Cluster is deleted with the hooks on: CAPI
	// does not wait for them.
	w.crashTollgate()
	w.deleteCluster(ctx)
	// The record outlives the Cluster: its event, and the TalosUpgrade,
	// whose finalizer no Tollgate removes.
	audited(g)
	g.Expect(w.upgrade(ctx, g).Finalizers).To(ContainElement("upgrade.tollgate.dev/talosupgrade"))
}
