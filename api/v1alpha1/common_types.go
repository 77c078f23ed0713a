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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PolicyLabel is the label a CAPI Cluster carries to opt in to a
// TalosUpgradePolicy: its value is the name of a policy in the Cluster's
// namespace.
const PolicyLabel = "upgrade.tollgate.dev/policy"

// InPlaceUpdatesNamespaceLabel is the label that, with the value
// InPlaceUpdatesEnabled, opts a namespace in to Tollgate's in-place update
// extension: the ExtensionConfig
// that config/ installs selects the namespaces that carry it, so CAPI asks
// Tollgate about the Machines of those namespaces only.
const InPlaceUpdatesNamespaceLabel = "upgrade.tollgate.dev/in-place-updates"

// InPlaceUpdatesEnabled is the value of InPlaceUpdatesNamespaceLabel that
// opts a namespace in.
const InPlaceUpdatesEnabled = "enabled"

// WorkloadConnectionAnnotation is set on a CAPI Cluster by the TalosUpgrade
// controller while a rollout needs the Cluster's workload cluster: from its
// admission until its clean-up there is done. Tollgate connects to the
// workload clusters of the Clusters that carry it, and to no other, so that
// a converged fleet costs no connection. Its value is the name of the
// TalosUpgrade.
const WorkloadConnectionAnnotation = "upgrade.tollgate.dev/workload-connection"

// UpgradePathMode is how a plan goes to its target.
// +kubebuilder:validation:Enum=Direct;Auto
type UpgradePathMode string

const (
	// UpgradePathDirect goes to the target in one step.
	UpgradePathDirect UpgradePathMode = "Direct"

	// UpgradePathAuto goes through the latest patch of every minor in
	// between.
	UpgradePathAuto UpgradePathMode = "Auto"
)

// TargetSource says where the Talos version a plan rolls out comes from.
// +kubebuilder:validation:Enum=Policy;CAPI;Channel
type TargetSource string

const (
	// TargetFromPolicy rolls out the policy's own target: talosVersion, or
	// the release it follows.
	TargetFromPolicy TargetSource = "Policy"

	// TargetFromCAPI rolls out what Cluster API asks for: the Talos version
	// of the machine templates, on the Machines CAPI updates in place
	// through Tollgate's UpdateMachine extension.
	TargetFromCAPI TargetSource = "CAPI"

	// TargetFromChannel rolls out what a ReleaseChannel grants each
	// Cluster: the version that last entered the Cluster's stage.
	TargetFromChannel TargetSource = "Channel"
)

// ChannelDriven reports whether the plan's target comes from a
// ReleaseChannel.
func (p *UpgradePlan) ChannelDriven() bool {
	return p.TargetFrom == TargetFromChannel
}

// CAPIDriven reports whether the plan's target comes from Cluster API's
// in-place updates.
func (p *UpgradePlan) CAPIDriven() bool {
	return p.TargetFrom == TargetFromCAPI
}

// RebootMode is how Talos reboots a node.
// +kubebuilder:validation:Enum=Default;PowerCycle
type RebootMode string

const (
	// RebootModeDefault lets Talos reboot the node its usual way.
	RebootModeDefault RebootMode = "Default"

	// RebootModePowerCycle power-cycles the node through its firmware.
	RebootModePowerCycle RebootMode = "PowerCycle"
)

// InstallerSource says where the Talos installer image comes from.
// +kubebuilder:validation:Enum=factory;ghcr;image
type InstallerSource string

const (
	// InstallerSourceFactory builds the image reference from the Talos Image
	// Factory: factory.talos.dev/<platform>-installer[-secureboot]/<schematic>:<version>.
	InstallerSourceFactory InstallerSource = "factory"

	// InstallerSourceGHCR uses the stock installer ghcr.io/siderolabs/installer:<version>.
	InstallerSourceGHCR InstallerSource = "ghcr"

	// InstallerSourceImage uses installer.repository with the target version as tag.
	InstallerSourceImage InstallerSource = "image"
)

