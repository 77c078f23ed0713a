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

package channel_test

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// fleet is a test's channel and world: a spec, the record, and the
// Clusters of each stage, planned at a clock the test moves.
type fleet struct {
	t      *testing.T
	spec   upgradev1.ReleaseChannelSpec
	status upgradev1.ReleaseChannelStatus
	now    time.Time
	// clusters are the Clusters of each stage.
	clusters map[string][]channel.ClusterRollout
	// windows are the closed windows, by stage, with when they open.
	windows map[string]time.Time
	// unresolved are the policies each stage names that do not resolve.
	unresolved map[string][]string
	// last is the result of the last plan.
	last channel.Result
}

type stageOption func(*upgradev1.ChannelStage)

func soak(d time.Duration) stageOption {
	return func(s *upgradev1.ChannelStage) { s.SoakTime = &metav1.Duration{Duration: d} }
}

func after(names ...string) stageOption {
	return func(s *upgradev1.ChannelStage) { s.After = names }
}

func budget(n int32) stageOption {
	return func(s *upgradev1.ChannelStage) { s.MaxFailedClusters = ptr.To(n) }
}

func approval(timeout time.Duration) stageOption {
	return func(s *upgradev1.ChannelStage) {
		s.Approval = &upgradev1.StageApprovalGate{}
		if timeout > 0 {
			s.Approval.Timeout = &metav1.Duration{Duration: timeout}
		}
	}
}

func analysis(limit int32) stageOption {
	return func(s *upgradev1.ChannelStage) {
		s.Analysis = &upgradev1.StageAnalysis{Interval: &metav1.Duration{Duration: time.Minute}, Queries: []upgradev1.AnalysisQuery{{
			Name: "errors", HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: "http://prometheus"}, Query: "errors < 1", FailureLimit: ptr.To(limit),
		}}}
	}
}

