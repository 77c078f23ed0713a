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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/providers/talos/controllers/taloscontrolplane"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// controlPlaneScaleDown makes a Cluster of 3 control-plane Machines whose
// control-plane provider's stand-in scales down in mode, opts it in to a
// policy whose preRemoval hook takes 20s, scales it down to 2, and returns
// the sandbox, the Cluster, and the name of the Machine the provider
// removes, once Tollgate holds it.
func controlPlaneScaleDown(ctx context.Context, t *testing.T, mode taloscontrolplane.ScaleDown) (*sandbox.Sandbox, *sandbox.Cluster, string) {
	t.Helper()
	g := NewWithT(t)
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Managements: managements, ControlPlaneScaleDown: mode, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(sb.Stop()).To(Succeed()) })
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "fleet", Name: "alpha", ControlPlanes: 3, Workers: 1, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	snapshot := func(job *batchv1.Job) bool {
		return strings.HasPrefix(job.Name, "tollgate-hook-etcd-snapshot-preremoval-")
	}
	c.Workload.Jobs.Script(snapshot, jobdriver.Outcome{Delay: ptr.To(20 * time.Second)})
	g.Expect(sb.StartManager(ctx, manager.Options{})).To(Succeed())
	g.Expect(sb.Management.Client.Create(ctx, sb.Policy("fleet", "keep", "v1.12.4", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Hooks = []upgradev1.ActionHook{{Name: "etcd-snapshot", Point: upgradev1.HookPointPreRemoval, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "example.com/etcd-snapshot:v1", Command: []string{"snapshot"}}},
		}}}}}}
	}))).To(Succeed())
	g.Expect(c.OptIn(ctx, "keep")).To(Succeed())
	cps, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		for _, name := range cps {
			m := &clusterv1.Machine{}
			g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: name}, m)).To(Succeed())
			g.Expect(hooks.HasDeletionHook(m)).To(BeTrue(), "Machine %s carries Tollgate's deletion hook", name)
		}
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())

	tcp := &controlplanev1.TalosControlPlane{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha-control-plane"}, tcp)).To(Succeed())
	patch := client.MergeFrom(tcp.DeepCopy())
	tcp.Spec.Replicas = ptr.To[int32](2)
	g.Expect(sb.Management.Client.Patch(ctx, tcp, patch)).To(Succeed())
	var removed string
	g.Eventually(func(g Gomega) {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		g.Expect(u.Status.Removals).To(HaveLen(1))
		g.Expect(u.Status.Removals[0].Phase).To(Equal(upgradev1.RemovalPhaseHeld))
		g.Expect(u.Status.Removals[0].Group).To(Equal(disruption.ControlPlaneGroup))
		g.Expect(u.Status.Removals[0].Message).NotTo(BeEmpty())
		removed = u.Status.Removals[0].Machine
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	return sb, c, removed
}

// removalEnds waits until the removed Machine is gone and the control
// plane has two Machines, every node Ready, and no removal held.
func removalEnds(ctx context.Context, g Gomega, sb *sandbox.Sandbox, removed string) {
	g.Eventually(func(g Gomega) {
		err := sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: removed}, &clusterv1.Machine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Machine %s is gone: %v", removed, err)
		list := &clusterv1.MachineList{}
		g.Expect(sb.Management.Client.List(ctx, list, client.InNamespace("fleet"), client.MatchingLabels{clusterv1.MachineControlPlaneLabel: ""})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(2))
		u := &upgradev1.TalosUpgrade{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		g.Expect(conditions.IsTrue(u, upgradev1.RemovalsCondition)).To(BeTrue(), "Removals: %v", conditions.Get(u, upgradev1.RemovalsCondition))
	}, 4*time.Minute, 200*time.Millisecond).Should(Succeed())
}

// TestControlPlaneScaleDownLeavesEtcdFirstWithCAPICore: the released Talos
// control-plane provider (v0.5.x, the stand-in's LeaveEtcdFirst) takes the
// Machine it scales down out of etcd and deletes its Node before CAPI
// consults Tollgate's deletion hook. Nothing hangs: Tollgate holds the
// Machine, runs its preRemoval hook, waits for no etcd and no budget for a
// node that is gone, says in the removal's record, the Removals condition
// and a Warning event what the gate did not guard, and releases it; CAPI
// deletes it, and the control plane keeps two members.
func TestControlPlaneScaleDownLeavesEtcdFirstWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb, c, removed := controlPlaneScaleDown(ctx, t, taloscontrolplane.LeaveEtcdFirst)

	// While Tollgate holds it: its node left etcd and its Node is gone,
	// and Tollgate says it did not guard them.
	g.Eventually(func(g Gomega) {
		g.Expect(c.Simulator.Calls(removed, talossim.RPCEtcdLeaveCluster)).To(Equal(1))
		g.Expect(c.Simulator.Node(removed).EtcdMember()).To(BeFalse())
		err := c.Workload.Client.Get(ctx, client.ObjectKey{Name: removed}, &corev1.Node{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Node %s is deleted by the provider: %v", removed, err)
		m := &clusterv1.Machine{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: removed}, m)).To(Succeed())
		g.Expect(hooks.HasDeletionHook(m)).To(BeTrue(), "Tollgate holds Machine %s", removed)
		u := &upgradev1.TalosUpgrade{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		g.Expect(u.Status.Removals[0].Message).To(HavePrefix(disruption.UnguardedRemovalNote))
		cond := conditions.Get(u, upgradev1.RemovalsCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Message).To(ContainSubstring(disruption.UnguardedRemovalNote))
		events := &corev1.EventList{}
		g.Expect(sb.Management.Client.List(ctx, events, client.InNamespace("fleet"))).To(Succeed())
		var reasons []string
		for _, e := range events.Items {
			reasons = append(reasons, e.Reason)
		}
		g.Expect(reasons).To(ContainElement("RemovalNotGuarded"))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())

	removalEnds(ctx, g, sb, removed)
	for _, name := range c.Simulator.Nodes() {
		if name.ControlPlane() && name.Name() != removed {
			g.Expect(name.EtcdMember()).To(BeTrue(), "node %s is still a member", name.Name())
		}
	}
}

// TestControlPlaneScaleDownAtPreTerminateHookWithCAPICore: the variant of
// the Talos control-plane provider that takes a Machine out of etcd at a
// pre-terminate hook (the stand-in's PreTerminateHook) only deletes the
// Machine: Tollgate's pre-drain hook holds it while its node is still an
// etcd member with its Node, the gate guards both, and the node leaves etcd
// only once Tollgate released it and CAPI drained it.
func TestControlPlaneScaleDownAtPreTerminateHookWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb, c, removed := controlPlaneScaleDown(ctx, t, taloscontrolplane.PreTerminateHook)

	g.Consistently(func(g Gomega) {
		g.Expect(c.Simulator.Calls(removed, talossim.RPCEtcdLeaveCluster)).To(BeZero(), "no etcd leave while Tollgate holds Machine %s", removed)
		g.Expect(c.Simulator.Node(removed).EtcdMember()).To(BeTrue())
		g.Expect(c.Workload.Client.Get(ctx, client.ObjectKey{Name: removed}, &corev1.Node{})).To(Succeed())
		u := &upgradev1.TalosUpgrade{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		if len(u.Status.Removals) > 0 && u.Status.Removals[0].Phase == upgradev1.RemovalPhaseHeld {
			g.Expect(u.Status.Removals[0].Message).NotTo(ContainSubstring(disruption.UnguardedRemovalNote))
		}
	}, 10*time.Second, 500*time.Millisecond).Should(Succeed())

	removalEnds(ctx, g, sb, removed)
	g.Expect(c.Simulator.Calls(removed, talossim.RPCEtcdLeaveCluster)).To(Equal(1), "the node left etcd at the pre-terminate hook, after Tollgate released it")
}
