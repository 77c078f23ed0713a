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

package channel

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// Events a plan records, by reason.
const (
	// EventVersionEntered: a version entered the channel.
	EventVersionEntered = "VersionEntered"
	// EventStageEntered: a stage's gate opened for a version.
	EventStageEntered = "StageEntered"
	// EventSoakStarted: every Cluster of a stage completed a version.
	EventSoakStarted = "SoakStarted"
	// EventApprovalRequested: a stage waits for a person's approval.
	EventApprovalRequested = "ApprovalRequested"
	// EventApproved: a person approved a version in a stage.
	EventApproved = "Approved"
	// EventApprovalRejected: a person rejected a version in a stage.
	EventApprovalRejected = "ApprovalRejected"
	// EventApprovalExpired: nobody decided within the approval window.
	EventApprovalExpired = "ApprovalExpired"
	// EventAnalysisFailed: a stage's analysis failed a version.
	EventAnalysisFailed = "AnalysisFailed"
	// EventStagePassed: a version passed a stage.
	EventStagePassed = "StagePassed"
	// EventStageFailed: a stage halted a version.
	EventStageFailed = "StageFailed"
	// EventVersionCompleted: a version passed every stage.
	EventVersionCompleted = "VersionCompleted"
	// EventVersionHalted: a version enters no further stage.
	EventVersionHalted = "VersionHalted"
	// EventVersionSuperseded: a newer version replaced a version.
	EventVersionSuperseded = "VersionSuperseded"
	// EventVersionWithdrawn: a version left spec.versions in flight.
	EventVersionWithdrawn = "VersionWithdrawn"
)

// keptEnded is how many ended versions status.versions keeps besides
// those a stage is granted.
const keptEnded = 8

// Observed is what the controller read of the world before a plan.
type Observed struct {
	// Channel is the channel's name, for messages.
	Channel string
	// Now is the time of the reconcile: the plan reads no clock.
	Now time.Time
	// Offered are the versions the channel carries now, oldest first:
	// spec.versions, or what its follow chose.
	Offered []upgradev1.ChannelVersion
	// FromSpec is true when Offered is spec.versions: a version in flight
	// that left it is withdrawn.
	FromSpec bool
	// Stages are the stages' Clusters and windows, by stage name.
	Stages map[string]StageWorld
}

// StageWorld is what the controller read of one stage.
type StageWorld struct {
	// Clusters are the Clusters of the stage and their rollouts.
	Clusters []ClusterRollout
	// Unresolved are the policies the stage names that do not exist (yet)
	// or whose target does not come from the channel, as namespace/name.
	Unresolved []string
	// WindowOpen reports whether the stage's window is open (or it has
	// none); WindowOpens is when it opens next while it is closed, zero
	// when that is not known; Window describes it for messages.
	WindowOpen  bool
	WindowOpens time.Time
	Window      string
}

// ClusterRollout is a Cluster of a stage and its rollout.
type ClusterRollout struct {
	// Name is the Cluster's namespace/name.
	Name string
	// HasRollout is false while the Cluster has no TalosUpgrade.
	HasRollout bool
	// Talos and Kubernetes are its rollout's targets.
	Talos, Kubernetes string
	// Finished, InProgress and Phase are its rollout's (TalosUpgrade.Finished,
	// InProgress and status.phase).
	Finished, InProgress bool
	Phase                upgradev1.UpgradePhase
	// CompletionTime is when its rollout ended.
	CompletionTime time.Time
}

// Event is an event a plan asks to record on the channel.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is one of the Event* reasons.
	Reason string
	// Version and Stage name what it is about; Stage may be empty.
	Version, Stage string
	// Message says what happened.
	Message string
}

// Result is what a plan asks the controller to do besides writing the
// status it changed.
type Result struct {
	// Events are to be recorded, in order.
	Events []Event
	// RequeueAfter is when something the plan waits for comes due (a soak
	// ending, a measurement, an approval window closing, a window opening);
	// zero when only a watched change can move anything.
	RequeueAfter time.Duration
	// Promoting is the Promoting condition.
	Promoting metav1.Condition
}

