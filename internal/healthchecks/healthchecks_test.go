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

package healthchecks

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

const eventually = 10 * time.Second

type checkOption func(*upgradev1.ClusterHealthCheck)

func withInterval(d time.Duration) checkOption {
	return func(c *upgradev1.ClusterHealthCheck) { c.Spec.Interval = &metav1.Duration{Duration: d} }
}

func withTimeout(d time.Duration) checkOption {
	return func(c *upgradev1.ClusterHealthCheck) { c.Spec.Timeout = &metav1.Duration{Duration: d} }
}

func withSuccessThreshold(n int32) checkOption {
	return func(c *upgradev1.ClusterHealthCheck) { c.Spec.SuccessThreshold = ptr.To(n) }
}

func newCheck(t *testing.T, name string, opts ...checkOption) upgradev1.ClusterHealthCheck {
	t.Helper()
	c := upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "check", Image: "ceph:v19"}},
			}}}},
			Labels: map[string]string{"team": "storage"},
		},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// evaluateUntil calls Evaluate, feeding back the statuses as the engine
// does, until done accepts the result.
func evaluateUntil(g Gomega, ev *Evaluator, in *Input, done func(Gomega, Result)) Result {
	var res Result
	g.Eventually(func(g Gomega) {
		var err error
		res, err = ev.Evaluate(context.Background(), *in)
		g.Expect(err).NotTo(HaveOccurred())
		in.Previous = res.Statuses
		done(g, res)
	}, eventually, 20*time.Millisecond).Should(Succeed())
	return res
}

func jobsOf(g Gomega, in Input) []batchv1.Job {
	jobs := &batchv1.JobList{}
	g.Expect(workload.List(context.Background(), jobs, client.MatchingLabels(jobLabels(in, "")))).To(Succeed())
	return jobs.Items
}

func TestJobName(t *testing.T) {
	tests := []struct {
		name    string
		check   string
		cluster string
		want    string
	}{
		{name: "readable when it fits", check: "ceph", cluster: "prod-1", want: "tollgate-hc-ceph-prod-1"},
		{name: "dotted check names are hashed", check: "ceph.health", cluster: "prod-1"},
		{name: "long names are truncated and hashed", check: strings.Repeat("c", 60), cluster: strings.Repeat("p", 63)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := JobName(tt.check, tt.cluster)
			g.Expect(validation.IsDNS1123Label(got)).To(BeEmpty())
			g.Expect(JobName(tt.check, tt.cluster)).To(Equal(got))
			if tt.want != "" {
				g.Expect(got).To(Equal(tt.want))
			} else {
				g.Expect(got).To(MatchRegexp(`^tollgate-hc-.*-[0-9a-f]{8}$`))
			}
		})
	}
	NewWithT(t).Expect(JobName(strings.Repeat("c", 60)+"a", "p")).NotTo(Equal(JobName(strings.Repeat("c", 60)+"b", "p")))
}

