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

package kubernetes_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

const (
	// startDelay is how long the simulated static Pods and kubelets take
	// to start: long enough to see them NotReady.
	startDelay = time.Second
	timeout    = 10 * time.Second
	interval   = 20 * time.Millisecond
)

// workloadEnv is the simulator, a workload apiserver its nodes report to,
// and a dialer to its nodes.
type workloadEnv struct {
	sim      *talossim.Simulator
	workload client.Client
	dialer   talos.Dialer
	updater  *talossim.KubeNodeUpdater
}

func newWorkloadEnv(t *testing.T) *workloadEnv {
	t.Helper()
	g := NewWithT(t)

	env := &crenvtest.Environment{}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	workload, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	updater := &talossim.KubeNodeUpdater{Client: workload}
	sim, err := talossim.New(talossim.Options{NodeUpdater: updater, StaticPodStartDelay: startDelay, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sim.Close() })

	secret, err := sim.TalosConfigSecret("default", "prod")
	g.Expect(err).NotTo(HaveOccurred())

	reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(secret).Build()

	return &workloadEnv{sim: sim, workload: workload, dialer: talos.NewDialer(reader, talos.WithTimeout(5*time.Second)), updater: updater}
}

// addControlPlane adds a control-plane node on Talos 1.13 and Kubernetes
// 1.35.0, reported to the workload cluster, and returns a Talos client to it.
func (e *workloadEnv) addControlPlane(t *testing.T, name string) (*talossim.Node, talos.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	n, err := e.sim.AddNode(talossim.NodeConfig{Name: name, Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.updater.EnsureNode(ctx, n)).To(Succeed())

	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Status: clusterv1.MachineStatus{Addresses: clusterv1.MachineAddresses{
			{Type: clusterv1.MachineInternalIP, Address: n.Address()},
		}},
	}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "prod"}}

	c, err := e.dialer.Dial(ctx, cluster, machine)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Close() })

	return n, c
}

// applyPart applies ImagePatches of part for version to the node without a
// reboot, as the engine will, and returns what changed.
func applyPart(t *testing.T, c talos.Client, part kubernetes.Part, version string) []kubernetes.ImageChange {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	running, err := c.MachineConfig(ctx)
	g.Expect(err).NotTo(HaveOccurred())

	desired, changes, err := kubernetes.ImagePatches(running, part, version)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes).NotTo(BeEmpty())

	result, err := c.ApplyConfiguration(ctx, desired, talos.ApplyModeNoReboot, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Mode).To(Equal(talos.ApplyModeNoReboot))
	g.Expect(result.RebootRequired).To(BeFalse())

	return changes
}

// runningVersions reads back what the node's configuration says it runs.
func runningVersions(t *testing.T, c talos.Client) kubernetes.Versions {
	t.Helper()
	g := NewWithT(t)

	running, err := c.MachineConfig(context.Background())
	g.Expect(err).NotTo(HaveOccurred())

	v, err := kubernetes.RunningVersions(running)
	g.Expect(err).NotTo(HaveOccurred())

	return v
}

