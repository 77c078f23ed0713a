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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeUpdater is told when a simulated node goes down for a reboot and when
// it has booted, so that the workload cluster sees what a kubelet would
// report.
type NodeUpdater interface {
	// NodeRebooting is called when the node's API goes down.
	NodeRebooting(ctx context.Context, name string) error
	// NodeBooted is called when the node is back, running version.
	NodeBooted(ctx context.Context, name, version string) error
}

// KubeNodeUpdater updates the Kubernetes Node named after the simulated node
// in a workload cluster (an envtest apiserver in tests): Ready=False while
// the node reboots, then Ready=True with status.nodeInfo.osImage
// "Talos (<version>)". A missing Node is created. As a KubeletReporter it
// also writes the kubelet version and the static Pods the node's machine
// configuration decides (KubeletChanged).
type KubeNodeUpdater struct {
	// Client is a client of the workload cluster.
	Client client.Client
}

var (
	_ NodeUpdater     = &KubeNodeUpdater{}
	_ KubeletReporter = &KubeNodeUpdater{}
)

// TalosConfigSecret returns the Secret in which the Talos CAPI bootstrap
// provider stores the talosconfig of Cluster namespace/clusterName
// ("<clusterName>-talosconfig", data key "talosconfig"), holding the
// simulator's talosconfig with a context named after the Cluster.
func (s *Simulator) TalosConfigSecret(namespace, clusterName string) (*corev1.Secret, error) {
	talosconfig, err := s.TalosConfig(clusterName)
	if err != nil {
		return nil, err
	}

	return NewTalosConfigSecret(namespace, clusterName, talosconfig), nil
}

// NewTalosConfigSecret returns the <clusterName>-talosconfig Secret of
// Cluster namespace/clusterName holding talosconfig, in the shape the Talos
// CAPI bootstrap provider stores it.
func NewTalosConfigSecret(namespace, clusterName string, talosconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      clusterName + "-talosconfig",
			Labels:    map[string]string{"cluster.x-k8s.io/cluster-name": clusterName},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"talosconfig": talosconfig},
	}
}

// OSImage is the osImage a kubelet on Talos version reports.
func OSImage(version string) string {
	return fmt.Sprintf("Talos (%s)", version)
}

// NodeRebooting marks the Node NotReady.
func (u *KubeNodeUpdater) NodeRebooting(ctx context.Context, name string) error {
	return u.setReady(ctx, name, corev1.ConditionFalse, "NodeStatusUnknown", "Kubelet stopped posting node status.", "")
}

// NodeBooted marks the Node Ready on version.
func (u *KubeNodeUpdater) NodeBooted(ctx context.Context, name, version string) error {
	return u.setReady(ctx, name, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", OSImage(version))
}

// EnsureNode creates the Node of a simulated node, Ready on its version,
// unless it exists; for a node that reports Kubernetes (NodeConfig), it
// also reports what its kubelet runs (KubeletChanged).
func (u *KubeNodeUpdater) EnsureNode(ctx context.Context, n *Node) error {
	if err := u.NodeBooted(ctx, n.Name(), n.Version()); err != nil {
		return err
	}

	if !n.reportsKubernetes {
		return nil
	}

	kubelet, err := n.Kubelet()
	if err != nil {
		return err
	}

	return u.KubeletChanged(ctx, n.Name(), kubelet)
}

// getOrCreateNode returns the Node called name, created if it is missing.
func (u *KubeNodeUpdater) getOrCreateNode(ctx context.Context, name string) (*corev1.Node, error) {
	node := &corev1.Node{}

	err := u.Client.Get(ctx, client.ObjectKey{Name: name}, node)
	if apierrors.IsNotFound(err) {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		err := u.Client.Create(ctx, node)
		if apierrors.IsAlreadyExists(err) {
			// Registered meanwhile (by the infrastructure provider, say).
			err = u.Client.Get(ctx, client.ObjectKey{Name: name}, node)
		}
		if err != nil {
			return nil, fmt.Errorf("creating Node %q: %w", name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("getting Node %q: %w", name, err)
	}

	return node, nil
}

func (u *KubeNodeUpdater) setReady(ctx context.Context, name string, ready corev1.ConditionStatus, reason, message, osImage string) error {
	node, err := u.getOrCreateNode(ctx, name)
	if err != nil {
		return err
	}

	now := metav1.Now()
	cond := corev1.NodeCondition{
		Type:               corev1.NodeReady,
		Status:             ready,
		Reason:             reason,
		Message:            message,
		LastHeartbeatTime:  now,
		LastTransitionTime: now,
	}

	found := false

	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			node.Status.Conditions[i] = cond
			found = true
		}
	}

	if !found {
		node.Status.Conditions = append(node.Status.Conditions, cond)
	}

	if osImage != "" {
		node.Status.NodeInfo.OSImage = osImage
	}

	if err := u.Client.Status().Update(ctx, node); err != nil {
		return fmt.Errorf("updating the status of Node %q: %w", name, err)
	}

	return nil
}