// Plan moves the record of the channel's promotions (status.versions and
// status.stages) one step on from what obs says: versions enter and
// supersede others, stages' gates open, soaks start and end, analyses and
// approvals decide. It changes status in place and says what else to do.
// Every timestamp it writes is obs.Now, once; nothing it wrote is ever
// rewritten, so a version never enters, nor passes, a stage twice.
func Plan(spec *upgradev1.ReleaseChannelSpec, graph Graph, status *upgradev1.ReleaseChannelStatus, obs Observed) Result {
	p := &planner{spec: spec, graph: graph, status: status, obs: obs, waits: map[string]wait{}}
	p.admit()
	for i := range p.status.Versions {
		if p.status.Versions[i].Phase == upgradev1.ChannelVersionPromoting {
			p.advance(i)
		}
	}
	p.summarise()
	p.prune()
	p.result.Promoting = p.promoting()
	return p.result
}

// planner is one plan.
type planner struct {
	spec   *upgradev1.ReleaseChannelSpec
	graph  Graph
	status *upgradev1.ReleaseChannelStatus
	obs    Observed
	result Result
	// waits are what each version in flight waits for, by name: the
	// Promoting condition of the newest one.
	waits map[string]wait
}

// wait is what a version waits for.
type wait struct {
	reason, message string
}

func (p *planner) now() *metav1.Time {
	t := metav1.NewTime(p.obs.Now)
	return &t
}

func (p *planner) event(eventType, reason, version, stage, format string, args ...any) {
	p.result.Events = append(p.result.Events, Event{Type: eventType, Reason: reason, Version: version, Stage: stage, Message: fmt.Sprintf(format, args...)})
}

// requeueAt asks to look again at t (not before a second from now).
func (p *planner) requeueAt(t time.Time) {
	if t.IsZero() {
		return
	}
	d := max(t.Sub(p.obs.Now), time.Second)
	if p.result.RequeueAfter == 0 || d < p.result.RequeueAfter {
		p.result.RequeueAfter = d
	}
}

// admit records the versions offered for the first time: the newest enters
// the channel, the others offered with it are superseded at once, and the
// rule of spec.supersede applies to the versions before. A version in
// flight that left spec.versions is withdrawn.
func (p *planner) admit() {
	offered := map[string]bool{}
	var fresh []upgradev1.ChannelVersion
	for _, v := range p.obs.Offered {
		name := v.Name()
		if offered[name] {
			continue
		}
		offered[name] = true
		if p.index(name) < 0 {
			fresh = append(fresh, v)
		}
	}
	if p.obs.FromSpec {
		for i := range p.status.Versions {
			v := &p.status.Versions[i]
			if v.Phase == upgradev1.ChannelVersionPromoting && !offered[v.Name] {
				p.end(v, upgradev1.ChannelVersionWithdrawn, "removed from spec.versions: it enters no further stage; the Clusters keep what they run")
				p.event(corev1.EventTypeNormal, EventVersionWithdrawn, v.Name, "", "Version %s was removed from spec.versions: it enters no further stage", v.Name)
			}
		}
	}
	if len(fresh) == 0 {
		return
	}
	newest := fresh[len(fresh)-1]
	for _, v := range fresh[:len(fresh)-1] {
		p.status.Versions = append(p.status.Versions, upgradev1.ChannelVersionStatus{
			Name: v.Name(), ChannelVersion: v, Phase: upgradev1.ChannelVersionSuperseded, EnteredTime: *p.now(), EndTime: p.now(),
			Message: fmt.Sprintf("superseded by %s, which came with it: only the newest of the versions new at once enters", newest.Name()),
		})
		p.event(corev1.EventTypeNormal, EventVersionSuperseded, v.Name(), "", "Version %s is superseded by %s, which came with it", v.Name(), newest.Name())
	}
	for i := range p.status.Versions {
		v := &p.status.Versions[i]
		switch {
		case v.Phase == upgradev1.ChannelVersionHalted,
			v.Phase == upgradev1.ChannelVersionPromoting && p.supersede() == upgradev1.SupersedeAlways:
			p.end(v, upgradev1.ChannelVersionSuperseded, fmt.Sprintf("superseded by %s (supersede: %s)", newest.Name(), p.supersede()))
			p.event(corev1.EventTypeNormal, EventVersionSuperseded, v.Name, "", "Version %s is superseded by %s (supersede: %s): it enters no further stage", v.Name, newest.Name(), p.supersede())
		}
	}
	p.status.Versions = append(p.status.Versions, upgradev1.ChannelVersionStatus{
		Name: newest.Name(), ChannelVersion: newest, Phase: upgradev1.ChannelVersionPromoting, EnteredTime: *p.now(),
	})
	p.event(corev1.EventTypeNormal, EventVersionEntered, newest.Name(), "", "Version %s entered the channel", newest.Name())
}

