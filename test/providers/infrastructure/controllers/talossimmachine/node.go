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

package talossimmachine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// ControlPlaneRoleLabel is the role label of a control-plane Node.
const ControlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"

// nodeSpec is what a machine's Node is registered with.
type nodeSpec struct {
	name         string
	providerID   string
	address      string
	version      string // the Talos version the node runs
	kubelet      string // the Machine's Kubernetes version
	controlPlane bool
}

// registerNode creates the Node of a machine, as its kubelet and a cloud
// controller manager would: Ready, with its provider ID, addresses,
// osImage, kubelet version and role label. A Node that exists keeps its
// status (the stand-in kubelet, talossim.KubeNodeUpdater, owns its Ready
// condition and osImage from then on); what it lacks is added. A Node of
// that name with another provider ID is an error: it belongs to another
// machine.
func registerNode(ctx context.Context, c client.Client, spec nodeSpec) error {
	node := &corev1.Node{}

	err := c.Get(ctx, client.ObjectKey{Name: spec.name}, node)
	if apierrors.IsNotFound(err) {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: spec.name}}
		setNodeSpec(node, spec)

		err = c.Create(ctx, node)
		if err == nil {
			return patchNodeStatus(ctx, c, node, spec)
		}

		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Node %q: %w", spec.name, err)
		}

		// Created meanwhile, or by an earlier request whose answer was
		// lost (a timeout): a kubelet finds its Node and goes on with it.
		node = &corev1.Node{}
		err = c.Get(ctx, client.ObjectKey{Name: spec.name}, node)
	}

	switch {
	case err != nil:
		return fmt.Errorf("reading Node %q: %w", spec.name, err)
	case node.Spec.ProviderID != "" && node.Spec.ProviderID != spec.providerID:
		return fmt.Errorf("the Node %q has provider ID %q, not %q: it belongs to another machine", spec.name, node.Spec.ProviderID, spec.providerID)
	default:
		before := node.DeepCopy()
		setNodeSpec(node, spec)

		if !equalNodeMeta(before, node) {
			if err := c.Patch(ctx, node, client.MergeFrom(before)); err != nil {
				return fmt.Errorf("updating Node %q: %w", spec.name, err)
			}
		}
	}

	return patchNodeStatus(ctx, c, node, spec)
}

// patchNodeStatus adds to node's status what spec says it lacks.
func patchNodeStatus(ctx context.Context, c client.Client, node *corev1.Node, spec nodeSpec) error {
	before := node.DeepCopy()
	if !setNodeStatus(node, spec) {
		return nil
	}

	if err := c.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating the status of Node %q: %w", spec.name, err)
	}

	return nil
}

// setNodeSpec sets the provider ID and labels of node.
func setNodeSpec(node *corev1.Node, spec nodeSpec) {
	node.Spec.ProviderID = spec.providerID

	if node.Labels == nil {
		node.Labels = map[string]string{}
	}

	node.Labels[corev1.LabelHostname] = spec.name
	node.Labels[corev1.LabelOSStable] = "linux"

	if spec.controlPlane {
		node.Labels[ControlPlaneRoleLabel] = ""
	}
}

func equalNodeMeta(a, b *corev1.Node) bool {
	if a.Spec.ProviderID != b.Spec.ProviderID || len(a.Labels) != len(b.Labels) {
		return false
	}

	for k, v := range b.Labels {
		if got, ok := a.Labels[k]; !ok || got != v {
			return false
		}
	}

	return true
}

// setNodeStatus fills what the status of node lacks and reports whether it
// changed anything.
func setNodeStatus(node *corev1.Node, spec nodeSpec) bool {
	changed := false

	if !hasCondition(node, corev1.NodeReady) {
		now := metav1.Now()
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionTrue,
			Reason:             "KubeletReady",
			Message:            "kubelet is posting ready status",
			LastHeartbeatTime:  now,
			LastTransitionTime: now,
		})
		changed = true
	}

	// The kubelet reports the node's pressure conditions beside Ready;
	// CAPI's Machine controller counts a Node that lacks them as not
	// healthy, and so its Machine as not available.
	for _, c := range []struct {
		typ             corev1.NodeConditionType
		reason, message string
	}{
		{corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
	} {
		if hasCondition(node, c.typ) {
			continue
		}
		now := metav1.Now()
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
			Type: c.typ, Status: corev1.ConditionFalse, Reason: c.reason, Message: c.message,
			LastHeartbeatTime: now, LastTransitionTime: now,
		})
		changed = true
	}

	if len(node.Status.Addresses) == 0 {
		node.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: spec.address},
			{Type: corev1.NodeHostName, Address: spec.name},
		}
		changed = true
	}

	info := &node.Status.NodeInfo
	for _, f := range []struct {
		field *string
		value string
	}{
		{&info.OSImage, talossim.OSImage(spec.version)},
		{&info.KubeletVersion, spec.kubelet},
		{&info.OperatingSystem, "linux"},
		{&info.Architecture, "amd64"},
	} {
		if *f.field == "" && f.value != "" {
			*f.field = f.value
			changed = true
		}
	}

	return changed
}

func hasCondition(node *corev1.Node, t corev1.NodeConditionType) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == t {
			return true
		}
	}

	return false
}

// deleteNode deletes the Node called name; a Node that is gone is no
// error.
func deleteNode(ctx context.Context, c client.Client, name string) error {
	err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node %q: %w", name, err)
	}

	return nil
}
