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

// AdmittedAnnotation is set on a TalosUpgrade by the policy controller when the
// rollout may start, within the policy's maxClustersInProgress. A rollout
// without it starts no Machine.
const AdmittedAnnotation = "upgrade.tollgate.dev/admitted"

// RebootAfterAnnotation on a Machine asks for its node to be rebooted
// through the gate if it last booted at or before the time the annotation
// holds (RFC 3339, for example "2026-12-04T10:00:00Z"), as spec.reboot.after
// asks it for every node of a policy's Clusters. The Machine's Cluster must be
// selected by a policy. Users and other controllers set it; Tollgate never
// writes or removes it: a node that booted after it is not rebooted again.
const RebootAfterAnnotation = "upgrade.tollgate.dev/reboot-after"

// TalosUpgrade condition types.
const (
	// PreflightSucceededCondition is True once the preflight checks passed:
	// the installer image exists, the talosconfig is valid and every node
	// answers, the workload API is ready, no other rollout covers the Cluster
	// and the version step is allowed for every Machine. No Machine is
	// touched before it is True.
	PreflightSucceededCondition = "PreflightSucceeded"

	// HealthChecksPassingCondition is True when every referenced
	// ClusterHealthCheck passed, or when they are bypassed.
	HealthChecksPassingCondition = "HealthChecksPassing"

	// ProgressingCondition is True while Machines are being upgraded. Its
	// reason says what the rollout waits for when it is False.
	ProgressingCondition = "Progressing"

	// CompletedCondition is True when every Machine runs the target version.
	CompletedCondition = "Completed"

	// PausedCondition is True while the rollout starts no new Machine because
	// it, its policy or its Cluster is paused, or the failure policy paused it.
	PausedCondition = "Paused"

	// BypassedCondition is True while an administrator bypasses a safety gate.
	BypassedCondition = "Bypassed"

	// TemplatesOnTargetCondition is True when every template the Cluster's
	// new Machines come from (its MachineDeployments' and its control
	// plane's InfraMachine templates) boots the rollout's target, so that a
	// Machine CAPI creates (a scale-up, a remediation) needs no upgrade.
	// Tollgate never changes the templates: when False, its message names
	// each template to change and how. Set for rollouts whose target comes
	// from their policy; a CAPI-driven rollout's target is the templates'.
	TemplatesOnTargetCondition = "TemplatesOnTarget"

	// InPlaceUpdatesReadyCondition is True when CAPI hands the changes of
	// the Cluster's MachineDeployments that Tollgate makes in place to
	// Tollgate's Runtime Extension: CAPI discovered one in-place update
	// extension that serves the Cluster's namespace, the MachineDeployments
	// make Machines with providers whose changes Tollgate claims, and no
	// rollout under way changes what Tollgate does not claim. When False,
	// CAPI replaces Machines, and its reason and message say why and what to
	// change. Set for rollouts whose target comes from CAPI.
	InPlaceUpdatesReadyCondition = "InPlaceUpdatesReady"

	// RemovalsCondition is True when no Machine CAPI deletes is held by
	// Tollgate's deletion hook (none is being deleted, or every one was
	// released). When False, its reason says what the held removal that
	// most needs a look waits for, and its message names every held Machine
	// and why (status.removals has the details).
	RemovalsCondition = "Removals"

	// MachineConfigsCondition is True when the machine configuration every
	// node should run, by the patches of the Talos templates its Machine
	// comes from (a MachineDeployment's TalosConfigTemplate, the
	// TalosControlPlane), can be applied to it in place, or there is no
	// change to apply. When False, its reason says why a change is not
	// applied and its message names the templates and fields.
	MachineConfigsCondition = "MachineConfigs"

	// KubernetesVersionsCondition is True when the Cluster's CAPI objects
	// ask for the Kubernetes version the rollout brings the nodes to, so
	// that CAPI neither replaces the Machines for it nor makes new ones on
	// another version; set only on a rollout with spec.kubernetesVersion.
	// When False, the rollout changes no Kubernetes version, and the
	// message names the object, its field and what to set.
	KubernetesVersionsCondition = "KubernetesVersions"
)

// KubernetesVersions condition reasons.
const (
	// KubernetesVersionsAgreeReason surfaces when every CAPI object that
	// makes the Cluster's Machines asks for the rollout's Kubernetes
	// version, and none of them replaces Machines for it.
	KubernetesVersionsAgreeReason = "Agree"

	// KubernetesVersionsDisagreeReason surfaces when a TalosControlPlane or
	// a MachineDeployment asks for another Kubernetes version than the
	// rollout: Tollgate waits for the user to change it, in Git, to the
	// rollout's version.
	KubernetesVersionsDisagreeReason = "Disagree"

	// KubernetesReplacesMachinesReason surfaces when a TalosControlPlane or
	// a MachineDeployment would replace its Machines for the version
	// change (its rollout strategy is not OnDelete): Tollgate does not
	// upgrade in place what CAPI is about to replace.
	KubernetesReplacesMachinesReason = "ReplacesMachines"

	// KubernetesVersionsUnknownReason surfaces when an object that makes
	// the Cluster's Machines cannot be read now (GitOps may create it
	// later).
	KubernetesVersionsUnknownReason = "Unknown"
)

// MachineConfigs condition reasons.
const (
	// MachineConfigsApplicableReason surfaces when every change of the
	// templates' patches can be applied in place, or there is none.
	MachineConfigsApplicableReason = "Applicable"

	// MachineConfigPatchesInvalidReason surfaces when the patches of a
	// template cannot be read or do not apply to a node's configuration:
	// nothing is applied until the template is fixed.
	MachineConfigPatchesInvalidReason = "PatchesInvalid"

	// MachineConfigNotInPlaceReason surfaces when the patches of a template
	// change what cannot change on a running node (its cluster's CA, its
	// machine type, ...): they are not applied; new Machines boot with
	// them, and replacing the Machines is the way to bring them to the
	// others.
	MachineConfigNotInPlaceReason = "NotInPlace"

	// MachineConfigsUnknownReason surfaces when a template's patches cannot
	// be read now.
	MachineConfigsUnknownReason = "Unknown"
)

