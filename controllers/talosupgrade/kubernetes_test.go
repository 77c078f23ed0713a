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
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/talossim"
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
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Its Machines have no owner that would replace them for a new
	// version (the KubernetesVersions condition; test/integration/capi has the
	// TalosControlPlane's).
	r := newRollout(t, rolloutOptions{controlPlanes: 3, workers: 3, version: toVersion, kubernetes: kubernetesFrom, clusterOptions: []builder.ClusterOption{withoutControlPlaneRef}})
	failing := r.failingCheck(g, "ceph")

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
		g.Expect(plannedHops(u)).To(Equal([]upgradev1.UpgradeHop{
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
	g.Expect(s.maxControlPlane()).To(Equal(1), "control-plane nodes one at a time")
	g.Expect(s.maxWorkers()).To(BeNumerically("<=", 2), "workers within maxUnavailable")
	g.Expect(s.firstDisrupted()[:3]).To(ConsistOf("alpha-cp-0", "alpha-cp-1", "alpha-cp-2"), "the control plane first")

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

// TestTalosAndKubernetesPlannedTogether takes a Cluster on Talos v1.11.5
// with Kubernetes v1.34.1 to Talos v1.13.0 with Kubernetes v1.35.2 through
// an Auto path: Talos v1.12.6 first (v1.11 does not run Kubernetes 1.35),
// then the control plane's components to v1.35.2 on Talos v1.12.6, then
// Talos v1.13.0 with the kubelet v1.35.2 on every node, staged with its
// install: exactly one reboot and one upgrade call per node per Talos hop,
// and no node's kubelet ever newer than an apiserver.
func TestTalosAndKubernetesPlannedTogether(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, v := range []string{"v1.12.0", "v1.12.6"} {
		g.Expect(sb.PushInstaller(ctx, v)).To(Succeed())
	}
	const (
		talosFrom = "v1.11.5"
		k8sFrom   = "v1.34.1"
		k8sTo     = "v1.35.2"
	)
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2, version: talosFrom, kubernetes: k8sFrom, clusterOptions: []builder.ClusterOption{withoutControlPlaneRef}})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = toVersion
		p.Spec.KubernetesVersion = k8sTo
		p.Spec.UpgradePath = upgradev1.UpgradePathAuto
	}))).To(Succeed())
	var skew atomic.Value
	go func() {
		// No kubelet is ever newer than an apiserver.
		for ctx.Err() == nil {
			nodes := &corev1.NodeList{}
			apiserver := &corev1.Pod{}
			key := client.ObjectKey{Namespace: "kube-system", Name: kubernetes.MirrorPodName(kubernetes.ComponentAPIServer, "alpha-cp-0")}
			if r.workload.Client.List(ctx, nodes) == nil && r.workload.Client.Get(ctx, key, apiserver) == nil {
				for _, n := range nodes.Items {
					if n.Status.NodeInfo.KubeletVersion == k8sTo && !strings.HasSuffix(apiserver.Spec.Containers[0].Image, ":"+k8sTo) {
						skew.Store(n.Name + " runs kubelet " + k8sTo + " while the apiserver runs " + apiserver.Spec.Containers[0].Image)
					}
				}
			}
			time.Sleep(20 * time.Millisecond) // Sampling period, not a wait for a condition.
		}
	}()
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 4*time.Minute, 200*time.Millisecond).Should(Succeed())
	u := r.upgrade(g)
	g.Expect(plannedHops(u)).To(Equal([]upgradev1.UpgradeHop{
		{Version: "v1.12.6", KubernetesVersion: k8sFrom, Stage: upgradev1.HopStageNodes},
		{Version: "v1.12.6", KubernetesVersion: k8sTo, Stage: upgradev1.HopStageKubernetesControlPlane},
		{Version: toVersion, KubernetesVersion: k8sTo, Stage: upgradev1.HopStageNodes},
	}))
	g.Expect(skew.Load()).To(BeNil())
	r.expectRunning(ctx, g, toVersion, k8sTo, 2)
}