func stage(name string, opts ...stageOption) upgradev1.ChannelStage {
	s := upgradev1.ChannelStage{Name: name, Policies: []upgradev1.PolicyReference{{Namespace: name, Name: "talos"}}}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// newFleet makes a channel of the stages, each with clusters Clusters
// on v1.12.4, none of which has a rollout yet.
func newFleet(t *testing.T, clusters int, stages ...upgradev1.ChannelStage) *fleet {
	t.Helper()
	f := &fleet{t: t, now: t0, clusters: map[string][]channel.ClusterRollout{}, windows: map[string]time.Time{}}
	f.spec.Stages = stages
	for _, s := range stages {
		for i := range clusters {
			f.clusters[s.Name] = append(f.clusters[s.Name], channel.ClusterRollout{Name: s.Name + "/c" + string(rune('0'+i)), HasRollout: true,
				Talos: "v1.12.4", Finished: true, Phase: upgradev1.UpgradePhaseCompleted, CompletionTime: t0.Add(-time.Hour)})
		}
	}
	return f
}

// offer sets spec.versions.
func (f *fleet) offer(talos ...string) {
	f.spec.Versions = nil
	for _, v := range talos {
		f.spec.Versions = append(f.spec.Versions, upgradev1.ChannelVersion{TalosVersion: v})
	}
}

// plan plans at the fleet's clock.
func (f *fleet) plan() channel.Result {
	f.t.Helper()
	g, err := channel.NewGraph(f.spec.Stages)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	obs := channel.Observed{Channel: "fleet", Now: f.now, Offered: f.spec.Versions, FromSpec: true, Stages: map[string]channel.StageWorld{}}
	for _, s := range f.spec.Stages {
		w := channel.StageWorld{Clusters: f.clusters[s.Name], Unresolved: f.unresolved[s.Name], WindowOpen: true}
		if opens, closed := f.windows[s.Name]; closed {
			w.WindowOpen, w.WindowOpens, w.Window = false, opens, "Tue 09:00-15:00"
		}
		obs.Stages[s.Name] = w
	}
	f.last = channel.Plan(&f.spec, g, &f.status, obs)
	return f.last
}

// rollOut plays the policies: every Cluster of the stage granted a version
// rolls it out, completing at the fleet's clock (failed, for those named).
func (f *fleet) rollOut(stageName string, failed ...string) {
	grant, ok := (&upgradev1.ReleaseChannel{Status: f.status}).StageGrant(stageName)
	NewWithT(f.t).Expect(ok).To(BeTrue(), "stage %s is granted a version", stageName)
	for i := range f.clusters[stageName] {
		c := &f.clusters[stageName][i]
		c.Talos, c.Finished, c.InProgress, c.Phase, c.CompletionTime = grant.TalosVersion, true, false, upgradev1.UpgradePhaseCompleted, f.now
		for _, name := range failed {
			if c.Name == name {
				c.Phase = upgradev1.UpgradePhaseFailed
			}
		}
	}
}

// start marks the rollouts of a stage's Clusters at work on the version
// it is granted.
func (f *fleet) start(stageName string) {
	grant, _ := (&upgradev1.ReleaseChannel{Status: f.status}).StageGrant(stageName)
	for i := range f.clusters[stageName] {
		c := &f.clusters[stageName][i]
		c.Talos, c.Finished, c.InProgress, c.Phase = grant.TalosVersion, false, true, upgradev1.UpgradePhaseInProgress
	}
}

func (f *fleet) version(name string) *upgradev1.ChannelVersionStatus {
	for i := range f.status.Versions {
		if f.status.Versions[i].Name == name {
			return &f.status.Versions[i]
		}
	}
	f.t.Fatalf("no version %s in %v", name, f.status.Versions)
	return nil
}

func (f *fleet) record(version, stageName string) *upgradev1.VersionStageStatus {
	for i, r := range f.version(version).Stages {
		if r.Stage == stageName {
			return &f.version(version).Stages[i]
		}
	}
	return nil
}

func (f *fleet) grant(stageName string) string {
	g, _ := (&upgradev1.ReleaseChannel{Status: f.status}).StageGrant(stageName)
	return g.Version
}

func reasons(r channel.Result) []string {
	var out []string
	for _, e := range r.Events {
		out = append(out, e.Reason)
	}
	return out
}

// TestVersionThroughThreeStages plays a version through three stages: it
// enters the first at once, each stage's soak counts from its last
// Cluster's completion, the second's analysis must take its last
// measurement, the third asks for an approval.
func TestVersionThroughThreeStages(t *testing.T) {
	g := NewWithT(t)
	f := newFleet(t, 2, stage("lab", soak(10*time.Minute)), stage("dev", soak(30*time.Minute), analysis(0)), stage("prod", approval(time.Hour)))
	f.offer("v1.13.0")

	res := f.plan()
	g.Expect(reasons(res)).To(Equal([]string{channel.EventVersionEntered, channel.EventStageEntered}))
	g.Expect(f.grant("lab")).To(Equal("v1.13.0"))
	g.Expect(f.grant("dev")).To(BeEmpty(), "dev is granted nothing before lab passed")
	g.Expect(f.record("v1.13.0", "lab").EnteredTime.Time).To(Equal(t0))
	g.Expect(res.Promoting.Reason).To(Equal(upgradev1.WaitingForRolloutsReason))

	f.now = t0.Add(time.Minute)
	f.start("lab")
	res = f.plan()
	g.Expect(res.Events).To(BeEmpty())
	g.Expect(f.record("v1.13.0", "lab").Phase).To(Equal(upgradev1.StageRolling))

	f.now = t0.Add(5 * time.Minute)
	f.rollOut("lab")
	res = f.plan()
	g.Expect(reasons(res)).To(Equal([]string{channel.EventSoakStarted}))
	lab := f.record("v1.13.0", "lab")
	g.Expect(lab.CompletedTime.Time).To(Equal(t0.Add(5 * time.Minute)))
	g.Expect(lab.SoakUntil.Time).To(Equal(t0.Add(15 * time.Minute)))
	g.Expect(res.RequeueAfter).To(Equal(10 * time.Minute))
	g.Expect(res.Promoting.Reason).To(Equal(upgradev1.SoakingReason))

	f.now = t0.Add(15 * time.Minute)
	res = f.plan()
	g.Expect(reasons(res)).To(Equal([]string{channel.EventStagePassed, channel.EventStageEntered}), "lab passed and dev's gate opened in the same plan")
	g.Expect(f.grant("dev")).To(Equal("v1.13.0"))
	g.Expect(f.record("v1.13.0", "dev").EnteredTime.Time).To(Equal(f.now))

	f.now = t0.Add(20 * time.Minute)
	f.rollOut("dev")
	f.plan()
	dev := f.record("v1.13.0", "dev")
	g.Expect(dev.Phase).To(Equal(upgradev1.StageSoaking))
	g.Expect(dev.Analysis.NextMeasurementTime.Time).To(Equal(f.now), "the first measurement is due when the soak starts")
	g.Expect(channel.MeasurementDue(dev, f.now)).To(BeTrue())

	// Measurements every minute, and one at the end of the soak.
	for m := 0; m <= 30; m++ {
		at := t0.Add(20*time.Minute + time.Duration(m)*time.Minute)
		g.Expect(channel.MeasurementDue(dev, at)).To(BeTrue(), "minute %d", m)
		channel.Record(dev, channel.Round{At: at, Queries: []channel.Tally{{Name: "errors", Measurements: 2}}}, time.Minute)
	}
	g.Expect(dev.Analysis.NextMeasurementTime).To(BeNil(), "the last round was at the end of the soak")
	f.now = t0.Add(50 * time.Minute)
	res = f.plan()
	g.Expect(reasons(res)).To(Equal([]string{channel.EventStagePassed, channel.EventStageEntered}))

	f.now = t0.Add(55 * time.Minute)
	f.rollOut("prod")
	res = f.plan()
	g.Expect(reasons(res)).To(Equal([]string{channel.EventSoakStarted, channel.EventApprovalRequested}))
	prod := f.record("v1.13.0", "prod")
	g.Expect(prod.Phase).To(Equal(upgradev1.StageWaitingForApproval))
	g.Expect(prod.Approval.ExpiresTime.Time).To(Equal(f.now.Add(time.Hour)))
	g.Expect(res.RequeueAfter).To(Equal(time.Hour))
	g.Expect(res.Promoting.Reason).To(Equal(upgradev1.WaitingForApprovalReason))

	f.now = t0.Add(70 * time.Minute)
	f.spec.Approvals = []upgradev1.StageApproval{{Stage: "prod", Version: "v1.13.0", Reason: "CHG-1: dashboards green", RequestedBy: "alice"}}
	res = f.plan()
	g.Expect(reasons(res)).To(Equal([]string{channel.EventApproved, channel.EventStagePassed, channel.EventVersionCompleted}))
	prod = f.record("v1.13.0", "prod")
	g.Expect(prod.Approval.RequestedBy).To(Equal("alice"))
	g.Expect(prod.Approval.Reason).To(Equal("CHG-1: dashboards green"))
	g.Expect(prod.Approval.DecidedTime.Time).To(Equal(f.now))
	g.Expect(f.version("v1.13.0").Phase).To(Equal(upgradev1.ChannelVersionCompleted))
	g.Expect(res.Promoting.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(res.Promoting.Reason).To(Equal(upgradev1.ChannelUpToDateReason))
}

// TestPlanIsIdempotent: planning again on the same world, at a later time
// or after the record went through JSON (a restart reads it back), records
// nothing new and rewrites no timestamp: no version enters or passes a
// stage twice, and a soak neither restarts nor is skipped.
func TestPlanIsIdempotent(t *testing.T) {
	g := NewWithT(t)
	f := newFleet(t, 2, stage("lab", soak(time.Hour)), stage("prod", soak(time.Hour)))
	f.offer("v1.13.0")
	f.plan()
	f.now = t0.Add(10 * time.Minute)
	f.rollOut("lab")
	f.plan()
	before, err := json.Marshal(f.status)
	g.Expect(err).NotTo(HaveOccurred())

	// A restart: the record is read back from the apiserver.
	var restored upgradev1.ReleaseChannelStatus
	g.Expect(json.Unmarshal(before, &restored)).To(Succeed())
	f.status = restored
	for _, at := range []time.Duration{10 * time.Minute, 30 * time.Minute, 69 * time.Minute} {
		f.now = t0.Add(at)
		res := f.plan()
		g.Expect(res.Events).To(BeEmpty(), "at +%s", at)
		after, err := json.Marshal(f.status)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(after)).To(Equal(string(before)), "at +%s", at)
	}
	g.Expect(f.record("v1.13.0", "lab").SoakUntil.Time).To(BeTemporally("==", t0.Add(70*time.Minute)), "the soak counts from the completion, not from the restart")
	f.now = t0.Add(70 * time.Minute)
	g.Expect(reasons(f.plan())).To(Equal([]string{channel.EventStagePassed, channel.EventStageEntered}))
	g.Expect(f.plan().Events).To(BeEmpty(), "a version passes a stage once")
}

// TestStageFailures: a stage halts a version when more Clusters failed than
// its budget, when its analysis failed, when an approval was rejected or
// expired; within the budget it goes on.
func TestStageFailures(t *testing.T) {
	tests := []struct {
		name       string
		stage      upgradev1.ChannelStage
		play       func(f *fleet)
		wantEvents []string
		wantPhase  upgradev1.StagePhase
		wantMsg    string
	}{
		{
			name:       "a failed Cluster over a budget of 0",
			stage:      stage("lab", soak(time.Hour)),
			play:       func(f *fleet) { f.rollOut("lab", "lab/c1") },
			wantEvents: []string{channel.EventStageFailed, channel.EventVersionHalted},
			wantPhase:  upgradev1.StageFailed,
			wantMsg:    "1 Clusters failed their rollout of v1.13.0 (lab/c1), over the stage's maxFailedClusters of 0",
		},
		{
			name:       "a failed Cluster within a budget of 1",
			stage:      stage("lab", soak(time.Hour), budget(1)),
			play:       func(f *fleet) { f.rollOut("lab", "lab/c1") },
			wantEvents: []string{channel.EventSoakStarted},
			wantPhase:  upgradev1.StageSoaking,
		},
		{
			name:  "an analysis over its failure limit",
			stage: stage("lab", soak(time.Hour), analysis(1)),
			play: func(f *fleet) {
				f.rollOut("lab")
				f.plan()
				rec := f.record("v1.13.0", "lab")
				channel.Record(rec, channel.Round{At: f.now, Queries: []channel.Tally{{Name: "errors", Measurements: 3, Failures: 2, LastFailure: "Cluster lab/c0: 1 of 1 not < 1: 3"}}}, time.Minute)
			},
			wantEvents: []string{channel.EventAnalysisFailed, channel.EventStageFailed, channel.EventVersionHalted},
			wantPhase:  upgradev1.StageFailed,
			wantMsg:    `the analysis failed: query "errors" failed 2 of 3 measurements (failureLimit 1), last: Cluster lab/c0: 1 of 1 not < 1: 3`,
		},
		{
			name:  "a rejection",
			stage: stage("lab", approval(0)),
			play: func(f *fleet) {
				f.rollOut("lab")
				f.plan()
				f.spec.Approvals = []upgradev1.StageApproval{{Stage: "lab", Version: "v1.13.0", Decision: upgradev1.ApprovalReject, Reason: "INC-7: p99 up 40%", RequestedBy: "bob"}}
			},
			wantEvents: []string{channel.EventApprovalRejected, channel.EventStageFailed, channel.EventVersionHalted},
			wantPhase:  upgradev1.StageFailed,
			wantMsg:    `bob rejected it: "INC-7: p99 up 40%"`,
		},
		{
			name:  "an approval window that expired",
			stage: stage("lab", approval(time.Hour)),
			play: func(f *fleet) {
				f.rollOut("lab")
				f.plan()
				f.now = f.now.Add(time.Hour)
			},
			wantEvents: []string{channel.EventApprovalExpired, channel.EventStageFailed, channel.EventVersionHalted},
			wantPhase:  upgradev1.StageFailed,
			wantMsg:    "nobody approved it by 2026-12-01T10:00:00Z: the approval window expired",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFleet(t, 2, tt.stage, stage("prod"))
			f.offer("v1.13.0")
			f.plan()
			tt.play(f)
			res := f.plan()
			g.Expect(reasons(res)).To(Equal(tt.wantEvents))
			rec := f.record("v1.13.0", "lab")
			g.Expect(rec.Phase).To(Equal(tt.wantPhase))
			if tt.wantMsg != "" {
				g.Expect(rec.Message).To(Equal(tt.wantMsg))
			}
			if tt.wantPhase == upgradev1.StageFailed {
				g.Expect(f.version("v1.13.0").Phase).To(Equal(upgradev1.ChannelVersionHalted))
				g.Expect(f.grant("prod")).To(BeEmpty(), "a halted version enters no further stage")
				g.Expect(res.Promoting.Reason).To(Equal(upgradev1.VersionHaltedReason))
			}
		})
	}
}

