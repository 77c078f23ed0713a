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

// TalosSimMachineTemplateResource is the template of the TalosSimMachines
// CAPI creates from a TalosSimMachineTemplate.
type TalosSimMachineTemplateResource struct {
	// metadata are labels and annotations CAPI puts on the machines it
	// creates from the template.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the spec of every TalosSimMachine made from the template:
	// its image decides the Talos version a new machine boots.
	// +required
	Spec TalosSimMachineSpec `json:"spec"`
}

// TalosSimMachineTemplateSpec is the desired state of a
// TalosSimMachineTemplate.
type TalosSimMachineTemplateSpec struct {
	// template is what CAPI clones into a TalosSimMachine.
	// +required
	Template TalosSimMachineTemplateResource `json:"template"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=talossimmachinetemplates,scope=Namespaced,categories=cluster-api,shortName=tsmt
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.template.spec.image`,description="The image new machines boot"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosSimMachineTemplate is the template of the TalosSimMachines of a
// MachineDeployment, a MachineSet or a control plane.
type TalosSimMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the template.
	// +required
	Spec TalosSimMachineTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// TalosSimMachineTemplateList is a list of TalosSimMachineTemplates.
type TalosSimMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosSimMachineTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TalosSimMachineTemplate{}, &TalosSimMachineTemplateList{})
}
