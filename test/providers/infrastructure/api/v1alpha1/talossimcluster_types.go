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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// TalosSimCluster conditions and reasons. CAPI mirrors the Ready condition
// into the Cluster's InfrastructureReady condition.
const (
	// ReadyCondition surfaces whether the infrastructure object is
	// provisioned and not being deleted: on a TalosSimCluster, and on a
	// TalosSimMachine once its node booted and its Node is registered.
	ReadyCondition = clusterv1.ReadyCondition

	// ReadyReason surfaces when the object is Ready.
	ReadyReason = clusterv1.ReadyReason

	// WaitingForClusterReason surfaces when a TalosSimCluster has no owner
	// Cluster yet: CAPI's Cluster controller sets it.
	WaitingForClusterReason = "WaitingForCluster"

	// DeletingReason surfaces when the object is being deleted.
	DeletingReason = clusterv1.DeletingReason
)

// TalosSimClusterSpec is the desired state of a TalosSimCluster.
type TalosSimClusterSpec struct {
	// controlPlaneEndpoint is the endpoint of the workload cluster's API
	// server, surfaced to the Cluster's spec.controlPlaneEndpoint by CAPI
	// when the Cluster sets none. The simulator runs no load balancer: the
	// caller (the sandbox) writes the host and port of the workload
	// apiserver it started.
	// +optional
	ControlPlaneEndpoint clusterv1.APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`

	// failureDomains are the names of the failure domains machines may be
	// placed in, every one suitable for control-plane machines. They
	// surface in status.failureDomains once the TalosSimCluster is
	// provisioned, from where CAPI spreads Machines over them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	FailureDomains []string `json:"failureDomains,omitempty"`
}

// TalosSimClusterInitializationStatus is the initialization part of the
// v1beta2 InfraCluster contract.
// +kubebuilder:validation:MinProperties=1
type TalosSimClusterInitializationStatus struct {
	// provisioned is true once the cluster's infrastructure is provisioned:
	// as soon as the TalosSimCluster has its owner Cluster. It is never set
	// back to false.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// TalosSimClusterStatus is the observed state of a TalosSimCluster.
// +kubebuilder:validation:MinProperties=1
type TalosSimClusterStatus struct {
	// conditions are the observations of the TalosSimCluster: Ready, and
	// Paused while the Cluster or the object is paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// initialization is what CAPI's Cluster controller reads to know the
	// infrastructure is provisioned.
	// +optional
	Initialization TalosSimClusterInitializationStatus `json:"initialization,omitempty,omitzero"`

	// failureDomains are spec.failureDomains in the shape of the contract.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	FailureDomains []clusterv1.FailureDomain `json:"failureDomains,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=talossimclusters,scope=Namespaced,categories=cluster-api,shortName=tsc
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`,description="The Cluster this TalosSimCluster belongs to"
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=`.status.initialization.provisioned`,description="Whether the infrastructure is provisioned"
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.controlPlaneEndpoint.host`,description="The control plane endpoint's host"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosSimCluster is the infrastructure of a CAPI Cluster whose machines
// are simulated Talos nodes.
type TalosSimCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the TalosSimCluster.
	// +optional
	Spec TalosSimClusterSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state of the TalosSimCluster.
	// +optional
	Status TalosSimClusterStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the TalosSimCluster.
func (c *TalosSimCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions of the TalosSimCluster.
func (c *TalosSimCluster) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// TalosSimClusterList is a list of TalosSimClusters.
type TalosSimClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosSimCluster `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TalosSimCluster{}, &TalosSimClusterList{})
}
