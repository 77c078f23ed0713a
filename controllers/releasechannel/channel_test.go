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

package releasechannel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/internal/channel"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

const (
	// worldTimeout bounds the making of a test's Clusters by CAPI.
	worldTimeout = 5 * time.Minute
	// promotionTimeout bounds a version's way through a stage: a rollout of
	// a Machine, a soak of seconds, an analysis.
	promotionTimeout = 4 * time.Minute
	// fromVersion is the Talos version the Clusters start on.
	fromVersion = "v1.12.4"
	// policyName is the name of the policy of every stage's namespace.
	policyName = "talos"
)

// fleet is the world of one test: a Cluster per stage, each in a namespace
// of its own with a policy that takes its target from the channel.
type fleet struct {
	// channel is the channel's name; the stages' namespaces are
	// <channel>-<stage>.
	channel string
	// clusters are the Clusters, by stage.
	clusters map[string]*sandbox.Cluster
}

// newFleet makes a Cluster of one control-plane Machine per stage, each in
// the namespace <name>-<stage> with its policy, and opts it in; the Clusters
// are stopped when the test ends.
func newFleet(ctx context.Context, t *testing.T, name string, stages ...string) *fleet {
	t.Helper()
	g := NewWithT(t)
	f := &fleet{channel: name, clusters: map[string]*sandbox.Cluster{}}
	for _, s := range stages {
		ns := f.namespace(s)
		cl, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: s, ControlPlanes: 1, TalosVersion: fromVersion})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() {
			if err := cl.Stop(); err != nil {
				t.Logf("Stopping Cluster %s/%s: %v", cl.Namespace, cl.Name, err)
			}
		})
		g.Expect(sb.Management.Client.Create(ctx, sb.Policy(ns, policyName, "", func(p *upgradev1.TalosUpgradePolicy) {
			p.Spec.TargetFrom, p.Spec.Channel = upgradev1.TargetFromChannel, name
		}))).To(Succeed())
		g.Expect(cl.OptIn(ctx, policyName)).To(Succeed())
		f.clusters[s] = cl
	}
	return f
}

func (f *fleet) namespace(stage string) string { return f.channel + "-" + stage }

// stage returns a stage of the fleet: the policy of its namespace.
func (f *fleet) stage(name string, mutate ...func(*upgradev1.ChannelStage)) upgradev1.ChannelStage {
	s := upgradev1.ChannelStage{Name: name, Policies: []upgradev1.PolicyReference{{Namespace: f.namespace(name), Name: policyName}}}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

// create creates the channel of the fleet with its stages, carrying
// versions.
func (f *fleet) create(ctx context.Context, g Gomega, stages []upgradev1.ChannelStage, versions ...string) {
	ch := &upgradev1.ReleaseChannel{ObjectMeta: metav1.ObjectMeta{Name: f.channel}, Spec: upgradev1.ReleaseChannelSpec{Stages: stages}}
	for _, v := range versions {
		ch.Spec.Versions = append(ch.Spec.Versions, upgradev1.ChannelVersion{TalosVersion: v})
	}
	g.Expect(sb.Management.Client.Create(ctx, ch)).To(Succeed())
}

// get reads the channel.
func (f *fleet) get(ctx context.Context, g Gomega) *upgradev1.ReleaseChannel {
	ch := &upgradev1.ReleaseChannel{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Name: f.channel}, ch)).To(Succeed())
	return ch
}

// record returns the record of a version in a stage, or nil.
func record(ch *upgradev1.ReleaseChannel, version, stage string) *upgradev1.VersionStageStatus {
	for i := range ch.Status.Versions {
		v := &ch.Status.Versions[i]
		for j := range v.Stages {
			if v.Name == version && v.Stages[j].Stage == stage {
				return &v.Stages[j]
			}
		}
	}
	return nil
}

// phase returns the phase of a version.
func phase(ch *upgradev1.ReleaseChannel, version string) upgradev1.ChannelVersionPhase {
	for _, v := range ch.Status.Versions {
		if v.Name == version {
			return v.Phase
		}
	}
	return ""
}