func TestEvaluateNoChecks(t *testing.T) {
	g := NewWithT(t)
	ev := &Evaluator{Client: workload}
	res, err := ev.Evaluate(context.Background(), Input{UpgradeName: "none", ClusterName: "none"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Passed).To(BeTrue())
	g.Expect(res.Reason).To(Equal(upgradev1.HealthChecksPassedReason))
	g.Expect(res.RequeueAfter).To(BeZero())
}

func TestEvaluateFailingChecksHold(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	ev := &Evaluator{Client: workload, APIReader: workload, Now: clock.Now}
	long := "ceph is HEALTH_WARN: " + strings.Repeat("3 pgs degraded, ", 30)
	driver.Script(jobdriver.NamePrefix(JobName("ceph", "failing")), jobdriver.Outcome{Fail: true, Message: long + "\n"})
	driver.Script(jobdriver.NamePrefix(JobName("db", "failing")),
		jobdriver.Outcome{Fail: true, Message: "replica lag 30s"}, jobdriver.Outcome{Fail: true, Message: "replica lag 10s"})
	in := &Input{UpgradeName: "failing", ClusterName: "failing", Checks: []upgradev1.ClusterHealthCheck{
		newCheck(t, "ceph", withInterval(10*time.Second)),
		newCheck(t, "db", withInterval(20*time.Second)),
	}}

	// The first call starts both checks; running checks hold.
	res, err := ev.Evaluate(context.Background(), *in)
	g.Expect(err).NotTo(HaveOccurred())
	in.Previous = res.Statuses
	g.Expect(res.Passed).To(BeFalse())
	g.Expect(res.Reason).To(Equal(upgradev1.HealthChecksRunningReason))
	g.Expect(res.BlockedBy).To(Equal(`waiting for healthchecks to pass: "ceph": running; "db": running`))
	g.Expect(res.Statuses).To(HaveLen(2))
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckRunning))
	g.Expect(res.Statuses[0].JobName).To(Equal("tollgate-hc-ceph-failing"))
	g.Expect(res.RequeueAfter).To(Equal(workloadjob.DefaultPollInterval))
	jobs := jobsOf(g, *in)
	g.Expect(jobs).To(HaveLen(2))
	for _, job := range jobs {
		g.Expect(job.Namespace).To(Equal("default"))
		g.Expect(job.Labels).To(HaveKeyWithValue("team", "storage"))
		g.Expect(job.Labels).To(HaveKeyWithValue(workloadjob.ManagedByLabel, workloadjob.ManagedByValue))
		g.Expect(job.Spec.Template.Spec.Containers[0].TerminationMessagePolicy).To(Equal(corev1.TerminationMessageFallbackToLogsOnError))
	}

	// Both fail: the reason is the end of the output, 256 characters.
	res = evaluateUntil(g, ev, in, func(g Gomega, res Result) {
		g.Expect(res.Reason).To(Equal(upgradev1.HealthChecksFailingReason))
		// Both: one failed check makes the reason Failing while the other
		// may still run.
		g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckFailed))
		g.Expect(res.Statuses[1].Result).To(Equal(upgradev1.HealthCheckFailed))
	})
	wantReason := workloadjob.TruncateMessage(long)
	g.Expect([]rune(wantReason)).To(HaveLen(256))
	g.Expect(wantReason).To(SatisfyAll(HavePrefix("…"), HaveSuffix("3 pgs degraded,")), "the end of the output is kept")
	g.Expect(res.Statuses[0].Message).To(Equal(wantReason))
	g.Expect(res.BlockedBy).To(Equal(`waiting for healthchecks to pass: "ceph": ` + wantReason + `; "db": replica lag 30s`))
	g.Expect(res.RequeueAfter).To(Equal(10*time.Second), "the shortest interval among the failing checks")
	g.Expect(jobsOf(g, *in)).To(BeEmpty(), "finished Jobs are deleted")

	// Nothing runs again before the interval.
	res, err = ev.Evaluate(context.Background(), *in)
	g.Expect(err).NotTo(HaveOccurred())
	in.Previous = res.Statuses
	g.Expect(jobsOf(g, *in)).To(BeEmpty())
	g.Expect(driver.SeenMatching(jobdriver.NamePrefix("tollgate-hc-ceph-failing"))).To(HaveLen(1))

	// After its interval, ceph runs again; db's interval has not passed. The
	// failing check keeps its reason while its new run is in flight.
	clock.Step(10 * time.Second)
	res, err = ev.Evaluate(context.Background(), *in)
	g.Expect(err).NotTo(HaveOccurred())
	in.Previous = res.Statuses
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckFailed))
	g.Expect(res.BlockedBy).To(ContainSubstring(`"ceph": ` + wantReason))
	g.Expect(jobsOf(g, *in)).To(HaveLen(1))

	res = evaluateUntil(g, ev, in, func(g Gomega, res Result) {
		g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckPassed))
	})
	g.Expect(res.Passed).To(BeFalse())
	g.Expect(res.BlockedBy).To(Equal(`waiting for healthchecks to pass: "db": replica lag 30s`))
	g.Expect(res.RequeueAfter).To(Equal(10 * time.Second))
	g.Expect(driver.SeenMatching(jobdriver.NamePrefix("tollgate-hc-ceph-failing"))).To(HaveLen(2))
	g.Expect(driver.SeenMatching(jobdriver.NamePrefix("tollgate-hc-db-failing"))).To(HaveLen(1))
}

