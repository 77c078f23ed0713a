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
)

// TalosUpgradePolicy condition types and reasons.
const (
	// PolicyReadyCondition is True when the policy is valid, with reason
	// PolicyValidReason, or PolicyPausedReason while it is paused. It
	// surfaces False with reason PolicyInvalidReason when the plan cannot be
	// carried out as written, whatever Clusters select it.
	PolicyReadyCondition = "Ready"

	// PolicyRolloutCompletedCondition is True when every selected Cluster
	// runs the target version. It surfaces False with reason
	// RolloutInProgressReason while rollouts run and RolloutFailedReason
	// when one failed.
	PolicyRolloutCompletedCondition = "RolloutCompleted"

	// PolicyAdmittingCondition is True while the policy admits new Clusters
	// (within maxClustersInProgress). It surfaces False with reason
	// FailureBudgetExhaustedReason, WaitingForCanariesReason,
	// CanaryFailedReason, PolicyPausedReason or PolicyInvalidReason.
	PolicyAdmittingCondition = "Admitting"

	// AdmittingReason surfaces while new Clusters may be admitted.
	AdmittingReason = "Admitting"

	// FailureBudgetExhaustedReason surfaces when maxFailedClusters Clusters
	// failed their rollout to the current target.
	FailureBudgetExhaustedReason = "FailureBudgetExhausted"

	// WaitingForCanariesReason surfaces while the canaries' rollouts run:
	// no other Cluster is admitted.
	WaitingForCanariesReason = "WaitingForCanaries"

	// CanaryFailedReason surfaces when a canary's rollout failed: no other
	// Cluster is admitted.
	CanaryFailedReason = "CanaryFailed"

	// PolicyFollowingReleasesCondition is True while a policy with
	// spec.follow has listed its installer repository and knows its target.
	// It surfaces False with reason ReleasesUnavailableReason when the
	// repository cannot be listed, and with NoFollowBaselineReason until a
	// Machine reports the version to follow from.
	PolicyFollowingReleasesCondition = "FollowingReleases"

	// UpToDateReason surfaces when the target is the newest release the
	// rules allow.
	UpToDateReason = "UpToDate"

	// WaitingForReleaseAgeReason surfaces while a newer release is younger
	// than minReleaseAge.
	WaitingForReleaseAgeReason = "WaitingForReleaseAge"

	// WaitingForRolloutsReason surfaces while a newer release waits for the
	// rollouts of the current target to end.
	WaitingForRolloutsReason = "WaitingForRollouts"

	// NoFollowBaselineReason surfaces while no Machine of the policy's
	// Clusters reports the Talos version to follow from (allow: Patch).
	NoFollowBaselineReason = "NoFollowBaseline"

	// PolicyValidReason surfaces when the policy is valid.
	PolicyValidReason = "Valid"

	// PolicyInvalidReason surfaces when the policy cannot be carried out as
	// written, whatever Clusters select it: a rule the admission webhook
	// enforces is broken, for example Talos and Kubernetes targets that no
	// Talos supports together, by a policy admitted by an earlier Tollgate
	// or while the webhook was bypassed. The message names the fields. No
	// TalosUpgrade is made or changed, and no Cluster admitted, until the
	// policy is fixed; rollouts at work go on.
	PolicyInvalidReason = "Invalid"

	// PolicyPausedReason surfaces when spec.paused is true.
	PolicyPausedReason = "Paused"

	// NoClustersSelectedReason surfaces when no Cluster carries the policy label.
	NoClustersSelectedReason = "NoClustersSelected"

	// RolloutInProgressReason surfaces while at least one rollout runs.
	RolloutInProgressReason = "RolloutInProgress"

	// RolloutFailedReason surfaces when at least one rollout failed.
	RolloutFailedReason = "RolloutFailed"

	// RolloutCompletedReason surfaces when every rollout completed.
	RolloutCompletedReason = "RolloutCompleted"
)