// waitForStage waits until the version stands in phase in the stage, and
// returns the channel then.
func (f *fleet) waitForStage(ctx context.Context, g Gomega, version, stage string, want upgradev1.StagePhase) *upgradev1.ReleaseChannel {
	var ch *upgradev1.ReleaseChannel
	g.Eventually(func(g Gomega) {
		ch = f.get(ctx, g)
		rec := record(ch, version, stage)
		g.Expect(rec).NotTo(BeNil(), "%s has not reached stage %s: %s", version, stage, describe(ch))
		g.Expect(rec.Phase).To(Equal(want), "%s in stage %s: %s", version, stage, describe(ch))
	}, promotionTimeout, time.Second).Should(Succeed())
	return ch
}

// target returns what the rollout of a stage's Cluster targets: "" while
// it has none.
func (f *fleet) target(ctx context.Context, g Gomega, stage string) string {
	u := &upgradev1.TalosUpgrade{}
	err := sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: f.namespace(stage), Name: stage}, u)
	if apierrors.IsNotFound(err) {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred())
	return u.Spec.TalosVersion
}

// completedOn waits until the rollout of a stage's Cluster completed the
// version, and returns when it did.
func (f *fleet) completedOn(ctx context.Context, g Gomega, stage, version string) time.Time {
	var done time.Time
	g.Eventually(func(g Gomega) {
		u, err := sb.Upgrade(ctx, f.namespace(stage), stage)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(u.Spec.TalosVersion).To(Equal(version))
		g.Expect(u.Finished()).To(BeTrue())
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "%s", u.Status.BlockedBy)
		done = u.Status.CompletionTime.Time
	}, promotionTimeout, time.Second).Should(Succeed())
	return done
}

// feeders stop the feeding of each Cluster's error ratio, by Cluster.
var feeders = map[string]func(){}

// errorRatio keeps the error ratio of a Cluster at v in Prometheus until
// the test ends, or errorRatio sets it again (a series is seen for 5
// minutes after its last sample).
func errorRatio(t *testing.T, cluster string, v float64) {
	t.Helper()
	if stop, ok := feeders[cluster]; ok {
		stop()
	}
	labels := map[string]string{"__name__": "error_ratio", "cluster": cluster}
	NewWithT(t).Expect(prom.Set(labels, v)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = prom.Set(labels, v)
			}
		}
	}()
	stop := func() {
		cancel()
		<-done
	}
	feeders[cluster] = stop
	t.Cleanup(func() {
		if _, ok := feeders[cluster]; ok {
			stop()
			delete(feeders, cluster)
		}
	})
}

// analysis measures the error ratio of every Cluster of a stage every 5s.
func analysis(s *upgradev1.ChannelStage) {
	s.Analysis = &upgradev1.StageAnalysis{
		Interval: &metav1.Duration{Duration: 5 * time.Second},
		Queries: []upgradev1.AnalysisQuery{{
			Name: "error-ratio", HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: prom.URL},
			Query: `error_ratio{cluster="$cluster"}`, Comparison: &upgradev1.PrometheusComparison{Operator: "<", Value: "0.01"},
		}},
	}
}

func soak(d time.Duration) func(*upgradev1.ChannelStage) {
	return func(s *upgradev1.ChannelStage) { s.SoakTime = &metav1.Duration{Duration: d} }
}