// expectRunning checks the end of a rollout over two Talos hops: every
// Node's kubelet and the control plane's static Pods on kubernetesVersion,
// every node on talosVersion after exactly hops reboots and upgrade calls.
func (r *rollout) expectRunning(ctx context.Context, g Gomega, talosVersion, kubernetesVersion string, hops int) {
	nodes := &corev1.NodeList{}
	g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
	for _, n := range nodes.Items {
		g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(kubernetesVersion), "node %s", n.Name)
	}
	ready, msg, err := kubernetes.StaticPodsReady(ctx, r.workload.Client, "alpha-cp-0", kubernetesVersion)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ready).To(BeTrue(), msg)
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(talosVersion))
		g.Expect(n.Boots()).To(Equal(hops), "one reboot per Talos hop on %s", n.Name())
		g.Expect(r.upgradeCalls(n.Name())).To(Equal(hops), "one upgrade call per Talos hop on %s", n.Name())
	}
}

// TestStaticPodNeverReadyHaltsBeforeTheWorkers fails the control-plane
// Machine whose new kube-apiserver never becomes Ready within
// rebootTimeout: the failure policy pauses the rollout, no worker is
// touched, and the other control-plane nodes keep their version.
func TestStaticPodNeverReadyHaltsBeforeTheWorkers(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 3, workers: 2, version: toVersion, kubernetes: kubernetesFrom, clusterOptions: []builder.ClusterOption{withoutControlPlaneRef}})
	r.sim.Node("alpha-cp-0").InjectFault(talossim.Faults{StaticPodNeverReady: []string{string(kubernetes.ComponentAPIServer)}})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = toVersion
		p.Spec.KubernetesVersion = kubernetesTo
		p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
		p.Spec.FailurePolicy.Action = upgradev1.FailureActionPause
	}))).To(Succeed())
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		st := machineRecord(u, "alpha-cp-0")
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseFailed), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(st.Message).To(ContainSubstring("static Pods are not Ready on " + kubernetesTo))
		g.Expect(st.Message).To(ContainSubstring("kube-apiserver-alpha-cp-0"))
		g.Expect(u.Spec.Paused).To(BeTrue(), "the failure policy pauses the rollout")
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		u := r.upgrade(g)
		for _, w := range []string{"alpha-worker-0", "alpha-worker-1"} {
			g.Expect(machineRecord(u, w).Phase).NotTo(BeElementOf(upgradev1.MachinePhaseDraining, upgradev1.MachinePhaseUpgrading, upgradev1.MachinePhaseVerifying))
		}
		g.Expect(machineRecord(u, "alpha-cp-1").Phase).NotTo(Equal(upgradev1.MachinePhaseCompleted))
		nodes := &corev1.NodeList{}
		g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
		for _, n := range nodes.Items {
			g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(kubernetesFrom), "node %s", n.Name)
			g.Expect(n.Spec.Unschedulable).To(BeFalse(), "node %s cordoned after the failure", n.Name)
		}
	}, 5*time.Second, 200*time.Millisecond).Should(Succeed())
	for _, cp := range []string{"alpha-cp-1", "alpha-cp-2"} {
		kubelet, err := r.sim.Node(cp).Kubelet()
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range kubelet.StaticPods {
			g.Expect(p.Image).To(HaveSuffix(":"+kubernetesFrom), "node %s keeps its control plane", cp)
		}
	}
}