func (p *planner) supersede() upgradev1.SupersedeRule {
	if p.spec.Supersede == "" {
		return upgradev1.SupersedeHalted
	}
	return p.spec.Supersede
}

// index returns the index of the version name in status.versions, or -1.
func (p *planner) index(name string) int {
	return slices.IndexFunc(p.status.Versions, func(v upgradev1.ChannelVersionStatus) bool { return v.Name == name })
}

// end ends a version in phase with a message.
func (p *planner) end(v *upgradev1.ChannelVersionStatus, phase upgradev1.ChannelVersionPhase, message string) {
	v.Phase, v.EndTime, v.Message = phase, p.now(), upgradev1.Truncate(message, upgradev1.MaxMessageLength)
}

// stageSpec returns the spec of a stage.
func (p *planner) stageSpec(name string) *upgradev1.ChannelStage {
	for i := range p.spec.Stages {
		if p.spec.Stages[i].Name == name {
			return &p.spec.Stages[i]
		}
	}
	return nil
}

// advance moves the version at index i through the stages, in their
// order, as far as their gates let it go in this plan.
func (p *planner) advance(i int) {
	v := &p.status.Versions[i]
	for _, name := range p.graph.Order {
		rec := record(v, name)
		if rec == nil {
			if !p.passedAll(v, p.graph.After[name]) {
				continue
			}
			v.Stages = append(v.Stages, upgradev1.VersionStageStatus{Stage: name, Phase: upgradev1.StagePending})
			rec = &v.Stages[len(v.Stages)-1]
		}
		for {
			before := rec.Phase
			p.step(i, v, rec, p.stageSpec(name))
			if rec.Phase == before || v.Phase != upgradev1.ChannelVersionPromoting {
				break
			}
		}
		if v.Phase != upgradev1.ChannelVersionPromoting {
			return
		}
	}
	p.conclude(v)
}

// passedAll reports whether the version passed every stage of names.
func (p *planner) passedAll(v *upgradev1.ChannelVersionStatus, names []string) bool {
	for _, n := range names {
		if rec := record(v, n); rec == nil || rec.Phase != upgradev1.StagePassed {
			return false
		}
	}
	return true
}

// record returns the record of the version in a stage, or nil.
func record(v *upgradev1.ChannelVersionStatus, stage string) *upgradev1.VersionStageStatus {
	for i := range v.Stages {
		if v.Stages[i].Stage == stage {
			return &v.Stages[i]
		}
	}
	return nil
}

// step moves the version one phase on in a stage, when it can.
func (p *planner) step(i int, v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, stage *upgradev1.ChannelStage) {
	if stage == nil {
		// The stage left the spec: its record stays as it was.
		return
	}
	switch rec.Phase {
	case upgradev1.StagePending:
		p.gate(i, v, rec, stage)
	case upgradev1.StageRolling:
		p.rolling(v, rec, stage)
	case upgradev1.StageSoaking:
		p.soaking(v, rec, stage)
	case upgradev1.StageWaitingForApproval:
		p.approval(v, rec, stage)
	}
}

// waitFor records what the version waits for in a stage.
func (p *planner) waitFor(v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, reason, message string) {
	rec.Message = upgradev1.Truncate(message, upgradev1.MaxMessageLength)
	p.waits[v.Name] = wait{reason: reason, message: fmt.Sprintf("%s in stage %s: %s", v.Name, rec.Stage, message)}
}