// TestVersionThroughThreeStages moves v1.13.0 through lab (a soak), dev (a
// soak and an analysis over it, per Cluster, against Prometheus) and prod
// (an approval): no Cluster is granted the version before its stage's gate
// opened, each gate opens only once the stage before soaked from its last
// completion and passed, and the approval is recorded with who made it.
func TestVersionThroughThreeStages(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), worldTimeout+4*promotionTimeout)
	defer cancel()
	f := newFleet(ctx, t, "three", "lab", "dev", "prod")
	errorRatio(t, "dev", 0.001)
	approver, err := sb.Management.AddAdmin("alice@example.com")
	g.Expect(err).NotTo(HaveOccurred())
	alice, err := client.New(approver.Config(), client.Options{Scheme: sb.Management.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	f.create(ctx, g, []upgradev1.ChannelStage{
		f.stage("lab", soak(10*time.Second)),
		f.stage("dev", soak(15*time.Second), analysis),
		f.stage("prod", func(s *upgradev1.ChannelStage) {
			s.Approval = &upgradev1.StageApprovalGate{Timeout: &metav1.Duration{Duration: time.Hour}}
		}),
	}, "v1.13.0")

	labDone := f.completedOn(ctx, g, "lab", "v1.13.0")
	ch := f.waitForStage(ctx, g, "v1.13.0", "lab", upgradev1.StageSoaking)
	g.Expect(f.target(ctx, g, "dev")).To(BeEmpty(), "dev is granted nothing while lab soaks")
	lab := record(ch, "v1.13.0", "lab")
	g.Expect(lab.CompletedTime.Time).To(BeTemporally("~", labDone, time.Second), "the soak counts from the last completion")
	g.Expect(lab.SoakUntil.Time).To(Equal(lab.CompletedTime.Add(10 * time.Second)))

	devDone := f.completedOn(ctx, g, "dev", "v1.13.0")
	ch = f.get(ctx, g)
	lab = record(ch, "v1.13.0", "lab")
	dev := record(ch, "v1.13.0", "dev")
	g.Expect(lab.PassedTime.Time).To(BeTemporally(">=", lab.SoakUntil.Time), "lab passed once its soak ended")
	g.Expect(dev.EnteredTime.Time).To(BeTemporally(">=", lab.PassedTime.Time), "dev's gate opened once lab passed")
	g.Expect(f.target(ctx, g, "prod")).To(BeEmpty(), "prod is granted nothing while dev soaks")

	ch = f.waitForStage(ctx, g, "v1.13.0", "prod", upgradev1.StageWaitingForApproval)
	dev = record(ch, "v1.13.0", "dev")
	g.Expect(dev.CompletedTime.Time).To(BeTemporally("~", devDone, time.Second))
	g.Expect(dev.Analysis.Queries).To(HaveLen(1))
	g.Expect(dev.Analysis.Queries[0].Measurements).To(BeNumerically(">=", 3), "measured every 5s through a soak of 15s, and at its end")
	g.Expect(dev.Analysis.Queries[0].Failures).To(BeZero())
	g.Expect(dev.Analysis.LastMeasurementTime.Time).To(BeTemporally(">=", dev.SoakUntil.Time), "the last measurement is at the end of the soak")
	g.Expect(record(ch, "v1.13.0", "prod").EnteredTime.Time).To(BeTemporally(">=", dev.PassedTime.Time))
	g.Expect(f.completedOn(ctx, g, "prod", "v1.13.0")).NotTo(BeZero())
	g.Expect(conditionReason(ch, upgradev1.ChannelPromotingCondition)).To(Equal(upgradev1.WaitingForApprovalReason))

	// alice approves, as kubectl tollgate approve does: the webhook
	// records her, whatever the request says.
	g.Eventually(func() error {
		ch := f.get(ctx, g)
		ch.Spec.Approvals = append(ch.Spec.Approvals, upgradev1.StageApproval{Stage: "prod", Version: "v1.13.0", Reason: "CHG-7: dev flat for a day", RequestedBy: "mallory"})
		return alice.Update(ctx, ch)
	}, time.Minute).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ch = f.get(ctx, g)
		g.Expect(phase(ch, "v1.13.0")).To(Equal(upgradev1.ChannelVersionCompleted), describe(ch))
	}, promotionTimeout, time.Second).Should(Succeed())
	prod := record(ch, "v1.13.0", "prod")
	g.Expect(prod.Phase).To(Equal(upgradev1.StagePassed))
	g.Expect(prod.Approval.RequestedBy).To(Equal("alice@example.com"))
	g.Expect(prod.Approval.Reason).To(Equal("CHG-7: dev flat for a day"))
	g.Expect(prod.Approval.Decision).To(Equal(upgradev1.ApprovalApprove))
	g.Eventually(func(g Gomega) {
		g.Expect(events(ctx, g, f.channel, channel.EventApproved)).To(ConsistOf(ContainSubstring(`alice@example.com approved v1.13.0 in stage prod: "CHG-7: dev flat for a day"`)))
	}, time.Minute, time.Second).Should(Succeed(), "the recorder writes its events on its own schedule")
	for _, s := range []string{"lab", "dev", "prod"} {
		g.Expect(ch.Status.Stages).To(ContainElement(SatisfyAll(
			HaveField("Name", s), HaveField("Version", "v1.13.0"), HaveField("Clusters", BeEquivalentTo(1)), HaveField("OnVersion", BeEquivalentTo(1)))))
	}

	// A second approval of the same version is refused: nothing waits.
	ch.Spec.Approvals = append(ch.Spec.Approvals, upgradev1.StageApproval{Stage: "lab", Version: "v1.13.0", Reason: "again"})
	err = alice.Update(ctx, ch)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.approvals[1].stage"))
}

