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
	"maps"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

// TestKubernetesUpgradeWithCAPICore: CAPI core and the Talos providers'
// stand-ins make a Cluster whose TalosControlPlane and MachineDeployment
// roll out OnDelete. A policy asks for the next Kubernetes minor alone (no
// talosVersion: the Cluster keeps its Talos) while the
// CAPI objects still ask for the old one: nothing changes, and the
// KubernetesVersions condition names each object and field to change. Once
// they are changed (as a user's Git would), every node moves in place, the
// control plane first and one at a time, with no reboot; no Machine is
// replaced; and each Machine's spec.version says what its node runs.
func TestKubernetesUpgradeWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const (
		from = "v1.35.2"
		to   = "v1.36.0"
	)
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Managements: managements, InstallerVersions: []string{"v1.13.0"}, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(sb.Stop()).To(Succeed()) }()
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: "fleet", Name: "alpha", ControlPlanes: 3, Workers: 2, TalosVersion: "v1.13.0", KubernetesVersion: from,
		ControlPlane: func(tcp *controlplanev1.TalosControlPlane) {
			tcp.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{Type: controlplanev1.OnDeleteStrategyType}
		},
		MachineDeployment: onDelete,
	})
	g.Expect(err).NotTo(HaveOccurred())
	cps, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	allUIDs := func(g Gomega) map[string]types.UID {
		uids := machineUIDs(ctx, g, c, sb.Management.Client, sandbox.RoleControlPlane)
		maps.Copy(uids, machineUIDs(ctx, g, c, sb.Management.Client, sandbox.RoleWorker))
		return uids
	}
	uids := allUIDs(g)
	g.Expect(sb.StartManager(ctx, manager.Options{})).To(Succeed())
	// Kubernetes alone: the policy names no Talos version, and the Cluster
	// keeps the one its Machines run.
	policy := sb.Policy("fleet", "gate", "")
	policy.Spec.KubernetesVersion = to
	g.Expect(sb.Management.Client.Create(ctx, policy)).To(Succeed())
	g.Expect(c.OptIn(ctx, "gate")).To(Succeed())
	upgrade := func(g Gomega) *upgradev1.TalosUpgrade {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		return u
	}
	kubelets := func(g Gomega) map[string]string {
		nodes := &corev1.NodeList{}
		g.Expect(c.Workload.Client.List(ctx, nodes)).To(Succeed())
		out := map[string]string{}
		for _, n := range nodes.Items {
			out[n.Name] = n.Status.NodeInfo.KubeletVersion
		}
		return out
	}

	// CAPI's objects still ask for the old version: nothing changes.
	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		cond := conditions.Get(u, upgradev1.KubernetesVersionsCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(upgradev1.KubernetesVersionsDisagreeReason))
		g.Expect(cond.Message).To(ContainSubstring("TalosControlPlane alpha-control-plane asks for " + from + " in spec.version: set it to " + to))
		g.Expect(cond.Message).To(ContainSubstring("in spec.template.spec.version: set it to " + to))
		g.Expect(u.Status.BlockedBy).To(ContainSubstring("must ask for Kubernetes " + to))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for name, v := range kubelets(g) {
			g.Expect(v).To(Equal(from), "node %s", name)
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// The user changes them, in one commit.
	tcp := &controlplanev1.TalosControlPlane{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha-control-plane"}, tcp)).To(Succeed())
	before := tcp.DeepCopy()
	tcp.Spec.Version = to
	g.Expect(sb.Management.Client.Patch(ctx, tcp, client.MergeFrom(before))).To(Succeed())
	mds := &clusterv1.MachineDeploymentList{}
	g.Expect(sb.Management.Client.List(ctx, mds, client.InNamespace("fleet"))).To(Succeed())
	for i := range mds.Items {
		md := &mds.Items[i]
		before := md.DeepCopy()
		md.Spec.Template.Spec.Version = to
		g.Expect(sb.Management.Client.Patch(ctx, md, client.MergeFrom(before))).To(Succeed())
	}

	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(conditions.IsTrue(u, upgradev1.KubernetesVersionsCondition)).To(BeTrue())
		for name, v := range kubelets(g) {
			g.Expect(v).To(Equal(to), "node %s", name)
		}
	}, 5*time.Minute, 200*time.Millisecond).Should(Succeed())
	u := upgrade(g)
	g.Expect(u.Spec.TalosVersion).To(Equal("v1.13.0"), "the Cluster keeps the Talos its Machines run")
	g.Eventually(func(g Gomega) {
		p := &upgradev1.TalosUpgradePolicy{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKeyFromObject(policy), p)).To(Succeed())
		g.Expect(conditions.IsTrue(p, upgradev1.PolicyRolloutCompletedCondition)).To(BeTrue())
		g.Expect(conditions.GetMessage(p, upgradev1.PolicyRolloutCompletedCondition)).To(Equal("all 1 Clusters run Kubernetes " + to))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	for _, name := range append(append([]string{}, cps...), workers...) {
		g.Expect(c.Simulator.Node(name).Boots()).To(BeZero(), "node %s rebooted", name)
		st := record(u, name)
		g.Expect(st).NotTo(BeNil(), "Machine %s has a record", name)
		g.Expect(st.Kubernetes).NotTo(BeNil())
		g.Expect(st.Kubernetes.State).To(Equal(upgradev1.MachineConfigConverged), "Machine %s", name)
	}

	// No Machine was replaced, and each says what its node runs.
	g.Expect(allUIDs(g)).To(Equal(uids))
	machines := &clusterv1.MachineList{}
	g.Expect(sb.Management.Client.List(ctx, machines, client.InNamespace("fleet"))).To(Succeed())
	for _, m := range machines.Items {
		g.Expect(m.Spec.Version).To(Equal(to), "Machine %s", m.Name)
	}
	g.Consistently(func(g Gomega) {
		g.Expect(allUIDs(g)).To(Equal(uids), "CAPI replaces no Machine")
	}, 5*time.Second, 500*time.Millisecond).Should(Succeed())
}
