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
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReleaseChannel condition types and reasons.
const (
	// ChannelReadyCondition is True when every stage of the channel resolves:
	// the policies it names exist and take their target from the channel, no
	// Cluster is claimed by two stages, and the health checks of its
	// analyses exist. It surfaces False with reason PolicyNotFoundReason,
	// PolicyNotInChannelReason, ClusterInSeveralStagesReason or
	// AnalysisCheckNotFoundReason; none of them is refused at admission,
	// since GitOps applies objects in any order.
	ChannelReadyCondition = "Ready"

	// ChannelPromotingCondition is True while a version moves through the
	// stages. Its reason says what the newest version in flight waits for:
	// WaitingForRolloutsReason, SoakingReason, WaitingForApprovalReason,
	// WaitingForWindowReason, StageBusyReason or ChannelPausedReason. It
	// surfaces False with reason ChannelUpToDateReason when every version
	// ended, and VersionHaltedReason when the newest one halted.
	ChannelPromotingCondition = "Promoting"

	// ChannelValidReason surfaces when every stage resolves.
	ChannelValidReason = "Valid"

	// PolicyNotFoundReason surfaces while a stage names a policy that does
	// not exist (yet).
	PolicyNotFoundReason = "PolicyNotFound"

	// PolicyNotInChannelReason surfaces while a stage names a policy whose
	// target does not come from this channel (targetFrom and channel).
	PolicyNotInChannelReason = "PolicyNotInChannel"

	// ClusterInSeveralStagesReason surfaces while a Cluster is claimed by
	// two stages (their clusterSelectors, or a selector and a policy): it
	// gets no new version until one stage claims it.
	ClusterInSeveralStagesReason = "ClusterInSeveralStages"

	// AnalysisCheckNotFoundReason surfaces while a stage's analysis names a
	// ClusterHealthCheck that does not exist in the namespace of one of the
	// stage's Clusters, or one that is a Job check.
	AnalysisCheckNotFoundReason = "AnalysisCheckNotFound"

	// SoakingReason surfaces while a version soaks in a stage and its
	// analysis runs; WaitingForRolloutsReason (a FollowingReleases reason
	// of a policy too) while the Clusters of a stage roll it out.
	SoakingReason = "Soaking"

	// WaitingForApprovalReason surfaces while a stage waits for a person to
	// approve a version (spec.approvals, kubectl tollgate approve).
	WaitingForApprovalReason = "WaitingForApproval"

	// WaitingForWindowReason surfaces while a version waits for the window
	// of the stage it enters next.
	WaitingForWindowReason = "WaitingForWindow"

	// StageBusyReason surfaces while a version waits for a stage whose
	// Clusters still roll out, or soak, an older version.
	StageBusyReason = "StageBusy"

	// ChannelPausedReason surfaces while spec.paused is true.
	ChannelPausedReason = "Paused"

	// ChannelUpToDateReason surfaces when no version is in flight.
	ChannelUpToDateReason = "UpToDate"

	// VersionHaltedReason surfaces when the newest version halted in a
	// stage: its rollouts failed beyond the stage's budget, its analysis
	// failed, or its approval was refused or expired.
	VersionHaltedReason = "VersionHalted"

	// PolicyChannelCondition is the condition of a TalosUpgradePolicy whose
	// target comes from a channel (targetFrom: Channel). It is True with
	// reason InChannelReason while the channel exists and a stage claims the
	// policy's Clusters, and surfaces False with reason
	// ChannelNotFoundReason or NotInStageReason.
	PolicyChannelCondition = "Channel"

	// InChannelReason surfaces when a stage of the channel claims the
	// policy's Clusters; the message names the versions they are granted.
	InChannelReason = "InChannel"

	// ChannelNotFoundReason surfaces while the channel a policy names does
	// not exist (yet).
	ChannelNotFoundReason = "ChannelNotFound"

	// NotInStageReason surfaces while no stage of the channel claims a
	// Cluster of the policy.
	NotInStageReason = "NotInStage"
)