// TestAnalysisFailureHaltsAndANewerReleaseSupersedes: lab's analysis fails
// v1.13.0 (its error ratio is over the limit): the version halts there and
// prod is never granted it. v1.13.1, added once the error ratio is back,
// supersedes it and moves through both stages.
func TestAnalysisFailureHaltsAndANewerReleaseSupersedes(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), worldTimeout+4*promotionTimeout)
	defer cancel()
	f := newFleet(ctx, t, "halt", "lab", "prod")
	errorRatio(t, "lab", 0.2)
	f.create(ctx, g, []upgradev1.ChannelStage{f.stage("lab", soak(15*time.Second), analysis), f.stage("prod")}, "v1.13.0")

	ch := f.waitForStage(ctx, g, "v1.13.0", "lab", upgradev1.StageFailed)
	lab := record(ch, "v1.13.0", "lab")
	g.Expect(lab.Message).To(ContainSubstring(`the analysis failed: query "error-ratio" failed 1 of 1 measurements (failureLimit 0), last: Cluster halt-lab/lab: 1 of 1 not < 0.01: error_ratio{cluster="lab"} 0.2`))
	g.Expect(phase(ch, "v1.13.0")).To(Equal(upgradev1.ChannelVersionHalted))
	g.Expect(conditionReason(ch, upgradev1.ChannelPromotingCondition)).To(Equal(upgradev1.VersionHaltedReason))
	g.Eventually(func(g Gomega) {
		g.Expect(events(ctx, g, f.channel, channel.EventAnalysisFailed)).To(HaveLen(1))
	}, time.Minute, time.Second).Should(Succeed(), "the recorder writes its events on its own schedule")
	g.Consistently(func(g Gomega) {
		g.Expect(f.target(ctx, g, "prod")).To(BeEmpty(), "a halted version enters no further stage")
	}, 10*time.Second, time.Second).Should(Succeed())

	errorRatio(t, "lab", 0.001)
	g.Eventually(func() error {
		ch := f.get(ctx, g)
		ch.Spec.Versions = append(ch.Spec.Versions, upgradev1.ChannelVersion{TalosVersion: "v1.13.1"})
		return sb.Management.Client.Update(ctx, ch)
	}, time.Minute).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ch = f.get(ctx, g)
		g.Expect(phase(ch, "v1.13.1")).To(Equal(upgradev1.ChannelVersionCompleted), describe(ch))
	}, 3*promotionTimeout, time.Second).Should(Succeed())
	g.Expect(phase(ch, "v1.13.0")).To(Equal(upgradev1.ChannelVersionSuperseded))
	g.Expect(record(ch, "v1.13.0", "prod")).To(BeNil(), "the superseded version never reached prod")
	f.completedOn(ctx, g, "lab", "v1.13.1")
	f.completedOn(ctx, g, "prod", "v1.13.1")
}

