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
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestRestartAtEveryPhase stops the controller as soon as a Machine reaches
// each phase and starts a new one: the rollout completes with exactly one
// upgrade call per node.
func TestRestartAtEveryPhase(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2, reboot: time.Second})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()

	phases := []upgradev1.MachinePhase{
		upgradev1.MachinePhaseDraining, upgradev1.MachinePhaseUpgrading, upgradev1.MachinePhaseRebooting, upgradev1.MachinePhaseVerifying,
	}
	for _, machine := range []string{"alpha-cp-0", "alpha-worker-0"} {
		for _, phase := range phases {
			reached := false
			g.Eventually(func(g Gomega) {
				rec := machineRecord(r.upgrade(g), machine)
				reached = rec.Phase == phase || phaseAfter(rec.Phase, phase)
				g.Expect(reached).To(BeTrue(), "machine %s at %s, waiting for %s", machine, rec.Phase, phase)
			}, time.Minute, 10*time.Millisecond).Should(Succeed())
			r.stopManager()
			r.startManager()
		}
	}
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	for _, n := range r.sim.Nodes() {
		g.Expect(r.upgradeCalls(n.Name())).To(Equal(1), "exactly one upgrade call on %s", n.Name())
		g.Expect(n.Version()).To(Equal(toVersion))
	}
}

// TestLostRebootIsAskedAgain loses the Reboot call of a node on the Talos
// 1.13 lifecycle API (its upgrade call installs without rebooting): the node
// answers on its old boot ID, and the reboot is asked for again well within
// rebootTimeout (the smallest allowed, 30s), so the Machine completes with
// one upgrade call and one reboot.
func TestLostRebootIsAskedAgain(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, version: toVersion})
	n := r.sim.Node("alpha-cp-0")
	n.InjectFault(talossim.Faults{DropRPCs: []string{talossim.RPCReboot}})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = patchVersion
		p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
	}))).To(Succeed())
	r.startManager()

	var requested time.Time
	g.Eventually(func(g Gomega) {
		rec := machineRecord(r.upgrade(g), "alpha-cp-0")
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
		g.Expect(rec.RebootRequestedTime).NotTo(BeNil())
		requested = rec.RebootRequestedTime.Time
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	// The first Reboot call is lost; the next one gets through.
	g.Consistently(n.Boots, 2*time.Second, 100*time.Millisecond).Should(BeZero())
	n.InjectFault(talossim.Faults{})

	r.completes(g, time.Minute)
	rec := machineRecord(r.upgrade(g), "alpha-cp-0")
	g.Expect(rec.CompletionTime.Sub(requested)).To(BeNumerically("<", 30*time.Second), "completed within rebootTimeout")
	g.Expect(n.Version()).To(Equal(patchVersion))
	g.Expect(n.Boots()).To(Equal(1))
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1))
	g.Expect(r.sim.Calls("alpha-cp-0", talossim.RPCReboot)).To(Equal(1), "the lost call never reached the node; the second one did")
}

