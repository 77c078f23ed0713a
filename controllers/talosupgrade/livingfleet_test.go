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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// These tests are the regression tests of a living fleet: Machines that join
// and leave during a rollout, Clusters that leave their policy, nodes that go
// silent, and slow installs.

// setHold adds or removes the test's hold on a Machine at point.
func (r *rollout) setHold(g Gomega, machine string, point upgradev1.HoldPoint, set bool) {
	g.Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: machine}, m)).To(Succeed())
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		if set {
			m.Annotations[hooks.HoldAnnotation(point, "test")] = ""
		} else {
			delete(m.Annotations, hooks.HoldAnnotation(point, "test"))
		}
		g.Expect(mgmt.Client.Update(context.Background(), m)).To(Succeed())
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// startHeldAt holds machine at point, starts the rollout of policy p and
// waits until the machine is held there.
func (r *rollout) startHeldAt(g Gomega, machine string, point upgradev1.HoldPoint, p *upgradev1.TalosUpgradePolicy) {
	r.setHold(g, machine, point, true)
	g.Expect(mgmt.Client.Create(context.Background(), p)).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(machineRecord(r.upgrade(g), machine).HoldPoint).To(Equal(point))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}

// updateCluster changes the Cluster, retrying on conflicts.
func (r *rollout) updateCluster(g Gomega, mutate func(*clusterv1.Cluster)) {
	g.Eventually(func(g Gomega) {
		c := &clusterv1.Cluster{}
		g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: "alpha"}, c)).To(Succeed())
		mutate(c)
		g.Expect(mgmt.Client.Update(context.Background(), c)).To(Succeed())
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// joinMachine creates a worker Machine the way a MachineDeployment scale-up
// or a MachineHealthCheck replacement does: first without node, addresses
// or Talos version.
func (r *rollout) joinMachine(g Gomega, name string) {
	m := builder.Machine(r.ns, name, "alpha", builder.WithMachineDeployment("alpha-md-0"))
	m.Status.NodeRef, m.Status.NodeInfo, m.Status.Addresses = clusterv1.MachineNodeReference{}, nil, nil
	g.Expect(builder.CreateMachine(context.Background(), mgmt.Client, m)).To(Succeed())
}

// provisionMachine gives a joined Machine its node: a simulated Talos node on
// version, its workload Node, and the Machine's status as CAPI reports it.
func (r *rollout) provisionMachine(g Gomega, name, version string) {
	ctx := context.Background()
	n, err := r.sim.AddNode(talossim.NodeConfig{Name: name, Version: version})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builder.CreateNode(ctx, r.workload.Client, builder.Node(name, builder.WithNodeOSImage(version)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: name}, m)).To(Succeed())
		builder.WithNodeName(name)(m)
		builder.WithTalosVersion(version)(m)
		builder.WithAddress(n.Address())(m)
		g.Expect(mgmt.Client.Status().Update(ctx, m)).To(Succeed())
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// TestMachinesJoinMidRollout adds two workers while the control plane is
// being upgraded, before their nodes exist: they wait, say why, and get no
// Talos call; once provisioned, the one on the old version is upgraded with
// exactly one call and one reboot, after its drain, and the one already on
// the target is left alone.
func TestMachinesJoinMidRollout(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	r.startHeldAt(g, "alpha-cp-0", upgradev1.HoldPointPostUpgrade, r.policy())

	r.joinMachine(g, "alpha-worker-1")
	r.joinMachine(g, "alpha-worker-2")
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPostUpgrade, false)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(machineRecord(u, "alpha-worker-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		for _, name := range []string{"alpha-worker-1", "alpha-worker-2"} {
			rec := machineRecord(u, name)
			g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhasePending))
			g.Expect(rec.Message).To(ContainSubstring("waiting for the Machine's node"))
		}
		g.Expect(u.Status.BlockedBy).To(ContainSubstring("waiting for the Machine's node"))
		g.Expect(conditions.GetReason(u, upgradev1.ProgressingCondition)).To(Equal(upgradev1.WaitingForMachinesReason))
		g.Expect(u.Status.Phase).NotTo(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	r.provisionMachine(g, "alpha-worker-1", fromVersion)
	r.provisionMachine(g, "alpha-worker-2", toVersion)
	s := r.sample(ctx)
	boots := r.sim.Node("alpha-worker-1").Boots()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(machineRecord(u, "alpha-worker-2").Message).To(ContainSubstring("already runs"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.Node("alpha-worker-1").Version()).To(Equal(toVersion))
	g.Expect(r.upgradeCalls("alpha-worker-1")).To(Equal(1))
	g.Expect(r.sim.Node("alpha-worker-1").Boots()).To(Equal(boots+1), "exactly one reboot")
	g.Expect(r.sim.Calls("alpha-worker-1", talossim.RPCReboot)).To(BeZero(), "a 1.12 node reboots itself")
	g.Expect(r.upgradeCalls("alpha-worker-2")).To(BeZero())
	g.Expect(r.sim.Calls("alpha-worker-2", talossim.RPCReboot)).To(BeZero())
	g.Expect(s.firstDisrupted()).To(ContainElement("alpha-worker-1"), "the joiner was cordoned before its upgrade")
	g.Expect(s.protectedMachines()).To(HaveKey("alpha-worker-1"))
}

// TestNodeVersionDecidesTheUpgradeAPI gives a Machine whose status claims a
// Talos 1.13 pre-release while its node runs 1.12: the node's own answer
// decides, so its self-rebooting upgrade call waits for the pre-reboot holds.
func TestNodeVersionDecidesTheUpgradeAPI(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, machineOptions: []builder.MachineOption{builder.WithTalosVersion("v1.13.0-beta.1")}})
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPreReboot, true)
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	boots := r.sim.Node("alpha-cp-0").Boots()
	g.Eventually(func(g Gomega) {
		rec := machineRecord(r.upgrade(g), "alpha-cp-0")
		g.Expect(rec.HoldPoint).To(Equal(upgradev1.HoldPointPreReboot))
		g.Expect(rec.FromVersion).To(Equal(fromVersion), "the version the node reported")
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func() int { return r.upgradeCalls("alpha-cp-0") + r.sim.Node("alpha-cp-0").Boots() - boots }, 2*time.Second, 100*time.Millisecond).Should(BeZero())
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPreReboot, false)
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1))
	g.Expect(r.sim.Node("alpha-cp-0").Boots()).To(Equal(boots + 1))
}