// Removals condition reasons: what the Machines CAPI deletes wait for. When
// several are held for different reasons, the condition takes the first of
// RemovalHookFailed, RemovalWorkloadUnreachable, RemovalWaitingForEtcd,
// RemovalWaitingForHealthChecks, RemovalWaitingForBudget,
// RemovalWaitingForHooks and RemovalHeld. Each also surfaces on its
// Machine's record (status.removals[].reason).
const (
	// RemovalsNotHeldReason surfaces when no Machine CAPI deletes is held.
	RemovalsNotHeldReason = "NotHeld"

	// RemovalHookFailedReason surfaces when a preRemoval hook of a held
	// Machine failed after its retries: the Machine is held until its
	// removal timeout, unless spec.bypass.machines retries or skips the hook.
	RemovalHookFailedReason = "RemovalHookFailed"

	// RemovalWorkloadUnreachableReason surfaces when the workload cluster
	// cannot be reached, where a held Machine's hooks run and its checks and
	// budget are read: it is held until its removal timeout.
	RemovalWorkloadUnreachableReason = "RemovalWorkloadUnreachable"

	// RemovalWaitingForEtcdReason surfaces when a held control-plane
	// Machine waits for every etcd member to be healthy.
	RemovalWaitingForEtcdReason = "RemovalWaitingForEtcd"

	// RemovalWaitingForHealthChecksReason surfaces when a held Machine waits
	// for the ClusterHealthChecks to pass.
	RemovalWaitingForHealthChecksReason = "RemovalWaitingForHealthChecks"

	// RemovalWaitingForBudgetReason surfaces when a held Machine waits for
	// room in the disruption budget of its group, or for the removal ahead
	// of it in its group (one at a time per group).
	RemovalWaitingForBudgetReason = "RemovalWaitingForBudget"

	// RemovalWaitingForHooksReason surfaces when a held Machine waits for its
	// preRemoval hooks to succeed.
	RemovalWaitingForHooksReason = "RemovalWaitingForHooks"

	// RemovalHeldReason surfaces when a Machine is held and its record does
	// not say what for yet (a record the next reconcile of it decides on).
	RemovalHeldReason = "RemovalHeld"
)

// InPlaceUpdatesReady condition reasons.
const (
	// InPlaceUpdatesReadyReason surfaces when CAPI hands the changes
	// Tollgate claims to Tollgate.
	InPlaceUpdatesReadyReason = "Ready"

	// ExtensionNotDiscoveredReason surfaces when CAPI has discovered no
	// in-place update extension: no ExtensionConfig registers one, CAPI's
	// discovery of it failed, or CAPI runs without its RuntimeSDK feature
	// gate and discovers nothing.
	ExtensionNotDiscoveredReason = "ExtensionNotDiscovered"

	// NamespaceNotSelectedReason surfaces when the in-place update extension
	// does not serve the Cluster's namespace (its ExtensionConfig's
	// namespaceSelector).
	NamespaceNotSelectedReason = "NamespaceNotSelected"

	// ExtensionConflictReason surfaces when more than one extension serves
	// CAPI's in-place update hooks for the Cluster's namespace: CAPI then
	// updates nothing in place.
	ExtensionConflictReason = "ExtensionConflict"

	// ProvidersNotSupportedReason surfaces when a MachineDeployment makes
	// Machines from a provider whose changes Tollgate does not make in
	// place.
	ProvidersNotSupportedReason = "ProvidersNotSupported"

	// ReplacementAheadReason surfaces when a MachineDeployment's template
	// changed in a way Tollgate does not make in place: CAPI replaces the
	// Machines of its older MachineSets.
	ReplacementAheadReason = "ReplacementAhead"

	// InPlaceUpdatesUnknownReason surfaces when what CAPI will do cannot be
	// told: an object it depends on cannot be read.
	InPlaceUpdatesUnknownReason = "InPlaceUpdatesUnknown"
)

// TemplatesOnTarget condition reasons.
const (
	// TemplatesOnTargetReason surfaces when every template of the Cluster's
	// new Machines boots the target.
	TemplatesOnTargetReason = "OnTarget"

	// TemplatesDriftedReason surfaces when a template of the Cluster's new
	// Machines boots another version than the target.
	TemplatesDriftedReason = "TemplatesDrifted"

	// TemplatesUnknownReason surfaces when Tollgate cannot tell which Talos
	// a template boots: it cannot be read, or Tollgate knows no field of its
	// kind that names a Talos image.
	TemplatesUnknownReason = "TemplatesUnknown"
)

// PreflightSucceeded condition reasons: why a rollout may or may not start
// touching Machines.
const (
	// PreflightPassedReason surfaces when every preflight check passed.
	PreflightPassedReason = "PreflightPassed"

	// InstallerImageNotFoundReason surfaces when the installer image does not
	// exist in its registry or cannot be read.
	InstallerImageNotFoundReason = "InstallerImageNotFound"

	// TalosConfigInvalidReason surfaces when the <cluster>-talosconfig Secret
	// is missing or cannot be parsed, or its credentials are refused.
	TalosConfigInvalidReason = "TalosConfigInvalid"

	// NodeUnreachableReason surfaces when a node's Talos API does not answer.
	NodeUnreachableReason = "NodeUnreachable"

	// ConflictingUpgradeReason surfaces when another active TalosUpgrade
	// covers the same Cluster.
	ConflictingUpgradeReason = "ConflictingUpgrade"

	// UnsupportedVersionStepReason surfaces when a Machine cannot go from its
	// version to the target in one step, or the target does not support the
	// Cluster's Kubernetes version.
	UnsupportedVersionStepReason = "UnsupportedVersionStep"

	// HealthCheckNotFoundReason surfaces when a referenced ClusterHealthCheck
	// does not exist; the rollout waits until it is created.
	HealthCheckNotFoundReason = "HealthCheckNotFound"

	// ReleasesUnavailableReason surfaces when the releases of the installer
	// repository, or those of the nodes' kubelet repository for the
	// Kubernetes minors in between, cannot be listed to plan an Auto upgrade
	// path.
	ReleasesUnavailableReason = "ReleasesUnavailable"
)

