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

package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

const (
	// kubeSystemNamespace is the namespace of the static Pods and of
	// kube-proxy.
	kubeSystemNamespace = "kube-system"
	// mirrorPodAnnotation marks a mirror Pod, the API object the kubelet
	// makes for a static Pod.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"
)

// MirrorPodName is the name of the mirror Pod of component's static Pod on
// node, as the kubelet names it: "<component>-<node>".
func MirrorPodName(component Component, node string) string {
	return string(component) + "-" + node
}

// StaticPodsReady reports whether the static Pods of the control-plane
// components of node run version and are Ready, as their mirror Pods in
// kube-system of the workload cluster c show them: what a PartControlPlane
// step waits for. It checks components, by default kube-apiserver,
// kube-controller-manager and kube-scheduler (Versions.StaticPodComponents
// says which a node runs). When one is not ready, message says of each
// what it waits for ("kube-scheduler-cp-1 runs v1.35.2, not v1.36.0"); it
// is "" when all are. err is an error of the workload API other than
// NotFound (a mirror Pod is missing while the kubelet replaces it), or a
// version that is not one.
func StaticPodsReady(ctx context.Context, c client.Reader, node, version string, components ...Component) (ready bool, message string, err error) {
	target, err := canonicalVersion(version)
	if err != nil {
		return false, "", err
	}

	if len(components) == 0 {
		components = staticPodComponents
	}

	var waiting []string

	for _, component := range components {
		pod := &corev1.Pod{}
		key := client.ObjectKey{Namespace: kubeSystemNamespace, Name: MirrorPodName(component, node)}

		if err := c.Get(ctx, key, pod); err != nil {
			if !apierrors.IsNotFound(err) {
				return false, "", fmt.Errorf("getting mirror Pod %s: %w", key, err)
			}

			waiting = append(waiting, fmt.Sprintf("%s has no mirror Pod %s yet", component, key.Name))

			continue
		}

		if why := staticPodWaiting(pod, component, node, target); why != "" {
			waiting = append(waiting, key.Name+" "+why)
		}
	}

	if len(waiting) > 0 {
		return false, fmt.Sprintf("Waiting for the static Pods of node %s to run %s and be Ready: %s", node, target, strings.Join(waiting, "; ")), nil
	}

	return true, "", nil
}

// APIServersAtLeast reports whether the kube-apiserver of every node of
// controlPlane runs version or a newer one, as its mirror Pod in kube-system
// of the workload cluster c shows it: what a kubelet moving to version waits
// for, since a kubelet must never be newer than an apiserver it talks to.
// When one does not, message names each node and what it runs; it is ""
// when all do. No control-plane node is never enough: message says so. err
// is an error of the workload API other than NotFound, or a version that is
// not one.
func APIServersAtLeast(ctx context.Context, c client.Reader, controlPlane []string, version string) (ok bool, message string, err error) {
	canonical, err := canonicalVersion(version)
	if err != nil {
		return false, "", err
	}

	target := semver.MustParse(canonical)

	if len(controlPlane) == 0 {
		return false, "no control-plane node of the Cluster has joined: the version of its kube-apiservers cannot be read", nil
	}

	var behind []string

	for _, node := range controlPlane {
		pod := &corev1.Pod{}
		key := client.ObjectKey{Namespace: kubeSystemNamespace, Name: MirrorPodName(ComponentAPIServer, node)}

		if err := c.Get(ctx, key, pod); err != nil {
			if !apierrors.IsNotFound(err) {
				return false, "", fmt.Errorf("getting mirror Pod %s: %w", key, err)
			}

			behind = append(behind, fmt.Sprintf("node %s has no mirror Pod %s", node, key.Name))

			continue
		}

		image, found := containerImage(pod, string(ComponentAPIServer))
		if !found {
			behind = append(behind, fmt.Sprintf("%s has no container %s", key.Name, ComponentAPIServer))

			continue
		}

		running, _, err := imageVersion(imageField{path: "its image"}, image)
		if err != nil || running == "" {
			behind = append(behind, key.Name+" runs an image whose tag is not a Kubernetes version")

			continue
		}

		if v, err := semver.StrictNewVersion(strings.TrimPrefix(running, "v")); err != nil || v.LessThan(target) {
			behind = append(behind, fmt.Sprintf("%s runs %s", key.Name, running))
		}
	}

	if len(behind) > 0 {
		return false, fmt.Sprintf("a kubelet is never newer than a kube-apiserver, and not every kube-apiserver runs %s or newer: %s", canonical, strings.Join(behind, "; ")), nil
	}

	return true, "", nil
}

// staticPodWaiting says what the mirror Pod pod of component on node waits
// for before it runs version and is Ready, or "" when it does.
func staticPodWaiting(pod *corev1.Pod, component Component, node, version string) string {
	switch {
	case pod.Annotations[mirrorPodAnnotation] == "":
		return "is not a mirror Pod"
	case pod.Spec.NodeName != node:
		return fmt.Sprintf("is on node %s", pod.Spec.NodeName)
	case pod.DeletionTimestamp != nil:
		return "is being deleted"
	}

	image, ok := containerImage(pod, string(component))
	if !ok {
		return fmt.Sprintf("has no container %s", component)
	}

	running, _, err := imageVersion(imageField{path: "its image"}, image)

	switch {
	case errors.Is(err, ErrDigestImage):
		return fmt.Sprintf("runs an image pinned by digest, not %s", version)
	case err != nil || running == "":
		return "runs an image whose tag is not a Kubernetes version"
	}

	if running != version {
		return fmt.Sprintf("runs %s, not %s", running, version)
	}

	if !podReady(pod) {
		return "is not Ready"
	}

	return ""
}

// containerImage returns the image of pod's container name, or of its only
// container.
func containerImage(pod *corev1.Pod, name string) (string, bool) {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c.Image, true
		}
	}

	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Image, true
	}

	return "", false
}

// podReady reports whether pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}

	return false
}

// KubeletAt reports whether node's kubelet runs version and the Node is
// Ready: what a PartKubelet step waits for, read from the Node's
// status.nodeInfo.kubeletVersion (the version the kubelet reports once it
// restarted on its new image). When it does not, message says what it waits
// for. version is a target, a valid version: a kubelet that reports no
// version, or one that is not a version, is not at it (talos.SameVersion).
func KubeletAt(node *corev1.Node, version string) (ok bool, message string) {
	if node == nil {
		return false, "Waiting for the Node"
	}

	reported := node.Status.NodeInfo.KubeletVersion
	if !talos.SameVersion(reported, version) {
		if reported == "" {
			reported = "no version"
		}

		return false, fmt.Sprintf("Waiting for the kubelet of Node %s to report %s: it reports %s", node.Name, version, reported)
	}

	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true, ""
		}
	}

	return false, fmt.Sprintf("Waiting for Node %s to be Ready: its kubelet reports %s", node.Name, reported)
}
