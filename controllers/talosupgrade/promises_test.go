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
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// The tests of this file hold the book to promises nothing else tested
// end to end: CAPI's MachineDrainRules and exclude-node-draining, the
// failure policy beyond one failure, resuming a paused rollout, the rollout
// groups of rollout.order, and the factory installer keeping each node's
// schematic.

// workloadPod creates a Pod on node in the workload's default namespace,
// controlled by a ReplicaSet (no controller runs it: the Pod is only what
// the drain sees), Running and Ready.
func (r *rollout) workloadPod(g Gomega, node, name string, labels map[string]string, gracePeriod int64) {
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: "6a1f7c3e-0000-4000-8000-000000000002", Controller: ptr.To(true),
		}}},
		Spec: corev1.PodSpec{
			NodeName: node, TerminationGracePeriodSeconds: ptr.To(gracePeriod),
			Containers: []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
	g.Expect(r.workload.Client.Create(ctx, p)).To(Succeed())
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	g.Expect(r.workload.Client.Status().Update(ctx, p)).To(Succeed())
}

// workloadPodState says whether a Pod of the default namespace exists and
// whether it is terminating.
func (r *rollout) workloadPodState(g Gomega, name string) (exists, terminating bool) {
	p := &corev1.Pod{}
	err := r.workload.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p)
	if apierrors.IsNotFound(err) {
		return false, false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true, p.DeletionTimestamp != nil
}

// updateMachine changes a Machine, retrying on conflicts.
func (r *rollout) updateMachine(g Gomega, name string, mutate func(*clusterv1.Machine)) {
	g.Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: name}, m)).To(Succeed())
		mutate(m)
		g.Expect(mgmt.Client.Update(context.Background(), m)).To(Succeed())
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// TestMachineDrainRulesDuringARollout drains a control-plane node under
// CAPI's MachineDrainRules of the Cluster's namespace: a Pod a Skip rule
// selects stays through the rollout; a Pod of a Drain rule of order 10 is
// evicted only once the Pods of order 0 are gone (one is held terminating,
// as by a slow kubelet); a rule for other Clusters is not applied.
func TestMachineDrainRulesDuringARollout(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A worker the Pods could move to: a node without one is not drained.
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	rule := func(name string, b clusterv1.MachineDrainRuleDrainBehavior, order *int32, pods []clusterv1.MachineDrainRulePodSelector, machines []clusterv1.MachineDrainRuleMachineSelector) {
		g.Expect(mgmt.Client.Create(ctx, &clusterv1.MachineDrainRule{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name},
			Spec: clusterv1.MachineDrainRuleSpec{
				Drain: clusterv1.MachineDrainRuleDrainConfig{Behavior: b, Order: order}, Pods: pods, Machines: machines,
			},
		})).To(Succeed())
	}
	selecting := func(k, v string) []clusterv1.MachineDrainRulePodSelector {
		return []clusterv1.MachineDrainRulePodSelector{{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}}
	}
	rule("logging-stays", clusterv1.MachineDrainRuleDrainBehaviorSkip, nil, selecting("app", "logging"), nil)
	rule("db-last", clusterv1.MachineDrainRuleDrainBehaviorDrain, ptr.To[int32](10), selecting("app", "db"), []clusterv1.MachineDrainRuleMachineSelector{{
		Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: clusterv1.MachineControlPlaneLabel, Operator: metav1.LabelSelectorOpExists}}},
	}})
	// Would leave every Pod in place, in Clusters labelled stage=staging.
	rule("staging-skips-all", clusterv1.MachineDrainRuleDrainBehaviorSkip, nil, nil, []clusterv1.MachineDrainRuleMachineSelector{{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"stage": "staging"}},
	}})
	r.workloadPod(g, "alpha-cp-0", "web-0", map[string]string{"app": "web"}, 30)
	r.workloadPod(g, "alpha-cp-0", "db-0", map[string]string{"app": "db"}, 0)
	r.workloadPod(g, "alpha-cp-0", "fluentd-0", map[string]string{"app": "logging"}, 0)
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()

	// Order 0 first: web-0 is evicted, and stays terminating (no kubelet).
	g.Eventually(func(g Gomega) {
		rec := machineRecord(r.upgrade(g), "alpha-cp-0")
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseDraining))
		g.Expect(rec.Message).To(ContainSubstring("then 1 Pods of a later drain order: default/db-0"))
		_, terminating := r.workloadPodState(g, "web-0")
		g.Expect(terminating).To(BeTrue())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		exists, terminating := r.workloadPodState(g, "db-0")
		g.Expect(exists && !terminating).To(BeTrue(), "order 10 waits for order 0")
		g.Expect(r.upgradeCalls("alpha-cp-0")).To(BeZero())
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())

	// The kubelet removes web-0: order 10 goes, then the node is upgraded.
	g.Expect(r.workload.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}},
		client.GracePeriodSeconds(0))).To(Succeed())
	g.Eventually(func(g Gomega) {
		exists, _ := r.workloadPodState(g, "db-0")
		g.Expect(exists).To(BeFalse(), "order 10 is evicted once order 0 is gone")
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	exists, terminating := r.workloadPodState(g, "fluentd-0")
	g.Expect(exists && !terminating).To(BeTrue(), "a Pod a Skip rule selects is never evicted")
	g.Expect(r.sim.Node("alpha-cp-0").Version()).To(Equal(toVersion))
}

// TestExcludeNodeDraining upgrades a Cluster one of whose Machines has
// CAPI's machine.cluster.x-k8s.io/exclude-node-draining annotation: its
// node is cordoned while it is upgraded, but its Pods are not evicted; the
// other node is drained.
func TestExcludeNodeDraining(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	r.updateMachine(g, "alpha-worker-0", func(m *clusterv1.Machine) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[clusterv1.ExcludeNodeDrainingAnnotation] = ""
	})
	r.workloadPod(g, "alpha-cp-0", "web-cp", nil, 0)
	r.workloadPod(g, "alpha-worker-0", "web-worker", nil, 0)
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	s := r.sample(ctx)
	r.startManager()

	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	exists, _ := r.workloadPodState(g, "web-cp")
	g.Expect(exists).To(BeFalse(), "the node without the annotation is drained")
	exists, terminating := r.workloadPodState(g, "web-worker")
	g.Expect(exists && !terminating).To(BeTrue(), "the node of the annotated Machine is not drained")
	u := r.upgrade(g)
	g.Expect(machineRecord(u, "alpha-worker-0").DrainSkipped).To(BeFalse(), "not drained because of the annotation, not for want of room")
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(toVersion), "node %s", n.Name())
	}
	g.Expect(s.firstDisrupted()).To(ContainElement("alpha-worker-0"), "the annotated Machine's node is cordoned all the same")
}