// TestKubernetesRestartAtEveryStep stops the controller as soon as the
// control-plane Machine's components, and then the worker's kubelet, reach
// each step of their change, and starts a new one: the rollout completes
// with no reboot, each node's preDrain hook run once per part it changes,
// and every node on the new version.
func TestKubernetesRestartAtEveryStep(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2, version: toVersion, kubernetes: kubernetesFrom, clusterOptions: []builder.ClusterOption{withoutControlPlaneRef}})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = toVersion
		p.Spec.KubernetesVersion = kubernetesTo
		p.Spec.Hooks = []upgradev1.ActionHook{{Name: "noout", Point: upgradev1.HookPointPreDrain, Template: jobTemplate("ceph", "osd", "set", "noout")}}
	}))).To(Succeed())
	r.startManager()

	steps := []struct {
		machine string
		part    upgradev1.KubernetesPart
		phase   upgradev1.MachinePhase
	}{
		{"alpha-cp-0", upgradev1.KubernetesPartControlPlane, upgradev1.MachinePhaseDraining},
		{"alpha-cp-0", upgradev1.KubernetesPartControlPlane, upgradev1.MachinePhaseUpgrading},
		{"alpha-cp-0", upgradev1.KubernetesPartControlPlane, upgradev1.MachinePhaseVerifying},
		{"alpha-worker-0", upgradev1.KubernetesPartKubelet, upgradev1.MachinePhaseDraining},
		{"alpha-worker-0", upgradev1.KubernetesPartKubelet, upgradev1.MachinePhaseUpgrading},
		{"alpha-worker-0", upgradev1.KubernetesPartKubelet, upgradev1.MachinePhaseVerifying},
	}
	for _, step := range steps {
		g.Eventually(func(g Gomega) {
			u := r.upgrade(g)
			rec := machineRecord(u, step.machine)
			g.Expect(rec.Kubernetes).NotTo(BeNil(), "blockedBy: %s", u.Status.BlockedBy)
			// Reached, or passed: a control-plane node's components are
			// followed by its kubelet's change.
			passed := rec.Kubernetes.Part == upgradev1.KubernetesPartKubelet && step.part == upgradev1.KubernetesPartControlPlane
			g.Expect(passed || rec.Kubernetes.Part == step.part && (rec.Phase == step.phase || phaseAfter(rec.Phase, step.phase))).To(BeTrue(),
				"machine %s at %s of its %s change, waiting for %s of its %s change", step.machine, rec.Phase, rec.Kubernetes.Part, step.phase, step.part)
		}, time.Minute, 10*time.Millisecond).Should(Succeed())
		r.stopManager()
		r.startManager()
	}
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	nodes := &corev1.NodeList{}
	g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
	for _, n := range nodes.Items {
		g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(kubernetesTo), "node %s", n.Name)
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "node %s left cordoned", n.Name)
	}
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Boots()).To(BeZero(), "node %s rebooted", n.Name())
	}
	perNode := map[string]int{}
	for _, j := range r.driver.SeenMatching(jobdriver.NamePrefix("tollgate-hook-noout-")) {
		for _, env := range j.Env {
			perNode[env[hooks.EnvNode]]++
		}
	}
	g.Expect(perNode).To(Equal(map[string]int{"alpha-cp-0": 2, "alpha-worker-0": 1, "alpha-worker-1": 1}), "each node's preDrain hook once per part")
}

// TestTalosAndKubernetesInOneHop takes a Cluster on Talos v1.12.4 with
// Kubernetes v1.34.1 to v1.13.0 with v1.35.2, which both Talos versions
// run: the control plane's components first, on v1.12.4, then each node's
// Talos and kubelet together, with one reboot. The preflight needs the
// installer of v1.13.0 only: the control plane's hop installs nothing.
func TestTalosAndKubernetesInOneHop(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const (
		k8sFrom = "v1.34.1"
		k8sTo   = "v1.35.2"
	)
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, version: fromVersion, kubernetes: k8sFrom, clusterOptions: []builder.ClusterOption{withoutControlPlaneRef}})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = toVersion
		p.Spec.KubernetesVersion = k8sTo
	}))).To(Succeed())
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	u := r.upgrade(g)
	g.Expect(u.Status.InstallerImages).To(HaveLen(1), "only the target's installer: %v", u.Status.InstallerImages)
	g.Expect(u.Status.InstallerImages[0]).To(HaveSuffix(":" + toVersion))
	g.Expect(plannedHops(u)).To(Equal([]upgradev1.UpgradeHop{
		{Version: fromVersion, KubernetesVersion: k8sTo, Stage: upgradev1.HopStageKubernetesControlPlane},
		{Version: toVersion, KubernetesVersion: k8sTo, Stage: upgradev1.HopStageNodes},
	}))
	nodes := &corev1.NodeList{}
	g.Expect(r.workload.Client.List(ctx, nodes)).To(Succeed())
	for _, n := range nodes.Items {
		g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(k8sTo), "node %s", n.Name)
	}
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(toVersion))
		g.Expect(n.Boots()).To(Equal(1), "one reboot for Talos and the kubelet on %s", n.Name())
		g.Expect(r.upgradeCalls(n.Name())).To(Equal(1), "one upgrade call on %s", n.Name())
	}
}

// plannedHops returns the hops of u's path as planned, without the counts
// of Machines that completed them.
func plannedHops(u *upgradev1.TalosUpgrade) []upgradev1.UpgradeHop {
	hops := slices.Clone(u.Status.Path.Hops)
	for i := range hops {
		hops[i].CompletedMachines = 0
	}
	return hops
}
