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

package talossim_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	talosclient "github.com/siderolabs/talos/pkg/machinery/client"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestKubeNodeUpdater runs an upgrade against a workload apiserver: the
// Node goes NotReady during the reboot and comes back Ready with the new
// osImage, as a kubelet would report it.
func TestKubeNodeUpdater(t *testing.T) {
	envtest.SkipWithoutAssets(t)

	g := NewWithT(t)
	ctx := context.Background()

	env := &crenvtest.Environment{}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	workload, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	updater := &talossim.KubeNodeUpdater{Client: workload}
	sim := newSim(t, talossim.Options{NodeUpdater: updater, RebootDuration: time.Second})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(updater.EnsureNode(ctx, n)).To(Succeed())

	node := func() *corev1.Node {
		obj := &corev1.Node{}
		g.Expect(workload.Get(ctx, client.ObjectKey{Name: "w-1"}, obj)).To(Succeed())

		return obj
	}
	ready := func(obj *corev1.Node) corev1.ConditionStatus {
		for _, c := range obj.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status
			}
		}

		return corev1.ConditionUnknown
	}

	g.Expect(ready(node())).To(Equal(corev1.ConditionTrue))
	g.Expect(node().Status.NodeInfo.OSImage).To(Equal("Talos (v1.12.4)"))

	//nolint:staticcheck // SA1019: the legacy upgrade is what a 1.12 node serves.
	_, err = dial(t, sim, n.Address()).UpgradeWithOptions(ctx, talosclient.WithUpgradeImage("ghcr.io/siderolabs/installer:v1.13.0"))
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() corev1.ConditionStatus { return ready(node()) }, 10*time.Second, 20*time.Millisecond).Should(Equal(corev1.ConditionFalse))
	g.Expect(node().Status.NodeInfo.OSImage).To(Equal("Talos (v1.12.4)"))

	g.Eventually(func() string { return node().Status.NodeInfo.OSImage }, 10*time.Second, 20*time.Millisecond).Should(Equal(talossim.OSImage("v1.13.0")))
	g.Expect(ready(node())).To(Equal(corev1.ConditionTrue))
}

// TestStaticPodsInTheWorkloadCluster follows a control-plane node's
// Kubernetes components in a workload apiserver, as the kubelet reports
// them: mirror Pods with the images of the machine configuration, NotReady
// then Ready when an image changes, the kubelet version once the kubelet
// restarted, the kube-proxy DaemonSet created once and never updated.
func TestStaticPodsInTheWorkloadCluster(t *testing.T) {
	envtest.SkipWithoutAssets(t)

	g := NewWithT(t)
	ctx := context.Background()

	env := &crenvtest.Environment{}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	workload, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	updater := &talossim.KubeNodeUpdater{Client: workload}
	sim := newSim(t, talossim.Options{NodeUpdater: updater, StaticPodStartDelay: 500 * time.Millisecond})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, KubernetesVersion: "v1.35.0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(updater.EnsureNode(ctx, n)).To(Succeed())

	node := &corev1.Node{}
	g.Expect(workload.Get(ctx, client.ObjectKey{Name: "cp-1"}, node)).To(Succeed())
	g.Expect(node.Status.NodeInfo.KubeletVersion).To(Equal("v1.35.0"))

	type podState struct {
		Image string
		Ready bool
	}
	pod := func(component string) func() (podState, error) {
		return func() (podState, error) {
			p := &corev1.Pod{}
			if err := workload.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: talossim.MirrorPodName(component, "cp-1")}, p); err != nil {
				return podState{}, err
			}

			ready := false
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady {
					ready = c.Status == corev1.ConditionTrue
				}
			}

			return podState{Image: p.Spec.Containers[0].Image, Ready: ready}, nil
		}
	}

	for _, component := range []string{talossim.ComponentAPIServer, talossim.ComponentControllerManager, talossim.ComponentScheduler} {
		g.Expect(pod(component)()).To(Equal(podState{Image: "registry.k8s.io/" + component + ":v1.35.0", Ready: true}))

		p := &corev1.Pod{}
		g.Expect(workload.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: component + "-cp-1"}, p)).To(Succeed())
		g.Expect(p.Annotations).To(HaveKey(talossim.MirrorPodAnnotation))
		g.Expect(p.Spec.NodeName).To(Equal("cp-1"))
		g.Expect(p.OwnerReferences).To(ConsistOf(HaveField("UID", node.UID)))
	}

	proxy := &appsv1.DaemonSet{}
	g.Expect(workload.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-proxy"}, proxy)).To(Succeed())
	g.Expect(proxy.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/kube-proxy:v1.35.0"))

	apply := func(patch string) {
		t.Helper()

		current, err := n.MachineConfig()
		g.Expect(err).NotTo(HaveOccurred())

		_, err = dial(t, sim, n.Address()).ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
			Data: patched(t, current, patch), Mode: machine.ApplyConfigurationRequest_NO_REBOOT,
		})
		g.Expect(err).NotTo(HaveOccurred())
	}

	apply(patchAPIServer + "  proxy:\n    image: registry.k8s.io/kube-proxy:v1.35.2\n" + patchKubelet)

	newAPIServer := podState{Image: "registry.k8s.io/kube-apiserver:v1.35.2"}
	g.Eventually(pod(talossim.ComponentAPIServer), 10*time.Second, 20*time.Millisecond).Should(Equal(newAPIServer))
	newAPIServer.Ready = true
	g.Eventually(pod(talossim.ComponentAPIServer), 10*time.Second, 20*time.Millisecond).Should(Equal(newAPIServer))
	g.Expect(pod(talossim.ComponentScheduler)()).To(Equal(podState{Image: "registry.k8s.io/kube-scheduler:v1.35.0", Ready: true}))

	g.Eventually(func() (string, error) {
		err := workload.Get(ctx, client.ObjectKey{Name: "cp-1"}, node)

		return node.Status.NodeInfo.KubeletVersion, err
	}, 10*time.Second, 20*time.Millisecond).Should(Equal("v1.35.2"))

	g.Expect(workload.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-proxy"}, proxy)).To(Succeed())
	g.Expect(proxy.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/kube-proxy:v1.35.0"))

	// A static Pod that never becomes Ready.
	n.InjectFault(talossim.Faults{StaticPodNeverReady: []string{talossim.ComponentScheduler}})
	apply(patchScheduler)
	g.Eventually(pod(talossim.ComponentScheduler), 10*time.Second, 20*time.Millisecond).Should(Equal(podState{Image: "registry.k8s.io/kube-scheduler:v1.35.2"}))
	g.Consistently(pod(talossim.ComponentScheduler), 2*time.Second, 100*time.Millisecond).Should(Equal(podState{Image: "registry.k8s.io/kube-scheduler:v1.35.2"}))
}
