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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Condition types and reasons of a TalosConfig (CAPI v1beta1 conditions).
const (
	// DataSecretAvailableCondition surfaces whether the bootstrap data
	// Secret of the TalosConfig has been written (the real provider's name).
	DataSecretAvailableCondition clusterv1.ConditionType = "DataSecretAvailable" //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.

	// WaitingForMachineReason surfaces when no Machine owns the TalosConfig
	// yet: CAPI's Machine controller sets itself as its owner.
	WaitingForMachineReason = "WaitingForMachine"
	// WaitingForClusterInfrastructureReason surfaces when the Cluster's
	// infrastructure is not provisioned yet (its
	// status.initialization.infrastructureProvisioned), which is all the
	// real provider waits for: a worker's configuration is written before
	// the control plane is initialized, and its node waits for it.
	WaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"
	// WaitingForClusterEndpointReason surfaces when the Cluster has no
	// spec.controlPlaneEndpoint yet, which every machine configuration
	// names.
	WaitingForClusterEndpointReason = "WaitingForClusterEndpoint"
	// DataSecretGenerationFailedReason surfaces when the machine
	// configuration cannot be generated (a bad talosVersion, generateType or
	// patch): the message says which.
	DataSecretGenerationFailedReason = "DataSecretGenerationFailed"
)

// Generate types: the kind of Talos machine configuration a TalosConfig
// asks for.
const (
	// GenerateTypeInit is the configuration of the first control-plane
	// node, which bootstraps etcd.
	GenerateTypeInit = "init"
	// GenerateTypeControlPlane is the configuration of a control-plane node.
	GenerateTypeControlPlane = "controlplane"
	// GenerateTypeWorker is the configuration of a worker node.
	GenerateTypeWorker = "worker"
	// GenerateTypeNone takes spec.data as the configuration, unchanged.
	GenerateTypeNone = "none"
)

// ConfigPatches is a JSON patch (RFC 6902) operation on the generated
// machine configuration.
type ConfigPatches struct {
	// op is the JSON patch operation: add, remove, replace, move, copy or
	// test.
	// +required
	Op string `json:"op"`
	// path is the JSON pointer the operation applies to.
	// +required
	Path string `json:"path"`
	// value is the value of an add, replace or test.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// HostnameSource is where a machine's hostname comes from.
type HostnameSource string

const (
	// HostnameSourceMachineName names the machine after its Machine.
	HostnameSourceMachineName HostnameSource = "MachineName"
	// HostnameSourceInfrastructureName names the machine after its
	// InfraMachine.
	HostnameSourceInfrastructureName HostnameSource = "InfrastructureName"
)

// HostnameSpec says how a machine's hostname is chosen.
type HostnameSpec struct {
	// source is where the hostname comes from (MachineName in the real
	// provider). The stand-in keeps the field and does not act on it.
	// +optional
	Source HostnameSource `json:"source,omitempty"`
}

// TalosConfigSpec is the desired state of a TalosConfig: the Talos machine
// configuration to generate for its Machine.
type TalosConfigSpec struct {
	// generateType is the kind of configuration: init, controlplane,
	// worker, or none (spec.data unchanged).
	// +required
	// +kubebuilder:validation:Enum=controlplane;worker;init;none
	GenerateType string `json:"generateType"`
	// talosVersion is the Talos version the configuration is generated for
	// (its contract, e.g. v1.12); the latest when empty.
	// +optional
	TalosVersion string `json:"talosVersion,omitempty"`
	// data is the machine configuration of generateType none.
	// +optional
	Data string `json:"data,omitempty"`
	// configPatches are JSON patches applied to the generated
	// configuration, in order.
	// +optional
	ConfigPatches []ConfigPatches `json:"configPatches,omitempty"`
	// strategicPatches are strategic merge patches (YAML documents)
	// applied to the generated configuration, after configPatches.
	// +optional
	StrategicPatches []string `json:"strategicPatches,omitempty"`
	// hostname says how the machine's hostname is chosen.
	// +optional
	Hostname HostnameSpec `json:"hostname,omitempty"`
}

// TalosConfigStatus is the observed state of a TalosConfig, read by CAPI
// core through the v1beta1 bootstrap contract.
type TalosConfigStatus struct {
	// ready is true once the bootstrap data Secret is written.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// dataSecretName is the name of the bootstrap data Secret.
	// +optional
	DataSecretName *string `json:"dataSecretName,omitempty"`
	// talosConfig is deprecated in the real provider (use the
	// <cluster>-talosconfig Secret); the stand-in leaves it empty.
	// +optional
	TalosConfig string `json:"talosConfig,omitempty"`
	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are CAPI v1beta1 conditions: Ready and
	// DataSecretAvailable.
	// +optional
	Conditions clusterv1.Conditions `json:"conditions,omitempty"` //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=talosconfigs,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta1=v1alpha3"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`,description="The Cluster of the TalosConfig"
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`,description="The bootstrap data Secret is written"
// +kubebuilder:printcolumn:name="Bootstrap secret",type=string,JSONPath=`.status.dataSecretName`,description="The bootstrap data Secret"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosConfig is the bootstrap configuration of one Machine: the Talos
// machine configuration its node boots with.
type TalosConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the configuration to generate.
	// +optional
	Spec TalosConfigSpec `json:"spec,omitempty"`
	// status is what the controller observed and wrote.
	// +optional
	Status TalosConfigStatus `json:"status,omitempty"`
}

// GetV1Beta1Conditions returns the conditions, for CAPI's v1beta1
// conditions helpers.
func (c *TalosConfig) GetV1Beta1Conditions() clusterv1.Conditions { //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
	return c.Status.Conditions
}

// SetV1Beta1Conditions sets the conditions, for CAPI's v1beta1 conditions
// helpers.
func (c *TalosConfig) SetV1Beta1Conditions(conditions clusterv1.Conditions) { //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// TalosConfigList is a list of TalosConfigs.
type TalosConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosConfig `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TalosConfig{}, &TalosConfigList{})
}