// TestSupersession: a newer version supersedes a halted one (Halted) or
// every older one in flight (Always); versions new at once enter as one.
func TestSupersession(t *testing.T) {
	t.Run("Halted: a newer version supersedes a halted one and takes its stages", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 1, stage("lab", soak(time.Hour)), stage("prod"))
		f.offer("v1.13.0")
		f.plan()
		f.rollOut("lab", "lab/c0")
		f.plan()
		g.Expect(f.version("v1.13.0").Phase).To(Equal(upgradev1.ChannelVersionHalted))

		f.now = t0.Add(time.Hour)
		f.offer("v1.13.0", "v1.13.1")
		res := f.plan()
		g.Expect(reasons(res)).To(Equal([]string{channel.EventVersionSuperseded, channel.EventVersionEntered, channel.EventStageEntered}))
		g.Expect(f.version("v1.13.0").Phase).To(Equal(upgradev1.ChannelVersionSuperseded))
		g.Expect(f.grant("lab")).To(Equal("v1.13.1"))
	})
	t.Run("Halted: versions in flight follow each other, one per stage", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 1, stage("lab", soak(time.Hour)), stage("prod", soak(time.Hour)))
		f.offer("v1.13.0")
		f.plan()
		f.rollOut("lab")
		f.plan()
		f.offer("v1.13.0", "v1.13.1")
		res := f.plan()
		g.Expect(reasons(res)).To(Equal([]string{channel.EventVersionEntered}))
		g.Expect(f.record("v1.13.1", "lab").Phase).To(Equal(upgradev1.StagePending))
		g.Expect(f.record("v1.13.1", "lab").Message).To(Equal("the stage is soaking with v1.13.0: one version at a time"))
		g.Expect(res.Promoting.Reason).To(Equal(upgradev1.StageBusyReason))

		f.now = t0.Add(time.Hour)
		res = f.plan()
		g.Expect(reasons(res)).To(Equal([]string{channel.EventStagePassed, channel.EventStageEntered, channel.EventStageEntered}))
		g.Expect(f.grant("lab")).To(Equal("v1.13.1"))
		g.Expect(f.grant("prod")).To(Equal("v1.13.0"))
		g.Expect(f.version("v1.13.0").Phase).To(Equal(upgradev1.ChannelVersionPromoting), "several versions in flight, at different stages")
	})
	t.Run("Always: a newer version supersedes the older in flight", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 1, stage("lab", soak(time.Hour)), stage("prod"))
		f.spec.Supersede = upgradev1.SupersedeAlways
		f.offer("v1.13.0")
		f.plan()
		f.start("lab")
		f.offer("v1.13.0", "v1.13.1")
		res := f.plan()
		g.Expect(reasons(res)).To(Equal([]string{channel.EventVersionSuperseded, channel.EventVersionEntered}))
		g.Expect(f.record("v1.13.1", "lab").Message).To(HavePrefix("1 Clusters of the stage still roll out another version (lab/c0)"), "never two versions on one Cluster")
		f.rollOut("lab")
		g.Expect(reasons(f.plan())).To(Equal([]string{channel.EventStageEntered}))
		g.Expect(f.grant("lab")).To(Equal("v1.13.1"))
	})
	t.Run("versions new at once: only the newest enters", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 1, stage("lab"))
		f.offer("v1.12.5", "v1.13.0")
		res := f.plan()
		g.Expect(reasons(res)).To(Equal([]string{channel.EventVersionSuperseded, channel.EventVersionEntered, channel.EventStageEntered}))
		g.Expect(f.version("v1.12.5").Phase).To(Equal(upgradev1.ChannelVersionSuperseded))
		g.Expect(f.version("v1.12.5").Stages).To(BeEmpty())
	})
	t.Run("a version removed from spec.versions is withdrawn", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 1, stage("lab"), stage("prod"))
		f.offer("v1.13.0")
		f.plan()
		f.offer()
		res := f.plan()
		g.Expect(reasons(res)).To(Equal([]string{channel.EventVersionWithdrawn}))
		g.Expect(f.version("v1.13.0").Phase).To(Equal(upgradev1.ChannelVersionWithdrawn))
		g.Expect(f.grant("lab")).To(Equal("v1.13.0"), "what the Clusters run stays")
	})
}

