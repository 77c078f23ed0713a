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

package soak_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestPausedRolloutRemembersRemediatedFailure is the regression test of a
// bug the soak found (seed 424242, --control-planes=3, Cluster
// soak-r2-c15): a worker whose node never comes back fails, the failure
// policy (Pause) pauses the rollout and Tollgate lets the Machine go; its
// MachineHealthCheck remediates it and CAPI deletes it. The rollout's record
// of it went with it, and the rollout stayed paused by its failure policy
// without saying why ("the failure policy paused the rollout: ", then
// nothing). The record of a failed Machine now outlives the Machine. With
// CAPI core, in a sandbox; about a minute and a half.
func TestPausedRolloutRemembersRemediatedFailure(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	if testing.Short() {
		t.Skip("runs CAPI core and a rollout with a 30s rebootTimeout")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a backstop: a loaded machine is slow
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, InstallerVersions: []string{"v1.13.0"}, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(sb.Stop()).To(Succeed()) }()
	g.Expect(sb.StartManager(ctx, manager.Options{TalosCallTimeout: 3 * time.Second})).To(Succeed())

	const ns, name = "repro", "paused"
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: name, ControlPlanes: 1, Workers: 2, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	mgmt := sb.Management.Client
	timeout := ptr.To[int32](4)
	g.Expect(mgmt.Create(ctx, &clusterv1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sandbox.WorkersName(name)},
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: name,
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineDeploymentNameLabel: sandbox.WorkersName(name)}},
			Checks: clusterv1.MachineHealthCheckChecks{UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: timeout},
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: timeout},
			}},
		},
	})).To(Succeed())
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	lost := workers[0]
	c.Simulator.Node(lost).InjectFault(talossim.Faults{NeverComesBack: true})
	g.Expect(mgmt.Create(ctx, sb.Policy(ns, "pause", "v1.13.0", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
		p.Spec.FailurePolicy.Action = upgradev1.FailureActionPause
	}))).To(Succeed())
	g.Expect(c.OptIn(ctx, "pause")).To(Succeed())

	u := &upgradev1.TalosUpgrade{}
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
		g.Expect(u.Spec.Paused).To(BeTrue(), "the failure policy pauses the rollout")
		// The pause is written to the spec first, and said in the status
		// by the reconcile that follows.
		g.Expect(describePause(u)).To(ContainSubstring(lost), "at first, the pause names the failed Machine")
	}, 3*time.Minute, time.Second).Should(Succeed())

	// Tollgate let the Machine go; its MachineHealthCheck remediates it.
	g.Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		err := mgmt.Get(ctx, client.ObjectKey{Namespace: ns, Name: lost}, m)
		g.Expect(err).To(HaveOccurred(), "Machine %s is remediated", lost)
	}, 2*time.Minute, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
		g.Expect(u.Status.Machines).To(ContainElement(And(
			HaveField("Machine", lost), HaveField("Phase", upgradev1.MachinePhaseFailed),
			HaveField("Message", HaveSuffix("the Machine has since been deleted")))), "the failure outlives its Machine")
	}, time.Minute, time.Second).Should(Succeed())
	g.Expect(u.Spec.Paused).To(BeTrue(), "still paused by its failure policy")
	g.Expect(describePause(u)).To(ContainSubstring(lost), "the pause still names the failure it paused for once the failed Machine is gone")
}

// describePause is what the rollout says of its pause: its blockedBy and
// the message of its Paused condition.
func describePause(u *upgradev1.TalosUpgrade) string {
	msg := u.Status.BlockedBy
	if c := conditions.Get(u, upgradev1.PausedCondition); c != nil {
		msg += " | " + c.Message
	}
	return msg
}

// TestMachineDeletedMidUpgradeKeepsItsBudget is the regression test of a
// bug the soak found (seed 20261129, TestSoakShort, Cluster soak-r0-c0;
// fixed in dd0bdbc): CAPI deletes a worker Tollgate is upgrading (a
// MachineDeployment rollout, a scale-down); Tollgate dropped the Machine's
// record, its node stayed cordoned and drained, and its removal waited,
// held by Tollgate's deletion hook, for room in the budget, which it did not
// take: Tollgate started another worker in its place, and maxUnavailable+1
// workers were cordoned at once. Here every worker waits at a preReboot hold
// once drained, so that two stay in flight (maxUnavailable 2); the first is
// deleted, its removal waits for its preRemoval hook's Job (as in the soak),
// and no more than two workers may be cordoned at any time after. With CAPI
// core, in a sandbox; about a minute.
func TestMachineDeletedMidUpgradeKeepsItsBudget(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	if testing.Short() {
		t.Skip("runs CAPI core and a rollout")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a backstop: a loaded machine is slow
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, InstallerVersions: []string{"v1.13.0"}, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(sb.Stop()).To(Succeed()) }()
	g.Expect(sb.StartManager(ctx, manager.Options{TalosCallTimeout: 3 * time.Second})).To(Succeed())

	const ns, name = "repro-budget", "deleted"
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: name, ControlPlanes: 1, Workers: 3, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	mgmt := sb.Management.Client
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	for _, w := range workers {
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: ns, Name: w}, m)).To(Succeed())
		g.Expect(hooks.SetHold(ctx, mgmt, m, upgradev1.HoldPointPreReboot, "repro", "keeps the worker in flight")).To(Succeed())
	}
	two := intstr.FromInt32(2)
	g.Expect(mgmt.Create(ctx, sb.Policy(ns, "budget", "v1.13.0", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Rollout.Workers.MaxUnavailable = &two
		// The removal waits for its Job meanwhile, as the soak's did.
		p.Spec.Hooks = []upgradev1.ActionHook{sandbox.ActionHook("drain-out", upgradev1.HookPointPreRemoval, "true")}
	}))).To(Succeed())
	g.Expect(c.OptIn(ctx, "budget")).To(Succeed())

	cordoned := func(g Gomega) []string {
		nodes := &corev1.NodeList{}
		g.Expect(c.Workload.Client.List(ctx, nodes)).To(Succeed())
		var out []string
		for _, n := range nodes.Items {
			if slices.Contains(workers, n.Name) && n.Spec.Unschedulable {
				out = append(out, n.Name)
			}
		}
		return out
	}
	// Two workers drained, upgraded and waiting at their preReboot hold.
	var inFlight []string
	g.Eventually(func(g Gomega) {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
		inFlight = nil
		for _, st := range u.Status.Machines {
			if st.Phase == upgradev1.MachinePhaseWaitingForHold && st.HoldPoint == upgradev1.HoldPointPreReboot {
				inFlight = append(inFlight, st.Machine)
			}
		}
		g.Expect(inFlight).To(HaveLen(2))
		g.Expect(cordoned(g)).To(HaveLen(2))
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())

	// CAPI deletes one of them (its MachineSet makes another).
	deleted := &clusterv1.Machine{}
	g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: ns, Name: inFlight[0]}, deleted)).To(Succeed())
	g.Expect(mgmt.Delete(ctx, deleted)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(len(cordoned(g))).To(BeNumerically("<=", 2), "workers cordoned at once, maxUnavailable 2: %v", cordoned(g))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
