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

package v1alpha3

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TalosConfigTemplateResource is the template of the TalosConfigs CAPI
// creates from a TalosConfigTemplate.
type TalosConfigTemplateResource struct {
	// spec is the spec of every TalosConfig made from the template.
	// +required
	Spec TalosConfigSpec `json:"spec"`
}

// TalosConfigTemplateSpec is the desired state of a TalosConfigTemplate.
type TalosConfigTemplateSpec struct {
	// template is what CAPI clones into a TalosConfig.
	// +required
	Template TalosConfigTemplateResource `json:"template"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=talosconfigtemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta1=v1alpha3"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosConfigTemplate is the template of the TalosConfigs of a
// MachineDeployment or a MachineSet.
type TalosConfigTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the template.
	// +optional
	Spec TalosConfigTemplateSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// TalosConfigTemplateList is a list of TalosConfigTemplates.
type TalosConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosConfigTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TalosConfigTemplate{}, &TalosConfigTemplateList{})
}