// TestLostUpgradeAnswer loses the answer to the upgrade call of a node
// before Talos 1.13, after the node acted on it (it installs and reboots):
// the call's outcome is unknown, so it is neither repeated nor taken for a
// failure; the Machine waits for the reboot and completes on the target,
// its record saying the call was interrupted.
func TestLostUpgradeAnswer(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	n := r.sim.Node("alpha-cp-0")
	n.InjectFault(talossim.Faults{LoseResponseRPCs: []string{talossim.RPCLegacyUpgrade}})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()

	r.completes(g, time.Minute)
	rec := machineRecord(r.upgrade(g), "alpha-cp-0")
	g.Expect(rec.UpgradeInterrupted).To(BeTrue())
	g.Expect(n.Version()).To(Equal(toVersion))
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1), "the call is not repeated")
	g.Eventually(func(g Gomega) {
		g.Expect(r.eventNotes(g, "UpgradeCallInterrupted")).NotTo(BeEmpty(), "an event says the call was interrupted")
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
}

// TestLostUpgradeCallAfterRestart loses the upgrade call of a node before
// Talos 1.13 on its way, then restarts the controller, as when a process
// wrote the intent of the call and stopped before it reached the node: the
// process that made the call does not make it again, but the new one,
// which knows of no call, asks the node once rebootRetryAfter has passed;
// the node runs no upgrade and started none on its boot, so the call is
// made again. The Machine completes with one call reaching the node and one
// reboot.
func TestLostUpgradeCallAfterRestart(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	n := r.sim.Node("alpha-cp-0")
	n.InjectFault(talossim.Faults{DropRPCs: []string{talossim.RPCLegacyUpgrade}})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
	}))).To(Succeed())
	r.startManager()

	g.Eventually(func(g Gomega) {
		rec := machineRecord(r.upgrade(g), "alpha-cp-0")
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
		g.Expect(rec.UpgradeInterrupted).To(BeTrue(), "the call was made, and its answer lost")
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(BeZero(), "the call never reached the node")
	n.InjectFault(talossim.Faults{})
	r.stopManager()
	r.startManager()

	r.completes(g, time.Minute)
	g.Expect(n.Version()).To(Equal(toVersion))
	g.Expect(n.Boots()).To(Equal(1))
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1), "made again once")
	g.Eventually(func(g Gomega) {
		g.Expect(r.eventNotes(g, "UpgradeCallMadeAgain")).To(ConsistOf(ContainSubstring("still runs v1.12.4 on its old boot and started no upgrade on it")), "an event says the call is made again")
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
}

// TestLostInstallRequest loses the install requests of a node on the Talos
// 1.13 lifecycle API on their way: the controller cannot tell them from
// lost answers, and an install does not reboot the node, so it asks again
// (never rebooting the node on the chance that one took) until one gets
// through; the Machine then completes with one install and one reboot.
func TestLostInstallRequest(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, version: toVersion})
	n := r.sim.Node("alpha-cp-0")
	n.InjectFault(talossim.Faults{DropRPCs: []string{talossim.RPCUpgrade}})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = patchVersion
	}))).To(Succeed())
	r.startManager()

	g.Eventually(func(g Gomega) {
		rec := machineRecord(r.upgrade(g), "alpha-cp-0")
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
		g.Expect(rec.Message).To(ContainSubstring("asking again after a lost answer"))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Expect(n.Boots()).To(BeZero(), "no reboot while the install is not known to have taken")
	n.InjectFault(talossim.Faults{})

	r.completes(g, time.Minute)
	rec := machineRecord(r.upgrade(g), "alpha-cp-0")
	g.Expect(rec.UpgradeInterrupted).To(BeFalse(), "the install that got through was answered")
	g.Expect(n.Version()).To(Equal(patchVersion))
	g.Expect(n.Boots()).To(Equal(1))
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1), "only the install that got through reached the node")
}