// TalosUpgradePolicySpec is the desired state of a TalosUpgradePolicy.
// +kubebuilder:validation:XValidation:rule="!(has(self.talosVersion) && has(self.follow))",fieldPath=".follow",message="must not be set with talosVersion: a policy names its target or follows the releases of its installer repository, not both"
// +kubebuilder:validation:XValidation:rule="(has(self.targetFrom) && self.targetFrom == 'Channel') == has(self.channel)",fieldPath=".channel",message="names the ReleaseChannel the target comes from: set it with targetFrom: Channel, and only then"
// +kubebuilder:validation:XValidation:rule="!(has(self.targetFrom) && self.targetFrom == 'Channel' && has(self.talosVersion))",fieldPath=".talosVersion",message="must not be set with targetFrom: Channel, where the ReleaseChannel grants each Cluster its version; remove it, or set targetFrom: Policy to roll out the policy's own target"
// +kubebuilder:validation:XValidation:rule="!(has(self.targetFrom) && self.targetFrom == 'Channel' && has(self.kubernetesVersion))",fieldPath=".kubernetesVersion",message="must not be set with targetFrom: Channel, where the ReleaseChannel grants each Cluster its version; remove it, or set targetFrom: Policy to roll out the policy's own target"
// +kubebuilder:validation:XValidation:rule="!(has(self.targetFrom) && self.targetFrom == 'Channel' && has(self.follow))",fieldPath=".follow",message="must not be set with targetFrom: Channel, where the ReleaseChannel grants each Cluster its version; remove it, or set targetFrom: Policy to follow releases"
// +kubebuilder:validation:XValidation:rule="!(has(self.targetFrom) && self.targetFrom == 'CAPI' && has(self.talosVersion))",fieldPath=".talosVersion",message="must not be set with targetFrom: CAPI, where the Talos version of the machine templates is the target; remove it, or set targetFrom: Policy to roll out the policy's own target"
// +kubebuilder:validation:XValidation:rule="!(has(self.targetFrom) && self.targetFrom == 'CAPI' && has(self.follow))",fieldPath=".follow",message="must not be set with targetFrom: CAPI, where the Talos version of the machine templates is the target; remove it, or set targetFrom: Policy to follow releases"
// +kubebuilder:validation:XValidation:rule="!(has(self.follow) && has(self.allowDowngrade) && self.allowDowngrade)",fieldPath=".allowDowngrade",message="must not be true with follow: it would turn off the preflight's refusal to downgrade a Cluster that runs ahead of the fleet to the followed target; remove it, or name talosVersion instead of follow to downgrade on purpose"
type TalosUpgradePolicySpec struct {
	UpgradePlan `json:",inline"`

	// follow makes the policy follow the releases of its installer
	// repository instead of naming talosVersion: the target is the newest
	// stable release that the rules allow and that is at least minReleaseAge
	// old, and a new target starts a new rollout once every rollout of the
	// previous one ended and the maintenance windows are open.
	// status.follow shows what was seen and what comes next. A following
	// policy never downgrades: allowDowngrade must not be set with it.
	// +optional
	Follow *FollowSpec `json:"follow,omitempty"`

	// channel is the name of the ReleaseChannel the targets come from,
	// with targetFrom: Channel: each selected Cluster gets the version the
	// channel grants its stage (a stage names the policy, or selects the
	// Cluster). Required with targetFrom: Channel, forbidden otherwise.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Channel string `json:"channel,omitempty"`

	// paused stops every rollout of the policy from starting new Machines.
	// Machines already started finish.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// bypass lets an administrator proceed past broken safety gates for every
	// Cluster of the policy.
	// +optional
	Bypass *BypassSpec `json:"bypass,omitempty"`

	// replacements says what becomes of a change of a selected Cluster's
	// MachineDeployment, or of its TalosControlPlane, that Cluster API would
	// carry out by replacing Machines the policy keeps (a rollout field of a
	// RollingUpdate MachineDeployment's template that Tollgate's in-place
	// update extension does not make in place, a TalosControlPlane's
	// spec.version, spec.infrastructureTemplate or
	// spec.controlPlaneConfig.controlplane under RollingUpdate), or that its
	// control-plane provider would carry out before Tollgate's deletion hook
	// could gate it (a decrease of a TalosControlPlane's spec.replicas while
	// its provider takes the Machine out of etcd and deletes its Node first,
	// as v0.5.x does: its Machines lack the pre-terminate hook
	// pre-terminate.delete.hook.machine.cluster.x-k8s.io/tcp-cleanup of the
	// variant that leaves etcd after the hook). Warn (the
	// default) admits it, and the rollout's InPlaceUpdatesReady condition
	// and a Warning event say so before CAPI acts, where Tollgate can see it
	// coming; the removal gate holds each Machine CAPI deletes. Refuse makes
	// the admission webhook refuse it, saying what to change instead
	// (failurePolicy Ignore: while Tollgate's webhook does not answer, the
	// change is admitted). A change whose templates do not exist yet is
	// admitted with a warning: GitOps applies objects in any order.
	// +optional
	// +kubebuilder:validation:Enum=Warn;Refuse
	Replacements ReplacementPolicy `json:"replacements,omitempty"`
}