// SupersedeRule says when a newer version of a channel supersedes an older
// one.
// +kubebuilder:validation:Enum=Halted;Always
type SupersedeRule string

const (
	// SupersedeHalted lets a newer version supersede only a version that
	// halted; versions in flight otherwise follow each other through the
	// stages, in order, one per stage at a time.
	SupersedeHalted SupersedeRule = "Halted"

	// SupersedeAlways lets a newer version supersede every older version
	// that has not passed every stage: the older ones stop where they are,
	// and only the newest moves on.
	SupersedeAlways SupersedeRule = "Always"
)

// AnalysisScope says where an analysis query runs.
// +kubebuilder:validation:Enum=PerCluster;Stage
type AnalysisScope string

const (
	// AnalysisPerCluster runs the query once for every Cluster of the
	// stage: $cluster and $namespace name the Cluster, and a service
	// endpoint is reached through that Cluster's apiserver.
	AnalysisPerCluster AnalysisScope = "PerCluster"

	// AnalysisStage runs the query once for the whole stage, against a
	// Prometheus that sees every Cluster of it (a url).
	AnalysisStage AnalysisScope = "Stage"
)

// EmptyResult says what a query that returns nothing means.
// +kubebuilder:validation:Enum=Fail;Pass
type EmptyResult string

const (
	// EmptyResultFail counts an empty result as a failed measurement: a
	// misspelt metric or an exporter that is down must not let a version
	// through.
	EmptyResultFail EmptyResult = "Fail"

	// EmptyResultPass counts an empty result as a passed measurement, for
	// alert-style queries that return what is wrong.
	EmptyResultPass EmptyResult = "Pass"
)

// ApprovalDecision is what a person decided about a version in a stage.
// +kubebuilder:validation:Enum=Approve;Reject
type ApprovalDecision string

const (
	// ApprovalApprove lets the version pass the stage.
	ApprovalApprove ApprovalDecision = "Approve"

	// ApprovalReject halts the version in the stage.
	ApprovalReject ApprovalDecision = "Reject"
)

// ChannelVersionPhase is where a version of a channel stands.
// +kubebuilder:validation:Enum=Promoting;Completed;Halted;Superseded;Withdrawn
type ChannelVersionPhase string

const (
	// ChannelVersionPromoting is a version moving through the stages.
	ChannelVersionPromoting ChannelVersionPhase = "Promoting"
	// ChannelVersionCompleted is a version that passed every stage.
	ChannelVersionCompleted ChannelVersionPhase = "Completed"
	// ChannelVersionHalted is a version a stage failed: it enters no
	// further stage.
	ChannelVersionHalted ChannelVersionPhase = "Halted"
	// ChannelVersionSuperseded is a version a newer one replaced (see
	// spec.supersede): it enters no further stage.
	ChannelVersionSuperseded ChannelVersionPhase = "Superseded"
	// ChannelVersionWithdrawn is a version removed from spec.versions
	// before it passed every stage: it enters no further stage.
	ChannelVersionWithdrawn ChannelVersionPhase = "Withdrawn"
)

// Ended reports whether a version in phase p moves no more.
func (p ChannelVersionPhase) Ended() bool {
	return p != ChannelVersionPromoting
}

// StagePhase is where a version stands in one stage.
// +kubebuilder:validation:Enum=Pending;Rolling;Soaking;WaitingForApproval;Passed;Failed
type StagePhase string

const (
	// StagePending is a version whose predecessors passed, waiting for
	// the stage's gate: a busy stage, a closed window, a paused channel.
	StagePending StagePhase = "Pending"
	// StageRolling is a version the stage's gate let in: its Clusters roll
	// it out.
	StageRolling StagePhase = "Rolling"
	// StageSoaking is a version every Cluster of the stage completed: it
	// soaks for soakTime while its analysis runs.
	StageSoaking StagePhase = "Soaking"
	// StageWaitingForApproval is a version that soaked and passed its
	// analysis, waiting for a person's approval.
	StageWaitingForApproval StagePhase = "WaitingForApproval"
	// StagePassed is a version the stage let through to the next stages.
	StagePassed StagePhase = "Passed"
	// StageFailed is a version the stage halted.
	StageFailed StagePhase = "Failed"
)

