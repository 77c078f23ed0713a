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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
)

// ControlPlaneNameLabel is the label of every control-plane Machine with
// the name of its TalosControlPlane (CAPI's
// cluster.x-k8s.io/control-plane-name).
const ControlPlaneNameLabel = clusterv1.MachineControlPlaneNameLabel

// Condition types and reasons of a TalosControlPlane (CAPI v1beta1
// conditions).
const (
	// AvailableCondition surfaces whether at least one control-plane
	// Machine is Ready; CAPI mirrors it into the Cluster's
	// ControlPlaneAvailable.
	AvailableCondition clusterv1.ConditionType = "Available" //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
	// NoReadyMachinesReason surfaces when no control-plane Machine is Ready.
	NoReadyMachinesReason = "NoReadyMachines"

	// MachinesCreatedCondition surfaces whether the controller can create
	// the control-plane Machines it needs.
	MachinesCreatedCondition clusterv1.ConditionType = "MachinesCreated" //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
	// InfrastructureTemplateNotFoundReason surfaces when
	// spec.infrastructureTemplate names no object the controller can read:
	// no Machine is created until it exists.
	InfrastructureTemplateNotFoundReason = "InfrastructureTemplateNotFound"
	// MachineCreationFailedReason surfaces when cloning the infrastructure
	// template, creating the TalosConfig or creating the Machine failed.
	MachineCreationFailedReason = "MachineCreationFailed"

	// ScaleDownSafeCondition surfaces whether deleting the control-plane
	// Machine the controller wants to delete keeps etcd's quorum.
	ScaleDownSafeCondition clusterv1.ConditionType = "ScaleDownSafe" //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
	// EtcdQuorumAtRiskReason surfaces when deleting the Machine would leave
	// fewer healthy etcd members than the quorum of those left: the
	// controller waits for the members to be healthy.
	EtcdQuorumAtRiskReason = "EtcdQuorumAtRisk"
	// EtcdUnreachableReason surfaces when no other control-plane node's
	// Talos API answered the etcd member check: the controller does not
	// delete a Machine it cannot check.
	EtcdUnreachableReason = "EtcdUnreachable"
)

// RolloutStrategyType is how control-plane Machines are replaced.
type RolloutStrategyType string

const (
	// RollingUpdateStrategyType replaces Machines one at a time, creating
	// the new one before it deletes the old (maxSurge 1) or after
	// (maxSurge 0).
	RollingUpdateStrategyType RolloutStrategyType = "RollingUpdate"
	// OnDeleteStrategyType replaces no outdated Machine: a Machine a user
	// deletes is replaced by one of the current configuration.
	OnDeleteStrategyType RolloutStrategyType = "OnDelete"
)