func TestEvaluateRunningCheckHoldsUntilTimeout(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	ev := &Evaluator{Client: workload, Now: clock.Now}
	driver.Script(jobdriver.NamePrefix(JobName("slow", "running")), jobdriver.Outcome{Hang: true})
	in := &Input{UpgradeName: "running", ClusterName: "running", Checks: []upgradev1.ClusterHealthCheck{
		newCheck(t, "slow", withInterval(5*time.Second), withTimeout(12*time.Second)),
	}}
	res := evaluateUntil(g, ev, in, func(g Gomega, res Result) {
		g.Expect(driver.SeenMatching(jobdriver.NamePrefix("tollgate-hc-slow-running"))).To(HaveLen(1))
	})
	g.Expect(res.Passed).To(BeFalse())
	g.Expect(res.Reason).To(Equal(upgradev1.HealthChecksRunningReason))
	g.Expect(res.BlockedBy).To(Equal(`waiting for healthchecks to pass: "slow": running`))
	g.Expect(res.RequeueAfter).To(Equal(workloadjob.DefaultPollInterval))

	clock.Step(10 * time.Second)
	res, err := ev.Evaluate(context.Background(), *in)
	g.Expect(err).NotTo(HaveOccurred())
	in.Previous = res.Statuses
	g.Expect(res.RequeueAfter).To(Equal(2*time.Second), "the timeout comes before the next poll")

	clock.Step(2 * time.Second)
	res, err = ev.Evaluate(context.Background(), *in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Reason).To(Equal(upgradev1.HealthChecksFailingReason))
	g.Expect(res.BlockedBy).To(Equal(`waiting for healthchecks to pass: "slow": timed out after 12s`))
	g.Expect(res.RequeueAfter).To(Equal(5 * time.Second))
	g.Expect(jobsOf(g, *in)).To(BeEmpty(), "a timed-out Job is deleted")
}

func TestEvaluateSuccessThresholdAndFreshness(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	ev := &Evaluator{Client: workload, Now: clock.Now}
	in := &Input{UpgradeName: "threshold", ClusterName: "threshold", Checks: []upgradev1.ClusterHealthCheck{
		newCheck(t, "ok", withInterval(5*time.Second), withSuccessThreshold(2)),
	}}
	res := evaluateUntil(g, ev, in, func(g Gomega, res Result) {
		g.Expect(res.Statuses[0].ConsecutiveSuccesses).To(BeEquivalentTo(1))
	})
	g.Expect(res.Passed).To(BeFalse())
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckRunning))
	g.Expect(res.BlockedBy).To(Equal(`waiting for healthchecks to pass: "ok": passed 1 of 2 times in a row`))
	g.Expect(res.RequeueAfter).To(Equal(5 * time.Second))
	g.Expect(jobsOf(g, *in)).To(BeEmpty(), "a successful Job is deleted")

	clock.Step(5 * time.Second)
	res = evaluateUntil(g, ev, in, func(g Gomega, res Result) {
		g.Expect(res.Passed).To(BeTrue())
	})
	g.Expect(res.Reason).To(Equal(upgradev1.HealthChecksPassedReason))
	g.Expect(res.BlockedBy).To(BeEmpty())
	g.Expect(res.RequeueAfter).To(BeZero())
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckPassed))
	g.Expect(res.Statuses[0].Message).To(BeEmpty())

	// Within its interval the pass holds without running the check again.
	clock.Step(4 * time.Second)
	res, err := ev.Evaluate(context.Background(), *in)
	g.Expect(err).NotTo(HaveOccurred())
	in.Previous = res.Statuses
	g.Expect(res.Passed).To(BeTrue())
	g.Expect(driver.SeenMatching(jobdriver.NamePrefix("tollgate-hc-ok-threshold"))).To(HaveLen(2))

	// A pass older than its interval no longer counts: the check runs again
	// and holds the next Machine meanwhile.
	clock.Step(time.Second)
	res, err = ev.Evaluate(context.Background(), *in)
	g.Expect(err).NotTo(HaveOccurred())
	in.Previous = res.Statuses
	g.Expect(res.Passed).To(BeFalse())
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckPassed), "the last verdict stays while the new run is in flight")
	g.Expect(res.BlockedBy).To(Equal(`waiting for healthchecks to pass: "ok": running`))
	evaluateUntil(g, ev, in, func(g Gomega, res Result) {
		g.Expect(res.Passed).To(BeTrue())
		g.Expect(res.Statuses[0].ConsecutiveSuccesses).To(BeEquivalentTo(3))
	})
}

