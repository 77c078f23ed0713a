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

// TalosSimCloudMachineSpec is the desired state of a TalosSimCloudMachine.
type TalosSimCloudMachineSpec struct {
	// imageID is the cloud image the machine boots, an opaque ID as an AMI
	// ID is (hosts.CloudImageID): nothing but the provider can tell which
	// Talos it boots. A Talos version written in it is not looked for.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ImageID string `json:"imageID"`

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

	// additionalTags are tags of the cloud instance; the only field of the
	// spec that may change, as on AWS.
	// +optional
	AdditionalTags map[string]string `json:"additionalTags,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=talossimcloudmachines,scope=Namespaced,categories=cluster-api,shortName=tscm
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`,description="The Cluster this machine belongs to"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.imageID`,description="The cloud image the machine boots"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`,description="The Talos version the node runs"
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=`.status.initialization.provisioned`,description="Whether the machine is provisioned"
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosSimCloudMachine is a machine of a CAPI Cluster that is a simulated
// Talos node, of the family of cloud providers (AWS, Azure, GCP, vSphere,
// OpenStack, Hetzner): it boots an opaque image ID, and its webhook refuses
// any change of the spec of an existing machine (422) but for the fields
// the controller sets and its tags, as CAPA's AWSMachine webhook does.
type TalosSimCloudMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the TalosSimCloudMachine.
	// +required
	Spec TalosSimCloudMachineSpec `json:"spec"`

	// status is the observed state of the TalosSimCloudMachine.
	// +optional
	Status TalosSimMachineStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the TalosSimCloudMachine.
func (m *TalosSimCloudMachine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the conditions of the TalosSimCloudMachine.
func (m *TalosSimCloudMachine) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}

// BootImage is what the machine boots.
func (m *TalosSimCloudMachine) BootImage() string { return m.Spec.ImageID }

// GetProviderID returns spec.providerID.
func (m *TalosSimCloudMachine) GetProviderID() string { return m.Spec.ProviderID }

// SetProviderID sets spec.providerID.
func (m *TalosSimCloudMachine) SetProviderID(id string) { m.Spec.ProviderID = id }

// GetFailureDomain returns spec.failureDomain.
func (m *TalosSimCloudMachine) GetFailureDomain() string { return m.Spec.FailureDomain }

// GetMachineStatus returns the status.
func (m *TalosSimCloudMachine) GetMachineStatus() *TalosSimMachineStatus { return &m.Status }

// +kubebuilder:object:root=true

// TalosSimCloudMachineList is a list of TalosSimCloudMachines.
type TalosSimCloudMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosSimCloudMachine `json:"items"`
}

// TalosSimCloudMachineTemplateResource is the template of the
// TalosSimCloudMachines CAPI creates from a TalosSimCloudMachineTemplate.
type TalosSimCloudMachineTemplateResource struct {
	// metadata are labels and annotations CAPI puts on the machines it
	// creates from the template.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the spec of every TalosSimCloudMachine made from the
	// template.
	// +required
	Spec TalosSimCloudMachineSpec `json:"spec"`
}

// TalosSimCloudMachineTemplateSpec is the desired state of a
// TalosSimCloudMachineTemplate.
type TalosSimCloudMachineTemplateSpec struct {
	// template is what CAPI clones into a TalosSimCloudMachine.
	// +required
	Template TalosSimCloudMachineTemplateResource `json:"template"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=talossimcloudmachinetemplates,scope=Namespaced,categories=cluster-api,shortName=tscmt
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.template.spec.imageID`,description="The cloud image new machines boot"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosSimCloudMachineTemplate is the template of the TalosSimCloudMachines
// of a MachineDeployment, a MachineSet or a control plane. Its spec is
// immutable (422), as CAPA's AWSMachineTemplate's is: a new image is a new
// template.
type TalosSimCloudMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the template.
	// +required
	Spec TalosSimCloudMachineTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// TalosSimCloudMachineTemplateList is a list of
// TalosSimCloudMachineTemplates.
type TalosSimCloudMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosSimCloudMachineTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes,
		&TalosSimCloudMachine{}, &TalosSimCloudMachineList{},
		&TalosSimCloudMachineTemplate{}, &TalosSimCloudMachineTemplateList{})
}