// TestMaxFailures fails every worker of a Cluster (an A/B rollback) under
// failurePolicy.maxFailures 2: the rollout goes on after the first failed
// Machine and acts on the second, which leaves the third untouched. With
// Halt the rollout ends Failed; with Pause it is paused, and resuming it
// (spec.paused: false, the cause fixed) upgrades the last worker.
func TestMaxFailures(t *testing.T) {
	envtestOnly(t)
	for _, action := range maxFailuresActions {
		t.Run(string(action), func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 3})
			workers := []string{"alpha-worker-0", "alpha-worker-1", "alpha-worker-2"}
			for _, w := range workers {
				r.sim.Node(w).InjectFault(talossim.Faults{Rollback: true})
			}
			g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.FailurePolicy = upgradev1.FailurePolicySpec{Action: action, MaxFailures: ptr.To[int32](2)}
			}))).To(Succeed())
			r.startManager()

			wantPhase, wantReason := upgradev1.UpgradePhaseFailed, upgradev1.MachineFailedReason
			if action == upgradev1.FailureActionPause {
				wantPhase, wantReason = upgradev1.UpgradePhasePaused, upgradev1.FailurePolicyPausedReason
			}
			var untouched string
			byPhase := func(u *upgradev1.TalosUpgrade) map[upgradev1.MachinePhase][]string {
				phases := map[upgradev1.MachinePhase][]string{}
				for _, w := range workers {
					phase := machineRecord(u, w).Phase
					phases[phase] = append(phases[phase], w)
				}
				return phases
			}
			g.Eventually(func(g Gomega) {
				u := r.upgrade(g)
				g.Expect(u.Status.Phase).To(Equal(wantPhase), "blockedBy: %s", u.Status.BlockedBy)
				phases := byPhase(u)
				g.Expect(phases[upgradev1.MachinePhaseFailed]).To(HaveLen(2), "the rollout goes on after the first failure")
				g.Expect(phases[upgradev1.MachinePhasePending]).To(HaveLen(1))
				untouched = phases[upgradev1.MachinePhasePending][0]
				g.Expect(machineRecord(u, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
			}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
			g.Consistently(func(g Gomega) {
				u := r.upgrade(g)
				g.Expect(u.Status.Phase).To(Equal(wantPhase))
				g.Expect(machineRecord(u, untouched).Phase).To(Equal(upgradev1.MachinePhasePending), "the second failure stops new Machines")
				g.Expect(r.upgradeCalls(untouched)).To(BeZero())
			}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
			u := r.upgrade(g)
			found := false
			for _, c := range u.Status.Conditions {
				found = found || c.Reason == wantReason
			}
			g.Expect(found).To(BeTrue(), "no condition with reason %s in %v", wantReason, u.Status.Conditions)
			if action == upgradev1.FailureActionHalt {
				return
			}

			// Fix the cause and resume: the last worker is upgraded; the
			// failed ones stay failed, and so does the rollout.
			r.sim.Node(untouched).InjectFault(talossim.Faults{})
			r.updateUpgrade(g, func(u *upgradev1.TalosUpgrade) { u.Spec.Paused = false })
			g.Eventually(func(g Gomega) {
				u := r.upgrade(g)
				g.Expect(machineRecord(u, untouched).Phase).To(Equal(upgradev1.MachinePhaseCompleted))
				g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseFailed))
				g.Expect(u.Status.FailedMachines).To(Equal(int32(2)))
				g.Expect(u.Status.AcknowledgedFailures).To(Equal(int32(2)))
			}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
			g.Expect(r.sim.Node(untouched).Version()).To(Equal(toVersion))
			g.Expect(r.upgradeCalls(untouched)).To(Equal(1))
		})
	}
}

