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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/test/builder"
	"github.com/tollgate-dev/tollgate/test/jobdriver"
)

const (
	kubernetesFrom = "v1.35.2"
	kubernetesTo   = "v1.36.0"
)

// TestKubernetesUpgradePassesTheGate upgrades the Kubernetes of a 3+3
// Cluster that runs its Talos target already, while its health check fails
// at first and a pre-drain hold is on a worker. Nothing changes while the
// check fails; then the control plane's static Pods move to the new version
// one node at a time, and only once every one runs it do the kubelets move,
// control plane first, the workers within maxUnavailable and the held one
// once its hold is gone; each node passes its preDrain hook with
// TOLLGATE_ACTION=Kubernetes; no node reboots and no Talos upgrade call is
// made; at the end every Node reports the new kubelet and every Machine's
// spec.version says it.
func TestKubernetesUpgradePassesTheGate(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Its Machines have no owner that would replace them for a new
	// version (the KubernetesVersions condition; test/capi has the
	// TalosControlPlane's).
	r := newRollout(t, rolloutOptions{controlPlanes: 3, workers: 3, version: toVersion, kubernetes: kubernetesFrom, clusterOptions: []builder.ClusterOption{withoutControlPlaneRef}})
	var failing atomic.Bool
	failing.Store(true)
	outcomes := make([]jobdriver.Outcome, 1000)
	for i := range outcomes {
		outcomes[i] = jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN"}
	}
	r.driver.Script(func(job *batchv1.Job) bool {
		return strings.HasPrefix(job.Name, "tollgate-hc-ceph") && failing.Load()
	}, outcomes...)
	r.createCheck(g, "ceph")

	held := "alpha-worker-0"
	m := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: held}, m)).To(Succeed())
	g.Expect(hooks.SetHold(ctx, mgmt.Client, m, upgradev1.HoldPointPreDrain, "storage-operator", "rebalancing")).To(Succeed())

	two := intstr.FromInt32(2)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = toVersion
		p.Spec.KubernetesVersion = kubernetesTo
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
		p.Spec.Rollout.Workers.MaxUnavailable = &two
		p.Spec.Hooks = []upgradev1.ActionHook{{Name: "osd-noout", Point: upgradev1.HookPointPreDrain, Template: jobTemplate("ceph", "osd", "set", "noout")}}
	}))).To(Succeed())
	s := r.sample(ctx)
	r.startManager()

	// The path: the control plane first, then the kubelets.
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Path).NotTo(BeNil(), "blockedBy: %s", u.Status.BlockedBy)
		hops := u.Status.Path.Hops
		for i := range hops {
			hops[i].CompletedMachines = 0
		}
		g.Expect(hops).To(Equal([]upgradev1.UpgradeHop{
			{Version: toVersion, KubernetesVersion: kubernetesTo, Stage: upgradev1.HopStageKubernetesControlPlane},
			{Version: toVersion, KubernetesVersion: kubernetesTo, Stage: upgradev1.HopStageNodes},
		}))
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseWaitingForHealthChecks), "blockedBy: %s", u.Status.BlockedBy)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		u := r.upgrade(g)
		for _, st := range u.Status.Machines {
			g.Expect(st.Phase).NotTo(BeElementOf(upgradev1.MachinePhaseDraining, upgradev1.MachinePhaseUpgrading, upgradev1.MachinePhaseVerifying), "Machine %s moved while the check fails", st.Machine)
		}
	}, 5*time.Second, 200*time.Millisecond).Should(Succeed())
	failing.Store(false)

	// Every apiserver moves before any kubelet.
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Path.Current).To(Equal(int32(1)), "blockedBy: %s", u.Status.BlockedBy)
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	for _, cp := range []string{"alpha-cp-0", "alpha-cp-1", "alpha-cp-2"} {
		ready, msg, err := kubernetes.StaticPodsReady(ctx, r.workload.Client, cp, kubernetesTo)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ready).To(BeTrue(), msg)
	}
	nodes := &corev1.NodeList{}
	g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
	for _, n := range nodes.Items {
		if strings.Contains(n.Name, "-worker-") {
			g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(kubernetesFrom), "the kubelet of %s moved before every apiserver did", n.Name)
		}
	}

	// The held worker waits at its hold; the others move.
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		st := machineRecord(u, held)
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
		g.Expect(st.HeldBy).To(ConsistOf("storage-operator"))
		g.Expect(machineRecord(u, "alpha-worker-1").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(machineRecord(u, "alpha-worker-2").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: held}, m)).To(Succeed())
	g.Expect(hooks.ReleaseHold(ctx, mgmt.Client, m, upgradev1.HoldPointPreDrain, "storage-operator")).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	u := r.upgrade(g)
	for _, st := range u.Status.Machines {
		g.Expect(st.Action).To(Equal(upgradev1.MachineActionKubernetes), "Machine %s", st.Machine)
		g.Expect(st.Kubernetes).NotTo(BeNil(), "Machine %s", st.Machine)
		g.Expect(st.Kubernetes.Part).To(Equal(upgradev1.KubernetesPartKubelet))
		g.Expect(st.Kubernetes.State).To(Equal(upgradev1.MachineConfigConverged), "Machine %s", st.Machine)
	}
	g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
	for _, n := range nodes.Items {
		g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(kubernetesTo), "node %s", n.Name)
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "node %s left cordoned", n.Name)
	}
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Boots()).To(BeZero(), "node %s rebooted for a Kubernetes change", n.Name())
		g.Expect(r.upgradeCalls(n.Name())).To(BeZero(), "node %s got a Talos upgrade call", n.Name())
	}
	machines := &clusterv1.MachineList{}
	g.Expect(mgmt.Client.List(ctx, machines, client.InNamespace(r.ns))).To(Succeed())
	for _, m := range machines.Items {
		g.Expect(m.Spec.Version).To(Equal(kubernetesTo), "Machine %s", m.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g.Expect(s.maxControlPlane).To(Equal(1), "control-plane nodes one at a time")
	g.Expect(s.maxWorkers).To(BeNumerically("<=", 2), "workers within maxUnavailable")
	g.Expect(s.firstDisrupted[:3]).To(ConsistOf("alpha-cp-0", "alpha-cp-1", "alpha-cp-2"), "the control plane first")

	// Each node passed its preDrain hook, told it is a Kubernetes change:
	// the control-plane nodes twice (their components, then their kubelet).
	perNode := map[string]int{}
	for _, j := range r.driver.SeenMatching(jobdriver.NamePrefix("tollgate-hook-osd-noout-")) {
		for _, env := range j.Env {
			g.Expect(env[hooks.EnvAction]).To(Equal(hooks.ActionKubernetes), "Job %s", j.Name)
			perNode[env[hooks.EnvNode]]++
		}
	}
	for _, n := range nodes.Items {
		want := 1
		if strings.Contains(n.Name, "-cp-") {
			want = 2
		}
		g.Expect(perNode[n.Name]).To(Equal(want), "preDrain hooks of node %s", n.Name)
	}
}

// withoutControlPlaneRef makes a Cluster whose control-plane Machines no
// control-plane provider owns.
func withoutControlPlaneRef(c *clusterv1.Cluster) {
	c.Spec.ControlPlaneRef = clusterv1.ContractVersionedObjectReference{}
	c.Spec.ClusterNetwork.ServiceDomain = "cluster.local" // A spec that is not empty.
}