// UpgradePlan is what a TalosUpgradePolicy asks for and what a TalosUpgrade
// carries out for one Cluster: the target, how to get there and how carefully.
type UpgradePlan struct {
	// talosVersion is the Talos version the Machines of the selected
	// Clusters are upgraded to, for example "v1.13.0". A version a
	// Cluster's own object declares (the annotation
	// upgrade.tollgate.dev/desired-talos-version of a MachineDeployment's
	// spec.template.metadata, of the control plane, or of a Machine that
	// neither makes) wins over it for the Machines that object makes. A
	// TalosUpgradePolicy may follow releases (spec.follow) instead, take
	// its target from CAPI or a ReleaseChannel (targetFrom), or name none:
	// each Cluster then keeps the Talos version its Machines run, but where
	// its objects declare one, and the policy keeps the gates (and may
	// change Kubernetes alone with kubernetesVersion).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`
	TalosVersion string `json:"talosVersion,omitempty"`

	// kubernetesVersion is the Kubernetes version the nodes of the selected
	// Clusters run once the rollout is done, for example "v1.36.0". It is
	// changed in place, over the Talos API and behind the same gates as a
	// Talos upgrade: the kube-apiserver, kube-controller-manager and
	// kube-scheduler of each control-plane node, one node at a time with
	// etcd healthy; then kube-proxy, when the Cluster runs it; then the
	// kubelet of every node, control plane first, workers within the
	// disruption budget. Kubernetes moves one minor at a time: with
	// upgradePath Auto, a target several minors ahead goes through the
	// newest release of each minor in between, listed from the kubelet
	// repository the nodes' configuration names; with Direct it is
	// refused. Without talosVersion (and neither follow nor targetFrom
	// CAPI), each Cluster keeps the Talos version its Machines run. With
	// talosVersion,
	// the two are planned together (status.path), through the Talos minors
	// in between with upgradePath Auto, every step a combination the Talos
	// support matrix accepts, and a node whose Talos version and kubelet
	// change in the same hop gets one drain and one reboot for both.
	//
	// The Cluster's CAPI objects must ask for the same version, so that
	// CAPI neither replaces the Machines for it nor makes new ones on the
	// old version: a TalosControlPlane's spec.version, with its
	// rolloutStrategy OnDelete, and each MachineDeployment's
	// spec.template.spec.version, with its rollout strategy OnDelete.
	// Tollgate never writes them; until they agree, the rollout waits and
	// its KubernetesVersions condition says what to change. Not set: the
	// Kubernetes version is left as it is.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// kubelet says how a node's kubelet changes version.
	// +optional
	Kubelet KubeletSpec `json:"kubelet,omitempty,omitzero"`

	// targetFrom says where the target comes from. "Policy" (the default):
	// talosVersion, or the release the policy follows, rolled out over every
	// Machine of the selected Clusters. "CAPI": the policy names no target;
	// when Cluster API updates a MachineDeployment's Machines in place (its
	// InPlaceUpdates feature), Tollgate's in-place update extension upgrades
	// each Machine CAPI hands it to the Talos version of its template, through
	// this policy's gates, hooks and budget. A TalosUpgrade of such a policy
	// carries the version CAPI asked for. "Channel": the policy names no
	// target; each Cluster gets the version the ReleaseChannel named by
	// channel grants its stage, once that version passed the stages
	// before (see ReleaseChannel).
	// +kubebuilder:default=Policy
	// +optional
	TargetFrom TargetSource `json:"targetFrom,omitempty"`

	// upgradePath says how Machines get to talosVersion. "Direct" (the
	// default): in one step, and a target Talos does not support in one step
	// from some Machine is refused. "Auto": through the latest stable patch
	// of every minor in between that the installer repository has (its tags,
	// listed with the pull Secret), each a complete, gated rollout of the
	// Cluster; Tollgate plans the path per Cluster at its preflight, and the
	// TalosUpgrade's status.path shows it. A version a Cluster's object
	// declares is reached the same way, through a path of that object's
	// Machines (status.declaredPaths).
	// +kubebuilder:default=Direct
	// +optional
	UpgradePath UpgradePathMode `json:"upgradePath,omitempty"`

	// allowDowngrade must be true for a target older than the version some
	// Machine runs. Talos downgrades are supported only one minor back. A
	// TalosUpgradePolicy that follows releases cannot set it: its preflight
	// refusal keeps a Cluster ahead of the fleet from being downgraded.
	// +optional
	AllowDowngrade bool `json:"allowDowngrade,omitempty"`

	// allowPrerelease acknowledges that talosVersion is not a stable
	// release: a pre-release (alpha, beta, rc) or a build with metadata.
	// Without it such a target is refused.
	// +optional
	AllowPrerelease bool `json:"allowPrerelease,omitempty"`

	// installer says how to build the installer image reference.
	// +required
	Installer InstallerSpec `json:"installer"`

	// rollout sets the order and the pace of the rollout.
	// +optional
	Rollout RolloutSpec `json:"rollout,omitempty,omitzero"`

	// healthChecks are the ClusterHealthChecks, in the same namespace, that
	// must pass in the workload cluster before a Machine is taken down.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	HealthChecks []HealthCheckRef `json:"healthChecks,omitempty"`

	// hooks are Jobs run in the workload cluster for each Machine at the
	// points preDrain, preReboot, nodePreReady and nodeReady of its upgrade,
	// and preRemoval when CAPI deletes it. The Machine waits until all hooks
	// at a point succeed.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Hooks []ActionHook `json:"hooks,omitempty"`

	// drain configures how a node is drained before its upgrade.
	// +optional
	Drain DrainSpec `json:"drain,omitempty,omitzero"`

	// rebootTimeout is how long a Machine may take from its reboot to being
	// back Ready on the target version before it is marked Failed.
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s')",message="rebootTimeout must be at least 30s"
	// +optional
	RebootTimeout *metav1.Duration `json:"rebootTimeout,omitempty"`

	// rebootMode is how Talos reboots a Machine into its new version:
	// "Default" (a kexec or warm reboot, as Talos chooses) or "PowerCycle"
	// (a full power cycle through the firmware, for hardware that only comes
	// back cleanly that way). It is passed to the Talos API: to the Reboot
	// call on Talos 1.13 and later, and to the upgrade call of older nodes,
	// which reboots them.
	// +kubebuilder:default=Default
	// +optional
	RebootMode RebootMode `json:"rebootMode,omitempty"`

	// nodeUnreachableTimeout is how long the Talos API of a Machine's node
	// may stay silent, once the Machine is disrupted (its drain began),
	// before the Machine is marked Failed: its cordon and skip-remediation
	// annotation are removed, so that a MachineHealthCheck can act, and the
	// failure policy applies.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="nodeUnreachableTimeout must be at least 10s"
	// +optional
	NodeUnreachableTimeout *metav1.Duration `json:"nodeUnreachableTimeout,omitempty"`

	// failurePolicy says what happens when Machines fail.
	// +optional
	FailurePolicy FailurePolicySpec `json:"failurePolicy,omitempty,omitzero"`

	// removal configures how Tollgate gates the Machines CAPI deletes (a
	// scale-down, a MachineDeployment rollout, a MachineHealthCheck
	// remediation): its pre-drain deletion hook holds each until its
	// preRemoval hooks ran, the health checks pass and the disruption budget
	// has room, for at most timeout.
	// +optional
	Removal RemovalSpec `json:"removal,omitempty,omitzero"`

	// reboot asks for a rolling reboot of the nodes through the gate, for
	// instance after a change that takes effect at the next boot (a kernel
	// argument, a staged machine config). A single Machine's node is asked
	// for with the upgrade.tollgate.dev/reboot-after annotation on the
	// Machine instead.
	// +optional
	Reboot RebootSpec `json:"reboot,omitempty,omitzero"`

	// maintenance restricts when a Machine may start its upgrade. A Machine
	// already started always finishes.
	// +optional
	Maintenance *MaintenanceSpec `json:"maintenance,omitempty"`
}