// gate opens the stage's gate for the version, unless, in this order, a
// newer version entered the stage first (the version is superseded), the
// channel is paused, the stage is busy with an older version or with
// rollouts of another version, or its window is closed.
func (p *planner) gate(i int, v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, stage *upgradev1.ChannelStage) {
	world := p.obs.Stages[stage.Name]
	for j := i + 1; j < len(p.status.Versions); j++ {
		newer := &p.status.Versions[j]
		if r := record(newer, stage.Name); r != nil && r.EnteredTime != nil {
			p.end(v, upgradev1.ChannelVersionSuperseded, fmt.Sprintf("superseded by %s, which entered stage %s first", newer.Name, stage.Name))
			p.event(corev1.EventTypeNormal, EventVersionSuperseded, v.Name, stage.Name, "Version %s is superseded by %s, which entered stage %s first", v.Name, newer.Name, stage.Name)
			return
		}
	}
	if p.spec.Paused {
		p.waitFor(v, rec, upgradev1.ChannelPausedReason, "the channel is paused: no gate opens")
		return
	}
	for j := range i {
		older := &p.status.Versions[j]
		r := record(older, stage.Name)
		if older.Phase == upgradev1.ChannelVersionPromoting && r != nil && r.EnteredTime != nil && r.Phase != upgradev1.StagePassed && r.Phase != upgradev1.StageFailed {
			p.waitFor(v, rec, upgradev1.StageBusyReason, fmt.Sprintf("the stage is %s with %s: one version at a time", describePhase(r.Phase), older.Name))
			return
		}
	}
	var busy []string
	for _, c := range world.Clusters {
		if c.HasRollout && c.InProgress && !onVersion(c, v.ChannelVersion) {
			busy = append(busy, c.Name)
		}
	}
	if len(busy) > 0 {
		p.waitFor(v, rec, upgradev1.StageBusyReason, fmt.Sprintf("%d Clusters of the stage still roll out another version (%s): never two versions on one Cluster", len(busy), list(busy)))
		return
	}
	if !world.WindowOpen {
		msg := fmt.Sprintf("the stage's window (%s) is closed", world.Window)
		if !world.WindowOpens.IsZero() {
			msg += "; it opens at " + world.WindowOpens.UTC().Format(time.RFC3339)
			p.requeueAt(world.WindowOpens)
		}
		p.waitFor(v, rec, upgradev1.WaitingForWindowReason, msg)
		return
	}
	rec.Phase, rec.EnteredTime = upgradev1.StageRolling, p.now()
	rec.Clusters = count(world.Clusters, v.ChannelVersion)
	p.waitFor(v, rec, upgradev1.WaitingForRolloutsReason, fmt.Sprintf("the gate opened: its %d Clusters are granted %s", len(world.Clusters), v.Name))
	p.event(corev1.EventTypeNormal, EventStageEntered, v.Name, stage.Name, "Version %s entered stage %s: its %d Clusters are granted it", v.Name, stage.Name, len(world.Clusters))
}

// rolling waits for every Cluster of the stage to complete the version,
// or to fail within the stage's budget; then the soak starts, counted from
// the last Cluster's completion.
func (p *planner) rolling(v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, stage *upgradev1.ChannelStage) {
	world := p.obs.Stages[stage.Name]
	rec.Clusters = count(world.Clusters, v.ChannelVersion)
	if p.overBudget(v, rec, stage, world) {
		return
	}
	c := rec.Clusters
	switch {
	case len(world.Unresolved) > 0:
		// Fail closed: the Clusters of a policy that comes later must not
		// find the stage passed without them.
		p.waitFor(v, rec, upgradev1.WaitingForRolloutsReason, fmt.Sprintf("the stage names policies that do not exist yet, or whose target does not come from the channel (%s): it waits for their Clusters", list(world.Unresolved)))
		return
	case c.Total == 0:
		p.waitFor(v, rec, upgradev1.WaitingForRolloutsReason, "the stage has no Cluster yet: a version passes a stage only once its Clusters completed it; remove the stage from the channel to skip it")
		return
	case c.Completed+c.Failed < c.Total:
		p.waitFor(v, rec, upgradev1.WaitingForRolloutsReason, fmt.Sprintf("%d of %d Clusters completed %s", c.Completed, c.Total, v.Name))
		return
	}
	completed := lastCompletion(world.Clusters, v.ChannelVersion, rec.EnteredTime.Time, p.obs.Now)
	until := metav1.NewTime(completed.Add(soakTime(stage)))
	rec.Phase, rec.CompletedTime, rec.SoakUntil = upgradev1.StageSoaking, &metav1.Time{Time: completed}, &until
	if stage.Analysis != nil {
		rec.Analysis = &upgradev1.AnalysisStatus{NextMeasurementTime: &metav1.Time{Time: completed}}
	}
	p.waitFor(v, rec, upgradev1.SoakingReason, fmt.Sprintf("soaks until %s", until.UTC().Format(time.RFC3339)))
	p.event(corev1.EventTypeNormal, EventSoakStarted, v.Name, stage.Name, "Every Cluster of stage %s completed %s (%d completed, %d failed): it soaks until %s",
		stage.Name, v.Name, c.Completed, c.Failed, until.UTC().Format(time.RFC3339))
}