// TestRestartMidSoak stops the manager, as a crash does, in the middle of
// lab's soak, and starts another: the soak neither restarts (its end is
// the one recorded before) nor is skipped (lab passes at its end, not when
// the new manager starts), and prod's gate opens once.
func TestRestartMidSoak(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), worldTimeout+3*promotionTimeout)
	defer cancel()
	f := newFleet(ctx, t, "restart", "lab", "prod")
	f.create(ctx, g, []upgradev1.ChannelStage{f.stage("lab", soak(40*time.Second)), f.stage("prod")}, "v1.13.0")

	ch := f.waitForStage(ctx, g, "v1.13.0", "lab", upgradev1.StageSoaking)
	before := record(ch, "v1.13.0", "lab").DeepCopy()
	g.Expect(sb.StopManager()).To(Succeed())
	t.Cleanup(func() { _ = sb.StartManager(context.Background(), manager.Options{}) })
	// The manager is down for a while: a crash and a reschedule.
	time.Sleep(10 * time.Second) //nolint:gosec // An outage of a set length, not a wait for a condition.
	g.Expect(sb.StartManager(ctx, manager.Options{})).To(Succeed())
	restarted := time.Now()

	ch = f.waitForStage(ctx, g, "v1.13.0", "lab", upgradev1.StagePassed)
	lab := record(ch, "v1.13.0", "lab")
	g.Expect(lab.EnteredTime.Time).To(Equal(before.EnteredTime.Time))
	g.Expect(lab.CompletedTime.Time).To(Equal(before.CompletedTime.Time))
	g.Expect(lab.SoakUntil.Time).To(Equal(before.SoakUntil.Time), "the soak did not restart")
	g.Expect(lab.PassedTime.Time).To(BeTemporally(">=", before.SoakUntil.Time), "the soak was not skipped")
	if restarted.Before(before.SoakUntil.Time) {
		g.Expect(lab.PassedTime.Time).To(BeTemporally(">", restarted), "the new manager waited for the soak's end")
	}
	f.completedOn(ctx, g, "prod", "v1.13.0")
	g.Eventually(func(g Gomega) {
		g.Expect(phase(f.get(ctx, g), "v1.13.0")).To(Equal(upgradev1.ChannelVersionCompleted))
	}, promotionTimeout, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(events(ctx, g, f.channel, channel.EventStageEntered)).To(ConsistOf(
			ContainSubstring("entered stage lab"), ContainSubstring("entered stage prod")), "each gate opened once")
		g.Expect(events(ctx, g, f.channel, channel.EventStagePassed)).To(ConsistOf(
			ContainSubstring("passed stage lab"), ContainSubstring("passed stage prod")), "each stage passed once")
	}, time.Minute, time.Second).Should(Succeed())
}