// InstallerSpec says how to build the reference of the Talos installer image.
// +kubebuilder:validation:XValidation:rule="self.source != 'factory' || (has(self.platform) && size(self.platform) > 0)",message="platform is required when source is factory"
// +kubebuilder:validation:XValidation:rule="self.source != 'image' || (has(self.repository) && size(self.repository) > 0)",message="repository is required when source is image"
// +kubebuilder:validation:XValidation:rule="self.source == 'factory' || (!has(self.schematicID) && !has(self.secureBoot))",message="schematicID and secureBoot apply only when source is factory"
type InstallerSpec struct {
	// source is where the installer image comes from: "factory" (the Talos
	// Image Factory, keeping each node's extensions), "ghcr" (the stock
	// ghcr.io/siderolabs/installer) or "image" (your own repository).
	// +required
	Source InstallerSource `json:"source"`

	// platform is the Image Factory platform of the Machines, for example
	// "metal", "aws", "gcp", "nocloud" or "vmware". Required when source is
	// "factory".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Platform string `json:"platform,omitempty"`

	// schematicID is the Image Factory schematic (64 lowercase hex
	// characters) to install. When empty, every node keeps the schematic it
	// runs now, read from the node's "schematic" extension; a node without
	// one gets the default schematic.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	// +optional
	SchematicID string `json:"schematicID,omitempty"`

	// secureBoot selects the SecureBoot installer
	// (<platform>-installer-secureboot) from the Image Factory.
	// +optional
	SecureBoot *bool `json:"secureBoot,omitempty"`

	// repository is the image repository, without tag or digest, used when
	// source is "image"; the target version is the tag. For example
	// "registry.example.com/talos/installer".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Repository string `json:"repository,omitempty"`

	// pullSecretRef names a Secret of type kubernetes.io/dockerconfigjson in
	// the same namespace whose credentials are used to check that the
	// installer image exists before any Machine is touched.
	// +optional
	PullSecretRef *corev1.LocalObjectReference `json:"pullSecretRef,omitempty"`
}

