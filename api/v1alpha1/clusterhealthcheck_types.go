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
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterHealthCheck condition types and reasons.
const (
	// HealthCheckReadyCondition is True when the check's Job template is
	// valid. It surfaces False with reason InvalidTemplateReason otherwise.
	HealthCheckReadyCondition = "Ready"

	// TemplateValidReason surfaces when the Job template is valid.
	TemplateValidReason = "TemplateValid"

	// InvalidTemplateReason surfaces when the Job template cannot be run.
	InvalidTemplateReason = "InvalidTemplate"
)

// ClusterHealthCheckSpec is the desired state of a ClusterHealthCheck.
type ClusterHealthCheckSpec struct {
	// template is the Job run in the workload cluster. Tollgate names it
	// (from the check and the Cluster) and adds its labels; the rest (image,
	// command, service account, namespace, "default" when unset) is yours.
	// The check passes when the Job completes and fails when it fails; the
	// failure reason shown in status is the tail of the container's output.
	// A backoffLimit above 0 lets the Job controller retry a failed Pod within
	// one run, so a run that fails and then passes is a pass: the webhook
	// warns of it, and the result's message says at which attempt it passed.
	// +required
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template batchv1.JobTemplateSpec `json:"template"`

	// interval is how often the check is run while a rollout needs it; while
	// checks fail, the rollout re-checks at the shortest interval among the
	// failing checks. At least 5s.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s')",message="interval must be at least 5s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout is how long one run may take before it counts as failed.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be positive"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// successThreshold is how many consecutive passes the check needs
	// before it counts as passed.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	SuccessThreshold *int32 `json:"successThreshold,omitempty"`

	// labels are added to the Job and its Pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to the Job and its Pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ClusterHealthCheckStatus is the observed state of a ClusterHealthCheck.
type ClusterHealthCheckStatus struct {
	// conditions describe the state of the check.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// results is the last result per Cluster the check ran in.
	// +listType=map
	// +listMapKey=cluster
	// +kubebuilder:validation:MaxItems=10000
	// +optional
	Results []ClusterHealthCheckResult `json:"results,omitempty"`
}

// ClusterHealthCheckResult is the last result of a check in one Cluster.
type ClusterHealthCheckResult struct {
	// cluster is the name of the CAPI Cluster.
	// +required
	Cluster string `json:"cluster"`

	// result is the last result.
	// +optional
	Result HealthCheckResult `json:"result,omitempty"`

	// lastRunTime is when the last Job was started.
	// +optional
	LastRunTime *metav1.Time `json:"lastRunTime,omitempty"`

	// message is the failure reason (the end of the failed container's
	// output: its last 256 characters, "…" first when cut), or how the check
	// passes: how many passes in a row it has of successThreshold, and at
	// which attempt of its Job it passed when the Job controller retried a
	// failed Pod (backoffLimit above 0).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusterhealthchecks,scope=Namespaced,categories=tollgate,shortName=chc
// +kubebuilder:printcolumn:name="Interval",type=string,JSONPath=`.spec.interval`,description="How often the check runs"
// +kubebuilder:printcolumn:name="Timeout",type=string,JSONPath=`.spec.timeout`,description="How long one run may take"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterHealthCheck is a Job run in a workload cluster that must pass before
// a rollout takes down its next Machine, for example "Ceph is HEALTH_OK".
type ClusterHealthCheck struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the check.
	// +required
	Spec ClusterHealthCheckSpec `json:"spec"`

	// status is the last result of the check per Cluster.
	// +optional
	Status ClusterHealthCheckStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the check.
func (c *ClusterHealthCheck) GetConditions() []metav1.Condition {
	return c.Status.Conditions
}

// SetConditions sets the conditions of the check.
func (c *ClusterHealthCheck) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// ClusterHealthCheckList is a list of ClusterHealthCheck.
type ClusterHealthCheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterHealthCheck `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &ClusterHealthCheck{}, &ClusterHealthCheckList{})
}
