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
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// TestKubernetesTargetsSetLater: a Kubernetes target set on a policy while
// its Talos rollout is under way (the control plane and a worker done, a
// worker held at its pre-drain hold) finishes the Talos rollout first, in a
// hop that changes no Kubernetes, then moves Kubernetes, control plane
// first; a Kubernetes target set once that rollout completed starts it
// again. Before, the first held the rollout at its preflight for good (its
// Machines ran two Talos versions) and the second was never planned (no
// record was Pending): the soak's seeds 20261211, 20261212 and 20261129.
func TestKubernetesTargetsSetLater(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const k8sFrom, k8sMid = "v1.34.1", "v1.35.2"
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2, version: fromVersion, kubernetes: k8sFrom, clusterOptions: []builder.ClusterOption{withoutControlPlaneRef}})
	held := "alpha-worker-0"
	m := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: held}, m)).To(Succeed())
	g.Expect(hooks.SetHold(ctx, mgmt.Client, m, upgradev1.HoldPointPreDrain, "storage-operator", "rebalancing")).To(Succeed())
	two := intstr.FromInt32(2)
	policy := r.policy(func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Rollout.Workers.MaxUnavailable = &two })
	g.Expect(mgmt.Client.Create(ctx, policy)).To(Succeed())
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(machineRecord(u, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(machineRecord(u, "alpha-worker-1").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(machineRecord(u, held).Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	setKubernetes := func(version string) {
		p := &upgradev1.TalosUpgradePolicy{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(policy), p)).To(Succeed())
		patch := client.MergeFrom(p.DeepCopy())
		p.Spec.KubernetesVersion = version
		g.Expect(mgmt.Client.Patch(ctx, p, patch)).To(Succeed())
	}
	kubelets := func(g Gomega, version string) {
		nodes := &corev1.NodeList{}
		g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
		for _, n := range nodes.Items {
			g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(version), "node %s", n.Name)
		}
	}

	// Mid-rollout: the held worker finishes its Talos upgrade first.
	setKubernetes(k8sMid)
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: held}, m)).To(Succeed())
	g.Expect(hooks.ReleaseHold(ctx, mgmt.Client, m, upgradev1.HoldPointPreDrain, "storage-operator")).To(Succeed())
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Path).NotTo(BeNil(), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(plannedHops(u)).To(Equal([]upgradev1.UpgradeHop{
			{Version: toVersion, Stage: upgradev1.HopStageNodes},
			{Version: toVersion, KubernetesVersion: k8sMid, Stage: upgradev1.HopStageKubernetesControlPlane},
			{Version: toVersion, KubernetesVersion: k8sMid, Stage: upgradev1.HopStageNodes},
		}))
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		kubelets(g, k8sMid)
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())

	// On the completed rollout: started again, and planned, once CAPI wrote
	// what the nodes run into the Machines (this world has no CAPI core).
	copyNodeInfo(ctx, g, r)
	setKubernetes(kubernetesTo)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Path).NotTo(BeNil())
		g.Expect(u.Status.Path.KubernetesTarget).To(Equal(kubernetesTo), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		kubelets(g, kubernetesTo)
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(toVersion))
		g.Expect(n.Boots()).To(Equal(1), "one reboot, for the Talos upgrade, on %s", n.Name())
		g.Expect(r.upgradeCalls(n.Name())).To(Equal(1), "one upgrade call on %s", n.Name())
	}
}

// copyNodeInfo copies each Node's status.nodeInfo into its Machine's, as
// CAPI's Machine controller does.
func copyNodeInfo(ctx context.Context, g Gomega, r *rollout) {
	machines := &clusterv1.MachineList{}
	g.Expect(mgmt.Client.List(ctx, machines, client.InNamespace(r.ns))).To(Succeed())
	for i := range machines.Items {
		m := &machines.Items[i]
		n := &corev1.Node{}
		g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, n)).To(Succeed())
		patch := client.MergeFrom(m.DeepCopy())
		m.Status.NodeInfo = n.Status.NodeInfo.DeepCopy()
		g.Expect(mgmt.Client.Status().Patch(ctx, m, patch)).To(Succeed())
	}
}