// TestEvaluateCountsAttempts runs a check whose Job may retry its Pod
// (backoffLimit 1) under the real Job controller: its first Pod fails, the
// Job controller's retry passes, and the check passes, saying at which
// attempt; a check whose Pod passes at once says nothing.
func TestEvaluateCountsAttempts(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	ev := &Evaluator{Client: workload, APIReader: workload, Now: clock.Now}
	driver.Script(jobdriver.NamePrefix(JobName("retried", "attempts")),
		jobdriver.Outcome{Fail: true, Message: "HEALTH_WARN: 1 pgs degraded"}, jobdriver.Outcome{})
	withBackoffLimit := func(c *upgradev1.ClusterHealthCheck) { c.Spec.Template.Spec.BackoffLimit = ptr.To[int32](1) }
	in := &Input{UpgradeName: "attempts", ClusterName: "attempts", Checks: []upgradev1.ClusterHealthCheck{
		newCheck(t, "retried", withBackoffLimit),
		newCheck(t, "at-once", withBackoffLimit),
	}}
	var res Result
	// The Job controller waits about 10s before it retries a failed Pod.
	g.Eventually(func(g Gomega) {
		var err error
		res, err = ev.Evaluate(context.Background(), *in)
		g.Expect(err).NotTo(HaveOccurred())
		in.Previous = res.Statuses
		g.Expect(res.Passed).To(BeTrue())
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckPassed))
	g.Expect(res.Statuses[0].Message).To(Equal("passed at attempt 2 of its Job: its Pod failed 1 time first (backoffLimit 1)"))
	g.Expect(res.Statuses[1].Result).To(Equal(upgradev1.HealthCheckPassed))
	g.Expect(res.Statuses[1].Message).To(BeEmpty(), "a check that passed at its first attempt")
	g.Expect(driver.SeenMatching(jobdriver.NamePrefix("tollgate-hc-retried-attempts"))).To(HaveLen(1), "one Job, two Pods")
}

func TestEvaluateResumesAfterLostStatus(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	ev := &Evaluator{Client: workload, Now: clock.Now}
	driver.Script(jobdriver.NamePrefix(JobName("hang", "restart")), jobdriver.Outcome{Hang: true})
	in := Input{UpgradeName: "restart", ClusterName: "restart", Checks: []upgradev1.ClusterHealthCheck{newCheck(t, "hang")}}
	first, err := ev.Evaluate(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())

	// A controller that lost the status finds the running Job and adopts it.
	clock.Step(time.Minute)
	res, err := ev.Evaluate(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Statuses[0].LastRunTime).To(Equal(first.Statuses[0].LastRunTime))
	g.Expect(res.Statuses[0].JobName).To(Equal(first.Statuses[0].JobName))
	g.Expect(jobsOf(g, in)).To(HaveLen(1))
}

func TestEvaluateDeletesJobsOfRemovedChecks(t *testing.T) {
	g := NewWithT(t)
	ev := &Evaluator{Client: workload}
	driver.Script(jobdriver.NamePrefix(JobName("removed", "removed")), jobdriver.Outcome{Hang: true})
	in := Input{UpgradeName: "removed", ClusterName: "removed", Checks: []upgradev1.ClusterHealthCheck{newCheck(t, "removed")}}
	res, err := ev.Evaluate(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(jobsOf(g, in)).To(HaveLen(1))

	in.Checks, in.Previous = nil, res.Statuses
	res, err = ev.Evaluate(context.Background(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Statuses).To(BeEmpty())
	g.Expect(res.Passed).To(BeTrue())
	g.Expect(jobsOf(g, in)).To(BeEmpty())
}

func TestCleanup(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(workload.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph"}})).To(Succeed())
	driver.Script(jobdriver.HasLabels(map[string]string{workloadjob.ClusterLabel: "cleanup"}), jobdriver.Outcome{Hang: true}, jobdriver.Outcome{Hang: true})
	ev := &Evaluator{Client: workload}
	other := newCheck(t, "other-ns")
	other.Spec.Template.Namespace = "rook-ceph"
	in := Input{UpgradeName: "cleanup", ClusterName: "cleanup", Checks: []upgradev1.ClusterHealthCheck{newCheck(t, "a"), other}}
	_, err := ev.Evaluate(ctx, in)
	g.Expect(err).NotTo(HaveOccurred())

	// A hook Job of the same rollout, and a Job of another rollout.
	for _, upgrade := range []string{"cleanup", "another"} {
		hook := workloadjob.Build(workloadjob.Spec{
			Name:     "hook-of-" + upgrade,
			Template: &other.Spec.Template,
			Labels:   workloadjob.RolloutLabels(upgrade, "cleanup"),
		})
		g.Expect(workload.Create(ctx, hook)).To(Succeed())
	}

	g.Expect(workloadjob.Cleanup(ctx, workload, "cleanup", "cleanup")).To(Succeed())
	jobs := &batchv1.JobList{}
	g.Expect(workload.List(ctx, jobs, client.MatchingLabels{workloadjob.ClusterLabel: "cleanup"})).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1))
	g.Expect(jobs.Items[0].Name).To(Equal("hook-of-another"))
}

func TestEvaluateIgnoresTheJobOfAnotherRun(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clock := newFakeClock()
	ev := &Evaluator{Client: workload, Now: clock.Now}
	in := &Input{UpgradeName: "stale", ClusterName: "stale", Checks: []upgradev1.ClusterHealthCheck{newCheck(t, "ceph")}}

	// A completed Job of an earlier run is still there.
	stale := workloadjob.Build(workloadjob.Spec{
		Name:        JobName("ceph", "stale"),
		Template:    &in.Checks[0].Spec.Template,
		Labels:      jobLabels(*in, "ceph"),
		Annotations: map[string]string{workloadjob.RunAnnotation: "2006-01-02T15:04:05Z"},
	})
	g.Expect(workload.Create(ctx, stale)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(stale), stale)).To(Succeed())
		g.Expect(workloadjob.OutcomeOf(stale)).To(Equal(workloadjob.Succeeded))
	}, eventually, 20*time.Millisecond).Should(Succeed())

	// The status says a new run is in flight: the old Job's result is not
	// its result.
	runTime := metav1.NewTime(clock.Now())
	in.Previous = []upgradev1.HealthCheckStatus{{
		Name: "ceph", Result: upgradev1.HealthCheckRunning, JobName: stale.Name, LastRunTime: &runTime,
	}}
	res, err := ev.Evaluate(ctx, *in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckRunning))
	g.Expect(res.RequeueAfter).To(Equal(time.Second))
	g.Expect(jobsOf(g, *in)).To(HaveLen(1))

	// Should it never go away, the run times out.
	clock.Step(DefaultTimeout)
	in.Previous = res.Statuses
	res, err = ev.Evaluate(ctx, *in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckFailed))
	g.Expect(res.Statuses[0].Message).To(Equal("timed out after 5m0s"))
	g.Expect(jobsOf(g, *in)).To(BeEmpty())
}