// ReleaseChannelSpec is the desired state of a ReleaseChannel: the versions
// it carries and the stages they move through.
// +kubebuilder:validation:XValidation:rule="has(self.versions) != has(self.follow)",message="set exactly one of versions (the versions the channel carries, newest last) and follow (the releases of a repository)"
type ReleaseChannelSpec struct {
	// versions are the versions the channel carries, newest last: a Talos
	// target, a Kubernetes target, or the pair, planned by each Cluster's
	// rollout as a policy's are. A version added to the end enters the
	// first stage at once; one removed before it passed every stage is
	// withdrawn (it enters no further stage; what the Clusters run stays).
	// When several are new at once, only the newest enters and the others
	// are superseded.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Versions []ChannelVersion `json:"versions,omitempty"`

	// follow makes the channel carry the stable releases of a Talos
	// installer repository instead of versions: each newer release the
	// rules allow enters the first stage once it is minReleaseAge old.
	// status.follow shows what was seen.
	// +optional
	Follow *ChannelFollowSpec `json:"follow,omitempty"`

	// supersede says when a newer version supersedes an older one:
	// "Halted" (the default) replaces only a version that halted; versions
	// in flight otherwise follow each other, one per stage at a time.
	// "Always" makes every older version that has not passed every stage
	// stop where it is once a newer one enters.
	// +kubebuilder:default=Halted
	// +optional
	Supersede SupersedeRule `json:"supersede,omitempty"`

	// stages are the stages a version moves through. A stage comes after
	// the stages its after names, or the one before it in this list when
	// after is empty; the first stage comes first. A version enters a stage
	// once it passed every stage the stage comes after.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Stages []ChannelStage `json:"stages"`

	// paused opens no gate: no version enters a stage, and none passes
	// one. Rollouts already granted a version go on, soaks and analyses
	// keep their clocks.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// approvals are the decisions of people on the versions that stages
	// wait for, one per stage and version: kubectl tollgate approve adds
	// one. The admission webhook writes requestedBy and refuses an
	// approval for a stage that is not waiting for one. Once the
	// controller recorded a decision (status.versions[].stages[].approval),
	// removing it changes nothing.
	// +listType=map
	// +listMapKey=stage
	// +listMapKey=version
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Approvals []StageApproval `json:"approvals,omitempty"`
}