// overBudget fails the version in the stage once more of its Clusters
// failed their rollout than the stage's budget allows.
func (p *planner) overBudget(v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, stage *upgradev1.ChannelStage, world StageWorld) bool {
	budget := int32(0)
	if stage.MaxFailedClusters != nil {
		budget = *stage.MaxFailedClusters
	}
	if rec.Clusters.Failed <= budget {
		return false
	}
	var failed []string
	for _, c := range world.Clusters {
		if failedOn(c, v.ChannelVersion) {
			failed = append(failed, c.Name)
		}
	}
	p.fail(v, rec, fmt.Sprintf("%d Clusters failed their rollout of %s (%s), over the stage's maxFailedClusters of %d", rec.Clusters.Failed, v.Name, list(failed), budget))
	return true
}

// soaking waits for the soak to end and its analysis to pass; then the
// stage waits for an approval, or the version passes it.
func (p *planner) soaking(v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, stage *upgradev1.ChannelStage) {
	world := p.obs.Stages[stage.Name]
	rec.Clusters = count(world.Clusters, v.ChannelVersion)
	if p.overBudget(v, rec, stage, world) {
		return
	}
	failed, why, done := analysisVerdict(stage, rec)
	if failed {
		p.event(corev1.EventTypeWarning, EventAnalysisFailed, v.Name, stage.Name, "The analysis of %s in stage %s failed: %s", v.Name, stage.Name, why)
		p.fail(v, rec, "the analysis failed: "+why)
		return
	}
	if p.obs.Now.Before(rec.SoakUntil.Time) || !done {
		msg := fmt.Sprintf("soaks until %s", rec.SoakUntil.UTC().Format(time.RFC3339))
		if rec.Analysis != nil {
			msg += "; " + describeAnalysis(rec.Analysis)
			if n := rec.Analysis.NextMeasurementTime; n != nil {
				p.requeueAt(n.Time)
			}
		}
		p.requeueAt(rec.SoakUntil.Time)
		p.waitFor(v, rec, upgradev1.SoakingReason, msg)
		return
	}
	if stage.Approval != nil {
		rec.Phase = upgradev1.StageWaitingForApproval
		rec.Approval = &upgradev1.ApprovalStatus{WaitingSince: p.now()}
		if t := stage.Approval.Timeout; t != nil {
			rec.Approval.ExpiresTime = &metav1.Time{Time: p.obs.Now.Add(t.Duration)}
		}
		p.event(corev1.EventTypeNormal, EventApprovalRequested, v.Name, stage.Name, "Version %s soaked in stage %s and passed its analysis: it waits for an approval (kubectl tollgate approve %s %s --reason ...)", v.Name, stage.Name, p.obs.Channel, stage.Name)
		p.waitForApproval(v, rec)
		return
	}
	p.pass(v, rec, fmt.Sprintf("soaked until %s; %s", rec.SoakUntil.UTC().Format(time.RFC3339), describeAnalysis(rec.Analysis)))
}