// TestGates: a stage's gate stays shut while the channel is paused or its
// window is closed; a stage with no Cluster soaks at once; stages side by
// side both wait for the one before them, and the one after both waits
// for both.
func TestGates(t *testing.T) {
	t.Run("paused", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 1, stage("lab"))
		f.spec.Paused = true
		f.offer("v1.13.0")
		res := f.plan()
		g.Expect(reasons(res)).To(Equal([]string{channel.EventVersionEntered}))
		g.Expect(res.Promoting.Reason).To(Equal(upgradev1.ChannelPausedReason))
		f.spec.Paused = false
		g.Expect(reasons(f.plan())).To(Equal([]string{channel.EventStageEntered}))
	})
	t.Run("window", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 1, stage("lab"))
		f.windows["lab"] = t0.Add(3 * time.Hour)
		f.offer("v1.13.0")
		res := f.plan()
		g.Expect(res.Promoting.Reason).To(Equal(upgradev1.WaitingForWindowReason))
		g.Expect(res.RequeueAfter).To(Equal(3 * time.Hour))
		g.Expect(f.record("v1.13.0", "lab").Message).To(Equal("the stage's window (Tue 09:00-15:00) is closed; it opens at 2026-12-01T12:00:00Z"))
	})
	t.Run("a stage with no Cluster, or a policy yet to come, holds the version", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 0, stage("lab", soak(time.Minute)), stage("prod"))
		f.offer("v1.13.0")
		g.Expect(reasons(f.plan())).To(Equal([]string{channel.EventVersionEntered, channel.EventStageEntered}))
		g.Expect(f.record("v1.13.0", "lab").Message).To(HavePrefix("the stage has no Cluster yet"))
		f.clusters["lab"] = []channel.ClusterRollout{{Name: "lab/c0", HasRollout: true, Talos: "v1.13.0", Finished: true, Phase: upgradev1.UpgradePhaseCompleted, CompletionTime: t0}}
		f.unresolved = map[string][]string{"lab": {"lab/late"}}
		f.plan()
		g.Expect(f.record("v1.13.0", "lab").Message).To(Equal("the stage names policies that do not exist yet, or whose target does not come from the channel (lab/late): it waits for their Clusters"))
		f.unresolved = nil
		g.Expect(reasons(f.plan())).To(Equal([]string{channel.EventSoakStarted}))
	})
	t.Run("stages side by side", func(t *testing.T) {
		g := NewWithT(t)
		f := newFleet(t, 1, stage("lab"), stage("eu"), stage("us", after("lab")), stage("prod", after("eu", "us")))
		f.offer("v1.13.0")
		f.plan()
		f.rollOut("lab")
		res := f.plan()
		g.Expect(reasons(res)).To(Equal([]string{channel.EventSoakStarted, channel.EventStagePassed, channel.EventStageEntered, channel.EventStageEntered}))
		g.Expect(f.grant("eu")).To(Equal("v1.13.0"))
		g.Expect(f.grant("us")).To(Equal("v1.13.0"))
		f.rollOut("eu")
		f.plan()
		g.Expect(f.grant("prod")).To(BeEmpty(), "prod comes after us too")
		f.rollOut("us")
		f.plan()
		g.Expect(f.grant("prod")).To(Equal("v1.13.0"))
	})
}