// HealthChecksPassing condition reasons.
const (
	// HealthChecksPassedReason surfaces when every health check passed.
	HealthChecksPassedReason = "HealthChecksPassed"

	// HealthChecksFailingReason surfaces when at least one health check failed.
	HealthChecksFailingReason = "HealthChecksFailing"

	// HealthChecksRunningReason surfaces while health-check Jobs run.
	HealthChecksRunningReason = "HealthChecksRunning"

	// HealthChecksBypassedReason surfaces when health checks are bypassed.
	HealthChecksBypassedReason = "HealthChecksBypassed"

	// HealthCheckUnavailableReason surfaces while a referenced
	// ClusterHealthCheck is missing or cannot be read: the gate it is part of
	// stays closed.
	HealthCheckUnavailableReason = "HealthCheckUnavailable"
)

// Progressing condition reasons: what the rollout does, or what keeps its next
// Machine from starting (also status.blockedBy). WorkloadAPINotReady also
// surfaces on PreflightSucceeded.
const (
	// MachinesUpgradingReason surfaces while Machines are being upgraded.
	MachinesUpgradingReason = "MachinesUpgrading"

	// WaitingForHoldReason surfaces while a Machine waits for hook holds.
	WaitingForHoldReason = "WaitingForHold"

	// WaitingForHealthChecksReason surfaces while health checks hold the
	// next Machine.
	WaitingForHealthChecksReason = "WaitingForHealthChecks"

	// WaitingForMaintenanceWindowReason surfaces while no maintenance window
	// is open.
	WaitingForMaintenanceWindowReason = "WaitingForMaintenanceWindow"

	// WaitingForEtcdReason surfaces while etcd is not healthy enough to take
	// a control-plane Machine down.
	WaitingForEtcdReason = "WaitingForEtcd"

	// WaitingForClusterSlotReason surfaces while the rollout has not been
	// admitted: the policy's maxClustersInProgress is reached by other
	// Clusters.
	WaitingForClusterSlotReason = "WaitingForClusterSlot"

	// WaitingForFailureBudgetReason surfaces while the rollout has not been
	// admitted because its policy admits no new Cluster: maxFailedClusters
	// rollouts to the policy's target failed (the policy's Admitting
	// condition is FailureBudgetExhausted). While its canaries run or one of
	// them failed, a Cluster that is not a canary waits with the reason
	// WaitingForCanaries instead.
	WaitingForFailureBudgetReason = "WaitingForFailureBudget"

	// WaitingForKubeProxyReason surfaces while the kube-proxy DaemonSet
	// rolls out the Kubernetes version its control plane moved to: the
	// kubelets wait for it.
	WaitingForKubeProxyReason = "WaitingForKubeProxy"

	// WaitingForKubernetesVersionsReason surfaces while the Cluster's CAPI
	// objects do not ask for the rollout's Kubernetes version (the
	// KubernetesVersions condition says which and what to change): no
	// Machine starts.
	WaitingForKubernetesVersionsReason = "WaitingForKubernetesVersions"

	// WaitingForPreflightReason surfaces while the preflight checks of an
	// admitted rollout have not passed yet.
	WaitingForPreflightReason = "WaitingForPreflight"

	// WaitingForMachinesReason surfaces while the next Machines to upgrade
	// are not known well enough to start: a Machine that joined has no node,
	// no Talos version or no role yet.
	WaitingForMachinesReason = "WaitingForMachines"

	// WorkloadAPINotReadyReason surfaces when the workload cluster's API
	// server cannot be reached.
	WorkloadAPINotReadyReason = "WorkloadAPINotReady"

	// ClusterNotFoundReason surfaces while the CAPI Cluster of the rollout
	// does not exist.
	ClusterNotFoundReason = "ClusterNotFound"
)

// Paused condition reasons; each also surfaces on Progressing while it holds
// the rollout.
const (
	// RolloutPausedReason surfaces while the rollout is paused by a user.
	RolloutPausedReason = "RolloutPaused"

	// ClusterPausedReason surfaces while the CAPI Cluster is paused.
	ClusterPausedReason = "ClusterPaused"

	// FailurePolicyPausedReason surfaces when the failure policy paused the
	// rollout after maxFailures.
	FailurePolicyPausedReason = "FailurePolicyPaused"
)

// Completed condition reasons: how the rollout ended; each also surfaces on
// Progressing once it ended.
const (
	// UpgradeCompletedReason surfaces when every Machine runs the target version.
	UpgradeCompletedReason = "UpgradeCompleted"

	// MachineFailedReason surfaces when a Machine failed: the message names
	// the Machine and why.
	MachineFailedReason = "MachineFailed"

	// ClusterLeftPolicyReason surfaces when the Cluster no longer carries the
	// policy label of the rollout: no Machine starts, Machines in flight
	// finish, and the rollout ends Detached.
	ClusterLeftPolicyReason = "ClusterLeftPolicy"

	// RolloutCancelledReason surfaces when a user cancelled the rollout.
	RolloutCancelledReason = "RolloutCancelled"
)

// Bypassed condition reasons.
const (
	// BypassRequestedReason is the reason of the Bypassed condition while an
	// administrator bypasses a gate; the message says what, who and why.
	BypassRequestedReason = "BypassRequested"
)

// UpgradePhase is the phase of a whole rollout.
// +kubebuilder:validation:Enum=Pending;Preflight;WaitingForHealthChecks;InProgress;Paused;Completed;Failed;Detached
type UpgradePhase string

const (
	// UpgradePhasePending is a rollout not started yet.
	UpgradePhasePending UpgradePhase = "Pending"
	// UpgradePhasePreflight is a rollout running its preflight checks.
	UpgradePhasePreflight UpgradePhase = "Preflight"
	// UpgradePhaseWaitingForHealthChecks is a rollout held by health checks.
	UpgradePhaseWaitingForHealthChecks UpgradePhase = "WaitingForHealthChecks"
	// UpgradePhaseInProgress is a rollout upgrading Machines.
	UpgradePhaseInProgress UpgradePhase = "InProgress"
	// UpgradePhasePaused is a rollout that starts no new Machine.
	UpgradePhasePaused UpgradePhase = "Paused"
	// UpgradePhaseCompleted is a rollout whose Machines all run the target.
	UpgradePhaseCompleted UpgradePhase = "Completed"
	// UpgradePhaseFailed is a rollout stopped by its failure policy or cancelled.
	UpgradePhaseFailed UpgradePhase = "Failed"
	// UpgradePhaseDetached is a rollout whose Cluster left its policy: it
	// starts no Machine and goes back to work if the Cluster opts in again.
	UpgradePhaseDetached UpgradePhase = "Detached"
)

