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

package talossim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// MirrorPodAnnotation marks a mirror Pod, the API object the kubelet
	// makes for a static Pod; its value is the static Pod's hash.
	MirrorPodAnnotation = "kubernetes.io/config.mirror"
	// configHashAnnotation and configSourceAnnotation are the kubelet's
	// other annotations of a static Pod.
	configHashAnnotation   = "kubernetes.io/config.hash"
	configSourceAnnotation = "kubernetes.io/config.source"
	// KubeSystemNamespace is the namespace of the static Pods and of
	// kube-proxy.
	KubeSystemNamespace = "kube-system"
	// KubeProxyName is the name of the kube-proxy DaemonSet.
	KubeProxyName = "kube-proxy"
)

// MirrorPodName is the name of the mirror Pod of component on node, as the
// kubelet names it.
func MirrorPodName(component, node string) string {
	return component + "-" + node
}

// KubeletChanged reports what the kubelet of the node called name runs, as
// a kubelet and Talos would: the Node's status.nodeInfo.kubeletVersion;
// one mirror Pod per static Pod in kube-system, named
// "<component>-<node>", annotated as a mirror Pod, owned by the Node, with
// its image and readiness (a static Pod whose image changed gets a new
// mirror Pod, as its hash changed); and the kube-proxy DaemonSet, created
// if it is missing and never updated, as Talos' bootstrap manifests are.
// A missing Node is created.
func (u *KubeNodeUpdater) KubeletChanged(ctx context.Context, name string, kubelet Kubelet) error {
	node, err := u.getOrCreateNode(ctx, name)
	if err != nil {
		return err
	}

	if kubelet.Version != "" && node.Status.NodeInfo.KubeletVersion != kubelet.Version {
		before := node.DeepCopy()
		node.Status.NodeInfo.KubeletVersion = kubelet.Version

		if err := u.Client.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("updating the kubelet version of Node %q: %w", name, err)
		}
	}

	for _, p := range kubelet.StaticPods {
		if err := u.syncMirrorPod(ctx, node, p); err != nil {
			return err
		}
	}

	if kubelet.KubeProxyImage != "" {
		return u.ensureKubeProxy(ctx, kubelet.KubeProxyImage)
	}

	return nil
}

// staticPodHash is the hash of a static Pod's manifest, here of what the
// simulator models of it.
func staticPodHash(node string, p StaticPod) string {
	sum := sha256.Sum256([]byte(node + "\x00" + p.Component + "\x00" + p.Image))

	return hex.EncodeToString(sum[:16])
}

// syncMirrorPod makes the mirror Pod of p match it, again when another
// report of the node changed it meanwhile (a node's first report and
// EnsureNode's, say).
func (u *KubeNodeUpdater) syncMirrorPod(ctx context.Context, node *corev1.Node, p StaticPod) error {
	raced := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }

	return retry.OnError(retry.DefaultRetry, raced, func() error { return u.syncMirrorPodOnce(ctx, node, p) })
}

// syncMirrorPodOnce makes the mirror Pod of p match it, once.
func (u *KubeNodeUpdater) syncMirrorPodOnce(ctx context.Context, node *corev1.Node, p StaticPod) error {
	hash := staticPodHash(node.Name, p)
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: KubeSystemNamespace, Name: MirrorPodName(p.Component, node.Name)}

	err := u.Client.Get(ctx, key, pod)

	switch {
	case apierrors.IsNotFound(err):
		pod = nil
	case err != nil:
		return fmt.Errorf("getting mirror Pod %q: %w", key, err)
	case pod.Annotations[MirrorPodAnnotation] != hash:
		// The kubelet replaces the mirror Pod of a changed static Pod,
		// deleting the old one at once.
		if err := u.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the outdated mirror Pod %q: %w", key, err)
		}

		pod = nil
	}

	if pod == nil {
		pod = newMirrorPod(node, p, hash)

		if err := u.Client.Create(ctx, pod); err != nil {
			return fmt.Errorf("creating mirror Pod %q: %w", key, err)
		}
	}

	want := mirrorPodStatus(p, pod.Status)
	if podStatusEqual(pod.Status, want) {
		return nil
	}

	pod.Status = want
	if err := u.Client.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("updating the status of mirror Pod %q: %w", key, err)
	}

	return nil
}

// newMirrorPod is the mirror Pod of p on node, as the kubelet creates it
// from Talos' static Pod manifest.
func newMirrorPod(node *corev1.Node, p StaticPod, hash string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: KubeSystemNamespace,
			Name:      MirrorPodName(p.Component, node.Name),
			Labels: map[string]string{
				"tier":                        "control-plane",
				"k8s-app":                     p.Component,
				"component":                   p.Component,
				"app.kubernetes.io/name":      p.Component,
				"app.kubernetes.io/component": "control-plane",
			},
			Annotations: map[string]string{
				MirrorPodAnnotation:    hash,
				configHashAnnotation:   hash,
				configSourceAnnotation: "file",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Node",
				Name:       node.Name,
				UID:        node.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:    node.Name,
			HostNetwork: true,
			Containers:  []corev1.Container{{Name: p.Component, Image: p.Image}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		},
	}
}

// mirrorPodStatus is the status the kubelet reports for p, keeping the
// start time of old.
func mirrorPodStatus(p StaticPod, old corev1.PodStatus) corev1.PodStatus {
	start := old.StartTime
	if start == nil {
		start = ptr.To(metav1.NewTime(time.Now().Truncate(time.Second)))
	}

	ready := corev1.ConditionFalse
	if p.Ready {
		ready = corev1.ConditionTrue
	}

	return corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: start,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: *start},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: *start},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: *start},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: *start},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:    p.Component,
			Image:   p.Image,
			ImageID: p.Image,
			Ready:   p.Ready,
			Started: ptr.To(true),
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *start}},
		}},
	}
}

// podStatusEqual compares what mirrorPodStatus sets.
func podStatusEqual(a, b corev1.PodStatus) bool {
	if a.Phase != b.Phase || len(a.ContainerStatuses) != 1 || len(b.ContainerStatuses) != 1 {
		return false
	}

	return a.ContainerStatuses[0].Image == b.ContainerStatuses[0].Image && a.ContainerStatuses[0].Ready == b.ContainerStatuses[0].Ready
}

// ensureKubeProxy creates the kube-proxy DaemonSet of Talos' bootstrap
// manifests unless it exists: Talos' manifest controller creates missing
// objects and never updates them ("talosctl upgrade-k8s" updates
// kube-proxy through the Kubernetes API).
func (u *KubeNodeUpdater) ensureKubeProxy(ctx context.Context, image string) error {
	labels := map[string]string{"tier": "node", "k8s-app": KubeProxyName}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: KubeSystemNamespace, Name: KubeProxyName, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": KubeProxyName}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					HostNetwork: true,
					Containers:  []corev1.Container{{Name: KubeProxyName, Image: image}},
				},
			},
		},
	}

	if err := u.Client.Create(ctx, ds); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the kube-proxy DaemonSet: %w", err)
	}

	return nil
}