// TestClusterLeavesAndRejoinsPolicy removes the policy label while the first
// Machine is in flight: it finishes, no other Machine starts, the rollout
// ends Detached and gives its slot back; with the label back, the rollout
// goes back to work and completes. Pausing the Cluster meanwhile shows as
// the Paused phase.
func TestClusterLeavesAndRejoinsPolicy(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2})
	r.startHeldAt(g, "alpha-cp-0", upgradev1.HoldPointPostUpgrade, r.policy())

	// A paused Cluster: the Machine in flight stays where it is.
	r.updateCluster(g, func(c *clusterv1.Cluster) { c.Spec.Paused = ptrTo(true) })
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhasePaused))
		g.Expect(conditions.GetReason(u, upgradev1.PausedCondition)).To(Equal(upgradev1.ClusterPausedReason))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	r.updateCluster(g, func(c *clusterv1.Cluster) {
		c.Spec.Paused = nil
		delete(c.Labels, upgradev1.PolicyLabel)
	})
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPostUpgrade, false)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseDetached), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(machineRecord(u, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted), "the Machine in flight finishes")
		g.Expect(conditions.GetReason(u, upgradev1.CompletedCondition)).To(Equal(upgradev1.ClusterLeftPolicyReason))
		g.Expect(u.Status.BlockedBy).To(ContainSubstring("left TalosUpgradePolicy"))
		g.Expect(u.Annotations).NotTo(HaveKey(upgradev1.AdmittedAnnotation), "a finished rollout gives its slot back")
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func() int { return r.upgradeCalls("alpha-worker-0") + r.upgradeCalls("alpha-worker-1") }, 2*time.Second, 200*time.Millisecond).Should(BeZero())

	r.updateCluster(g, func(c *clusterv1.Cluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[upgradev1.PolicyLabel] = "to-1-13"
	})
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	for _, n := range r.sim.Nodes() {
		g.Expect(r.upgradeCalls(n.Name())).To(Equal(1), "node %s", n.Name())
	}
}