// TestResumeAfterPause pauses a rollout while its first Machine is in
// flight: that Machine finishes, nothing else moves while the rollout is
// paused, and once resumed the rollout completes, one upgrade call per node.
func TestResumeAfterPause(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2})
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPostUpgrade, true)
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(machineRecord(r.upgrade(g), "alpha-cp-0").HoldPoint).To(Equal(upgradev1.HoldPointPostUpgrade))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	r.updateUpgrade(g, func(u *upgradev1.TalosUpgrade) { u.Spec.Paused = true })
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPostUpgrade, false)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(machineRecord(u, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhasePaused))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	calls := len(r.sim.CallLog())
	g.Consistently(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhasePaused))
		g.Expect(machineRecord(u, "alpha-worker-0").Phase).To(Equal(upgradev1.MachinePhasePending))
		g.Expect(machineRecord(u, "alpha-worker-1").Phase).To(Equal(upgradev1.MachinePhasePending))
		g.Expect(r.upgradeCalls("alpha-worker-0") + r.upgradeCalls("alpha-worker-1")).To(BeZero())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.CallLog()).To(HaveLen(calls), "no Talos call while paused")

	r.updateUpgrade(g, func(u *upgradev1.TalosUpgrade) { u.Spec.Paused = false })
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	u := r.upgrade(g)
	g.Expect(conditions.IsTrue(u, upgradev1.CompletedCondition)).To(BeTrue())
	g.Expect(conditions.IsTrue(u, upgradev1.PausedCondition)).To(BeFalse())
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(toVersion), "node %s", n.Name())
		g.Expect(r.upgradeCalls(n.Name())).To(Equal(1), "exactly one upgrade call on %s", n.Name())
	}
}

// maxFailuresActions are the failure actions TestMaxFailures runs. With
// Pause it is also the regression test of a resume that paused the rollout
// again: reconcileEnd judged halted() before it acknowledged the failures
// the resume accepts.
var maxFailuresActions = []upgradev1.FailureAction{upgradev1.FailureActionHalt, upgradev1.FailureActionPause}

// timeline records, from the TalosUpgrade's records, when each Machine was
// first seen started (past Pending) and first seen Completed.
type timeline struct {
	mu                 sync.Mutex
	started, completed map[string]time.Time
}

func (r *rollout) timeline(ctx context.Context) *timeline {
	tl := &timeline{started: map[string]time.Time{}, completed: map[string]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			u := &upgradev1.TalosUpgrade{}
			if mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "alpha"}, u) == nil {
				now := time.Now()
				tl.mu.Lock()
				for _, m := range u.Status.Machines {
					if _, ok := tl.started[m.Machine]; !ok && m.Phase != upgradev1.MachinePhasePending {
						tl.started[m.Machine] = now
					}
					if _, ok := tl.completed[m.Machine]; !ok && m.Phase == upgradev1.MachinePhaseCompleted {
						tl.completed[m.Machine] = now
					}
				}
				tl.mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond) // Sampling period, not a wait for a condition.
		}
	}()
	return tl
}