// ReplacementPolicy is what becomes of a change CAPI would carry out by
// replacing Machines a policy keeps.
type ReplacementPolicy string

const (
	// ReplacementsWarn admits the change and says so before CAPI acts.
	ReplacementsWarn ReplacementPolicy = "Warn"
	// ReplacementsRefuse refuses the change at admission.
	ReplacementsRefuse ReplacementPolicy = "Refuse"
)

// TalosUpgradePolicyStatus is the observed state of a TalosUpgradePolicy.
type TalosUpgradePolicyStatus struct {
	// conditions describe the state of the policy.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// clusters counts the Clusters that select the policy.
	// +optional
	Clusters FleetCounts `json:"clusters,omitempty,omitzero"`

	// canaries are the canary Clusters of the current target: the named
	// ones and those chosen by count, recorded when the target was first
	// seen so that the choice does not move.
	// +listType=set
	// +kubebuilder:validation:MaxItems=1100
	// +optional
	Canaries []string `json:"canaries,omitempty"`

	// canaryTarget is the talosVersion the canaries were chosen for, or
	// "Kubernetes <version>" for a policy with a kubernetesVersion alone.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	CanaryTarget string `json:"canaryTarget,omitempty"`

	// follow is what a policy with spec.follow saw in its installer
	// repository and what it targets.
	// +optional
	Follow *FollowStatus `json:"follow,omitempty"`
}

// FollowAllow is how far a following policy moves at a time.
// +kubebuilder:validation:Enum=Patch;Minor
type FollowAllow string

const (
	// FollowAllowPatch follows the patch releases of the minor the fleet
	// runs, never crossing to the next minor.
	FollowAllowPatch FollowAllow = "Patch"

	// FollowAllowMinor follows new minors too, one minor at a time.
	FollowAllowMinor FollowAllow = "Minor"
)

// FollowSpec is how a policy follows the releases of its installer
// repository.
type FollowSpec struct {
	// allow is how far the target moves: "Patch" stays on the minor the
	// fleet runs (the lowest one when it runs several); "Minor" goes to the
	// next minor too, one minor at a time, never skipping one.
	// +required
	Allow FollowAllow `json:"allow"`

	// checkInterval is how often the installer repository is listed. At
	// least one minute.
	// +kubebuilder:default="1h"
	// +optional
	CheckInterval *metav1.Duration `json:"checkInterval,omitempty"`

	// minReleaseAge is how old a release must be before it becomes the
	// target: its age counts from the image's creation time when the
	// registry gives one, else from the first time Tollgate saw its tag
	// (recorded in status.follow.releases, so that a restart does not reset
	// it). Zero takes a release as soon as it is seen.
	// +optional
	MinReleaseAge *metav1.Duration `json:"minReleaseAge,omitempty"`
}

// FollowStatus is what a following policy saw in its installer repository.
type FollowStatus struct {
	// lastCheckTime is when the repository was last listed.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`

	// current is the version the policy's rollouts target now.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Current string `json:"current,omitempty"`

	// latest is the newest stable release in the repository.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Latest string `json:"latest,omitempty"`

	// next is the version the next rollout will target, once it is old
	// enough, a maintenance window is open and the current rollouts ended;
	// empty when current is the newest the rules allow.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Next string `json:"next,omitempty"`

	// tooYoung are the releases newer than current that the rules allow but
	// that are younger than minReleaseAge.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	TooYoung []string `json:"tooYoung,omitempty"`

	// releases records when each stable release newer than current was
	// first seen, and current's.
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Releases []SeenRelease `json:"releases,omitempty"`
}

// SeenRelease is a release a following policy saw.
type SeenRelease struct {
	// version is the release's version.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`

	// firstSeen is when Tollgate first saw its tag.
	// +required
	FirstSeen metav1.Time `json:"firstSeen"`

	// created is the creation time of its image, when the registry gives a
	// plausible one.
	// +optional
	Created *metav1.Time `json:"created,omitempty"`
}