// Ended reports whether a rollout in phase p has ended: Completed, Failed or
// Detached. A rollout ended for its current spec is Finished.
func (p UpgradePhase) Ended() bool {
	switch p {
	case UpgradePhaseCompleted, UpgradePhaseFailed, UpgradePhaseDetached:
		return true
	}
	return false
}

// MachinePhase is the phase of one Machine's upgrade.
// +kubebuilder:validation:Enum=Pending;WaitingForHold;Draining;Upgrading;Rebooting;Verifying;Completed;Failed
type MachinePhase string

const (
	// MachinePhasePending is a Machine not started yet.
	MachinePhasePending MachinePhase = "Pending"
	// MachinePhaseWaitingForHold is a Machine waiting at a hook point
	// (holdPoint) for annotations or action hooks.
	MachinePhaseWaitingForHold MachinePhase = "WaitingForHold"
	// MachinePhaseDraining is a Machine whose node is cordoned and drained.
	MachinePhaseDraining MachinePhase = "Draining"
	// MachinePhaseUpgrading is a Machine whose new image is pulled and installed.
	MachinePhaseUpgrading MachinePhase = "Upgrading"
	// MachinePhaseRebooting is a Machine rebooting into the new image.
	MachinePhaseRebooting MachinePhase = "Rebooting"
	// MachinePhaseVerifying is a Machine whose version, boot ID and node
	// readiness are being checked.
	MachinePhaseVerifying MachinePhase = "Verifying"
	// MachinePhaseCompleted is a Machine running the target version.
	MachinePhaseCompleted MachinePhase = "Completed"
	// MachinePhaseFailed is a Machine whose upgrade failed; message says why.
	MachinePhaseFailed MachinePhase = "Failed"
)

// InFlight reports whether a Machine in phase p has started and not ended:
// Tollgate may have disrupted its node.
func (p MachinePhase) InFlight() bool {
	switch p {
	case MachinePhaseWaitingForHold, MachinePhaseDraining, MachinePhaseUpgrading, MachinePhaseRebooting, MachinePhaseVerifying:
		return true
	}
	return false
}

// Ended reports whether a Machine in phase p has ended, Completed or Failed.
func (p MachinePhase) Ended() bool {
	return p == MachinePhaseCompleted || p == MachinePhaseFailed
}

// MachineAction is what a Machine's record does to its node.
// +kubebuilder:validation:Enum=Upgrade;Reboot;Configure;Kubernetes
type MachineAction string

const (
	// MachineActionUpgrade installs the target Talos version and reboots the
	// node into it.
	MachineActionUpgrade MachineAction = "Upgrade"
	// MachineActionReboot reboots the node on the version it runs.
	MachineActionReboot MachineAction = "Reboot"
	// MachineActionConfigure applies to the node the machine configuration
	// of its Talos template (see MachineConfigStatus): without a reboot when
	// Talos allows it, else staged and rebooted through the flow.
	MachineActionConfigure MachineAction = "Configure"
	// MachineActionKubernetes changes the Kubernetes version of the node
	// without a reboot (see MachineKubernetesStatus): its control-plane
	// components, or its kubelet.
	MachineActionKubernetes MachineAction = "Kubernetes"
)

// KubernetesPart is the part of a node's Kubernetes that a record changes.
// +kubebuilder:validation:Enum=ControlPlane;Kubelet
type KubernetesPart string

const (
	// KubernetesPartControlPlane is the kube-apiserver,
	// kube-controller-manager and kube-scheduler of a control-plane node,
	// static Pods of its kubelet: done once they run the version and are
	// Ready.
	KubernetesPartControlPlane KubernetesPart = "ControlPlane"
	// KubernetesPartKubelet is the kubelet of a node: done once its Node
	// reports the version.
	KubernetesPartKubelet KubernetesPart = "Kubelet"
)

// MachineKubernetesStatus records the Kubernetes change a record brings its
// node to.
type MachineKubernetesStatus struct {
	// part is what the record changes.
	// +required
	Part KubernetesPart `json:"part"`

	// fromVersion is the version the part ran when the record started.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	FromVersion string `json:"fromVersion,omitempty"`

	// version is the version the part is changed to.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`

	// state is Pending until the node's machine configuration names the
	// version (Applied; staged for its boot when its Talos version changes
	// too), and Converged once what runs says so: the static Pods Ready on
	// the version, or the Node's kubeletVersion.
	// +optional
	State MachineConfigState `json:"state,omitempty"`

	// appliedTime is when the version was first applied to the node's
	// machine configuration: the control-plane static Pods must be Ready on
	// it within the rollout's rebootTimeout.
	// +optional
	AppliedTime *metav1.Time `json:"appliedTime,omitempty"`
}

// MachineConfigState is where a node stands with the machine configuration
// its record brings it to.
// +kubebuilder:validation:Enum=Unknown;Converged;Pending;Applied;Refused
type MachineConfigState string

const (
	// MachineConfigUnknown is a node whose configuration was not read yet.
	MachineConfigUnknown MachineConfigState = "Unknown"
	// MachineConfigConverged is a node that runs the patches already.
	MachineConfigConverged MachineConfigState = "Converged"
	// MachineConfigPending is a node the record applies the patches to.
	MachineConfigPending MachineConfigState = "Pending"
	// MachineConfigApplied is a node that runs the patches since its record
	// applied them.
	MachineConfigApplied MachineConfigState = "Applied"
	// MachineConfigRefused is a node the patches cannot be applied to in
	// place (see the MachineConfigs condition): the record does not apply
	// them.
	MachineConfigRefused MachineConfigState = "Refused"
)