// TestMachineJoinsAfterCompletion adds a worker on the old version to a
// Cluster whose rollout completed: the rollout is admitted again and
// upgrades it.
func TestMachineJoinsAfterCompletion(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
		g.Expect(u.Annotations).NotTo(HaveKey(upgradev1.AdmittedAnnotation))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	r.joinMachine(g, "alpha-worker-0")
	r.provisionMachine(g, "alpha-worker-0", fromVersion)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(u.Status.Progress).To(Equal("2/2"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls("alpha-worker-0")).To(Equal(1))
	g.Expect(r.sim.Node("alpha-worker-0").Version()).To(Equal(toVersion))
}

// TestSilentNodeFails makes a node's Talos API stop answering once its drain
// began: the Machine fails after nodeUnreachableTimeout, its cordon and
// skip-remediation annotation are removed so that a MachineHealthCheck can
// act, and the failure policy halts the rollout.
func TestSilentNodeFails(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	r.startHeldAt(g, "alpha-cp-0", upgradev1.HoldPointPreDrain, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.NodeUnreachableTimeout = &metav1.Duration{Duration: 10 * time.Second}
	}))
	r.sim.Node("alpha-cp-0").InjectFault(talossim.Faults{HangRPCs: []string{talossim.AllRPCs}})
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPreDrain, false)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseFailed), "blockedBy: %s", u.Status.BlockedBy)
		rec := machineRecord(u, "alpha-cp-0")
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseFailed))
		g.Expect(rec.Message).To(ContainSubstring("nodeUnreachableTimeout 10s"))
		g.Expect(rec.Cordoned || rec.SkipRemediationSet).To(BeFalse())
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	m := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "alpha-cp-0"}, m)).To(Succeed())
	g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.MachineSkipRemediationAnnotation), "a MachineHealthCheck may act on it")
	node := &corev1.Node{}
	g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: "alpha-cp-0"}, node)).To(Succeed())
	g.Expect(node.Spec.Unschedulable).To(BeFalse())
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(BeZero())
	g.Expect(r.upgradeCalls("alpha-worker-0")).To(BeZero(), "the failure policy halts the rollout")
}

// TestSlowInstallHoldsNoWorker makes the only node's install take long: the
// call runs outside of the reconcile, so the single reconcile worker still
// answers, and a pause shows while the install goes on.
func TestSlowInstallHoldsNoWorker(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, version: toVersion})
	r.mgrConfig.Concurrency = 1
	r.sim.Node("alpha-cp-0").InjectFault(talossim.Faults{PullDelay: 15 * time.Second})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TalosVersion = patchVersion }))).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(machineRecord(r.upgrade(g), "alpha-cp-0").Message).To(ContainSubstring("installing"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		u.Spec.Paused = true
		g.Expect(mgmt.Client.Update(ctx, u)).To(Succeed())
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhasePaused))
	}, 5*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.Node("alpha-cp-0").StagedImage()).To(BeEmpty(), "the install still runs")
}

func ptrTo[T any](v T) *T { return &v }

// TestNewTargetUndoesWhatThePreviousLeft: a Machine's skip-remediation
// annotation, added by Tollgate for the previous target, is still there when
// a new target comes (its removal did not land: a failed request). The
// Machine's new record undoes it once the Machine is done, rather than taking
// the annotation for somebody else's and leaving it for ever. (Found by the
// soak: new-target-after-completion with request-level faults.)
func TestNewTargetUndoesWhatThePreviousLeft(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const machine = "alpha-worker-0"
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	r.stopManager()

	// The state a lost request leaves: the annotation on, and the record
	// saying Tollgate set it.
	m := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: machine}, m)).To(Succeed())
	before := m.DeepCopy()
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[clusterv1.MachineSkipRemediationAnnotation] = ""
	g.Expect(mgmt.Client.Patch(ctx, m, client.MergeFrom(before))).To(Succeed())
	u := r.upgrade(g)
	for i := range u.Status.Machines {
		if u.Status.Machines[i].Machine == machine {
			u.Status.Machines[i].SkipRemediationSet = true
		}
	}
	g.Expect(mgmt.Client.Status().Update(ctx, u)).To(Succeed())

	// A new target, on the policy and (as the policy controller writes it)
	// on the rollout, before the rollout's controller runs again.
	g.Expect(sb.PushInstaller(ctx, "v1.13.1")).To(Succeed())
	p := &upgradev1.TalosUpgradePolicy{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "to-1-13"}, p)).To(Succeed())
	p.Spec.TalosVersion = "v1.13.1"
	g.Expect(mgmt.Client.Update(ctx, p)).To(Succeed())
	controller, err := client.New(sb.ControllerConfig, client.Options{Scheme: mgmt.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	u = r.upgrade(g)
	u.Spec.TalosVersion = "v1.13.1"
	g.Expect(controller.Update(ctx, u)).To(Succeed())
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Spec.TalosVersion).To(Equal("v1.13.1"))
		g.Expect(u.Finished()).To(BeTrue(), "phase %s, blockedBy: %s", u.Status.Phase, u.Status.BlockedBy)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
		rec := machineRecord(u, machine)
		g.Expect(rec.TargetVersion).To(Equal("v1.13.1"))
		g.Expect(rec.SkipRemediationSet).To(BeFalse())
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: machine}, m)).To(Succeed())
		g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.MachineSkipRemediationAnnotation))
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.Node(machine).Version()).To(Equal("v1.13.1"))
}
