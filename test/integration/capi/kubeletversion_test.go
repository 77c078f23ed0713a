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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
)

// TestKubeletInPlaceWithCAPICore runs CAPI core with InPlaceUpdates and
// Tollgate as its in-place update extension: a MachineDeployment that rolls
// out RollingUpdate asks for the next Kubernetes minor. CAPI hands its
// Machines to Tollgate, which moves each node's kubelet in place, but only
// once every kube-apiserver of the Cluster runs that version: while the
// control plane is behind, nothing changes and the record says why. The
// control plane moves as its provider moves it, by a new control-plane
// Machine on the new version and the old one's removal. Then each worker's
// kubelet changes with no reboot and no install, CAPI counts the Machines up
// to date, and none is replaced.
func TestKubeletInPlaceWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const (
		from = "v1.35.0"
		to   = "v1.36.0"
	)
	w := startWorld(ctx, t, 2, 2*time.Second, inPlace)
	w.running(ctx, 2, "v1.12.4")
	ext := w.registerExtension(ctx)
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())
	w.optIn(ctx, capiDriven)
	stop := startTollgate(ctx, t, w.mgmt, ext.options)
	defer func() { stop() }()
	w.served(ctx)
	workers := w.workerNames(ctx, g)
	g.Expect(workers).To(HaveLen(2))
	uids := w.machineUIDs(ctx, g)
	kubelet := func(g Gomega, node string) string {
		n := &corev1.Node{}
		g.Expect(w.workload.Client.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
		return n.Status.NodeInfo.KubeletVersion
	}

	// The MachineDeployment asks for the next minor before the control
	// plane runs it: CAPI hands a Machine over, and Tollgate waits.
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.Version = to
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		var waiting []string
		for _, r := range u.Status.Machines {
			if r.Kubernetes != nil && r.Kubernetes.Version == to && r.Phase == upgradev1.MachinePhasePending {
				waiting = append(waiting, r.Message)
			}
		}
		g.Expect(waiting).To(ContainElement(And(
			ContainSubstring("kubelet "+to+" waits for the control plane"),
			ContainSubstring("kube-apiserver-"+w.name+"-cp-0 runs "+from),
		)), "%s", w.describeMachines(ctx))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, node := range workers {
			g.Expect(kubelet(g, node)).To(Equal(from), "node %s", node)
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// The control plane moves first, as its provider moves it: a new
	// control-plane Machine on the new version. The old one still runs the
	// old apiserver: the workers still wait.
	cp1 := w.name + "-cp-1"
	g.Expect(w.c.Create(ctx, &infrav1.TalosSimMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: cp1},
		Spec:       infrav1.TalosSimMachineSpec{Image: "ghcr.io/siderolabs/installer:v1.12.4"},
	})).To(Succeed())
	g.Expect(w.c.Create(ctx, &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: cp1, Labels: map[string]string{clusterv1.MachineControlPlaneLabel: ""}},
		Spec: clusterv1.MachineSpec{
			ClusterName: w.name,
			Version:     to,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(w.name + "-bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimMachine", Name: cp1,
			},
		},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: cp1}, m)).To(Succeed())
		g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue())
		g.Expect(kubelet(g, m.Status.NodeRef.Name)).To(Equal(to))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, node := range workers {
			g.Expect(kubelet(g, node)).To(Equal(from), "node %s", node)
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// The old control-plane Machine goes: every apiserver runs the new
	// version, and the kubelets follow in place.
	g.Expect(w.c.Delete(ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name + "-cp-0"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, node := range workers {
			g.Expect(kubelet(g, node)).To(Equal(to), "node %s; %s; removals %+v", node, w.describeMachines(ctx), w.upgrade(ctx, g).Status.Removals)
		}
		list := &clusterv1.MachineList{}
		g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
		for _, m := range list.Items {
			g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.UpdateInProgressAnnotation), "Machine %s", m.Name)
			g.Expect(m.Spec.Version).To(Equal(to), "Machine %s", m.Name)
		}
		md := &clusterv1.MachineDeployment{}
		g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
		g.Expect(md.Status.UpToDateReplicas).To(HaveValue(BeEquivalentTo(2)))
	}, 4*time.Minute, 200*time.Millisecond).Should(Succeed())

	u := w.upgrade(ctx, g)
	after := w.machineUIDs(ctx, g)
	for _, name := range workers {
		g.Expect(after[name]).To(Equal(uids[name]), "Machine %s was updated in place, not replaced", name)
		g.Expect(sim.Node(name).Boots()).To(BeZero(), "node %s rebooted", name)
		g.Expect(upgradeCalls(sim, name)).To(BeZero(), "node %s got an install", name)
		g.Expect(sim.Node(name).Version()).To(Equal("v1.12.4"), "node %s", name)
		st := record(u, name)
		g.Expect(st).NotTo(BeNil(), "Machine %s has a record", name)
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(st.Action).To(Equal(upgradev1.MachineActionKubernetes), "Machine %s", name)
		g.Expect(st.Kubernetes).To(HaveValue(And(
			HaveField("Part", upgradev1.KubernetesPartKubelet),
			HaveField("Version", to),
			HaveField("State", upgradev1.MachineConfigConverged),
		)), "Machine %s", name)
	}
}