// RolloutSpec sets the order and pace of a rollout: control plane first and
// one at a time, then the workers.
type RolloutSpec struct {
	// controlPlane configures the control-plane Machines, always upgraded
	// first.
	// +optional
	ControlPlane ControlPlaneRollout `json:"controlPlane,omitempty,omitzero"`

	// workers configures the worker Machines, upgraded once every
	// control-plane Machine is done.
	// +optional
	Workers WorkerRollout `json:"workers,omitempty,omitzero"`

	// order lists named groups of worker Machines, upgraded one group after
	// the other in this order. A Machine belongs to the first group whose
	// selector matches its labels; Machines no group selects come last,
	// grouped by MachineDeployment. When empty, workers are grouped by
	// MachineDeployment.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Order []RolloutGroup `json:"order,omitempty"`

	// delayBetweenMachines is how long to wait after a Machine completes
	// before the next one starts.
	// +optional
	DelayBetweenMachines *metav1.Duration `json:"delayBetweenMachines,omitempty"`

	// maxClustersInProgress is how many Clusters selected by a policy may
	// have a rollout in progress at once. It applies to the fleet of a
	// TalosUpgradePolicy, not to a single TalosUpgrade.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MaxClustersInProgress *int32 `json:"maxClustersInProgress,omitempty"`

	// maxFailedClusters is the fleet's failure budget: once this many
	// Clusters of the policy failed their rollout to the current target, no
	// new Cluster is admitted (rollouts at work go on), and the policy's
	// Admitting condition says why. Admission resumes only by an explicit
	// act: retry the failed rollouts (delete their TalosUpgrades, or bypass
	// their failed Machines) or raise the budget. Unset: no budget. It
	// applies to the fleet of a TalosUpgradePolicy.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MaxFailedClusters *int32 `json:"maxFailedClusters,omitempty"`

	// canaries are Clusters upgraded first: no other Cluster of the policy
	// is admitted until the rollout of every canary to the current target
	// Completed. It applies to the fleet of a TalosUpgradePolicy.
	// +optional
	Canaries *CanarySpec `json:"canaries,omitempty"`
}