// describe sums a channel's record up for a failure message.
func describe(ch *upgradev1.ReleaseChannel) string {
	out := ""
	for _, c := range ch.Status.Conditions {
		out += fmt.Sprintf("\n%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, v := range ch.Status.Versions {
		out += fmt.Sprintf("\n%s %s: %s", v.Name, v.Phase, v.Message)
		for _, r := range v.Stages {
			out += fmt.Sprintf("\n  %s %s: %s", r.Stage, r.Phase, r.Message)
		}
	}
	return out
}

// envtestOnly skips a test without the envtest binaries.
func envtestOnly(t *testing.T) {
	t.Helper()
	if sb == nil {
		t.Skip("this test needs the envtest binaries and a sandbox")
	}
}

// conditionReason returns the reason of a condition of the channel.
func conditionReason(ch *upgradev1.ReleaseChannel, t string) string {
	for _, c := range ch.Status.Conditions {
		if c.Type == t {
			return c.Reason
		}
	}
	return ""
}

// events returns the notes of the channel's events of a reason, a note as
// many times as the recorder counted it, so that a test sees a repeat. The
// recorder writes on its own schedule: read them in an Eventually.
func events(ctx context.Context, g Gomega, name, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(sb.Management.Client.List(ctx, list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ReleaseChannel" && e.Regarding.Name == name && e.Reason == reason {
			n := 1
			if e.Series != nil {
				n = int(e.Series.Count)
			}
			for range n {
				notes = append(notes, fmt.Sprintf("%s (%s)", e.Note, e.Type))
			}
		}
	}
	return notes
}

// TestOrderFree: a channel applied before its policies waits for them and
// says why in its Ready condition, as does one whose stage names a policy
// whose target does not come from it; a policy applied before its channel
// says so in its Channel condition. Nothing is refused for not existing
// yet.
func TestOrderFree(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), promotionTimeout)
	defer cancel()
	const name, ns = "order-free", "order-free"
	g.Expect(sb.Management.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	ready := func(g Gomega, ch *upgradev1.ReleaseChannel) *metav1.Condition {
		for i := range ch.Status.Conditions {
			if ch.Status.Conditions[i].Type == upgradev1.ChannelReadyCondition {
				return &ch.Status.Conditions[i]
			}
		}
		g.Expect(ch.Status.Conditions).To(ContainElement(HaveField("Type", upgradev1.ChannelReadyCondition)))
		return nil
	}
	policyCondition := func(g Gomega) *metav1.Condition {
		p := &upgradev1.TalosUpgradePolicy{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lab"}, p)).To(Succeed())
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == upgradev1.PolicyChannelCondition {
				return &p.Status.Conditions[i]
			}
		}
		g.Expect(p.Status.Conditions).To(ContainElement(HaveField("Type", upgradev1.PolicyChannelCondition)))
		return nil
	}

	// The policy first: its channel does not exist yet.
	g.Expect(sb.Management.Client.Create(ctx, sb.Policy(ns, "lab", "", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TargetFrom, p.Spec.Channel = upgradev1.TargetFromChannel, name
	}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := policyCondition(g)
		g.Expect(c.Reason).To(Equal(upgradev1.ChannelNotFoundReason))
		g.Expect(c.Message).To(ContainSubstring(`ReleaseChannel "order-free" does not exist (yet)`))
	}, promotionTimeout, time.Second).Should(Succeed())

	// The channel, naming that policy and one that does not exist yet.
	f := &fleet{channel: name}
	ch := &upgradev1.ReleaseChannel{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: upgradev1.ReleaseChannelSpec{
		Versions: []upgradev1.ChannelVersion{{TalosVersion: "v1.13.0"}},
		Stages: []upgradev1.ChannelStage{
			{Name: "lab", Policies: []upgradev1.PolicyReference{{Namespace: ns, Name: "lab"}}},
			{Name: "prod", Policies: []upgradev1.PolicyReference{{Namespace: ns, Name: "prod"}}},
		},
	}}
	g.Expect(sb.Management.Client.Create(ctx, ch)).To(Succeed())
	t.Cleanup(func() { _ = sb.Management.Client.Delete(context.Background(), ch) })
	g.Eventually(func(g Gomega) {
		c := ready(g, f.get(ctx, g))
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(upgradev1.PolicyNotFoundReason))
		g.Expect(c.Message).To(ContainSubstring("stage prod names TalosUpgradePolicy order-free/prod, which does not exist (yet)"))
	}, promotionTimeout, time.Second).Should(Succeed())

	// prod comes, its target its own: the channel says what to change.
	g.Expect(sb.Management.Client.Create(ctx, sb.Policy(ns, "prod", "v1.13.0"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := ready(g, f.get(ctx, g))
		g.Expect(c.Reason).To(Equal(upgradev1.PolicyNotInChannelReason))
		g.Expect(c.Message).To(ContainSubstring("set targetFrom: Channel and channel: order-free on it"))
	}, promotionTimeout, time.Second).Should(Succeed())
	// A merge patch, as kubectl's: the controller writes the policy's
	// status meanwhile, and an update of what was read would conflict.
	p := &upgradev1.TalosUpgradePolicy{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, p)).To(Succeed())
	before := p.DeepCopy()
	p.Spec.TalosVersion, p.Spec.TargetFrom, p.Spec.Channel = "", upgradev1.TargetFromChannel, name
	g.Expect(sb.Management.Client.Patch(ctx, p, client.MergeFrom(before))).To(Succeed())
	g.Eventually(func(g Gomega) {
		ch := f.get(ctx, g)
		g.Expect(ready(g, ch).Status).To(Equal(metav1.ConditionTrue), describe(ch))
		rec := record(ch, "v1.13.0", "lab")
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Phase).To(Equal(upgradev1.StageRolling), "a stage with no Cluster lets nothing pass: fail closed")
		g.Expect(rec.Message).To(HavePrefix("the stage has no Cluster yet"))
	}, promotionTimeout, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := policyCondition(g)
		g.Expect(c.Reason).To(Equal(upgradev1.InChannelReason))
		g.Expect(c.Message).To(Equal("no Cluster selects the policy"))
	}, promotionTimeout, time.Second).Should(Succeed())
}
