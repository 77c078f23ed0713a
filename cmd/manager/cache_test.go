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

package manager

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestStripMachine(t *testing.T) {
	g := NewWithT(t)
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"hold": ""},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "capi"}}},
		Spec: clusterv1.MachineSpec{ClusterName: "c", Version: "v1.35.0"},
		Status: clusterv1.MachineStatus{
			NodeRef:   clusterv1.MachineNodeReference{Name: "n"},
			NodeInfo:  &corev1.NodeSystemInfo{OSImage: "Talos (v1.12.4)", KubeletVersion: "v1.35.0", KernelVersion: "6.12", MachineID: "x"},
			Addresses: clusterv1.MachineAddresses{{Type: clusterv1.MachineInternalIP, Address: "10.0.0.1"}},
			Conditions: []metav1.Condition{{Type: "Ready", Message: "a long message"},
				{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionFalse, Reason: "UnhealthyNode", Message: "Node is NotReady"}},
			Phase: "Running",
		},
	}
	out, err := stripMachine(m)
	g.Expect(err).NotTo(HaveOccurred())
	s := out.(*clusterv1.Machine)
	g.Expect(s.ManagedFields).To(BeNil())
	g.Expect(s.Labels).To(HaveKey("l"))
	g.Expect(s.Annotations).To(HaveKey("hold"), "hook holds are annotations")
	g.Expect(s.Spec.ClusterName).To(Equal("c"))
	g.Expect(s.Spec.Version).To(Equal("v1.35.0"))
	g.Expect(s.Status.NodeRef.Name).To(Equal("n"))
	g.Expect(*s.Status.NodeInfo).To(Equal(corev1.NodeSystemInfo{OSImage: "Talos (v1.12.4)", KubeletVersion: "v1.35.0"}))
	g.Expect(s.Status.Addresses).To(HaveLen(1))
	g.Expect(s.Status.Conditions).To(Equal([]metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionFalse, Reason: "UnhealthyNode"}}),
		"what says a MachineHealthCheck remediates the Machine is kept, without its message")
}

func TestStripCluster(t *testing.T) {
	g := NewWithT(t)
	c := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"upgrade.tollgate.dev/policy": "p"}},
		Spec: clusterv1.ClusterSpec{Paused: ptr.To(true), Topology: clusterv1.Topology{
			Version:      "v1.35.0",
			ControlPlane: clusterv1.ControlPlaneTopology{Replicas: ptr.To[int32](3)},
			Variables:    []clusterv1.ClusterVariable{{Name: "big"}},
		}},
		Status: clusterv1.ClusterStatus{
			Initialization: clusterv1.ClusterInitializationStatus{InfrastructureProvisioned: ptr.To(true)},
			Conditions:     []metav1.Condition{{Type: "Available"}},
		},
	}
	out, err := stripCluster(c)
	g.Expect(err).NotTo(HaveOccurred())
	s := out.(*clusterv1.Cluster)
	g.Expect(s.Labels).To(HaveKey("upgrade.tollgate.dev/policy"))
	g.Expect(*s.Spec.Paused).To(BeTrue())
	g.Expect(s.Spec.Topology.Version).To(Equal("v1.35.0"))
	g.Expect(*s.Spec.Topology.ControlPlane.Replicas).To(Equal(int32(3)))
	g.Expect(s.Spec.Topology.Variables).To(BeNil())
	g.Expect(*s.Status.Initialization.InfrastructureProvisioned).To(BeTrue(), "the ClusterCache connects only to provisioned Clusters")
	g.Expect(s.Status.Conditions).To(BeNil())
}

func TestStripNode(t *testing.T) {
	g := NewWithT(t)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}, Annotations: map[string]string{"big": "x"}},
		Spec:       corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "kubelet is posting ready status"}},
			NodeInfo:   corev1.NodeSystemInfo{OSImage: "Talos (v1.13.0)", KubeletVersion: "v1.35.0", BootID: "b"},
			Images:     []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}}},
		},
	}
	out, err := stripNode(n)
	g.Expect(err).NotTo(HaveOccurred())
	s := out.(*corev1.Node)
	g.Expect(s.Annotations).To(BeNil())
	g.Expect(s.Labels).To(HaveLen(1))
	g.Expect(s.Spec.Unschedulable).To(BeTrue())
	g.Expect(s.Status.Conditions).To(HaveLen(1))
	g.Expect(s.Status.Conditions[0].Type).To(Equal(corev1.NodeReady))
	g.Expect(s.Status.Conditions[0].Status).To(Equal(corev1.ConditionTrue))
	g.Expect(s.Status.NodeInfo).To(Equal(corev1.NodeSystemInfo{OSImage: "Talos (v1.13.0)", KubeletVersion: "v1.35.0"}))
	g.Expect(s.Status.Images).To(BeNil())

	tombstone := toolscache.DeletedFinalStateUnknown{Key: "n"}
	out, err = stripNode(tombstone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tombstone))
}
