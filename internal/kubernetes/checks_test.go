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
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tollgate-dev/tollgate/internal/kubernetes"
)

// podOption changes a mirror Pod fixture.
type podOption func(*corev1.Pod)

// mirrorPod is the mirror Pod of component on node cp-1, running image and
// Ready unless opts say otherwise.
func mirrorPod(component kubernetes.Component, image string, opts ...podOption) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   "kube-system",
			Name:        kubernetes.MirrorPodName(component, "cp-1"),
			Annotations: map[string]string{"kubernetes.io/config.mirror": "hash"},
		},
		Spec: corev1.PodSpec{NodeName: "cp-1", Containers: []corev1.Container{{Name: string(component), Image: image}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	for _, opt := range opts {
		opt(pod)
	}

	return pod
}

func notReady(pod *corev1.Pod) { pod.Status.Conditions[1].Status = corev1.ConditionFalse }

func noStatus(pod *corev1.Pod) { pod.Status = corev1.PodStatus{} }

func notMirror(pod *corev1.Pod) { pod.Annotations = nil }

func onNode(node string) podOption { return func(pod *corev1.Pod) { pod.Spec.NodeName = node } }

func withSidecar(pod *corev1.Pod) {
	pod.Spec.Containers = append([]corev1.Container{{Name: "sidecar", Image: "example.com/sidecar:v1.36.0"}}, pod.Spec.Containers...)
}

func TestStaticPodsReady(t *testing.T) {
	const (
		apiServer136         = "registry.k8s.io/kube-apiserver:v1.36.0"
		controllerManager136 = "registry.k8s.io/kube-controller-manager:v1.36.0"
		scheduler136         = "registry.k8s.io/kube-scheduler:v1.36.0"
	)

	tests := []struct {
		name       string
		pods       []*corev1.Pod
		components []kubernetes.Component
		ready      bool
		message    string
	}{
		{
			name: "all three on the version and Ready",
			pods: []*corev1.Pod{
				mirrorPod(kubernetes.ComponentAPIServer, apiServer136),
				mirrorPod(kubernetes.ComponentControllerManager, controllerManager136, withSidecar),
				mirrorPod(kubernetes.ComponentScheduler, "mirror.example.com/kube-scheduler:v1.36.0"),
			},
			ready: true,
		},
		{
			name: "one on the old version, one not Ready, one missing",
			pods: []*corev1.Pod{
				mirrorPod(kubernetes.ComponentAPIServer, apiServer136, notReady),
				mirrorPod(kubernetes.ComponentControllerManager, controllerManager135),
			},
			message: "Waiting for the static Pods of node cp-1 to run v1.36.0 and be Ready: " +
				"kube-apiserver-cp-1 is not Ready; kube-controller-manager-cp-1 runs v1.35.0, not v1.36.0; " +
				"kube-scheduler has no mirror Pod kube-scheduler-cp-1 yet",
		},
		{
			name: "a new mirror Pod without status yet",
			pods: []*corev1.Pod{
				mirrorPod(kubernetes.ComponentAPIServer, apiServer136),
				mirrorPod(kubernetes.ComponentControllerManager, controllerManager136),
				mirrorPod(kubernetes.ComponentScheduler, scheduler136, noStatus),
			},
			message: "Waiting for the static Pods of node cp-1 to run v1.36.0 and be Ready: kube-scheduler-cp-1 is not Ready",
		},
		{
			name: "a Pod of that name that is not a mirror Pod, and one on another node",
			pods: []*corev1.Pod{
				mirrorPod(kubernetes.ComponentAPIServer, apiServer136, notMirror),
				mirrorPod(kubernetes.ComponentControllerManager, controllerManager136, onNode("cp-2")),
				mirrorPod(kubernetes.ComponentScheduler, scheduler136),
			},
			message: "Waiting for the static Pods of node cp-1 to run v1.36.0 and be Ready: " +
				"kube-apiserver-cp-1 is not a mirror Pod; kube-controller-manager-cp-1 is on node cp-2",
		},
		{
			name: "an image pinned by digest is not the version",
			pods: []*corev1.Pod{
				mirrorPod(kubernetes.ComponentAPIServer, apiServer136+digest),
			},
			components: []kubernetes.Component{kubernetes.ComponentAPIServer},
			message:    "Waiting for the static Pods of node cp-1 to run v1.36.0 and be Ready: kube-apiserver-cp-1 runs an image pinned by digest, not v1.36.0",
		},
		{
			name: "an image whose tag is not a version",
			pods: []*corev1.Pod{
				mirrorPod(kubernetes.ComponentAPIServer, "registry.k8s.io/kube-apiserver:latest"),
			},
			components: []kubernetes.Component{kubernetes.ComponentAPIServer},
			message:    "Waiting for the static Pods of node cp-1 to run v1.36.0 and be Ready: kube-apiserver-cp-1 runs an image whose tag is not a Kubernetes version",
		},
		{
			name: "only the components the node runs",
			pods: []*corev1.Pod{
				mirrorPod(kubernetes.ComponentAPIServer, apiServer136),
				mirrorPod(kubernetes.ComponentControllerManager, controllerManager136),
			},
			components: []kubernetes.Component{kubernetes.ComponentAPIServer, kubernetes.ComponentControllerManager},
			ready:      true,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			objs := make([]client.Object, 0, len(tt.pods))
			for _, p := range tt.pods {
				objs = append(objs, p)
			}

			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()

			ready, message, err := kubernetes.StaticPodsReady(context.Background(), c, "cp-1", "v1.36.0", tt.components...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ready).To(Equal(tt.ready))
			g.Expect(message).To(Equal(tt.message))
		})
	}
}