// FleetCounts counts Clusters by the state of their rollout.
type FleetCounts struct {
	// selected is the number of Clusters carrying the policy label.
	// +optional
	Selected int32 `json:"selected,omitempty"`

	// pending is the number of Clusters waiting for their rollout to start,
	// for example because of maxClustersInProgress or a paused Cluster.
	// +optional
	Pending int32 `json:"pending,omitempty"`

	// inProgress is the number of Clusters whose rollout is running.
	// +optional
	InProgress int32 `json:"inProgress,omitempty"`

	// completed is the number of Clusters that run the target version.
	// +optional
	Completed int32 `json:"completed,omitempty"`

	// failed is the number of Clusters whose rollout failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// paused is the number of Clusters whose rollout is paused.
	// +optional
	Paused int32 `json:"paused,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=talosupgradepolicies,scope=Namespaced,categories=tollgate,shortName=tup
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.talosVersion`,description="Target Talos version"
// +kubebuilder:printcolumn:name="Following",type=string,JSONPath=`.status.follow.current`,description="Target chosen from the releases (spec.follow)"
// +kubebuilder:printcolumn:name="Channel",type=string,JSONPath=`.spec.channel`,priority=1,description="ReleaseChannel the targets come from (targetFrom: Channel)"
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.clusters.selected`,description="Clusters selecting the policy"
// +kubebuilder:printcolumn:name="Completed",type=integer,JSONPath=`.status.clusters.completed`,description="Clusters on the target version"
// +kubebuilder:printcolumn:name="In Progress",type=integer,JSONPath=`.status.clusters.inProgress`,description="Clusters being upgraded"
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.clusters.failed`,description="Clusters whose rollout failed"
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,description="Whether the policy is paused"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosUpgradePolicy names a target Talos version and the rules of the
// rollout for every CAPI Cluster, in the same namespace, that carries the
// label upgrade.tollgate.dev/policy with the policy's name.
type TalosUpgradePolicy struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the policy.
	// +required
	Spec TalosUpgradePolicySpec `json:"spec"`

	// status is the observed state of the policy.
	// +optional
	Status TalosUpgradePolicyStatus `json:"status,omitempty,omitzero"`
}

// Target returns the version the policy's rollouts go to: spec.talosVersion,
// or for a policy following releases the one it chose (status.follow.current;
// empty until it chose one).
func (p *TalosUpgradePolicy) Target() string {
	if p.Spec.ChannelDriven() {
		return "" // Per Cluster: the version its stage is granted.
	}
	if p.Spec.Follow != nil {
		if p.Status.Follow == nil {
			return ""
		}
		return p.Status.Follow.Current
	}
	return p.Spec.TalosVersion
}

// KeepsTalos reports whether the policy names no Talos target: no
// talosVersion, no follow, and its target comes neither from CAPI nor from a
// ReleaseChannel. Each Cluster keeps the Talos version its Machines run,
// but for the Machines whose objects declare one
// (DesiredTalosVersionAnnotation); the policy may change Kubernetes alone
// (kubernetesVersion), or nothing but keep the gates (TargetsFromObjects).
func (p *TalosUpgradePolicy) KeepsTalos() bool {
	return p.Spec.TalosVersion == "" && p.Spec.Follow == nil && !p.Spec.CAPIDriven() && !p.Spec.ChannelDriven()
}

// TargetsFromObjects reports whether the policy names no target at all, no
// Kubernetes version either: the Talos version of each Machine is the one
// its Cluster's object declares (DesiredTalosVersionAnnotation), or the
// one it runs, and the policy keeps the gates.
func (p *TalosUpgradePolicy) TargetsFromObjects() bool {
	return p.KeepsTalos() && p.Spec.KubernetesVersion == ""
}

// TargetName names the policy's targets for a message or for
// status.canaryTarget: "v1.13.0", "v1.13.0 with Kubernetes v1.36.0", or
// "Kubernetes v1.36.0" for a policy that keeps each Cluster's Talos; empty
// while a policy following releases has chosen none.
func (p *TalosUpgradePolicy) TargetName() string {
	talos, kubernetes := p.Target(), p.Spec.KubernetesVersion
	switch {
	case p.Spec.ChannelDriven():
		return "the versions of ReleaseChannel " + p.Spec.Channel
	case p.TargetsFromObjects():
		return "the versions its Clusters' objects declare"
	case p.KeepsTalos():
		return "Kubernetes " + kubernetes
	case talos == "" || kubernetes == "":
		return talos
	}
	return talos + " with Kubernetes " + kubernetes
}

// GetConditions returns the conditions of the policy.
func (p *TalosUpgradePolicy) GetConditions() []metav1.Condition {
	return p.Status.Conditions
}

// SetConditions sets the conditions of the policy.
func (p *TalosUpgradePolicy) SetConditions(conditions []metav1.Condition) {
	p.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// TalosUpgradePolicyList is a list of TalosUpgradePolicy.
type TalosUpgradePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosUpgradePolicy `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TalosUpgradePolicy{}, &TalosUpgradePolicyList{})
}