// TestRolloutGroupsInOrder upgrades the workers of a Cluster in the groups
// of rollout.order: a group starts only once every Machine of the group
// before it completed, its own maxUnavailable applies within it, and the
// Machines no group selects come last, grouped by MachineDeployment.
func TestRolloutGroupsInOrder(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 4})
	tier := map[string]string{"alpha-worker-2": "canary", "alpha-worker-3": "canary", "alpha-worker-0": "general"}
	for machine, value := range tier {
		r.updateMachine(g, machine, func(m *clusterv1.Machine) { m.Labels["tier"] = value })
	}
	two := intstr.FromInt32(2)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Rollout.Order = []upgradev1.RolloutGroup{
			{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, MaxUnavailable: &two},
			{Name: "general", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "general"}}},
		}
	}))).To(Succeed())
	tl := r.timeline(ctx)
	s := r.sample(ctx)
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	u := r.upgrade(g)
	for machine, group := range map[string]string{
		"alpha-worker-2": "canary", "alpha-worker-3": "canary", "alpha-worker-0": "general", "alpha-worker-1": "md/alpha-md-0",
	} {
		g.Expect(machineRecord(u, machine).Group).To(Equal(group), "Machine %s", machine)
	}

	tl.mu.Lock()
	defer tl.mu.Unlock()
	// Each group after the one before: its first start after the last
	// completion of the previous (the control plane first of all).
	groups := [][]string{{"alpha-cp-0"}, {"alpha-worker-2", "alpha-worker-3"}, {"alpha-worker-0"}, {"alpha-worker-1"}}
	for i := 1; i < len(groups); i++ {
		var lastDone time.Time
		for _, m := range groups[i-1] {
			g.Expect(tl.completed).To(HaveKey(m))
			if tl.completed[m].After(lastDone) {
				lastDone = tl.completed[m]
			}
		}
		for _, m := range groups[i] {
			g.Expect(tl.started).To(HaveKey(m))
			g.Expect(tl.started[m].Before(lastDone)).To(BeFalse(), "%s started before group %v completed", m, groups[i-1])
		}
	}
	g.Expect(s.maxWorkers()).To(Equal(2), "the canary group's maxUnavailable 2 lets both its Machines go at once")
}

// TestFactoryInstallerKeepsEachNodesSchematic upgrades, with the factory
// installer source and no schematicID, nodes that run two different Image
// Factory schematics and one that runs none: each node is installed the
// Factory image of its own schematic (the default one for the node without),
// and the preflight checked exactly those images. The Image Factory is not
// reachable from the tests: the manager's image check answers for it.
func TestFactoryInstallerKeepsEachNodesSchematic(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const (
		gpu     = "4a0d65c669d46663f377e7161e50cfd570c401f26fd9e7bda34a0216b6f1922b"
		storage = "b8e8fbbe1b520989e6c52c8dc8303070cb42095997e76e812fa8892bbfa1e2a3"
	)
	ns := namespaceFor(t)
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: ns, Name: "alpha", ControlPlanes: 1, Workers: 2, TalosVersion: fromVersion,
		Schematics:     map[string]string{"alpha-cp-0": storage, "alpha-worker-0": gpu},
		ClusterOptions: []builder.ClusterOption{builder.WithPolicy("to-1-13")},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Stop() })
	r := &rollout{t: t, ns: ns, workload: c.Workload, sim: c.Simulator, fixture: c.Fixture, driver: c.Workload.Driver}
	var (
		mu      sync.Mutex
		checked []string
	)
	r.mgrConfig = manager.Options{Namespace: ns, Concurrency: 4, TalosCallTimeout: 3 * time.Second,
		CheckImage: func(_ context.Context, ref string, _ *corev1.Secret) error {
			mu.Lock()
			defer mu.Unlock()
			checked = append(checked, ref)
			if !strings.HasPrefix(ref, talos.FactoryRegistry+"/metal-installer/") {
				return fmt.Errorf("%w: installer image %s not found", talos.ErrImageNotFound, ref)
			}
			return nil
		},
	}
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Installer = upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"}
	}))).To(Succeed())
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	image := func(schematic string) string {
		return talos.FactoryRegistry + "/metal-installer/" + schematic + ":" + toVersion
	}
	u := r.upgrade(g)
	for node, schematic := range map[string]string{"alpha-cp-0": storage, "alpha-worker-0": gpu, "alpha-worker-1": talos.DefaultSchematicID} {
		n := r.sim.Node(node)
		g.Expect(n.Version()).To(Equal(toVersion), "node %s", node)
		g.Expect(n.Schematic()).To(Equal(schematic), "node %s keeps its own schematic", node)
		g.Expect(machineRecord(u, node).InstallerImage).To(Equal(image(schematic)), "node %s", node)
		g.Expect(r.upgradeCalls(node)).To(Equal(1))
	}
	g.Expect(u.Status.InstallerImages).To(ConsistOf(image(storage), image(gpu), image(talos.DefaultSchematicID)))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(checked).To(ContainElements(image(storage), image(gpu), image(talos.DefaultSchematicID)))
	for _, ref := range checked {
		g.Expect(ref).To(HavePrefix(talos.FactoryRegistry+"/metal-installer/"), "only the Factory images are checked")
	}
}
