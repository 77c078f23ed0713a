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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// removalHook is the preRemoval hook of the removal tests' policy.
const removalHook = "osd-out"

// gateRemovals starts the Job driver of the workload cluster, whose
// ClusterHealthCheck "ceph" fails while failing is true and whose hook Jobs
// succeed, creates that check and opts the Cluster in to a policy on the
// version it runs (no upgrade: only the removals are gated) with the check,
// a preRemoval hook and a removal timeout of 10m, and starts Tollgate. It
// returns the driver, once every Machine carries Tollgate's deletion hook.
func (w *world) gateRemovals(ctx context.Context, failing *atomic.Bool) *jobdriver.Driver {
	w.t.Helper()
	g := NewWithT(w.t)
	driver := jobdriver.New(w.workload.Client, jobdriver.Options{Delay: 100 * time.Millisecond})
	driver.Script(func(job *batchv1.Job) bool {
		return strings.HasPrefix(job.Name, "tollgate-hc-ceph") && failing.Load()
	}, repeat(jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN"}, 1000)...)
	driverCtx, stopDriver := context.WithCancel(ctx)
	w.t.Cleanup(stopDriver)
	driver.Start(driverCtx)
	job := batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "main", Image: "quay.io/ceph/ceph:v19", Command: []string{"ceph", "health"}}},
	}}}}
	g.Expect(w.c.Create(ctx, &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "ceph"},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Template: job,
			Interval: &metav1.Duration{Duration: 5 * time.Second},
			Timeout:  &metav1.Duration{Duration: time.Minute},
		},
	})).To(Succeed())
	w.optIn(ctx, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = "v1.12.4"
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
		p.Spec.Hooks = []upgradev1.ActionHook{{Name: removalHook, Point: upgradev1.HookPointPreRemoval, Template: *job.DeepCopy()}}
		p.Spec.Removal.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
	})
	w.t.Cleanup(startTollgate(ctx, w.t, w.mgmt))
	g.Eventually(func(g Gomega) {
		for _, m := range w.machines(ctx, g) {
			g.Expect(hooks.HasDeletionHook(&m)).To(BeTrue(), "Machine %s carries Tollgate's deletion hook", m.Name)
		}
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	return driver
}

// machines lists the Cluster's Machines.
func (w *world) machines(ctx context.Context, g Gomega) []clusterv1.Machine {
	list := &clusterv1.MachineList{}
	g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
	return list.Items
}

// hookRuns counts the preRemoval Jobs of the removal hook that ran, by
// Machine.
func hookRuns(driver *jobdriver.Driver) map[string]int {
	runs := map[string]int{}
	for _, j := range driver.SeenMatching(jobdriver.NamePrefix("tollgate-hook-" + removalHook + "-preremoval-")) {
		runs[j.Env["main"]["TOLLGATE_MACHINE"]]++
	}
	return runs
}

// removalEvents returns the notes of the events of reason recorded on the
// Cluster's TalosUpgrade.
func (w *world) removalEvents(ctx context.Context, g Gomega, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "TalosUpgrade" && e.Regarding.Name == w.name && e.Reason == reason {
			notes = append(notes, e.Type+": "+e.Note)
		}
	}
	return notes
}