// ControlPlaneRollout configures the rollout of the control-plane Machines.
type ControlPlaneRollout struct {
	// maxUnavailable is how many control-plane Machines may be disrupted at
	// once. It must be 1: taking down two etcd members at once risks quorum.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// WorkerRollout configures the rollout of the worker Machines.
type WorkerRollout struct {
	// maxUnavailable is how many worker Machines of one MachineDeployment (or
	// group) may be unavailable at once: an absolute number (at least 1) or a
	// percentage of the group's Machines, those CAPI deletes included (1%
	// to 100%, rounded down, at least 1 Machine). Every Machine whose node
	// is NotReady or cordoned counts against it, whatever its state in the
	// rollout, for the start of an upgrade and a removal alike.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="maxUnavailable must be an integer of at least 1 or a percentage from 1% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// CanarySpec names the canary Clusters of a fleet.
// +kubebuilder:validation:XValidation:rule="(has(self.clusterNames) && size(self.clusterNames) > 0) || has(self.count)",message="name canary Clusters in clusterNames, or give a count"
type CanarySpec struct {
	// clusterNames are canary Clusters, by name (Clusters of the policy's
	// namespace that select it).
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`

	// count makes the first count Clusters admitted to a target (in name
	// order, beside clusterNames) canaries too. They are chosen once per
	// target and recorded in the policy's status.canaries.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Count *int32 `json:"count,omitempty"`
}

// RolloutGroup is a named group of worker Machines.
type RolloutGroup struct {
	// name identifies the group in status and events.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// selector selects the Machines of the group by their labels.
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// maxUnavailable overrides workers.maxUnavailable for this group: an
	// absolute number (at least 1) or a percentage (1% to 100%). The
	// validating webhook checks its bounds.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// HealthCheckGate says which Machines a health check gates.
// +kubebuilder:validation:Enum=EveryMachine;FirstMachine
type HealthCheckGate string

const (
	// HealthCheckGateEveryMachine runs the check before every Machine.
	HealthCheckGateEveryMachine HealthCheckGate = "EveryMachine"

	// HealthCheckGateFirstMachine runs the check before the first Machine only.
	HealthCheckGateFirstMachine HealthCheckGate = "FirstMachine"
)

// HealthCheckRef references a ClusterHealthCheck in the same namespace.
type HealthCheckRef struct {
	// name is the name of the ClusterHealthCheck.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// gate says which Machines the check gates: every Machine (the default)
	// or only the first one of the rollout.
	// +kubebuilder:default=EveryMachine
	// +optional
	Gate HealthCheckGate `json:"gate,omitempty"`
}

// HookPoint is a point of a Machine's upgrade, or of its removal, where
// action hooks run.
// +kubebuilder:validation:Enum=preDrain;preReboot;nodePreReady;nodeReady;preRemoval
type HookPoint string

const (
	// HookPointPreDrain runs before the node is cordoned.
	HookPointPreDrain HookPoint = "preDrain"

	// HookPointPreReboot runs once the new image is installed and the node
	// drained, before the reboot.
	HookPointPreReboot HookPoint = "preReboot"

	// HookPointNodePreReady runs once the node is back Ready on the target
	// version, while it is still cordoned: no new workload lands on it until
	// these hooks succeeded and the post-upgrade holds are released.
	HookPointNodePreReady HookPoint = "nodePreReady"

	// HookPointNodeReady runs once the node is proven and uncordoned: it
	// takes work again.
	HookPointNodeReady HookPoint = "nodeReady"

	// HookPointPreRemoval runs once on a Machine CAPI deletes, before
	// Tollgate releases its pre-drain deletion hook and CAPI drains and
	// deletes the Machine (for example to take a Ceph node's OSDs out).
	HookPointPreRemoval HookPoint = "preRemoval"
)

// ActionHook is a Job run in the workload cluster for each Machine at a point
// of its upgrade, for example to set Ceph noout before a reboot.
type ActionHook struct {
	// name identifies the hook; it is part of the Job name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// point is when the hook runs: preDrain (before the cordon), preReboot
	// (drained and installed, before the reboot), nodePreReady (back Ready
	// on the target, still cordoned), nodeReady (uncordoned), or preRemoval
	// (the Machine is being deleted by CAPI, before its drain).
	// +required
	Point HookPoint `json:"point"`

	// template is the Job run in the workload cluster. Tollgate sets its name
	// and adds its own labels and the environment variables TOLLGATE_CLUSTER,
	// TOLLGATE_MACHINE, TOLLGATE_NODE, TOLLGATE_FROM_VERSION,
	// TOLLGATE_TO_VERSION, TOLLGATE_HOOK, TOLLGATE_HOOK_NAME and
	// TOLLGATE_ACTION (Upgrade, Reboot, Configure or Removal) to every
	// container; the rest
	// (image, command, service account, namespace, "default" when unset) is
	// yours.
	// +required
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template batchv1.JobTemplateSpec `json:"template"`

	// timeout is how long one run of the hook may take before it counts as
	// failed.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be positive"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// retries is how many times a failed hook is run again, with backoff,
	// before the Machine fails.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	Retries *int32 `json:"retries,omitempty"`
}

// KubeletDrain says whether a node is drained before its kubelet changes
// version without a reboot.
// +kubebuilder:validation:Enum=Drain;Never
type KubeletDrain string

const (
	// KubeletDrainDrain drains the node before its kubelet changes version,
	// as before a reboot: its Pods are evicted within their
	// PodDisruptionBudgets and the budget counts the node.
	KubeletDrainDrain KubeletDrain = "Drain"

	// KubeletDrainNever changes the kubelet of a cordoned node with its
	// Pods running, as talosctl upgrade-k8s does: the kubelet restarts and
	// finds its containers again. Quicker, but a Pod whose probes fail
	// while its kubelet restarts is not protected by its
	// PodDisruptionBudget.
	KubeletDrainNever KubeletDrain = "Never"
)

// KubeletSpec says how a node's kubelet changes version.
type KubeletSpec struct {
	// drain says whether a node is drained before its kubelet changes
	// version, when no reboot comes with it: "Drain" (the default) or
	// "Never". A node whose Talos version changes in the same hop is
	// drained for its reboot anyway.
	// +kubebuilder:default=Drain
	// +optional
	Drain KubeletDrain `json:"drain,omitempty"`
}

// RebootSpec asks for the nodes to be rebooted through the gate.
type RebootSpec struct {
	// The schema of after is a string its CEL rule checks, not the
	// date-time format of metav1.Time (Schemaless drops it; the Go type
	// stays metav1.Time): the apiserver's refusal of a format names no
	// example and keeps the CEL rules from running, and a defaulting webhook
	// would otherwise refuse "168h" first, decoding it (webhooks'
	// defaultingWebhook lets what does not decode through to the schema).

	// after asks for every node that last booted at or before this time
	// (to the second) to be rebooted once, the way its Talos upgrade would
	// be without the install: its preDrain holds and hooks, the health checks and the
	// disruption budget, the drain, its preReboot holds and hooks, the
	// reboot (rebootMode), the proof that it came back on a new boot and
	// the same Talos version, and its nodePreReady and nodeReady hooks.
	// As with a MachineDeployment's spec.rollout.after, a time in the
	// future schedules the reboot, and a later time asks for another one.
	// When a node booted is read from the node itself (its kernel's boot
	// time): a node that booted after this time for any reason (its
	// upgrade, a new Machine, a crash) is not rebooted again, and a node
	// that needs both an upgrade and a reboot gets one drain and one
	// reboot. It is a time in RFC 3339, for example "2026-12-24T22:00:00Z",
	// never a duration: for every node now, write the current time
	// (date -u +%Y-%m-%dT%H:%M:%SZ); for the nodes up longer than a week,
	// the time a week ago.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$') && !format.datetime().validate(self).hasValue()",messageExpression="'must be a time in RFC 3339, such as 2026-12-24T22:00:00Z (a date, T, a time of day to the second and a zone, Z for UTC)' + (self.matches('^-?[0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h|d|w)') ? ', not a duration' : '') + ': the nodes that last booted at or before it are rebooted once; for every node now, write the current time (date -u +%Y-%m-%dT%H:%M:%SZ), for the nodes up longer than a duration, the time that long ago'"
	// +optional
	After metav1.Time `json:"after,omitempty,omitzero"`
}

// RemovalSpec configures the gate of the Machines CAPI deletes.
type RemovalSpec struct {
	// timeout is how long Tollgate holds a Machine CAPI deletes, from when
	// it saw the deletion: past it, the Machine is released whatever it
	// waits for (its hooks, the health checks, the budget, an unreachable
	// workload cluster), with a Warning event, so that no deletion is
	// blocked for ever.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be positive"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// DrainSpec configures the drain of a node before its upgrade.
type DrainSpec struct {
	// timeout is how long a drain may take. When it is exceeded the Machine
	// fails; the drain is never forced.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be positive"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// respectPodDisruptionBudgets evicts Pods through the Eviction API, which
	// honours PodDisruptionBudgets. When false, Pods are deleted.
	// +kubebuilder:default=true
	// +optional
	RespectPodDisruptionBudgets *bool `json:"respectPodDisruptionBudgets,omitempty"`

	// ignoreDaemonSets leaves DaemonSet Pods in place. When false, a node
	// running DaemonSet Pods cannot be drained.
	// +kubebuilder:default=true
	// +optional
	IgnoreDaemonSets *bool `json:"ignoreDaemonSets,omitempty"`

	// deleteEmptyDirData evicts Pods that use emptyDir volumes, whose data is
	// lost. When false, such Pods block the drain.
	// +kubebuilder:default=true
	// +optional
	DeleteEmptyDirData *bool `json:"deleteEmptyDirData,omitempty"`

	// evictUnmanagedPods evicts Pods that no controller manages, which are
	// not re-created anywhere. When false, such Pods block the drain.
	// +kubebuilder:default=false
	// +optional
	EvictUnmanagedPods *bool `json:"evictUnmanagedPods,omitempty"`
}

// FailureAction is what happens to a rollout when Machines fail.
// +kubebuilder:validation:Enum=Halt;Pause
type FailureAction string

const (
	// FailureActionHalt marks the rollout Failed once maxFailures Machines
	// failed. No further Machine starts.
	FailureActionHalt FailureAction = "Halt"

	// FailureActionPause pauses the rollout once maxFailures Machines failed,
	// so that a user can fix the cause and resume.
	FailureActionPause FailureAction = "Pause"
)

// FailurePolicySpec says what happens when Machines fail.
type FailurePolicySpec struct {
	// action is "Halt" (the rollout becomes Failed) or "Pause" (the rollout
	// is paused until a user resumes it). Running Machines are never
	// interrupted.
	// +kubebuilder:default=Halt
	// +optional
	Action FailureAction `json:"action,omitempty"`

	// maxFailures is how many Machines may fail before the action is taken.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxFailures *int32 `json:"maxFailures,omitempty"`
}

// Weekday is a day of the week, in UTC.
// +kubebuilder:validation:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
type Weekday string

// MaintenanceSpec restricts when Machines may start their upgrade. It names
// windows, excluded dates or both: one that names neither restricts
// nothing and is refused.
// +kubebuilder:validation:XValidation:rule="(has(self.windows) && size(self.windows) > 0) || (has(self.excludeDates) && size(self.excludeDates) > 0)",message="restricts nothing: name the windows in which a Machine may start, or the excludeDates on which none does; remove maintenance to let Machines start at any time"
type MaintenanceSpec struct {
	// timeZone is the IANA time zone (for example "Europe/Berlin" or
	// "America/New_York") of the windows and the excluded dates; UTC when
	// unset. "Local", the zone of the host Tollgate runs on, is refused: the
	// windows would open at different times depending on where it runs. The
	// windows are wall-clock times of the zone: on the day its clocks jump
	// forward, a time they skip is the instant they jump (a window that
	// starts in the gap opens then, and one that lies wholly in it is closed
	// that day); on the day they go back, a time they pass twice is its first
	// occurrence (a window is open once).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self != 'Local'",message="is the zone of the host Tollgate runs on, so the windows would open at different times depending on where it runs: name an IANA time zone such as Europe/Berlin, or leave it unset for UTC"
	// +optional
	TimeZone string `json:"timeZone,omitempty"`

	// windows are the time windows, in timeZone, in which a Machine may
	// start its upgrade. When empty, any time outside excludeDates is
	// allowed.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Windows []MaintenanceWindow `json:"windows,omitempty"`

	// excludeDates are dates (YYYY-MM-DD, in timeZone) on which no Machine
	// starts, whatever the windows say.
	// +listType=set
	// +kubebuilder:validation:MaxItems=366
	// +kubebuilder:validation:items:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	// +optional
	ExcludeDates []string `json:"excludeDates,omitempty"`
}

// MaintenanceWindow is a daily window, in the time zone of its
// MaintenanceSpec, which may span midnight.
type MaintenanceWindow struct {
	// start is the time of day (HH:MM, 24-hour) at which the window opens.
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`

	// end is the time of day (HH:MM, 24-hour) at which the window closes. An end
	// earlier than start spans midnight: 22:00 to 04:00 closes the next day.
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	End string `json:"end"`

	// days are the days of the week on which the window opens. When empty,
	// every day.
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	// +optional
	Days []Weekday `json:"days,omitempty"`
}

// BypassSpec lets an administrator proceed past safety gates that are
// themselves broken. Every bypass needs a reason, records who asked for it
// (requestedBy, written by the admission webhook), is an event and the
// Bypassed condition, and is cleared by the controller when the rollout
// ends.
// +kubebuilder:validation:XValidation:rule="!((has(self.healthChecks) && self.healthChecks) || (has(self.maintenanceWindows) && self.maintenanceWindows) || (has(self.machines) && size(self.machines) > 0) || (has(self.holdOwners) && size(self.holdOwners) > 0)) || (has(self.reason) && size(self.reason) > 0)",message="reason is required: say why the bypass is needed",fieldPath=".reason"
type BypassSpec struct {
	// healthChecks proceeds without waiting for the ClusterHealthChecks.
	// +optional
	HealthChecks bool `json:"healthChecks,omitempty"`

	// maintenanceWindows runs now: Machines start outside the maintenance
	// windows and on excluded dates, for an urgent release. Like every
	// bypass it is one-off: cleared when the rollout ends.
	// +optional
	MaintenanceWindows bool `json:"maintenanceWindows,omitempty"`

	// machines bypass the failed action hook of single Machines: the
	// Machine, failed by the hook, starts again (with the rollout's gates and
	// budget, like any Machine that has not started) and its hook is run
	// once more (Retry) or counted as succeeded (Skip). A Machine CAPI
	// deletes whose preRemoval hook failed stays held, and its hook is run
	// once more or counted as succeeded in the same way. Only on a
	// TalosUpgrade, where Machines are named.
	// +listType=map
	// +listMapKey=machine
	// +listMapKey=hook
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Machines []MachineBypass `json:"machines,omitempty"`

	// holdOwners are hold owners (the <owner> of a
	// <point>.upgrade.hook.tollgate.dev/<owner> annotation) whose holds the
	// rollout passes, at every point: for an owner that is gone and left its
	// holds behind. Tollgate never removes the annotations; it proceeds past
	// them and records it.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	HoldOwners []string `json:"holdOwners,omitempty"`

	// reason says why the bypass is needed; it is required when anything is
	// bypassed, and shown in events and conditions.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`

	// requestedBy is the user who last changed the bypass, as the API
	// server authenticated them. The admission webhook writes it: a value
	// set in a request is replaced.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
}

// Any reports whether the bypass bypasses anything.
func (b *BypassSpec) Any() bool {
	return b != nil && (b.HealthChecks || b.MaintenanceWindows || len(b.Machines) > 0 || len(b.HoldOwners) > 0)
}

// HookBypassAction is what a bypass does with a Machine's failed hook.
// +kubebuilder:validation:Enum=Retry;Skip
type HookBypassAction string

const (
	// HookBypassRetry runs the failed hook once more.
	HookBypassRetry HookBypassAction = "Retry"

	// HookBypassSkip counts the failed hook as succeeded.
	HookBypassSkip HookBypassAction = "Skip"
)

// MachineBypass bypasses the failed action hook of one Machine.
type MachineBypass struct {
	// machine is the name of the CAPI Machine.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Machine string `json:"machine"`

	// hook is the name of the failed action hook (spec.hooks[].name).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	Hook string `json:"hook"`

	// action is Retry (run the hook once more) or Skip (count it as
	// succeeded).
	// +required
	Action HookBypassAction `json:"action"`
}