// TestUpgradeAgainstTheSimulator moves control-plane nodes of the Talos
// simulator from Kubernetes 1.35.0 to 1.36.0 through the Talos API, as the
// engine will, and follows each step in the workload apiserver.
func TestUpgradeAgainstTheSimulator(t *testing.T) {
	envtest.SkipWithoutAssets(t)

	e := newWorkloadEnv(t)
	ctx := context.Background()

	staticPods := func(node string) func() (string, error) {
		return func() (string, error) {
			ready, message, err := kubernetes.StaticPodsReady(ctx, e.workload, node, "v1.36.0")
			if ready {
				return "Ready", err
			}

			return message, err
		}
	}
	kubelet := func(name string) func() (string, error) {
		return func() (string, error) {
			node := &corev1.Node{}
			if err := e.workload.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return "", err
			}

			if ok, message := kubernetes.KubeletAt(node, "v1.36.0"); !ok {
				return message, nil
			}

			return "Ready", nil
		}
	}

	t.Run("a control-plane node: static Pods, then kube-proxy, then its kubelet", func(t *testing.T) {
		g := NewWithT(t)
		_, c := e.addControlPlane(t, "cp-1")

		before := runningVersions(t, c)
		g.Expect(before.StaticPods).To(HaveEach("v1.35.0"))
		g.Expect(before.StaticPodComponents()).To(HaveLen(3))
		g.Expect(staticPods("cp-1")()).To(ContainSubstring("kube-apiserver-cp-1 runs v1.35.0, not v1.36.0"))

		g.Expect(applyPart(t, c, kubernetes.PartControlPlane, "v1.36.0")).To(HaveLen(4))

		// The static Pods restart on their new images NotReady, then
		// become Ready.
		g.Eventually(staticPods("cp-1"), timeout, interval).Should(And(
			ContainSubstring("kube-apiserver-cp-1 is not Ready"),
			ContainSubstring("kube-controller-manager-cp-1 is not Ready"),
			ContainSubstring("kube-scheduler-cp-1 is not Ready"),
		))
		g.Eventually(staticPods("cp-1"), timeout, interval).Should(Equal("Ready"))

		after := runningVersions(t, c)
		g.Expect(after.StaticPods).To(HaveEach("v1.36.0"))
		g.Expect(after.KubeProxy).To(Equal("v1.36.0"))
		g.Expect(after.Kubelet).To(Equal("v1.35.0"), "the kubelet moves in its own step")
		g.Expect(kubelet("cp-1")()).To(Equal("Waiting for the kubelet of Node cp-1 to report v1.36.0: it reports v1.35.0"))

		// Talos left the kube-proxy DaemonSet alone; the step updates it.
		rolledOut := func() (string, error) {
			ok, message, err := kubernetes.KubeProxyRolledOut(ctx, e.workload, "v1.36.0")
			if ok {
				return "Rolled out", err
			}

			return message, err
		}
		g.Expect(rolledOut()).To(Equal("Waiting for DaemonSet kube-system/kube-proxy to be updated: its image is v1.35.0, not v1.36.0"))
		g.Expect(kubernetes.UpdateKubeProxy(ctx, e.workload, "v1.36.0")).To(BeTrue())
		g.Expect(kubernetes.UpdateKubeProxy(ctx, e.workload, "v1.36.0")).To(BeFalse())

		ds := &appsv1.DaemonSet{}
		g.Expect(e.workload.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-proxy"}, ds)).To(Succeed())
		g.Expect(ds.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/kube-proxy:v1.36.0"))
		g.Expect(rolledOut()).To(Equal("Waiting for the DaemonSet controller to observe DaemonSet kube-system/kube-proxy"))

		// envtest runs no DaemonSet controller: report its rollout.
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1, NumberReady: 1}
		g.Expect(e.workload.Status().Update(ctx, ds)).To(Succeed())
		g.Expect(rolledOut()).To(Equal("Rolled out"))

		// The kubelet restarts on its new image and reports its version.
		g.Expect(applyPart(t, c, kubernetes.PartKubelet, "v1.36.0")).To(HaveLen(1))
		g.Eventually(kubelet("cp-1"), timeout, interval).Should(Equal("Ready"))
		g.Expect(runningVersions(t, c).Kubelet).To(Equal("v1.36.0"))
		g.Expect(staticPods("cp-1")()).To(Equal("Ready"))

		// Done: nothing more to apply.
		running, err := c.MachineConfig(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		for _, part := range []kubernetes.Part{kubernetes.PartControlPlane, kubernetes.PartKubelet} {
			desired, changes, err := kubernetes.ImagePatches(running, part, "v1.36.0")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(desired).To(BeNil())
			g.Expect(changes).To(BeEmpty())
		}
	})

	t.Run("a static Pod that never becomes Ready", func(t *testing.T) {
		g := NewWithT(t)
		n, c := e.addControlPlane(t, "cp-2")
		n.InjectFault(talossim.Faults{StaticPodNeverReady: []string{talossim.ComponentScheduler}})

		applyPart(t, c, kubernetes.PartControlPlane, "v1.36.0")

		const stuck = "Waiting for the static Pods of node cp-2 to run v1.36.0 and be Ready: kube-scheduler-cp-2 is not Ready"
		g.Eventually(staticPods("cp-2"), timeout, interval).Should(Equal(stuck))
		g.Consistently(staticPods("cp-2"), 3*startDelay, 100*time.Millisecond).Should(Equal(stuck))
	})
}
