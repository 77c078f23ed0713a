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

// MachineFinalizer lets the TalosSimMachine controller stop the simulated
// node and remove its workload Node before the TalosSimMachine goes.
const MachineFinalizer = "talossimmachine.infrastructure.cluster.x-k8s.io"

// TalosSimMachine reasons of the Ready condition (ReadyCondition). Each
// waiting reason names what the machine waits for; the message says more.
const (
	// WaitingForMachineReason surfaces when the TalosSimMachine has no
	// owner Machine yet: CAPI's Machine controller sets it.
	WaitingForMachineReason = "WaitingForMachine"

	// WaitingForClusterInfrastructureReason surfaces when the Cluster's
	// status.initialization.infrastructureProvisioned is not true yet.
	WaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"

	// WaitingForBootstrapDataReason surfaces when the Machine has no
	// spec.bootstrap.dataSecretName yet, or the Secret it names does not
	// exist or holds no data: a machine cannot boot without its
	// configuration, as on a real cloud.
	WaitingForBootstrapDataReason = "WaitingForBootstrapData"

	// InvalidImageReason surfaces when spec.image names no Talos version
	// (or, for an Image Factory image, no schematic). Fix the image; a new
	// TalosSimMachine is needed once the machine booted.
	InvalidImageReason = "InvalidImage"

	// FailureDomainNotFoundReason surfaces when the failure domain the
	// Machine is placed in is not one of the TalosSimCluster's.
	FailureDomainNotFoundReason = "FailureDomainNotFound"

	// BootFailedReason surfaces when the simulated node could not be
	// started; the controller tries again.
	BootFailedReason = "BootFailed"

	// WaitingForWorkloadClusterReason surfaces when the node booted but the
	// Cluster's <cluster>-kubeconfig Secret does not exist yet, so its
	// Node cannot be registered.
	WaitingForWorkloadClusterReason = "WaitingForWorkloadCluster"

	// NodeRegistrationFailedReason surfaces when the node booted but its
	// Node could not be written to the workload cluster; the controller
	// tries again.
	NodeRegistrationFailedReason = "NodeRegistrationFailed"

	// DeletionFailedReason surfaces when the simulated node or its Node
	// could not be removed; the controller tries again.
	DeletionFailedReason = "DeletionFailed"
)

// ProviderIDPrefix starts the provider ID of every TalosSimMachine:
// talossim://<namespace>/<cluster>/<name>.
const ProviderIDPrefix = "talossim://"

// TalosSimMachineSpec is the desired state of a TalosSimMachine.
type TalosSimMachineSpec struct {
	// image is what the machine boots, as a bare-metal or virtualization
	// provider's image field is (Metal3Machine spec.image.url, a Proxmox
	// template, a Nutanix image): an installer image whose tag is the Talos
	// version (ghcr.io/siderolabs/installer:v1.12.4, or an Image Factory one
	// such as factory.talos.dev/installer/<schematic>:v1.12.4 to boot that
	// schematic too), an Image Factory disk image URL
	// (https://factory.talos.dev/image/<schematic>/v1.12.4/metal-amd64.raw.zst),
	// or an opaque image ID (hosts.CloudImageID), as a template's VMID is. It
	// is read when the machine boots; a later change upgrades nothing and is
	// admitted, as those providers admit it (CAPM3's Metal3Machine webhook
	// checks the URL's syntax only, CAPMOX's ProxmoxMachine webhook keeps only
	// its tags, CAPX has none).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// providerID is set by the controller once the machine booted:
	// talossim://<namespace>/<cluster>/<name>, the spec.providerID of the
	// machine's workload Node.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// failureDomain, when set, is where the machine is placed if its
	// Machine names none; the Machine's spec.failureDomain wins.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain string `json:"failureDomain,omitempty"`
}

// TalosSimMachineInitializationStatus is the initialization part of the
// v1beta2 InfraMachine contract.
// +kubebuilder:validation:MinProperties=1
type TalosSimMachineInitializationStatus struct {
	// provisioned is true once the simulated node booted and
	// spec.providerID is set. It is never set back to false.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// TalosSimMachineStatus is the observed state of a TalosSimMachine.
// +kubebuilder:validation:MinProperties=1
type TalosSimMachineStatus struct {
	// conditions are the observations of the TalosSimMachine: Ready, and
	// Paused while the Cluster or the object is paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// initialization is what CAPI's Machine controller reads to know the
	// machine is provisioned.
	// +optional
	Initialization TalosSimMachineInitializationStatus `json:"initialization,omitempty,omitzero"`

	// addresses are the simulated node's: its InternalIP, at which its
	// Talos API listens, and its Hostname.
	// +optional
	Addresses clusterv1.MachineAddresses `json:"addresses,omitempty"`

	// failureDomain is the failure domain the machine is placed in.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain string `json:"failureDomain,omitempty"`

	// version is the Talos version the simulated node ran when it was last
	// observed (read from the node, not from spec.image).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=talossimmachines,scope=Namespaced,categories=cluster-api,shortName=tsm
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`,description="The Cluster this machine belongs to"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,description="The image the machine boots"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`,description="The Talos version the node runs"
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=`.status.initialization.provisioned`,description="Whether the machine is provisioned"
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosSimMachine is a machine of a CAPI Cluster that is a simulated Talos
// node, of the family of providers whose image is mutable and may name its
// Talos version (Metal3, Proxmox, Nutanix); TalosSimCloudMachine is the
// other family's.
type TalosSimMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the TalosSimMachine.
	// +required
	Spec TalosSimMachineSpec `json:"spec"`

	// status is the observed state of the TalosSimMachine.
	// +optional
	Status TalosSimMachineStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the TalosSimMachine.
func (m *TalosSimMachine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the conditions of the TalosSimMachine.
func (m *TalosSimMachine) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// TalosSimMachineList is a list of TalosSimMachines.
type TalosSimMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosSimMachine `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TalosSimMachine{}, &TalosSimMachineList{})
}

// BootImage is what the machine boots.
func (m *TalosSimMachine) BootImage() string { return m.Spec.Image }

// GetProviderID returns spec.providerID.
func (m *TalosSimMachine) GetProviderID() string { return m.Spec.ProviderID }

// SetProviderID sets spec.providerID.
func (m *TalosSimMachine) SetProviderID(id string) { m.Spec.ProviderID = id }

// GetFailureDomain returns spec.failureDomain.
func (m *TalosSimMachine) GetFailureDomain() string { return m.Spec.FailureDomain }

// GetMachineStatus returns the status.
func (m *TalosSimMachine) GetMachineStatus() *TalosSimMachineStatus { return &m.Status }