// TestRestartDuringInstall restarts the controller while a node on the
// Talos 1.13 lifecycle API installs (a slow install): the new process does
// not know the install's outcome, so it installs again; the node refuses
// that while the first runs, and the new process waits for it rather than
// reboot the node into a slot still being written. The Machine completes
// with one boot into the target, and its record never says the call was
// interrupted.
func TestRestartDuringInstall(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, version: toVersion})
	n := r.sim.Node("alpha-cp-0")
	n.InjectFault(talossim.Faults{InstallDelay: 8 * time.Second})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = patchVersion
	}))).To(Succeed())
	r.startManager()

	g.Eventually(func() int { return r.upgradeCalls("alpha-cp-0") }, time.Minute, 20*time.Millisecond).Should(Equal(1))
	r.stopManager()
	r.startManager()

	g.Eventually(func(g Gomega) {
		g.Expect(r.eventNotes(g, "UpgradeCallMadeAgain")).To(ConsistOf(ContainSubstring("installing again")))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	r.completes(g, time.Minute)
	rec := machineRecord(r.upgrade(g), "alpha-cp-0")
	g.Expect(rec.UpgradeInterrupted).To(BeFalse())
	g.Expect(n.Version()).To(Equal(patchVersion))
	g.Expect(n.Boots()).To(Equal(1), "one boot into the target")
	var boots []string
	for _, call := range r.sim.CallLog() {
		if call.Node == "alpha-cp-0" && call.RPC == talossim.RPCUpgrade {
			boots = append(boots, call.BootID)
		}
	}
	g.Expect(len(boots)).To(BeNumerically(">=", 2), "the install was asked for again")
	for _, b := range boots {
		g.Expect(b).To(Equal(boots[0]), "every install reached the node on the boot before the reboot")
	}
}

var phaseOrder = map[upgradev1.MachinePhase]int{
	upgradev1.MachinePhasePending: 0, upgradev1.MachinePhaseWaitingForHold: 1, upgradev1.MachinePhaseDraining: 2,
	upgradev1.MachinePhaseUpgrading: 3, upgradev1.MachinePhaseRebooting: 4, upgradev1.MachinePhaseVerifying: 5,
	upgradev1.MachinePhaseCompleted: 6,
}

func phaseAfter(a, b upgradev1.MachinePhase) bool { return phaseOrder[a] > phaseOrder[b] }

// TestFailures checks that each failure yields the right phase, condition
// reason and message, and that the failure policy acts.
func TestFailures(t *testing.T) {
	envtestOnly(t)
	tests := []struct {
		name string
		// version is the Talos version the nodes run; fromVersion when empty.
		version    string
		setup      func(t *testing.T, r *rollout)
		mutate     func(p *upgradev1.TalosUpgradePolicy)
		wantPhase  upgradev1.UpgradePhase
		wantReason string
		wantInMsg  string
		// check runs after the rollout reached wantPhase.
		check func(g Gomega, r *rollout, u *upgradev1.TalosUpgrade)
	}{
		{
			name:       "A/B rollback fails the machine and is not retried",
			setup:      func(_ *testing.T, r *rollout) { r.sim.Node("alpha-cp-0").InjectFault(talossim.Faults{Rollback: true}) },
			wantPhase:  upgradev1.UpgradePhaseFailed,
			wantReason: upgradev1.MachineFailedReason,
			wantInMsg:  "A/B rollback",
			check: func(g Gomega, r *rollout, u *upgradev1.TalosUpgrade) {
				g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1))
				g.Expect(r.upgradeCalls("alpha-worker-0")).To(BeZero(), "Halt stops the rollout")
			},
		},
		{
			name: "reboot timeout",
			setup: func(_ *testing.T, r *rollout) {
				r.sim.Node("alpha-cp-0").InjectFault(talossim.Faults{NeverComesBack: true})
			},
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
			},
			wantPhase:  upgradev1.UpgradePhaseFailed,
			wantReason: upgradev1.MachineFailedReason,
			wantInMsg:  "did not come back within rebootTimeout",
		},
		{
			name:    "upgrade exits non-zero, pause policy",
			version: toVersion,
			setup: func(_ *testing.T, r *rollout) {
				r.sim.Node("alpha-cp-0").InjectFault(talossim.Faults{UpgradeExitCode: 1})
			},
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.TalosVersion = patchVersion
				p.Spec.FailurePolicy.Action = upgradev1.FailureActionPause
			},
			wantPhase:  upgradev1.UpgradePhasePaused,
			wantReason: upgradev1.FailurePolicyPausedReason,
			wantInMsg:  "paused",
			check: func(g Gomega, r *rollout, u *upgradev1.TalosUpgrade) {
				g.Expect(u.Spec.Paused).To(BeTrue())
				g.Expect(machineRecord(u, "alpha-cp-0").Message).To(ContainSubstring("upgrade to"))
			},
		},
		{
			name: "missing installer image",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Installer.Repository = registryHost + "/nowhere/installer"
			},
			wantPhase:  upgradev1.UpgradePhasePreflight,
			wantReason: upgradev1.InstallerImageNotFoundReason,
			wantInMsg:  "not found",
		},
		{
			name: "bad talosconfig",
			setup: func(t *testing.T, r *rollout) {
				t.Helper()
				s := &corev1.Secret{}
				g := NewWithT(t)
				g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: "alpha-talosconfig"}, s)).To(Succeed())
				s.Data["talosconfig"] = []byte("this: is: not: a talosconfig")
				g.Expect(mgmt.Client.Update(context.Background(), s)).To(Succeed())
			},
			wantPhase:  upgradev1.UpgradePhasePreflight,
			wantReason: upgradev1.TalosConfigInvalidReason,
			wantInMsg:  "talosconfig",
		},
		{
			name: "unreachable node",
			setup: func(_ *testing.T, r *rollout) {
				r.sim.Node("alpha-worker-0").InjectFault(talossim.Faults{HangRPCs: []string{talossim.AllRPCs}})
			},
			wantPhase:  upgradev1.UpgradePhasePreflight,
			wantReason: upgradev1.NodeUnreachableReason,
			wantInMsg:  "alpha-worker-0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, version: tt.version})
			if tt.setup != nil {
				tt.setup(t, r)
			}
			p := r.policy()
			if tt.mutate != nil {
				tt.mutate(p)
			}
			g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
			r.startManager()
			g.Eventually(func(g Gomega) {
				u := r.upgrade(g)
				g.Expect(u.Status.Phase).To(Equal(tt.wantPhase), "blockedBy: %s", u.Status.BlockedBy)
				found := false
				for _, c := range u.Status.Conditions {
					if c.Reason == tt.wantReason && c.Status == metav1.ConditionFalse || c.Reason == tt.wantReason && c.Type == upgradev1.PausedCondition {
						found = true
						g.Expect(c.Message + " " + u.Status.BlockedBy).To(ContainSubstring(tt.wantInMsg))
					}
				}
				g.Expect(found).To(BeTrue(), "no condition with reason %s in %v", tt.wantReason, u.Status.Conditions)
				if tt.check != nil {
					tt.check(g, r, u)
				}
			}, time.Minute, 200*time.Millisecond).Should(Succeed())
			u := r.upgrade(g)
			g.Expect(conditions.IsTrue(u, upgradev1.CompletedCondition)).To(BeFalse())
		})
	}
}