// MachineConfigStatus records the machine configuration a record brings its
// node to. A machine configuration holds the node's secrets: it is never
// recorded, only where its patches come from and a hash of them.
type MachineConfigStatus struct {
	// source is the template whose patches the node should run, for
	// example "TalosConfigTemplate alpha-md-0".
	// +required
	// +kubebuilder:validation:MaxLength=512
	Source string `json:"source"`

	// hash identifies the patches.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Hash string `json:"hash"`

	// state is where the node stands with the patches.
	// +optional
	State MachineConfigState `json:"state,omitempty"`

	// appliedTime is set before the configuration is sent to the node.
	// +optional
	AppliedTime *metav1.Time `json:"appliedTime,omitempty"`

	// rebootRequired is set when the node takes the configuration only at
	// its next boot (Talos refused to apply it without a reboot): it was
	// staged, and the node is rebooted through the flow.
	// +optional
	RebootRequired bool `json:"rebootRequired,omitempty"`

	// message says why the patches are refused.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// MachineRole is the role of a Machine in its Cluster.
// +kubebuilder:validation:Enum=ControlPlane;Worker
type MachineRole string

const (
	// MachineRoleControlPlane is a control-plane Machine.
	MachineRoleControlPlane MachineRole = "ControlPlane"
	// MachineRoleWorker is a worker Machine.
	MachineRoleWorker MachineRole = "Worker"
)

// HoldPoint is a point of a Machine's upgrade where it can be held.
// +kubebuilder:validation:Enum=preDrain;preReboot;postUpgrade
type HoldPoint string

const (
	// HoldPointPreDrain is before the node is cordoned.
	HoldPointPreDrain HoldPoint = "preDrain"
	// HoldPointPreReboot is after the image is installed, before the reboot.
	HoldPointPreReboot HoldPoint = "preReboot"
	// HoldPointPostUpgrade is after the node is back Ready on the target,
	// while it is still cordoned: it is uncordoned once the post-upgrade
	// holds are released and its nodePreReady hooks succeeded.
	HoldPointPostUpgrade HoldPoint = "postUpgrade"
)

// TalosUpgradeSpec is the desired state of a TalosUpgrade: the plan of its
// policy, resolved for one Cluster, and the controls a user may change.
// +kubebuilder:validation:XValidation:rule="has(self.talosVersion)",message="talosVersion is required"
type TalosUpgradeSpec struct {
	// clusterName is the name of the CAPI Cluster, in the same namespace,
	// that this rollout upgrades.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName"`

	// policyName is the name of the TalosUpgradePolicy this rollout comes from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PolicyName string `json:"policyName"`

	UpgradePlan `json:",inline"`

	// paused stops the rollout from starting new Machines; Machines already
	// started finish. Set it back to false to resume.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// cancel stops the rollout for good: no new Machine starts, Machines
	// already started finish, and the rollout ends Failed with reason
	// RolloutCancelled.
	// +optional
	Cancel bool `json:"cancel,omitempty"`

	// bypass lets an administrator proceed past broken safety gates for this
	// Cluster.
	// +optional
	Bypass *BypassSpec `json:"bypass,omitempty"`
}

// TalosUpgradeStatus is the observed state of a TalosUpgrade.
type TalosUpgradeStatus struct {
	// conditions describe the state of the rollout.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is the phase of the rollout.
	// +optional
	Phase UpgradePhase `json:"phase,omitempty"`

	// blockedBy says, in a sentence, what the rollout waits for, for example
	// `waiting for healthchecks to pass: "ceph": HEALTH_WARN` or
	// `machine "cp-0" held at preDrain by "backup-operator"`.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	BlockedBy string `json:"blockedBy,omitempty"`

	// progress is "<completed>/<total>" Machines, for kubectl get.
	// +optional
	Progress string `json:"progress,omitempty"`

	// completedMachines is the number of Machines on the target version.
	// +optional
	CompletedMachines int32 `json:"completedMachines,omitempty"`

	// totalMachines is the number of Machines the rollout covers.
	// +optional
	TotalMachines int32 `json:"totalMachines,omitempty"`

	// failedMachines is the number of Machines whose upgrade failed.
	// +optional
	FailedMachines int32 `json:"failedMachines,omitempty"`

	// startTime is when the first Machine started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the rollout ended, Completed or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// installerImages are the installer image references resolved for the
	// Machines, one entry per distinct reference.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	InstallerImages []string `json:"installerImages,omitempty"`

	// targets say, for each object of the Cluster that makes Machines (its
	// control plane, each MachineDeployment, each Machine that neither
	// makes), which Talos version its Machines go to and where that version
	// was written: the object's upgrade.tollgate.dev/desired-talos-version
	// annotation, which wins, or the policy's target. Listed once an object
	// declares a version; empty while the whole Cluster goes to the
	// policy's target.
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Targets []TargetStatus `json:"targets,omitempty"`

	// unavailableVersions are the Talos versions the Cluster's objects
	// declare whose installer image the preflight did not find: their
	// Machines wait, and the image is looked for again.
	// +listType=map
	// +listMapKey=talosVersion
	// +kubebuilder:validation:MaxItems=32
	// +optional
	UnavailableVersions []UnavailableVersion `json:"unavailableVersions,omitempty"`

	// declaredPaths are the upgrade paths (spec.upgradePath Auto) planned
	// to the Talos versions the Cluster's objects declare, for the objects
	// whose Machines cannot reach theirs in one upgrade: one per object,
	// planned at the preflight and kept while the object declares that
	// version, so that a restart resumes on its hop and a release pushed
	// meanwhile does not change it.
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +optional
	DeclaredPaths []DeclaredPathStatus `json:"declaredPaths,omitempty"`

	// path is the upgrade path of the rollout (spec.upgradePath Auto): its
	// hops, the target last, planned once per target at the preflight, and
	// where the rollout is on it. Empty for a direct rollout.
	// +optional
	Path *UpgradePathStatus `json:"path,omitempty"`

	// machines records the upgrade of every Machine of the Cluster, one
	// record per Machine name.
	//
	// The list is atomic: the controller alone writes it, always as a whole
	// (a merge patch replaces a list), and a map list made the apiserver
	// track the managed fields of every field of every record at every
	// write, about half of the cost of a status write of a large Cluster.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	// +optional
	Machines []MachineUpgradeStatus `json:"machines,omitempty"`

	// removals records the Machines of the Cluster that CAPI deletes and
	// Tollgate's pre-drain deletion hook holds or released, one record per
	// Machine, until the Machine is gone.
	// +listType=map
	// +listMapKey=machine
	// +kubebuilder:validation:MaxItems=10000
	// +optional
	Removals []MachineRemovalStatus `json:"removals,omitempty"`

	// healthChecks records the last result of every referenced health check.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	HealthChecks []HealthCheckStatus `json:"healthChecks,omitempty"`

	// preflightTarget is the target (version and installer) the last
	// successful preflight checked; the preflight runs again when it changes.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	PreflightTarget string `json:"preflightTarget,omitempty"`

	// acknowledgedFailures is the number of failed Machines accepted by a
	// user who resumed a rollout that the failure policy paused; only the
	// failures beyond it count against failurePolicy.maxFailures.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AcknowledgedFailures int32 `json:"acknowledgedFailures,omitempty"`

	// nextMachineNotBefore is the earliest time the next Machine may start,
	// set from rollout.delayBetweenMachines.
	// +optional
	NextMachineNotBefore *metav1.Time `json:"nextMachineNotBefore,omitempty"`

	// bypassHistory is the durable record of the bypasses that were in force
	// for the rollout, its own (spec.bypass) and its policy's: who asked for
	// each, why, what it took away and when the controller first applied
	// it. A bypass is cleared when the rollout ends and its Events expire;
	// this record stays with the TalosUpgrade. The oldest records go beyond
	// 32.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	BypassHistory []BypassRecord `json:"bypassHistory,omitempty"`
}

// BypassSource names what a BypassRecord records: the object whose
// spec.bypass it was, or a break-glass release of Tollgate's hooks.
// +kubebuilder:validation:Enum=TalosUpgrade;TalosUpgradePolicy;ReleaseHooks
type BypassSource string

const (
	// BypassSourceUpgrade is the rollout's own spec.bypass.
	BypassSourceUpgrade BypassSource = "TalosUpgrade"
	// BypassSourcePolicy is the spec.bypass of the rollout's policy.
	BypassSourcePolicy BypassSource = "TalosUpgradePolicy"
	// BypassSourceReleaseHooks is `kubectl tollgate release-hooks`, the
	// break-glass that released Tollgate's deletion hook from the Cluster's
	// Machines while Tollgate was not running.
	BypassSourceReleaseHooks BypassSource = "ReleaseHooks"
)

// BypassRecord records one bypass that was in force for a rollout.
type BypassRecord struct {
	// source is the object whose spec.bypass it was (TalosUpgrade,
	// TalosUpgradePolicy), or ReleaseHooks for a break-glass release of
	// Tollgate's deletion hooks.
	// +required
	Source BypassSource `json:"source"`

	// requestedBy is who asked for the bypass, as its requestedBy said.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`

	// reason is why, as its reason said.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`

	// bypassed says what the bypass took away: the health checks, the
	// maintenance windows, a Machine's hook, the holds of owners.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Bypassed string `json:"bypassed"`

	// appliedTime is when the controller first found the bypass in force
	// for the rollout.
	// +required
	AppliedTime metav1.Time `json:"appliedTime"`
}

// MachineUpgradeStatus is the durable record of one Machine's upgrade. Every
// side effect is recorded here before it is made, so that a controller that
// restarts resumes without repeating or skipping a step.
type MachineUpgradeStatus struct {
	// machine is the name of the CAPI Machine.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Machine string `json:"machine"`

	// node is the name of the Machine's workload Node.
	// +optional
	Node string `json:"node,omitempty"`

	// role is ControlPlane or Worker.
	// +optional
	Role MachineRole `json:"role,omitempty"`

	// group is the rollout group of a worker: a name from rollout.order or
	// the MachineDeployment.
	// +optional
	Group string `json:"group,omitempty"`

	// fromVersion is the Talos version the Machine ran before its upgrade.
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`

	// targetVersion is the Talos version the Machine is upgraded to.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`

	// action is what the record does to the Machine's node: Upgrade
	// installs the target version and reboots into it; Reboot reboots the
	// node on the version it runs, because a reboot was asked for
	// (rebootAfter). Empty is Upgrade.
	// +optional
	Action MachineAction `json:"action,omitempty"`

	// rebootAfter is the reboot asked for the Machine's node when the record
	// started (spec.reboot.after, or the Machine's
	// upgrade.tollgate.dev/reboot-after annotation, the later of the two
	// that are due): the node is rebooted unless it booted after it. An
	// upgrade's reboot answers it too.
	// +optional
	RebootAfter *metav1.Time `json:"rebootAfter,omitempty"`

	// bootTime is when the node last booted, as the node said before its
	// record started; read only while a reboot is asked for.
	// +optional
	BootTime *metav1.Time `json:"bootTime,omitempty"`

	// config is the machine configuration the record brings the node to:
	// the patches of the Talos template its Machine comes from. An upgrade
	// or a reboot that also changes the configuration gives the node one
	// drain and one reboot.
	// +optional
	Config *MachineConfigStatus `json:"config,omitempty"`

	// kubernetes is the Kubernetes change the record brings the node to,
	// with its Talos upgrade (one drain and one reboot) or alone.
	// +optional
	Kubernetes *MachineKubernetesStatus `json:"kubernetes,omitempty"`

	// phase is the phase of the Machine's upgrade.
	// +optional
	Phase MachinePhase `json:"phase,omitempty"`

	// holdPoint is the point at which a Machine in phase WaitingForHold waits.
	// +optional
	HoldPoint HoldPoint `json:"holdPoint,omitempty"`

	// heldBy lists the owners of the hook annotations holding the Machine.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +optional
	HeldBy []string `json:"heldBy,omitempty"`

	// installerImage is the installer image reference for this Machine.
	// +optional
	InstallerImage string `json:"installerImage,omitempty"`

	// bootID is the node's boot ID read before the reboot; a different boot
	// ID afterwards proves the reboot happened.
	// +optional
	BootID string `json:"bootID,omitempty"`

	// cordoned records that Tollgate cordoned the node, so that only
	// Tollgate's own cordon is undone.
	// +optional
	Cordoned bool `json:"cordoned,omitempty"`

	// skipRemediationSet records that Tollgate added the
	// cluster.x-k8s.io/skip-remediation annotation to the Machine.
	// +optional
	SkipRemediationSet bool `json:"skipRemediationSet,omitempty"`

	// drainSkipped records that the node was cordoned but not drained: no
	// other schedulable node could take its Pods (a single-node Cluster,
	// say), so evicting them would only have left them Pending, or blocked
	// on their PodDisruptionBudgets until the drain timed out.
	// +optional
	DrainSkipped bool `json:"drainSkipped,omitempty"`

	// unreachableSince is when the node's Talos API first failed to answer
	// in the current phase; cleared when it answers. A disrupted Machine
	// whose node stays silent longer than nodeUnreachableTimeout fails.
	// +optional
	UnreachableSince *metav1.Time `json:"unreachableSince,omitempty"`

	// upgradeRequestedTime is set before the upgrade call is made. Once set,
	// the upgrade call is never made again for this Machine.
	// +optional
	UpgradeRequestedTime *metav1.Time `json:"upgradeRequestedTime,omitempty"`

	// upgradeInterrupted records that the upgrade call has no known outcome:
	// its request was sent and the node's answer lost. The call is not
	// repeated; whether the image was installed is known only once the node
	// has rebooted.
	// +optional
	UpgradeInterrupted bool `json:"upgradeInterrupted,omitempty"`

	// rebootRequestedTime is set before the reboot call is made.
	// +optional
	RebootRequestedTime *metav1.Time `json:"rebootRequestedTime,omitempty"`

	// startTime is when the Machine left Pending.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// phaseStartTime is when the Machine entered its current phase.
	// +optional
	PhaseStartTime *metav1.Time `json:"phaseStartTime,omitempty"`

	// completionTime is when the Machine reached Completed or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// phaseDurations records how long the Machine spent in each phase it
	// left, in seconds.
	// +listType=map
	// +listMapKey=phase
	// +kubebuilder:validation:MaxItems=16
	// +optional
	PhaseDurations []PhaseDuration `json:"phaseDurations,omitempty"`

	// hooks records the action hooks run for this Machine.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Hooks []HookRunStatus `json:"hooks,omitempty"`

	// message says what the Machine waits for, or why it failed.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// PhaseDuration is the time a Machine spent in one phase.
type PhaseDuration struct {
	// phase is the phase.
	// +required
	Phase MachinePhase `json:"phase"`

	// seconds is the time spent in the phase, in seconds.
	// +required
	// +kubebuilder:validation:Minimum=0
	Seconds int64 `json:"seconds"`
}

// UpgradePathStatus is the planned path of a rollout and where it is.
type UpgradePathStatus struct {
	// target is the spec.talosVersion the path was planned for: a new
	// target plans a new path.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Target string `json:"target"`

	// kubernetesTarget is the spec.kubernetesVersion the path was planned
	// for: a new one plans a new path.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	KubernetesTarget string `json:"kubernetesTarget,omitempty"`

	// hops are the versions the Machines go through, in order, the target
	// last. Every Machine is on hop k before any starts hop k+1.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +required
	Hops []UpgradeHop `json:"hops"`

	// current is the index in hops of the hop being rolled out.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Current int32 `json:"current,omitempty"`
}

// UpgradeHop is one hop of an upgrade path.
type UpgradeHop struct {
	// version is the Talos version of the hop.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`

	// kubernetesVersion is the Kubernetes version of the hop, when the
	// rollout has a Kubernetes target.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// stage is what the hop moves: "KubernetesControlPlane", the
	// Kubernetes components of the control-plane nodes, one at a time, and
	// then kube-proxy, or "Nodes" (the default), every node's Talos
	// version and kubelet. A hop that changes Kubernetes is two hops, its
	// control plane first: no kubelet is ever newer than an apiserver.
	// +optional
	Stage HopStage `json:"stage,omitempty"`

	// completedMachines is the number of Machines that completed the hop,
	// set when the rollout moved past it.
	// +optional
	CompletedMachines int32 `json:"completedMachines,omitempty"`
}

// HopStage is what a hop of an upgrade path moves.
// +kubebuilder:validation:Enum=KubernetesControlPlane;Nodes
type HopStage string

const (
	// HopStageKubernetesControlPlane moves the Kubernetes components of the
	// control-plane nodes, one at a time, then kube-proxy.
	HopStageKubernetesControlPlane HopStage = "KubernetesControlPlane"
	// HopStageNodes moves every node's Talos version and kubelet.
	HopStageNodes HopStage = "Nodes"
)

// RemovalCause is why CAPI deletes a Machine, as Tollgate tells it apart.
// +kubebuilder:validation:Enum=Deleted;Remediated;ClusterDeleted
type RemovalCause string

const (
	// RemovalCauseDeleted is a Machine deleted by its owner or a user: a
	// scale-down, a MachineDeployment or control plane rollout, a kubectl
	// delete. It waits for its hooks, the health checks and the budget, and
	// on the control plane, while its node is Ready, for etcd to be healthy.
	RemovalCauseDeleted RemovalCause = "Deleted"

	// RemovalCauseRemediated is a Machine a MachineHealthCheck found
	// unhealthy (its HealthCheckSucceeded condition is False, or its
	// OwnerRemediated condition is set): its node is dead or dying, so it
	// does not wait for the health checks nor, on the control plane, for
	// etcd health (its own member may be what is unhealthy), and a node
	// already unavailable takes nothing more from the budget.
	RemovalCauseRemediated RemovalCause = "Remediated"

	// RemovalCauseClusterDeleted is a Machine of a Cluster being deleted:
	// it is not held at all, on the control plane neither (etcd goes with
	// the Cluster).
	RemovalCauseClusterDeleted RemovalCause = "ClusterDeleted"
)

// RemovalPhase is where the removal of a Machine stands.
// +kubebuilder:validation:Enum=Held;Released
type RemovalPhase string

const (
	// RemovalPhaseHeld is a Machine whose deletion Tollgate's hook holds:
	// it waits for its turn, its preRemoval hooks, the health checks or
	// the budget; the record's message says which.
	RemovalPhaseHeld RemovalPhase = "Held"

	// RemovalPhaseReleased is a Machine whose hook Tollgate removed: CAPI
	// drains and deletes it. Until it is gone it counts against the
	// disruption budget of its group.
	RemovalPhaseReleased RemovalPhase = "Released"
)

// MachineRemovalStatus records the removal of one Machine CAPI deletes.
type MachineRemovalStatus struct {
	// machine is the name of the CAPI Machine.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Machine string `json:"machine"`

	// node is the name of the Machine's workload Node, if it has one.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Node string `json:"node,omitempty"`

	// group is the rollout group of the Machine, whose disruption budget
	// the removal counts against.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`

	// cause is why CAPI deletes the Machine.
	// +required
	Cause RemovalCause `json:"cause"`

	// phase is where the removal stands.
	// +required
	Phase RemovalPhase `json:"phase"`

	// startTime is when Tollgate saw the deletion; the hold ends at the
	// latest spec.removal.timeout after it.
	// +required
	StartTime metav1.Time `json:"startTime"`

	// releaseTime is when Tollgate removed its hook.
	// +optional
	ReleaseTime *metav1.Time `json:"releaseTime,omitempty"`

	// hooks records the preRemoval hooks of the Machine.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Hooks []HookRunStatus `json:"hooks,omitempty"`

	// reason says what a held Machine waits for, one of the Removals
	// condition's reasons; empty once it is released.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// message says what a held Machine waits for, or why it was released.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// HookRunPhase is the state of an action hook for one Machine.
// +kubebuilder:validation:Enum=Running;Succeeded;Failed;Skipped
type HookRunPhase string

const (
	// HookRunRunning is a hook whose Job runs or will be retried.
	HookRunRunning HookRunPhase = "Running"
	// HookRunSucceeded is a hook that succeeded; it is never run again for
	// the same Machine and point.
	HookRunSucceeded HookRunPhase = "Succeeded"
	// HookRunFailed is a hook that failed after its retries.
	HookRunFailed HookRunPhase = "Failed"

	// HookRunSkipped is a failed hook an administrator bypassed: it counts
	// as succeeded (spec.bypass.machines, action Skip).
	HookRunSkipped HookRunPhase = "Skipped"
)

// HookRunStatus records the runs of one action hook for one Machine.
type HookRunStatus struct {
	// name is the name of the hook in the plan.
	// +required
	Name string `json:"name"`

	// point is the hook's point.
	// +optional
	Point HookPoint `json:"point,omitempty"`

	// phase is the state of the hook.
	// +optional
	Phase HookRunPhase `json:"phase,omitempty"`

	// attempts is how many Jobs were started for the hook.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// jobName is the name of the hook's current or last Job.
	// +optional
	JobName string `json:"jobName,omitempty"`

	// nextAttemptTime is when a failed hook is run again.
	// +optional
	NextAttemptTime *metav1.Time `json:"nextAttemptTime,omitempty"`

	// message is the tail of the failed container's output.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// bypassedGeneration is the generation of the TalosUpgrade whose bypass
	// was applied to this hook (a Retry or a Skip): a bypass is applied once
	// per change of the spec.
	// +optional
	BypassedGeneration int64 `json:"bypassedGeneration,omitempty"`
}

// HealthCheckResult is the result of a health check.
// +kubebuilder:validation:Enum=Passed;Failed;Running;Unknown
type HealthCheckResult string

const (
	// HealthCheckPassed is a check that passed successThreshold times in a row.
	HealthCheckPassed HealthCheckResult = "Passed"
	// HealthCheckFailed is a check whose Job failed or timed out.
	HealthCheckFailed HealthCheckResult = "Failed"
	// HealthCheckRunning is a check whose Job runs.
	HealthCheckRunning HealthCheckResult = "Running"
	// HealthCheckUnknown is a check not run yet.
	HealthCheckUnknown HealthCheckResult = "Unknown"
)

// HealthCheckStatus is the last result of one health check for one Cluster.
type HealthCheckStatus struct {
	// name is the name of the ClusterHealthCheck.
	// +required
	Name string `json:"name"`

	// result is the last result.
	// +optional
	Result HealthCheckResult `json:"result,omitempty"`

	// consecutiveSuccesses counts the passes in a row.
	// +optional
	ConsecutiveSuccesses int32 `json:"consecutiveSuccesses,omitempty"`

	// jobName is the name of the check's current or last Job.
	// +optional
	JobName string `json:"jobName,omitempty"`

	// lastRunTime is when the last Job was started.
	// +optional
	LastRunTime *metav1.Time `json:"lastRunTime,omitempty"`

	// lastTransitionTime is when result last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`

	// nextRunTime is when the check runs again.
	// +optional
	NextRunTime *metav1.Time `json:"nextRunTime,omitempty"`

	// message is the failure reason: the tail of the failed container's
	// output, at most 256 characters.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=talosupgrades,scope=Namespaced,categories=tollgate,shortName=tu
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`,description="CAPI Cluster"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.talosVersion`,description="Target Talos version"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Phase of the rollout"
// +kubebuilder:printcolumn:name="Done",type=string,JSONPath=`.status.progress`,description="Machines completed / total"
// +kubebuilder:printcolumn:name="Blocked By",type=string,JSONPath=`.status.blockedBy`,description="What the rollout waits for"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TalosUpgrade is the rollout of a TalosUpgradePolicy to one CAPI Cluster.
// The controller creates it, named after the Cluster; users may only pause,
// cancel or bypass it.
type TalosUpgrade struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the plan of the rollout.
	// +required
	Spec TalosUpgradeSpec `json:"spec"`

	// status is the progress of the rollout.
	// +optional
	Status TalosUpgradeStatus `json:"status,omitempty,omitzero"`
}

// Finished reports whether the rollout is over for its current spec: it
// ended Completed, Failed or Detached, and the controller has seen the
// current generation. A finished rollout holds no slot of its policy's
// maxClustersInProgress, and no longer covers its Cluster: another rollout
// may start there. This is the one meaning of "over" for a rollout; the
// webhooks and the controllers both read it.
func (u *TalosUpgrade) Finished() bool {
	return u.Status.Phase.Ended() && u.Status.ObservedGeneration == u.Generation
}

// InProgress reports whether the rollout has started to take Machines down,
// or is about to, and has not ended Completed or Failed: its target must not
// change under it, and its Cluster must not move to another policy. A
// rollout still Pending or in Preflight has touched nothing and picks up a
// new target.
func (u *TalosUpgrade) InProgress() bool {
	switch u.Status.Phase {
	case UpgradePhaseCompleted, UpgradePhaseFailed:
		return false
	case UpgradePhaseInProgress, UpgradePhasePaused, UpgradePhaseWaitingForHealthChecks:
		return true
	}
	return u.Status.StartTime != nil
}

// GetConditions returns the conditions of the rollout.
func (u *TalosUpgrade) GetConditions() []metav1.Condition {
	return u.Status.Conditions
}

// SetConditions sets the conditions of the rollout.
func (u *TalosUpgrade) SetConditions(conditions []metav1.Condition) {
	u.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// TalosUpgradeList is a list of TalosUpgrade.
type TalosUpgradeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TalosUpgrade `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TalosUpgrade{}, &TalosUpgradeList{})
}