// ChannelVersion is a version a channel carries: a Talos target, a
// Kubernetes target, or the pair.
// +kubebuilder:validation:XValidation:rule="has(self.talosVersion) || has(self.kubernetesVersion)",message="set talosVersion, kubernetesVersion or both"
type ChannelVersion struct {
	// talosVersion is the Talos version the Clusters of a stage are
	// upgraded to, for example "v1.13.0". Without it, each Cluster keeps
	// the Talos version its Machines run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`
	// +optional
	TalosVersion string `json:"talosVersion,omitempty"`

	// kubernetesVersion is the Kubernetes version the nodes of a stage's
	// Clusters run once their rollout is done, for example "v1.36.0", as a
	// policy's kubernetesVersion.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// Name names the version in status, approvals and messages: its Talos
// version ("v1.13.0"), "k8s-v1.36.0" for a Kubernetes version alone, or
// "v1.13.0+k8s-v1.36.0" for the pair.
func (v ChannelVersion) Name() string {
	talos, kubernetes := withV(v.TalosVersion), withV(v.KubernetesVersion)
	switch {
	case kubernetes == "":
		return talos
	case talos == "":
		return "k8s-" + kubernetes
	}
	return talos + "+k8s-" + kubernetes
}

// withV returns a version with its "v" prefix; "" stays "".
func withV(v string) string {
	if v == "" || strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

// ChannelFollowSpec is how a channel follows the releases of a Talos
// installer repository.
type ChannelFollowSpec struct {
	// The rules: allow, checkInterval and minReleaseAge, as a policy's.
	FollowSpec `json:",inline"`

	// repository is the installer repository whose stable tags are the
	// releases, without tag or digest. The stock installer
	// ghcr.io/siderolabs/installer, whose tags are the Talos releases, when
	// unset: the Image Factory builds every release of it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Repository string `json:"repository,omitempty"`

	// pullSecretRef names a Secret of type kubernetes.io/dockerconfigjson
	// whose credentials list the repository's tags.
	// +optional
	PullSecretRef *corev1.SecretReference `json:"pullSecretRef,omitempty"`
}

// ChannelStage is a set of Clusters a version moves through as one: the
// Clusters of the policies it names and those its clusterSelector selects,
// all of whose policies take their target from the channel.
// +kubebuilder:validation:XValidation:rule="(has(self.policies) && size(self.policies) > 0) || has(self.clusterSelector)",message="name the policies of the stage, or select its Clusters with clusterSelector"
type ChannelStage struct {
	// name identifies the stage, for example "lab", "dev" or "prod-eu".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// after names the stages a version must pass before it enters this
	// one; the stage before it in spec.stages when empty (none for the
	// first stage). Two stages after the same one run side by side.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	After []string `json:"after,omitempty"`

	// policies are TalosUpgradePolicies, in any namespace, whose Clusters
	// form the stage. Each must take its target from this channel
	// (targetFrom: Channel, channel: <this channel>), and a policy belongs
	// to one stage of one channel. One that does not exist yet is reported
	// by the Ready condition.
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Policies []PolicyReference `json:"policies,omitempty"`

	// clusterSelector selects Clusters, in any namespace, by their labels:
	// those whose policy takes its target from this channel belong to the
	// stage. A Cluster two stages claim belongs to neither until one does.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// maxFailedClusters is how many Clusters of the stage may end their
	// rollout of a version Failed without halting it (the stage's failure
	// budget); 0 halts it on the first failure.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MaxFailedClusters *int32 `json:"maxFailedClusters,omitempty"`

	// soakTime is how long a version runs in the stage, counted from the
	// moment its last Cluster completed, before it may pass: the window of
	// its analysis. At most 30 days.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('720h')",message="soakTime must be between 0s and 720h"
	// +optional
	SoakTime *metav1.Duration `json:"soakTime,omitempty"`

	// analysis must pass over the soak for a version to pass the stage:
	// PromQL queries measured every interval through the soak, and
	// ClusterHealthChecks that must hold through it.
	// +optional
	Analysis *StageAnalysis `json:"analysis,omitempty"`

	// approval, when set, makes a person approve a version once it soaked
	// and passed its analysis, before it passes the stage.
	// +optional
	Approval *StageApprovalGate `json:"approval,omitempty"`

	// window restricts when a version may enter the stage: its gate opens
	// only inside these windows (rollouts already granted a version go on
	// outside them).
	// +optional
	Window *MaintenanceSpec `json:"window,omitempty"`
}

// PolicyReference names a TalosUpgradePolicy.
type PolicyReference struct {
	// namespace is the namespace of the policy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// name is the name of the policy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// String returns namespace/name.
func (r PolicyReference) String() string {
	return r.Namespace + "/" + r.Name
}

// StageAnalysis is what must hold over a stage's soak for a version to pass
// it.
// +kubebuilder:validation:XValidation:rule="(has(self.queries) && size(self.queries) > 0) || (has(self.healthChecks) && size(self.healthChecks) > 0)",message="name queries, healthChecks or both; remove analysis to let a version pass on its soak alone"
type StageAnalysis struct {
	// interval is how often the queries and the health checks are
	// measured during the soak; a last measurement is taken when the soak
	// ends. At least 5s.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s')",message="interval must be at least 5s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// queries are PromQL queries measured through the soak.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Queries []AnalysisQuery `json:"queries,omitempty"`

	// healthChecks are http or prometheus ClusterHealthChecks, by name,
	// that must pass at every measurement: each runs in every Cluster of
	// the stage, the check of that name in the Cluster's namespace.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	HealthChecks []string `json:"healthChecks,omitempty"`
}

// AnalysisQuery is a PromQL instant query measured through a soak. A
// measurement fails on an empty result (unless emptyResult is Pass) and on
// a sample that does not satisfy comparison; the query fails the analysis
// once more than failureLimit measurements failed.
// +kubebuilder:validation:XValidation:rule="has(self.service) != has(self.url)",message="set exactly one of service and url"
// +kubebuilder:validation:XValidation:rule="!has(self.scope) || self.scope != 'Stage' || has(self.url)",message="a Stage query needs a url: a service is reached through one Cluster's apiserver; use scope PerCluster for a Prometheus in every Cluster"
type AnalysisQuery struct {
	// name identifies the query in status and events.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// scope is where the query runs: "PerCluster" (the default), once per
	// Cluster of the stage, or "Stage", once for the stage.
	// +kubebuilder:default=PerCluster
	// +optional
	Scope AnalysisScope `json:"scope,omitempty"`

	// The endpoint of the Prometheus API: service (in each Cluster, for a
	// PerCluster query) or url, headers and TLS.
	HealthCheckEndpoint `json:",inline"`

	// secretNamespace is the namespace of headersSecretName and
	// tls.caSecretName; required when either is set (a ReleaseChannel has
	// no namespace of its own).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	SecretNamespace string `json:"secretNamespace,omitempty"`

	// query is a PromQL expression, run as an instant query at each
	// measurement. $cluster and $namespace are replaced by the Cluster's
	// name and namespace (a PerCluster query), $stage by the stage's name,
	// and $window by the time since the soak began, in seconds ("600s"),
	// for range functions over the soak: max_over_time(x[$window]).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`

	// comparison, when set, is what every sample of the result must
	// satisfy, for example "< 0.01". Without it, the samples mean the
	// opposite of an empty result: what is healthy when emptyResult is Fail
	// (a filter, error_ratio < 0.01, passes while it returns something),
	// what is wrong when it is Pass (an alert-style query, error_ratio >
	// 0.01, fails on any sample). A comparison that always holds (>= -Inf,
	// <= +Inf) or never holds (< -Inf, > +Inf) is refused.
	// +optional
	Comparison *PrometheusComparison `json:"comparison,omitempty"`

	// emptyResult says what a result with no sample means: "Fail" (the
	// default: a misspelt metric or an exporter that is down fails closed)
	// or "Pass" (for alert-style queries, which return what is wrong).
	// +kubebuilder:default=Fail
	// +optional
	EmptyResult EmptyResult `json:"emptyResult,omitempty"`

	// failureLimit is how many measurements may fail (a measurement is one
	// run in one Cluster for a PerCluster query) before the analysis
	// fails.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	FailureLimit *int32 `json:"failureLimit,omitempty"`
}

// StageApprovalGate makes a person approve each version in a stage.
type StageApprovalGate struct {
	// timeout is how long the stage waits for a decision once the version
	// soaked and passed its analysis; past it the version is refused
	// (halted, reason ApprovalExpired). Unset waits for ever. At least 1m.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="timeout must be at least 1m: nobody can approve in less"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// StageApproval is a person's decision on a version a stage waits for.
type StageApproval struct {
	// stage is the name of the stage.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Stage string `json:"stage"`

	// version is the name of the version (status.versions[].name), the one
	// the stage waits for.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=160
	Version string `json:"version"`

	// decision is "Approve" (the default) or "Reject".
	// +kubebuilder:default=Approve
	// +optional
	Decision ApprovalDecision `json:"decision,omitempty"`

	// reason says why: a change ticket, what was looked at. Required.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason"`

	// requestedBy is the user who made the decision, as the API server
	// authenticated them. The admission webhook writes it: a value set in
	// a request is replaced.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
}

// ReleaseChannelStatus is the observed state of a ReleaseChannel: the
// durable record of every promotion.
type ReleaseChannelStatus struct {
	// conditions describe the state of the channel.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// stages summarise each stage: its Clusters and the version they are
	// granted.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Stages []ChannelStageStatus `json:"stages,omitempty"`

	// versions are the versions the channel carries, in the order they
	// entered it (newest last): those in flight, those a stage is granted,
	// and the latest that ended. Every timestamp of a promotion lives
	// here, so that a restart, a failover or clusterctl move neither
	// restarts nor skips a soak.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Versions []ChannelVersionStatus `json:"versions,omitempty"`

	// follow is what a channel with spec.follow saw in its repository.
	// +optional
	Follow *FollowStatus `json:"follow,omitempty"`
}

// ChannelStageStatus summarises one stage.
type ChannelStageStatus struct {
	// name is the stage's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// version is the name of the version the stage's Clusters are granted:
	// the last that entered it. Empty before the first.
	// +kubebuilder:validation:MaxLength=160
	// +optional
	Version string `json:"version,omitempty"`

	// talosVersion and kubernetesVersion are those of version: what the
	// policies give the stage's Clusters.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TalosVersion string `json:"talosVersion,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// clusters is the number of Clusters of the stage.
	// +optional
	Clusters int32 `json:"clusters,omitempty"`

	// onVersion is the number of them whose rollout completed on version.
	// +optional
	OnVersion int32 `json:"onVersion,omitempty"`
}

// ChannelVersionStatus is the record of one version's promotion.
type ChannelVersionStatus struct {
	// name is the version's name (ChannelVersion.Name).
	// +required
	// +kubebuilder:validation:MaxLength=160
	Name string `json:"name"`

	// The version.
	ChannelVersion `json:",inline"`

	// phase is where the version stands.
	// +required
	Phase ChannelVersionPhase `json:"phase"`

	// enteredTime is when the version entered the channel.
	// +required
	EnteredTime metav1.Time `json:"enteredTime"`

	// endTime is when the version completed, halted, was superseded or
	// withdrawn.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`

	// message says where the version stands and what it waits for.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// stages record the version in each stage it reached.
	// +listType=map
	// +listMapKey=stage
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Stages []VersionStageStatus `json:"stages,omitempty"`
}

// VersionStageStatus is a version in one stage.
type VersionStageStatus struct {
	// stage is the stage's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Stage string `json:"stage"`

	// phase is where the version stands in the stage.
	// +required
	Phase StagePhase `json:"phase"`

	// enteredTime is when the stage's gate opened for the version: from
	// then on its Clusters are granted it. Set once.
	// +optional
	EnteredTime *metav1.Time `json:"enteredTime,omitempty"`

	// completedTime is when the last Cluster of the stage completed the
	// version (or failed within the stage's budget): the soak starts. Set
	// once.
	// +optional
	CompletedTime *metav1.Time `json:"completedTime,omitempty"`

	// soakUntil is when the soak ends: completedTime plus soakTime.
	// +optional
	SoakUntil *metav1.Time `json:"soakUntil,omitempty"`

	// passedTime is when the version passed the stage: the gates of the
	// stages after it may open for it. Set once.
	// +optional
	PassedTime *metav1.Time `json:"passedTime,omitempty"`

	// failedTime is when the stage halted the version.
	// +optional
	FailedTime *metav1.Time `json:"failedTime,omitempty"`

	// clusters counts the stage's Clusters on the version.
	// +optional
	Clusters StageClusterCounts `json:"clusters,omitempty,omitzero"`

	// analysis is the record of the analysis over the soak.
	// +optional
	Analysis *AnalysisStatus `json:"analysis,omitempty"`

	// approval is the record of the approval, when the stage asks for one.
	// +optional
	Approval *ApprovalStatus `json:"approval,omitempty"`

	// message says what the version waits for in the stage, or why the
	// stage halted it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// StageClusterCounts counts a stage's Clusters by their rollout of one
// version.
type StageClusterCounts struct {
	// total is the number of Clusters of the stage.
	// +optional
	Total int32 `json:"total,omitempty"`
	// completed is the number that completed the version.
	// +optional
	Completed int32 `json:"completed,omitempty"`
	// failed is the number whose rollout of the version failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`
}

// AnalysisStatus is the record of a stage's analysis of one version.
type AnalysisStatus struct {
	// lastMeasurementTime is when the last measurement was taken.
	// +optional
	LastMeasurementTime *metav1.Time `json:"lastMeasurementTime,omitempty"`

	// nextMeasurementTime is when the next one is due.
	// +optional
	NextMeasurementTime *metav1.Time `json:"nextMeasurementTime,omitempty"`

	// queries record each query's measurements.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Queries []MeasurementStatus `json:"queries,omitempty"`

	// healthChecks record each health check's measurements.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	HealthChecks []MeasurementStatus `json:"healthChecks,omitempty"`
}

// MeasurementStatus counts the measurements of one query or health check.
type MeasurementStatus struct {
	// name is the query's or the health check's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// measurements is the number taken (one per Cluster and interval for a
	// PerCluster query or a health check).
	// +optional
	Measurements int32 `json:"measurements,omitempty"`
	// failures is the number that failed.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// lastFailure says why the last failed measurement failed, naming its
	// Cluster.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	LastFailure string `json:"lastFailure,omitempty"`
}

// ApprovalStatus is the record of a stage's approval of one version.
type ApprovalStatus struct {
	// waitingSince is when the stage began to wait for a decision.
	// +optional
	WaitingSince *metav1.Time `json:"waitingSince,omitempty"`
	// expiresTime is when the wait ends with a refusal (approval.timeout).
	// +optional
	ExpiresTime *metav1.Time `json:"expiresTime,omitempty"`
	// decision is what was decided: Approve or Reject; empty while none
	// was, and Reject when the wait expired.
	// +optional
	Decision ApprovalDecision `json:"decision,omitempty"`
	// decidedTime is when the controller recorded the decision.
	// +optional
	DecidedTime *metav1.Time `json:"decidedTime,omitempty"`
	// requestedBy is who decided, as the webhook recorded them; empty for
	// an expiry.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
	// reason is why.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=releasechannels,scope=Cluster,categories=tollgate,shortName=rch
// +kubebuilder:printcolumn:name="Promoting",type=string,JSONPath=`.status.conditions[?(@.type=="Promoting")].reason`,description="What the newest version in flight waits for"
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Promoting")].message`,description="Where the newest version stands"
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,description="Whether the channel is paused"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ReleaseChannel moves versions of Talos and Kubernetes through ordered
// stages of Clusters, across namespaces: a version enters the next stage
// only once every Cluster of the stage before completed it, it soaked
// there, its analysis passed and, where asked, a person approved it. The
// policies of the stages take their target from the channel
// (targetFrom: Channel); the promotion state lives in status.
type ReleaseChannel struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the channel.
	// +required
	Spec ReleaseChannelSpec `json:"spec"`

	// status is the record of the promotions.
	// +optional
	Status ReleaseChannelStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the channel.
func (c *ReleaseChannel) GetConditions() []metav1.Condition {
	return c.Status.Conditions
}

// SetConditions sets the conditions of the channel.
func (c *ReleaseChannel) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// StageGrant returns the status of stage: the version its Clusters are
// granted. ok is false while no version entered the stage.
func (c *ReleaseChannel) StageGrant(stage string) (grant ChannelStageStatus, ok bool) {
	for _, s := range c.Status.Stages {
		if s.Name == stage {
			return s, s.Version != ""
		}
	}
	return ChannelStageStatus{}, false
}

// +kubebuilder:object:root=true

// ReleaseChannelList is a list of ReleaseChannel.
type ReleaseChannelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleaseChannel `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &ReleaseChannel{}, &ReleaseChannelList{})
}