// TestPausedClusterAndMachineAtTarget checks that a paused Cluster is never
// touched and that a Machine already at the target is not touched either.
func TestPausedClusterAndMachineAtTarget(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, version: toVersion})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
		g.Expect(machineRecord(u, "alpha-cp-0").Message).To(ContainSubstring("already runs"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	for _, n := range r.sim.Nodes() {
		g.Expect(r.upgradeCalls(n.Name())).To(BeZero())
		g.Expect(r.sim.Calls(n.Name(), talossim.RPCReboot)).To(BeZero())
	}
}

// TestPausedClusterIsNeverTouched checks that a paused Cluster gets no
// rollout and no Talos API call at all until it is unpaused (a rollout in
// flight on a Cluster paused later shows as Paused: see
// TestClusterLeavesAndRejoinsPolicy).
func TestPausedClusterIsNeverTouched(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, clusterOptions: []builder.ClusterOption{builder.WithPausedCluster()}})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	g.Consistently(func(g Gomega) {
		err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "alpha"}, &upgradev1.TalosUpgrade{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a paused Cluster gets no rollout")
		g.Expect(r.sim.CallLog()).To(BeEmpty())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	r.updateCluster(g, func(c *clusterv1.Cluster) { c.Spec.Paused = nil })
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}

// TestDrainTimeout blocks the drain with a PodDisruptionBudget that never
// allows an eviction: the Machine fails once drain.timeout is exceeded, is
// never forced, never upgraded, and its node is uncordoned.
func TestDrainTimeout(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A worker the Pod could move to: a node without one is not drained
	// (TestSingleNodeClusterIsNotDrained).
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	minAvailable := intstr.FromInt32(1)
	g.Expect(r.workload.Client.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	})).To(Succeed())
	db := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-0", Labels: map[string]string{"app": "db"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "6a1f7c3e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "alpha-cp-0", Containers: []corev1.Container{{Name: "db", Image: "postgres:17"}}},
	}
	g.Expect(r.workload.Client.Create(ctx, db)).To(Succeed())
	// A Running, Ready Pod: only healthy Pods are protected by a budget.
	db.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	g.Expect(r.workload.Client.Status().Update(ctx, db)).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Drain.Timeout = &metav1.Duration{Duration: 3 * time.Second}
	}))).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseFailed))
		rec := machineRecord(u, "alpha-cp-0")
		g.Expect(rec.Message).To(ContainSubstring("drain did not finish within 3s"))
		g.Expect(rec.Message).To(ContainSubstring(`PodDisruptionBudget "default/db"`))
		g.Expect(conditions.GetReason(u, upgradev1.CompletedCondition)).To(Equal(upgradev1.MachineFailedReason))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(BeZero())
	pod := &corev1.Pod{}
	g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-0"}, pod)).To(Succeed(), "the drain is never forced")
	// The release comes before the Machine is recorded Failed; one that did
	// not land (a loaded apiserver) is retried.
	g.Eventually(func(g Gomega) {
		node := &corev1.Node{}
		g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: "alpha-cp-0"}, node)).To(Succeed())
		g.Expect(node.Spec.Unschedulable).To(BeFalse(), "a failed Machine is uncordoned")
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// TestEtcdUnhealthyHoldsControlPlane holds the control plane while an etcd
// member is unhealthy, and proceeds once it recovers.
func TestEtcdUnhealthyHoldsControlPlane(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 3})
	r.sim.Node("alpha-cp-1").InjectFault(talossim.Faults{EtcdUnhealthy: true})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.BlockedBy).To(ContainSubstring(`etcd member "alpha-cp-1"`))
		g.Expect(conditions.GetReason(u, upgradev1.ProgressingCondition)).To(Equal(upgradev1.WaitingForEtcdReason))
		g.Expect(anyStarted(u)).To(BeFalse())
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	r.sim.Node("alpha-cp-1").InjectFault(talossim.Faults{})
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
}