// TestEvaluateAdoptsTheJobOfAnUnrecordedRun: the controller stopped between
// creating the Job of a run and persisting the status, so the status names an
// earlier run; the later Job is adopted rather than waited out.
func TestEvaluateAdoptsTheJobOfAnUnrecordedRun(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clock := newFakeClock()
	ev := &Evaluator{Client: workload, Now: clock.Now}
	in := &Input{UpgradeName: "unrecorded", ClusterName: "unrecorded", Checks: []upgradev1.ClusterHealthCheck{newCheck(t, "ceph")}}

	recorded := metav1.NewTime(clock.Now().Add(-time.Minute))
	later := metav1.NewTime(clock.Now().Add(-10 * time.Second))
	job := workloadjob.Build(workloadjob.Spec{
		Name:        JobName("ceph", "unrecorded"),
		Template:    &in.Checks[0].Spec.Template,
		Labels:      jobLabels(*in, "ceph"),
		Annotations: map[string]string{workloadjob.RunAnnotation: runID(later)},
	})
	g.Expect(workload.Create(ctx, job)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(workloadjob.OutcomeOf(job)).To(Equal(workloadjob.Succeeded))
	}, eventually, 20*time.Millisecond).Should(Succeed())

	in.Previous = []upgradev1.HealthCheckStatus{{
		Name: "ceph", Result: upgradev1.HealthCheckRunning, JobName: job.Name, LastRunTime: &recorded,
	}}
	res, err := ev.Evaluate(ctx, *in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Statuses[0].Result).To(Equal(upgradev1.HealthCheckPassed))
	g.Expect(res.Statuses[0].LastRunTime.Time).To(BeTemporally("==", later.Time))
}

func TestGates(t *testing.T) {
	tests := []struct {
		gate  upgradev1.HealthCheckGate
		first bool
		want  bool
	}{
		{gate: "", first: true, want: true},
		{gate: "", first: false, want: true},
		{gate: upgradev1.HealthCheckGateEveryMachine, first: false, want: true},
		{gate: upgradev1.HealthCheckGateFirstMachine, first: true, want: true},
		{gate: upgradev1.HealthCheckGateFirstMachine, first: false, want: false},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(Gates(upgradev1.HealthCheckRef{Name: "c", Gate: tt.gate}, tt.first)).To(Equal(tt.want), "gate %q, first %t", tt.gate, tt.first)
	}
}

func TestInterval(t *testing.T) {
	tests := []struct {
		name string
		opts []checkOption
		want time.Duration
	}{
		{name: "default", want: DefaultInterval},
		{name: "set", opts: []checkOption{withInterval(time.Minute)}, want: time.Minute},
		{name: "never below the minimum", opts: []checkOption{withInterval(time.Second)}, want: MinInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chk := newCheck(t, "c", tt.opts...)
			NewWithT(t).Expect(interval(&chk)).To(Equal(tt.want))
		})
	}
}
