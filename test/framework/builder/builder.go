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

// Package builder builds the CAPI and workload objects that Tollgate's tests,
// the sandbox and the benchmarks start from: a Cluster with control-plane and
// worker Machines on a Talos version, and the matching workload Nodes. Objects
// are built with functional options and created with Create.
package builder

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Defaults used when an option does not say otherwise.
const (
	DefaultTalosVersion      = "v1.12.4"
	DefaultKubernetesVersion = "v1.35.2"
)

// OSImage returns the osImage a Talos node reports for version, as in
// Node.status.nodeInfo.osImage: "Talos (v1.12.4)".
func OSImage(talosVersion string) string {
	return fmt.Sprintf("Talos (%s)", talosVersion)
}

// ClusterOption configures a Cluster.
type ClusterOption func(*clusterv1.Cluster)

// WithPolicy opts the Cluster in to the TalosUpgradePolicy name.
func WithPolicy(name string) ClusterOption {
	return func(c *clusterv1.Cluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[upgradev1.PolicyLabel] = name
	}
}

// WithPausedCluster sets spec.paused on the Cluster.
func WithPausedCluster() ClusterOption {
	return func(c *clusterv1.Cluster) { c.Spec.Paused = ptrTo(true) }
}

// Cluster returns a CAPI Cluster with a Talos control plane reference.
func Cluster(namespace, name string, opts ...ClusterOption) *clusterv1.Cluster {
	c := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: "controlplane.cluster.x-k8s.io",
				Kind:     "TalosControlPlane",
				Name:     name + "-cp",
			},
		},
	}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// MachineOption configures a Machine.
type MachineOption func(*clusterv1.Machine)

// WithControlPlane makes the Machine a control-plane Machine.
func WithControlPlane() MachineOption {
	return func(m *clusterv1.Machine) { m.Labels[clusterv1.MachineControlPlaneLabel] = "" }
}

// WithMachineDeployment makes the Machine a worker of the MachineDeployment md.
func WithMachineDeployment(md string) MachineOption {
	return func(m *clusterv1.Machine) { m.Labels[clusterv1.MachineDeploymentNameLabel] = md }
}

// WithLabels adds labels to the Machine.
func WithLabels(labels map[string]string) MachineOption {
	return func(m *clusterv1.Machine) {
		for k, v := range labels {
			m.Labels[k] = v
		}
	}
}

// WithKubernetesVersion sets the Machine's Kubernetes version.
func WithKubernetesVersion(v string) MachineOption {
	return func(m *clusterv1.Machine) { m.Spec.Version = v }
}

// WithTalosVersion sets the Talos version the Machine's node reports.
func WithTalosVersion(v string) MachineOption {
	return func(m *clusterv1.Machine) {
		if m.Status.NodeInfo == nil {
			m.Status.NodeInfo = &corev1.NodeSystemInfo{}
		}
		m.Status.NodeInfo.OSImage = OSImage(v)
	}
}

// WithAddress sets the Machine's InternalIP.
func WithAddress(ip string) MachineOption {
	return func(m *clusterv1.Machine) {
		m.Status.Addresses = append(m.Status.Addresses, clusterv1.MachineAddress{Type: clusterv1.MachineInternalIP, Address: ip})
	}
}

// WithNodeName sets the name of the Machine's node (status.nodeRef).
func WithNodeName(node string) MachineOption {
	return func(m *clusterv1.Machine) { m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node} }
}

// WithAnnotations adds annotations to the Machine.
func WithAnnotations(annotations map[string]string) MachineOption {
	return func(m *clusterv1.Machine) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		for k, v := range annotations {
			m.Annotations[k] = v
		}
	}
}

// Machine returns a CAPI Machine of the Cluster clusterName, running Talos
// DefaultTalosVersion and Kubernetes DefaultKubernetesVersion on a node named
// after the Machine. Its status is written by Create.
func Machine(namespace, name, clusterName string, opts ...MachineOption) *clusterv1.Machine {
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			Labels:    map[string]string{clusterv1.ClusterNameLabel: clusterName},
		},
		Spec: clusterv1.MachineSpec{
			ClusterName: clusterName,
			Version:     DefaultKubernetesVersion,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: "bootstrap.cluster.x-k8s.io", Kind: "TalosConfig", Name: name,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "MetalMachine", Name: name,
			},
		},
		Status: clusterv1.MachineStatus{
			NodeRef:  clusterv1.MachineNodeReference{Name: name},
			NodeInfo: &corev1.NodeSystemInfo{OSImage: OSImage(DefaultTalosVersion), KubeletVersion: DefaultKubernetesVersion},
			Phase:    string(clusterv1.MachinePhaseRunning),
		},
	}
	for _, opt := range opts {
		opt(m)
	}
	return m
}

// NodeOption configures a Node.
type NodeOption func(*corev1.Node)

// WithNodeReady sets the Node's Ready condition.
func WithNodeReady(ready bool) NodeOption {
	return func(n *corev1.Node) {
		status := corev1.ConditionTrue
		if !ready {
			status = corev1.ConditionFalse
		}
		SetNodeReady(n, status)
	}
}

// WithNodeOSImage sets the Node's osImage to the Talos version v.
func WithNodeOSImage(v string) NodeOption {
	return func(n *corev1.Node) { n.Status.NodeInfo.OSImage = OSImage(v) }
}

// WithNodeControlPlane labels the Node as a control-plane node.
func WithNodeControlPlane() NodeOption {
	return func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" }
}

// Node returns a Ready workload Node running Talos DefaultTalosVersion.
func Node(name string, opts ...NodeOption) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			NodeInfo: corev1.NodeSystemInfo{OSImage: OSImage(DefaultTalosVersion), KubeletVersion: DefaultKubernetesVersion, OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
	SetNodeReady(n, corev1.ConditionTrue)
	for _, opt := range opts {
		opt(n)
	}
	return n
}

// SetNodeReady sets the Ready condition of n to status.
func SetNodeReady(n *corev1.Node, status corev1.ConditionStatus) {
	now := metav1.Now()
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			if n.Status.Conditions[i].Status != status {
				n.Status.Conditions[i].Status = status
				n.Status.Conditions[i].LastTransitionTime = now
			}
			n.Status.Conditions[i].LastHeartbeatTime = now
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
		Type: corev1.NodeReady, Status: status, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now,
	})
}

func ptrTo[T any](v T) *T { return &v }