// TestPauseResumeAndCancel pauses a rollout after its first Machine: the
// Machine in flight finishes and no other starts; resuming completes the next
// one; cancelling ends the rollout Failed with reason RolloutCancelled and
// leaves the last Machine untouched.
func TestPauseResumeAndCancel(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2})
	hold := hooks.HoldAnnotation(upgradev1.HoldPointPostUpgrade, "test")
	setAnnotation := func(machine string, set bool) {
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: machine}, m)).To(Succeed())
		if set {
			m.Annotations = map[string]string{hold: ""}
		} else {
			delete(m.Annotations, hold)
		}
		g.Expect(mgmt.Client.Update(ctx, m)).To(Succeed())
	}
	update := func(mutate func(*upgradev1.TalosUpgrade)) {
		g.Eventually(func(g Gomega) {
			u := r.upgrade(g)
			mutate(u)
			g.Expect(mgmt.Client.Update(ctx, u)).To(Succeed())
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	}
	// Hold the first Machine after its upgrade, pause, then let it finish.
	setAnnotation("alpha-cp-0", true)
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(machineRecord(r.upgrade(g), "alpha-cp-0").HoldPoint).To(Equal(upgradev1.HoldPointPostUpgrade))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	update(func(u *upgradev1.TalosUpgrade) { u.Spec.Paused = true })
	setAnnotation("alpha-cp-0", false)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(machineRecord(u, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted), "the Machine in flight finishes")
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhasePaused))
		g.Expect(conditions.GetReason(u, upgradev1.PausedCondition)).To(Equal(upgradev1.RolloutPausedReason))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(machineRecord(r.upgrade(g), "alpha-worker-0").Phase).To(Equal(upgradev1.MachinePhasePending))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// Resume: the next Machine goes, and is held after its upgrade.
	setAnnotation("alpha-worker-0", true)
	update(func(u *upgradev1.TalosUpgrade) { u.Spec.Paused = false })
	g.Eventually(func(g Gomega) {
		g.Expect(machineRecord(r.upgrade(g), "alpha-worker-0").HoldPoint).To(Equal(upgradev1.HoldPointPostUpgrade))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// Cancel: the Machine in flight finishes, the last one is never touched.
	update(func(u *upgradev1.TalosUpgrade) { u.Spec.Cancel = true })
	setAnnotation("alpha-worker-0", false)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseFailed))
		g.Expect(conditions.GetReason(u, upgradev1.CompletedCondition)).To(Equal(upgradev1.RolloutCancelledReason))
		g.Expect(machineRecord(u, "alpha-worker-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(machineRecord(u, "alpha-worker-1").Phase).To(Equal(upgradev1.MachinePhasePending))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls("alpha-worker-1")).To(BeZero())
}