// TestRemovalsPassTheGateWithCAPICore scales a MachineDeployment of three
// workers down by two while the policy's health check fails. CAPI's
// MachineSet controller deletes two Machines and CAPI's Machine controller
// waits at Tollgate's pre-drain deletion hook, saying so in the Machines'
// Deleting condition: nothing is drained or deleted, and no preRemoval hook
// runs, while the check fails. Once it passes, the Machines go one at a
// time: each after its preRemoval hook ran exactly once, the second only
// once the first is gone. Then the Cluster leaves the policy, and Tollgate
// removes its hook from every Machine left.
func TestRemovalsPassTheGateWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 3, 200*time.Millisecond)
	w.running(ctx, 3, "v1.12.4")
	var failing atomic.Bool
	failing.Store(true)
	driver := w.gateRemovals(ctx, &failing)

	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To[int32](1)
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())

	// CAPI deletes two Machines and waits at Tollgate's hook, which holds
	// them while the check fails.
	var deleting []string
	g.Eventually(func(g Gomega) {
		deleting = nil
		for _, m := range w.machines(ctx, g) {
			if m.DeletionTimestamp.IsZero() {
				continue
			}
			deleting = append(deleting, m.Name)
			c := conditions.Get(&m, clusterv1.MachineDeletingCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(clusterv1.MachineDeletingWaitingForPreDrainHookReason), "Machine %s: %s", m.Name, c.Message)
			g.Expect(c.Message).To(ContainSubstring(hooks.DeletionHookAnnotation))
		}
		g.Expect(deleting).To(HaveLen(2))
		u := w.upgrade(ctx, g)
		g.Expect(u.Status.Removals).To(HaveLen(2))
		for _, r := range u.Status.Removals {
			g.Expect(r.Phase).To(Equal(upgradev1.RemovalPhaseHeld))
			g.Expect(r.Cause).To(Equal(upgradev1.RemovalCauseDeleted))
		}
		g.Expect(u.Status.Removals).To(ContainElement(HaveField("Message", ContainSubstring("waiting for the health checks"))))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, m := range w.machines(ctx, g) {
			if !m.DeletionTimestamp.IsZero() {
				g.Expect(hooks.HasDeletionHook(&m)).To(BeTrue(), "Machine %s is held while the check fails", m.Name)
			}
		}
		g.Expect(w.machines(ctx, g)).To(HaveLen(4))
		g.Expect(hookRuns(driver)).To(BeEmpty(), "no preRemoval hook runs while the check fails")
	}, 10*time.Second, 250*time.Millisecond).Should(Succeed())

	// The check passes: one Machine at a time, each after its hook ran once.
	failing.Store(false)
	start := time.Now()
	gone := map[string]bool{}
	g.Eventually(func(g Gomega) {
		present := map[string]bool{}
		released := 0
		for _, m := range w.machines(ctx, g) {
			present[m.Name] = true
			if !m.DeletionTimestamp.IsZero() && !hooks.HasDeletionHook(&m) {
				released++
				g.Expect(hookRuns(driver)).To(HaveKeyWithValue(m.Name, 1), "Machine %s is released after its preRemoval hook ran once", m.Name)
			}
		}
		if released > 1 {
			// A StopTrying failure: the gate let two removals go at once.
			StopTrying("two Machines of the group released at once").Now()
		}
		runs := hookRuns(driver)
		for _, name := range deleting {
			if !present[name] {
				gone[name] = true
			}
		}
		if len(runs) > 1 && len(gone) == 0 {
			StopTrying("the second Machine's hook ran before the first Machine was gone").Now()
		}
		g.Expect(gone).To(HaveLen(2), "both Machines are removed")
	}, 3*time.Minute, 100*time.Millisecond).Should(Succeed())
	t.Logf("Both Machines were removed %s after the check passed", time.Since(start).Round(time.Millisecond))
	runs := hookRuns(driver)
	for _, name := range deleting {
		g.Expect(runs).To(HaveKeyWithValue(name, 1), "the preRemoval hook of Machine %s ran exactly once", name)
	}
	g.Expect(runs).To(HaveLen(2))
	g.Eventually(func(g Gomega) {
		notes := w.removalEvents(ctx, g, "RemovalReleased")
		g.Expect(notes).To(HaveLen(2))
		for _, n := range notes {
			g.Expect(n).To(HavePrefix("Normal: "))
			g.Expect(n).To(ContainSubstring("cause Deleted"))
		}
		g.Expect(w.upgrade(ctx, g).Status.Removals).To(BeEmpty(), "a Machine gone leaves no record")
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

	// The Cluster leaves the policy: no Machine keeps Tollgate's hook.
	cluster := &clusterv1.Cluster{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, cluster)).To(Succeed())
	patch = client.MergeFrom(cluster.DeepCopy())
	delete(cluster.Labels, upgradev1.PolicyLabel)
	g.Expect(w.c.Patch(ctx, cluster, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		machines := w.machines(ctx, g)
		g.Expect(machines).To(HaveLen(2))
		for _, m := range machines {
			g.Expect(hooks.HasDeletionHook(&m)).To(BeFalse(), "Machine %s of a Cluster that left the policy keeps no hook of Tollgate's", m.Name)
		}
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
}

// TestRemediationPassesTheGateWithCAPICore: a real MachineHealthCheck
// remediates a worker whose Node went NotReady, while the policy's health
// check fails for good. Tollgate holds the Machine only for its preRemoval
// hook (a remediated Machine does not wait for the checks, and a dead node
// takes nothing more from the budget), well within its removal timeout of
// 10m: CAPI deletes it and its MachineSet replaces it.
func TestRemediationPassesTheGateWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 2, 200*time.Millisecond)
	w.running(ctx, 2, "v1.12.4")
	g.Expect(w.c.Create(ctx, &clusterv1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name + "-md-0"},
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: w.name,
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineDeploymentNameLabel: w.md.Name}},
			Checks: clusterv1.MachineHealthCheckChecks{UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: ptr.To[int32](2)},
			}},
		},
	})).To(Succeed())
	var failing atomic.Bool
	failing.Store(true)
	driver := w.gateRemovals(ctx, &failing)

	// A worker's node dies: its Node goes NotReady.
	workers := w.workerNames(ctx, g)
	g.Expect(workers).To(HaveLen(2))
	lost := workers[0]
	node := &corev1.Node{}
	g.Expect(w.workload.Client.Get(ctx, client.ObjectKey{Name: w.nodeOf(ctx, g, lost)}, node)).To(Succeed())
	nodePatch := client.MergeFrom(node.DeepCopy())
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			node.Status.Conditions[i].Status = corev1.ConditionFalse
			node.Status.Conditions[i].Reason = "KubeletStopped"
			node.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	g.Expect(w.workload.Client.Status().Patch(ctx, node, nodePatch)).To(Succeed())
	start := time.Now()

	g.Eventually(func(g Gomega) {
		g.Expect(machineNames(ctx, g, w.c, w.ns)).NotTo(ContainElement(lost), "the remediated Machine is deleted; removals: %+v", w.upgrade(ctx, g).Status.Removals)
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	took := time.Since(start)
	t.Logf("The remediated Machine was gone %s after its node went NotReady", took.Round(time.Millisecond))
	g.Expect(took).To(BeNumerically("<", 10*time.Minute))
	g.Expect(hookRuns(driver)).To(Equal(map[string]int{lost: 1}), "its preRemoval hook ran once, and no other")
	g.Expect(failing.Load()).To(BeTrue(), "the check failed all along")
	g.Eventually(func(g Gomega) { // Events are written behind the reconcile that records them.
		g.Expect(w.removalEvents(ctx, g, "RemovalReleased")).To(ConsistOf(And(HavePrefix("Normal: "), ContainSubstring("Machine "+lost+" (cause Remediated)"), Not(ContainSubstring("timeout")))))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	// The MachineSet replaces it, and the new Machine is gated too.
	g.Eventually(func(g Gomega) {
		machines := w.machines(ctx, g)
		g.Expect(machines).To(HaveLen(3))
		for _, m := range machines {
			g.Expect(hooks.HasDeletionHook(&m)).To(BeTrue(), "Machine %s carries Tollgate's deletion hook", m.Name)
		}
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
}

// TestFailedRemovalHookBypassedWithCAPICore scales a MachineDeployment of
// two workers down by one while the policy's preRemoval hook fails for
// good. Tollgate holds the Machine CAPI deletes, and its Removals condition
// says the hook failed, naming the Machine and how to bypass it. An
// administrator skips the failed hook with spec.bypass.machines: the
// removal goes on at once (well before its removal timeout of 10m), CAPI
// drains and deletes the Machine, the bypass is recorded in the bypass
// history and cleared (the rollout ended and no removal is held), and the
// hook ran once.
func TestFailedRemovalHookBypassedWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 2, 200*time.Millisecond)
	w.running(ctx, 2, "v1.12.4")
	var failing atomic.Bool
	driver := w.gateRemovals(ctx, &failing)
	driver.Script(jobdriver.NamePrefix("tollgate-hook-"+removalHook+"-preremoval-"),
		repeat(jobdriver.Outcome{Fail: true, Message: "osd.3 is still up"}, 1000)...)

	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To[int32](1)
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())

	// The hook fails: the Machine is held, and the condition says why.
	var removed string
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Status.Removals).To(HaveLen(1))
		rec := u.Status.Removals[0]
		removed = rec.Machine
		g.Expect(rec.Phase).To(Equal(upgradev1.RemovalPhaseHeld))
		g.Expect(rec.Reason).To(Equal(upgradev1.RemovalHookFailedReason), "removal: %+v", rec)
		c := conditions.Get(u, upgradev1.RemovalsCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(upgradev1.RemovalHookFailedReason))
		g.Expect(c.Message).To(And(ContainSubstring(`Machine "`+removed+`" (Deleted)`), ContainSubstring("osd.3 is still up"), ContainSubstring("spec.bypass.machines")))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	m := &clusterv1.Machine{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: removed}, m)).To(Succeed())
	g.Expect(hooks.HasDeletionHook(m)).To(BeTrue(), "the Machine is held while its hook failed")

	// An administrator skips the failed hook.
	u := w.upgrade(ctx, g)
	upatch := client.MergeFrom(u.DeepCopy())
	u.Spec.Bypass = &upgradev1.BypassSpec{
		Machines: []upgradev1.MachineBypass{{Machine: removed, Hook: removalHook, Action: upgradev1.HookBypassSkip}},
		Reason:   "INC-77: the OSDs were taken out by hand",
	}
	g.Expect(w.c.Patch(ctx, u, upatch)).To(Succeed())
	start := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(machineNames(ctx, g, w.c, w.ns)).NotTo(ContainElement(removed), "the Machine whose hook was skipped is deleted")
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	t.Logf("The Machine was gone %s after its failed hook was skipped", time.Since(start).Round(time.Millisecond))
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Status.Removals).To(BeEmpty())
		g.Expect(u.Spec.Bypass).To(BeNil(), "the bypass is cleared once no removal is held")
		g.Expect(u.Status.BypassHistory).To(ContainElement(And(
			HaveField("Source", upgradev1.BypassSourceUpgrade),
			HaveField("Reason", "INC-77: the OSDs were taken out by hand"),
			HaveField("Bypassed", `hook "`+removalHook+`" of Machine "`+removed+`" (Skip)`),
		)))
		c := conditions.Get(u, upgradev1.RemovalsCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(w.removalEvents(ctx, g, "HookBypassed")).To(ConsistOf(And(HavePrefix("Warning: "), ContainSubstring("Removal of Machine "+removed), ContainSubstring("skipped"))))
		g.Expect(w.removalEvents(ctx, g, "RemovalReleased")).To(ConsistOf(And(HavePrefix("Normal: "), ContainSubstring("Machine "+removed+" (cause Deleted)"), Not(ContainSubstring("timeout")))))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(hookRuns(driver)).To(Equal(map[string]int{removed: 1}), "the skipped hook ran once, and was not run again")
}