// approval applies a person's decision on the version, recorded once, or
// the expiry of the wait.
func (p *planner) approval(v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, _ *upgradev1.ChannelStage) {
	a := rec.Approval
	if a == nil {
		a = &upgradev1.ApprovalStatus{WaitingSince: p.now()}
		rec.Approval = a
	}
	if a.Decision == "" {
		if d := p.decision(rec.Stage, v.Name); d != nil {
			a.Decision, a.DecidedTime, a.RequestedBy, a.Reason = decisionOf(d), p.now(), d.RequestedBy, d.Reason
			if a.Decision == upgradev1.ApprovalApprove {
				p.event(corev1.EventTypeNormal, EventApproved, v.Name, rec.Stage, "%s approved %s in stage %s: %q", who(d.RequestedBy), v.Name, rec.Stage, d.Reason)
			} else {
				p.event(corev1.EventTypeWarning, EventApprovalRejected, v.Name, rec.Stage, "%s rejected %s in stage %s: %q", who(d.RequestedBy), v.Name, rec.Stage, d.Reason)
			}
		} else if a.ExpiresTime != nil && !p.obs.Now.Before(a.ExpiresTime.Time) {
			a.Decision, a.DecidedTime, a.Reason = upgradev1.ApprovalReject, p.now(), "the approval window expired"
			p.event(corev1.EventTypeWarning, EventApprovalExpired, v.Name, rec.Stage, "Nobody approved %s in stage %s by %s: it is refused", v.Name, rec.Stage, a.ExpiresTime.UTC().Format(time.RFC3339))
		}
	}
	switch {
	case a.Decision == upgradev1.ApprovalReject && a.RequestedBy == "":
		p.fail(v, rec, fmt.Sprintf("nobody approved it by %s: the approval window expired", a.ExpiresTime.UTC().Format(time.RFC3339)))
	case a.Decision == upgradev1.ApprovalReject:
		p.fail(v, rec, fmt.Sprintf("%s rejected it: %q", who(a.RequestedBy), a.Reason))
	case a.Decision == upgradev1.ApprovalApprove && p.spec.Paused:
		p.waitFor(v, rec, upgradev1.ChannelPausedReason, fmt.Sprintf("%s approved it; the channel is paused: no gate opens", who(a.RequestedBy)))
	case a.Decision == upgradev1.ApprovalApprove:
		p.pass(v, rec, fmt.Sprintf("%s approved it: %q", who(a.RequestedBy), a.Reason))
	default:
		p.waitForApproval(v, rec)
	}
}

// waitForApproval says that the stage waits for a decision, until when.
func (p *planner) waitForApproval(v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus) {
	msg := fmt.Sprintf("soaked and passed its analysis; waiting since %s for an approval", rec.Approval.WaitingSince.UTC().Format(time.RFC3339))
	if e := rec.Approval.ExpiresTime; e != nil {
		msg += ", refused at " + e.UTC().Format(time.RFC3339)
		p.requeueAt(e.Time)
	}
	p.waitFor(v, rec, upgradev1.WaitingForApprovalReason, msg)
}

// decision returns the approval of spec.approvals for a version in a
// stage, or nil.
func (p *planner) decision(stage, version string) *upgradev1.StageApproval {
	for i := range p.spec.Approvals {
		if a := &p.spec.Approvals[i]; a.Stage == stage && a.Version == version {
			return a
		}
	}
	return nil
}

func decisionOf(a *upgradev1.StageApproval) upgradev1.ApprovalDecision {
	if a.Decision == "" {
		return upgradev1.ApprovalApprove
	}
	return a.Decision
}

func who(user string) string {
	if user == "" {
		return "an unknown user"
	}
	return user
}

// pass lets the version through the stage, unless the channel is paused.
func (p *planner) pass(v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, message string) {
	if p.spec.Paused {
		p.waitFor(v, rec, upgradev1.ChannelPausedReason, "ready to pass; the channel is paused: no gate opens")
		return
	}
	rec.Phase, rec.PassedTime, rec.Message = upgradev1.StagePassed, p.now(), upgradev1.Truncate(message, upgradev1.MaxMessageLength)
	p.event(corev1.EventTypeNormal, EventStagePassed, v.Name, rec.Stage, "Version %s passed stage %s: %s", v.Name, rec.Stage, message)
}