func TestStaticPodsReadyRefusesAVersionThatIsNotOne(t *testing.T) {
	g := NewWithT(t)

	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()

	_, _, err := kubernetes.StaticPodsReady(context.Background(), c, "cp-1", "latest")
	g.Expect(err).To(MatchError(kubernetes.ErrInvalidVersion))
}

func TestKubeletAt(t *testing.T) {
	node := func(version string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "w-1"},
			Status: corev1.NodeStatus{
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: version},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
			},
		}
	}

	tests := []struct {
		name    string
		node    *corev1.Node
		version string
		ok      bool
		message string
	}{
		{name: "on the version and Ready", node: node("v1.36.0", corev1.ConditionTrue), version: "v1.36.0", ok: true},
		{name: "the version without its v", node: node("v1.36.0", corev1.ConditionTrue), version: "1.36.0", ok: true},
		{
			name: "on the old version", node: node("v1.35.0", corev1.ConditionTrue), version: "v1.36.0",
			message: "Waiting for the kubelet of Node w-1 to report v1.36.0: it reports v1.35.0",
		},
		{
			name: "on the version, NotReady", node: node("v1.36.0", corev1.ConditionFalse), version: "v1.36.0",
			message: "Waiting for Node w-1 to be Ready: its kubelet reports v1.36.0",
		},
		{
			name: "no version reported", node: node("", corev1.ConditionTrue), version: "v1.36.0",
			message: "Waiting for the kubelet of Node w-1 to report v1.36.0: it reports no version",
		},
		{name: "no Node", version: "v1.36.0", message: "Waiting for the Node"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			ok, message := kubernetes.KubeletAt(tt.node, tt.version)
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(message).To(Equal(tt.message))
		})
	}
}

func TestAPIServersAtLeast(t *testing.T) {
	apiServer := func(node, image string) *corev1.Pod {
		pod := mirrorPod(kubernetes.ComponentAPIServer, image, onNode(node))
		pod.Name = kubernetes.MirrorPodName(kubernetes.ComponentAPIServer, node)

		return pod
	}

	for _, tt := range []struct {
		name    string
		nodes   []string
		pods    []*corev1.Pod
		ok      bool
		message string
	}{
		{
			name:  "every apiserver runs the version",
			nodes: []string{"cp-1", "cp-2"},
			pods:  []*corev1.Pod{apiServer("cp-1", "registry.k8s.io/kube-apiserver:v1.36.0"), apiServer("cp-2", "registry.k8s.io/kube-apiserver:v1.36.0")},
			ok:    true,
		},
		{
			name:  "a newer apiserver is enough",
			nodes: []string{"cp-1"},
			pods:  []*corev1.Pod{apiServer("cp-1", "mirror.example.com/kube-apiserver:v1.36.2")},
			ok:    true,
		},
		{
			name:    "one apiserver is behind",
			nodes:   []string{"cp-1", "cp-2"},
			pods:    []*corev1.Pod{apiServer("cp-1", "registry.k8s.io/kube-apiserver:v1.36.0"), apiServer("cp-2", "registry.k8s.io/kube-apiserver:v1.35.2")},
			message: "a kubelet is never newer than a kube-apiserver, and not every kube-apiserver runs v1.36.0 or newer: kube-apiserver-cp-2 runs v1.35.2",
		},
		{
			name:    "a node without its mirror Pod is not known to be on the version",
			nodes:   []string{"cp-1", "cp-2"},
			pods:    []*corev1.Pod{apiServer("cp-1", "registry.k8s.io/kube-apiserver:v1.36.0")},
			message: "a kubelet is never newer than a kube-apiserver, and not every kube-apiserver runs v1.36.0 or newer: node cp-2 has no mirror Pod kube-apiserver-cp-2",
		},
		{
			name:    "an image pinned by digest is not known to be on the version",
			nodes:   []string{"cp-1"},
			pods:    []*corev1.Pod{apiServer("cp-1", "registry.k8s.io/kube-apiserver@sha256:"+strings.Repeat("a", 64))},
			message: "a kubelet is never newer than a kube-apiserver, and not every kube-apiserver runs v1.36.0 or newer: kube-apiserver-cp-1 runs an image whose tag is not a Kubernetes version",
		},
		{
			name:    "no control-plane node",
			message: "no control-plane node of the Cluster has joined: the version of its kube-apiservers cannot be read",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			objs := make([]client.Object, 0, len(tt.pods))
			for _, p := range tt.pods {
				objs = append(objs, p)
			}

			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()

			ok, message, err := kubernetes.APIServersAtLeast(context.Background(), c, tt.nodes, "v1.36.0")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(message).To(Equal(tt.message))
		})
	}
}
