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
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// hookTimeline samples a node and the hook Jobs of a point: whether the node
// was ever schedulable while a Job of the point ran, and whether it was
// cordoned when a Job of another point was first seen.
type hookTimeline struct {
	mu sync.Mutex
	// schedulableWhilePreReady is set when the node was seen schedulable
	// while a nodePreReady Job had not finished.
	schedulableWhilePreReady bool
	// cordonedAtReady is set when the node was seen cordoned at the first
	// sight of a nodeReady Job.
	cordonedAtReady bool
	// preReadySeen and readySeen are set once a Job of the point was seen.
	preReadySeen, readySeen bool
}

func (r *rollout) sampleHooks(ctx context.Context, node string) *hookTimeline {
	tl := &hookTimeline{}
	go func() {
		for ctx.Err() == nil {
			n := &corev1.Node{}
			jobs := &batchv1.JobList{}
			if r.workload.Client.Get(ctx, client.ObjectKey{Name: node}, n) == nil &&
				r.workload.Client.List(ctx, jobs, client.MatchingLabels{workloadjob.MachineLabel: node}) == nil {
				tl.mu.Lock()
				for _, j := range jobs.Items {
					switch upgradev1.HookPoint(j.Labels[workloadjob.HookPointLabel]) {
					case upgradev1.HookPointNodePreReady:
						tl.preReadySeen = true
						if workloadjob.OutcomeOf(&j) == workloadjob.Running && !n.Spec.Unschedulable {
							tl.schedulableWhilePreReady = true
						}
					case upgradev1.HookPointNodeReady:
						if !tl.readySeen && n.Spec.Unschedulable {
							tl.cordonedAtReady = true
						}
						tl.readySeen = true
					}
				}
				tl.mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond) // Sampling period, not a wait for a condition.
		}
	}()
	return tl
}

// TestNodeStaysCordonedUntilProven checks the node readiness contract: the
// upgraded node comes back Ready on the target and stays cordoned while its
// post-upgrade hold is present and while its nodePreReady hook runs; only
// then is it uncordoned, and its nodeReady hook runs after that.
func TestNodeStaysCordonedUntilProven(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	slow := time.Second
	r.driver.Script(jobdriver.HasLabels(map[string]string{workloadjob.HookPointLabel: string(upgradev1.HookPointNodePreReady)}),
		jobdriver.Outcome{Delay: &slow}, jobdriver.Outcome{Delay: &slow})
	tl := r.sampleHooks(ctx, "alpha-worker-0")
	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPostUpgrade, true)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Hooks = []upgradev1.ActionHook{
			{Name: "prove", Point: upgradev1.HookPointNodePreReady, Template: jobTemplate("check-node")},
			{Name: "announce", Point: upgradev1.HookPointNodeReady, Template: jobTemplate("announce")},
		}
	}))).To(Succeed())
	r.startManager()

	// Back Ready on the target, held: still cordoned, no nodeReady hook.
	g.Eventually(func(g Gomega) {
		rec := machineRecord(r.upgrade(g), "alpha-worker-0")
		g.Expect(rec.HoldPoint).To(Equal(upgradev1.HoldPointPostUpgrade))
		g.Expect(rec.HeldBy).To(ConsistOf("test"))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.Node("alpha-worker-0").Version()).To(Equal(toVersion))
	node := &corev1.Node{}
	g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: "alpha-worker-0"}, node)).To(Succeed())
	g.Expect(node.Spec.Unschedulable).To(BeTrue(), "a node is not uncordoned while a post-upgrade hold is present")
	g.Expect(machineRecord(r.upgrade(g), "alpha-worker-0").Cordoned).To(BeTrue())

	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPostUpgrade, false)
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: "alpha-worker-0"}, node)).To(Succeed())
	g.Expect(node.Spec.Unschedulable).To(BeFalse(), "the proven node takes work again")

	tl.mu.Lock()
	defer tl.mu.Unlock()
	g.Expect(tl.preReadySeen && tl.readySeen).To(BeTrue(), "both hooks ran")
	g.Expect(tl.schedulableWhilePreReady).To(BeFalse(), "no node is schedulable while its nodePreReady hook runs")
	g.Expect(tl.cordonedAtReady).To(BeFalse(), "the nodeReady hook runs once the node is uncordoned")
}

// TestSingleNodeClusterIsNotDrained upgrades a Cluster of one node, whose
// Pod is protected by a PodDisruptionBudget: its Pods have nowhere to go, so
// the node is cordoned but not drained (a drain could never finish), the
// record and an event say so, and the upgrade completes.
func TestSingleNodeClusterIsNotDrained(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	minAvailable := intstr.FromInt32(1)
	g.Expect(r.workload.Client.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	})).To(Succeed())
	db := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-0", Labels: map[string]string{"app": "db"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "6a1f7c3e-0000-4000-8000-000000000002", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "alpha-cp-0", Containers: []corev1.Container{{Name: "db", Image: "postgres:17"}}},
	}
	g.Expect(r.workload.Client.Create(ctx, db)).To(Succeed())
	db.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	g.Expect(r.workload.Client.Status().Update(ctx, db)).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Drain.Timeout = &metav1.Duration{Duration: 3 * time.Second}
	}))).To(Succeed())
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(machineRecord(u, "alpha-cp-0").DrainSkipped).To(BeTrue())
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1))
	g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-0"}, &corev1.Pod{})).To(Succeed(), "nothing was evicted")
	node := &corev1.Node{}
	g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: "alpha-cp-0"}, node)).To(Succeed())
	g.Expect(node.Spec.Unschedulable).To(BeFalse())
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(mgmt.Client.List(ctx, events, client.InNamespace(r.ns))).To(Succeed())
		found := false
		for _, e := range events.Items {
			found = found || e.Reason == "DrainSkipped"
		}
		g.Expect(found).To(BeTrue(), "an event says the node was not drained")
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
}