// fail halts the version in the stage.
func (p *planner) fail(v *upgradev1.ChannelVersionStatus, rec *upgradev1.VersionStageStatus, message string) {
	rec.Phase, rec.FailedTime, rec.Message = upgradev1.StageFailed, p.now(), upgradev1.Truncate(message, upgradev1.MaxMessageLength)
	p.event(corev1.EventTypeWarning, EventStageFailed, v.Name, rec.Stage, "Stage %s halted version %s: %s", rec.Stage, v.Name, message)
}

// conclude ends a version that passed every stage or that a stage halted,
// and otherwise sums up where it stands.
func (p *planner) conclude(v *upgradev1.ChannelVersionStatus) {
	var failed, waiting []string
	passed := 0
	for _, rec := range v.Stages {
		switch rec.Phase {
		case upgradev1.StageFailed:
			failed = append(failed, fmt.Sprintf("stage %s: %s", rec.Stage, rec.Message))
		case upgradev1.StagePassed:
			passed++
		default:
			waiting = append(waiting, fmt.Sprintf("%s %s", rec.Stage, describePhase(rec.Phase)))
		}
	}
	switch {
	case len(failed) > 0:
		p.end(v, upgradev1.ChannelVersionHalted, "halted: "+strings.Join(failed, "; "))
		p.event(corev1.EventTypeWarning, EventVersionHalted, v.Name, "", "Version %s is halted: %s", v.Name, strings.Join(failed, "; "))
	case passed == len(p.graph.Order):
		p.end(v, upgradev1.ChannelVersionCompleted, fmt.Sprintf("passed every stage (%d)", passed))
		p.event(corev1.EventTypeNormal, EventVersionCompleted, v.Name, "", "Version %s passed every stage of the channel", v.Name)
	default:
		v.Message = upgradev1.Truncate(fmt.Sprintf("%d of %d stages passed; %s", passed, len(p.graph.Order), strings.Join(waiting, ", ")), upgradev1.MaxMessageLength)
	}
}

// summarise writes status.stages: each stage's Clusters and the version
// they are granted, the last that entered the stage.
func (p *planner) summarise() {
	stages := make([]upgradev1.ChannelStageStatus, 0, len(p.spec.Stages))
	for _, s := range p.spec.Stages {
		st := upgradev1.ChannelStageStatus{Name: s.Name}
		world := p.obs.Stages[s.Name]
		st.Clusters = int32(len(world.Clusters))
		if v := p.grant(s.Name); v != nil {
			st.Version, st.TalosVersion, st.KubernetesVersion = v.Name, v.TalosVersion, v.KubernetesVersion
			st.OnVersion = count(world.Clusters, v.ChannelVersion).Completed
		}
		stages = append(stages, st)
	}
	p.status.Stages = stages
}

// grant returns the version a stage is granted: the last that entered it.
func (p *planner) grant(stage string) *upgradev1.ChannelVersionStatus {
	for i := len(p.status.Versions) - 1; i >= 0; i-- {
		if r := record(&p.status.Versions[i], stage); r != nil && r.EnteredTime != nil {
			return &p.status.Versions[i]
		}
	}
	return nil
}

// prune forgets the oldest ended versions beyond keptEnded, but never one
// a stage is granted, one still offered by spec.versions (it would enter
// again), nor the newest (the follow goes on from it).
func (p *planner) prune() {
	protected := map[string]bool{}
	for _, s := range p.status.Stages {
		protected[s.Version] = true
	}
	if p.obs.FromSpec {
		for _, v := range p.obs.Offered {
			protected[v.Name()] = true
		}
	}
	if n := len(p.status.Versions); n > 0 {
		protected[p.status.Versions[n-1].Name] = true
	}
	drop := map[string]bool{}
	ended := 0
	for i := len(p.status.Versions) - 1; i >= 0; i-- {
		v := &p.status.Versions[i]
		if !v.Phase.Ended() || protected[v.Name] {
			continue
		}
		if ended++; ended > keptEnded {
			drop[v.Name] = true
		}
	}
	p.status.Versions = slices.DeleteFunc(p.status.Versions, func(v upgradev1.ChannelVersionStatus) bool { return drop[v.Name] })
}

