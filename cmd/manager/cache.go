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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The caches keep what Tollgate reads and nothing else: a fleet's Machines,
// Clusters and Nodes are most of the manager's memory, and most of each
// object is status Tollgate never reads (conditions, images, capacities).
// The transforms below strip it before an object enters a cache.
//
// Nothing is ever written back from these copies: Machines and Clusters are
// changed with patches computed between two copies of the same stripped
// object (so a stripped field is never in a patch), Nodes with live requests
// of the drain's clientset.

// stripMachine keeps of a Machine what Tollgate reads: its metadata but
// managedFields, its spec, and of its status the node, the node's versions,
// the addresses, and the two conditions that say a MachineHealthCheck
// remediates it (the cause of its removal, see
// controllers/talosupgrade/removal.go), without their messages.
func stripMachine(obj any) (any, error) {
	m, ok := obj.(*clusterv1.Machine)
	if !ok {
		return stripManagedFields(obj)
	}
	m.ManagedFields = nil
	st := clusterv1.MachineStatus{
		NodeRef:        m.Status.NodeRef,
		Addresses:      m.Status.Addresses,
		Phase:          m.Status.Phase,
		Initialization: m.Status.Initialization,
	}
	if m.Status.NodeInfo != nil {
		st.NodeInfo = &corev1.NodeSystemInfo{OSImage: m.Status.NodeInfo.OSImage, KubeletVersion: m.Status.NodeInfo.KubeletVersion}
	}
	for _, c := range m.Status.Conditions {
		if c.Type == clusterv1.MachineHealthCheckSucceededCondition || c.Type == clusterv1.MachineOwnerRemediatedCondition {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
		}
	}
	m.Status = st
	return m, nil
}

// stripCluster keeps of a Cluster what Tollgate and the ClusterCache read:
// its metadata but managedFields, its spec but the topology's variables and
// workers, and of its status the initialization.
func stripCluster(obj any) (any, error) {
	c, ok := obj.(*clusterv1.Cluster)
	if !ok {
		return stripManagedFields(obj)
	}
	c.ManagedFields = nil
	c.Spec.Topology.Variables = nil
	c.Spec.Topology.Workers = clusterv1.WorkersTopology{}
	c.Status = clusterv1.ClusterStatus{Initialization: c.Status.Initialization, Phase: c.Status.Phase}
	return c, nil
}

// stripNode keeps of a workload Node what Tollgate reads: its name, labels
// and spec, its Ready condition and the node's versions. Images, volumes,
// capacities, the other conditions and the annotations are dropped.
func stripNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return stripManagedFields(obj)
	}
	n.ManagedFields, n.Annotations = nil, nil
	st := corev1.NodeStatus{
		NodeInfo: corev1.NodeSystemInfo{OSImage: n.Status.NodeInfo.OSImage, KubeletVersion: n.Status.NodeInfo.KubeletVersion},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			st.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime}}
		}
	}
	n.Status = st
	return n, nil
}

// stripManagedFields drops the managedFields of any object, as
// cache.TransformStripManagedFields does; deletion tombstones pass as they
// are.
func stripManagedFields(obj any) (any, error) {
	if _, tombstone := obj.(toolscache.DeletedFinalStateUnknown); tombstone {
		return obj, nil
	}
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