// RollingUpdate tunes a RollingUpdate.
type RollingUpdate struct {
	// maxSurge is how many Machines above spec.replicas a rollout may
	// create: 0 or 1 (an int or a percentage, as in the real provider).
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// RolloutStrategy is how control-plane Machines are replaced when they are
// outdated.
type RolloutStrategy struct {
	// type is the kind of rollout: RollingUpdate (the default) or
	// OnDelete.
	// +optional
	Type RolloutStrategyType `json:"type,omitempty"`
	// rollingUpdate tunes a RollingUpdate.
	// +optional
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`
}

// ControlPlaneConfig is the Talos machine configuration of the
// control-plane Machines.
type ControlPlaneConfig struct {
	// init is the configuration of the first control-plane Machine, when
	// set; controlplane is used otherwise.
	// +optional
	InitConfig bootstrapv1.TalosConfigSpec `json:"init,omitempty,omitzero"`
	// controlplane is the configuration of every control-plane Machine
	// (of the first too, when init is not set).
	// +required
	ControlPlaneConfig bootstrapv1.TalosConfigSpec `json:"controlplane"`
}

// TalosControlPlaneSpec is the desired state of a TalosControlPlane.
type TalosControlPlaneSpec struct {
	// replicas is the number of control-plane Machines; never fewer than
	// one is kept.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// version is the Kubernetes version of the control-plane Machines
	// (their spec.version): a change rolls them out.
	// +required
	Version string `json:"version"`
	// infrastructureTemplate is the infrastructure machine template each
	// control-plane Machine's InfraMachine is cloned from (apiVersion, kind
	// and name, in the TalosControlPlane's namespace).
	// +required
	InfrastructureTemplate corev1.ObjectReference `json:"infrastructureTemplate"`
	// controlPlaneConfig is the TalosConfig spec of each control-plane
	// Machine: a change rolls them out.
	// +required
	ControlPlaneConfig ControlPlaneConfig `json:"controlPlaneConfig"`
	// rolloutStrategy is how outdated Machines are replaced.
	// +optional
	// +kubebuilder:default={type: "RollingUpdate", rollingUpdate: {maxSurge: 1}}
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// TalosControlPlaneStatus is the observed state of a TalosControlPlane,
// read by CAPI core through the v1beta1 control-plane contract.
type TalosControlPlaneStatus struct {
	// selector is the label selector of the control-plane Machines, for
	// the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// replicas is the number of control-plane Machines.
	// +optional
	Replicas int32 `json:"replicas"`
	// version is the lowest Kubernetes version of the control-plane
	// Machines.
	// +optional
	Version *string `json:"version,omitempty"`
	// readyReplicas is the number of Ready control-plane Machines.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// unavailableReplicas is replicas minus readyReplicas.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas"`
	// initialized is true once a control-plane Machine has a node
	// (status.nodeRef); it never goes back to false.
	// +optional
	Initialized bool `json:"initialized"`
	// ready is true while at least one control-plane Machine is Ready.
	// +optional
	Ready bool `json:"ready"`
	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are CAPI v1beta1 conditions: Available, MachinesCreated
	// and ScaleDownSafe.
	// +optional
	Conditions clusterv1.Conditions `json:"conditions,omitempty"` //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=taloscontrolplanes,scope=Namespaced,categories=cluster-api,shortName=tcp
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta1=v1alpha3"
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`,description="At least one control-plane Machine is Ready"
// +kubebuilder:printcolumn:name="Initialized",type=boolean,JSONPath=`.status.initialized`,description="A control-plane Machine has a node"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`,description="Control-plane Machines"
// +kubebuilder:printcolumn:name="Ready Replicas",type=integer,JSONPath=`.status.readyReplicas`,description="Ready control-plane Machines"
// +kubebuilder:printcolumn:name="Unavailable Replicas",type=integer,JSONPath=`.status.unavailableReplicas`,description="Control-plane Machines not Ready"

// TalosControlPlane is the control plane of a Talos Cluster: its
// control-plane Machines, their infrastructure and machine configuration.
type TalosControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired control plane.
	// +optional
	Spec TalosControlPlaneSpec `json:"spec,omitempty"`
	// status is what the controller observed.
	// +optional
	Status TalosControlPlaneStatus `json:"status,omitempty"`
}

// GetV1Beta1Conditions returns the conditions, for CAPI's v1beta1
// conditions helpers.
func (c *TalosControlPlane) GetV1Beta1Conditions() clusterv1.Conditions { //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
	return c.Status.Conditions
}

// SetV1Beta1Conditions sets the conditions, for CAPI's v1beta1 conditions
// helpers.
func (c *TalosControlPlane) SetV1Beta1Conditions(conditions clusterv1.Conditions) { //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
	c.Status.Conditions = conditions
}

// DesiredReplicas is spec.replicas, one when unset, never below one.
func (c *TalosControlPlane) DesiredReplicas() int32 {
	if c.Spec.Replicas == nil || *c.Spec.Replicas < 1 {
		return 1
	}

	return *c.Spec.Replicas
}

// OnDelete reports whether outdated Machines are left until a user deletes
// them.
func (c *TalosControlPlane) OnDelete() bool {
	return c.Spec.RolloutStrategy != nil && c.Spec.RolloutStrategy.Type == OnDeleteStrategyType
}

// MaxSurge is the rollout's maxSurge, resolved against the desired
// replicas: 0 or 1 (1 when unset, as the real provider defaults).
func (c *TalosControlPlane) MaxSurge() int {
	s := c.Spec.RolloutStrategy
	if s == nil || s.RollingUpdate == nil || s.RollingUpdate.MaxSurge == nil {
		return 1
	}

	surge, err := intstr.GetScaledValueFromIntOrPercent(s.RollingUpdate.MaxSurge, int(c.DesiredReplicas()), true)
	if err != nil || surge > 0 {
		return 1
	}

	return 0
}

// +kubebuilder:object:root=true

// TalosControlPlaneList is a list of TalosControlPlanes.
type TalosControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosControlPlane `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TalosControlPlane{}, &TalosControlPlaneList{})
}