// promoting is the Promoting condition: what the newest version in flight
// waits for, or why none is.
func (p *planner) promoting() metav1.Condition {
	c := metav1.Condition{Type: upgradev1.ChannelPromotingCondition}
	for i := len(p.status.Versions) - 1; i >= 0; i-- {
		v := &p.status.Versions[i]
		if v.Phase != upgradev1.ChannelVersionPromoting {
			continue
		}
		w, ok := p.waits[v.Name]
		if !ok {
			w = wait{reason: upgradev1.WaitingForRolloutsReason, message: v.Name + ": " + v.Message}
		}
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, w.reason, upgradev1.Truncate(w.message, upgradev1.MaxMessageLength)
		return c
	}
	c.Status, c.Reason, c.Message = metav1.ConditionFalse, upgradev1.ChannelUpToDateReason, "no version is in flight"
	if n := len(p.status.Versions); n > 0 {
		newest := &p.status.Versions[n-1]
		c.Message = fmt.Sprintf("no version is in flight; the newest, %s, is %s", newest.Name, newest.Phase)
		if newest.Phase == upgradev1.ChannelVersionHalted {
			c.Reason, c.Message = upgradev1.VersionHaltedReason, upgradev1.Truncate(newest.Name+" "+newest.Message, upgradev1.MaxMessageLength)
		}
	}
	return c
}

// count counts the Clusters of a stage by their rollout of a version.
func count(clusters []ClusterRollout, v upgradev1.ChannelVersion) upgradev1.StageClusterCounts {
	c := upgradev1.StageClusterCounts{Total: int32(len(clusters))}
	for _, cl := range clusters {
		switch {
		case completedOn(cl, v):
			c.Completed++
		case failedOn(cl, v):
			c.Failed++
		}
	}
	return c
}

// onVersion reports whether a Cluster's rollout targets the version.
func onVersion(c ClusterRollout, v upgradev1.ChannelVersion) bool {
	return c.HasRollout && (v.TalosVersion == "" || talos.SameVersion(c.Talos, v.TalosVersion)) &&
		(v.KubernetesVersion == "" || talos.SameVersion(c.Kubernetes, v.KubernetesVersion))
}

func completedOn(c ClusterRollout, v upgradev1.ChannelVersion) bool {
	return onVersion(c, v) && c.Finished && c.Phase == upgradev1.UpgradePhaseCompleted
}

func failedOn(c ClusterRollout, v upgradev1.ChannelVersion) bool {
	return onVersion(c, v) && c.Finished && c.Phase == upgradev1.UpgradePhaseFailed
}

// lastCompletion is when the last Cluster of a stage ended its rollout of
// the version: not before the gate opened (a Cluster already on it ended
// earlier) and not after now (a clock ahead of ours).
func lastCompletion(clusters []ClusterRollout, v upgradev1.ChannelVersion, entered, now time.Time) time.Time {
	last := entered
	for _, c := range clusters {
		if (completedOn(c, v) || failedOn(c, v)) && c.CompletionTime.After(last) {
			last = c.CompletionTime
		}
	}
	if last.After(now) {
		return now
	}
	return last
}

// soakTime is a stage's soak.
func soakTime(s *upgradev1.ChannelStage) time.Duration {
	if s.SoakTime == nil {
		return 0
	}
	return s.SoakTime.Duration
}

// describePhase says what a version does in a stage in a phrase.
func describePhase(phase upgradev1.StagePhase) string {
	switch phase {
	case upgradev1.StagePending:
		return "waiting at its gate"
	case upgradev1.StageRolling:
		return "rolling out"
	case upgradev1.StageSoaking:
		return "soaking"
	case upgradev1.StageWaitingForApproval:
		return "waiting for an approval"
	}
	return strings.ToLower(string(phase))
}

// maxListed is how many Clusters a message names.
const maxListed = 5

// list names the first maxListed names, and how many more.
func list(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
}
