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

package hooks_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

const eventually = 10 * time.Second

type hookOption func(*upgradev1.ActionHook)

func withRetries(n int32) hookOption {
	return func(h *upgradev1.ActionHook) { h.Retries = ptr.To(n) }
}

func withTimeout(d time.Duration) hookOption {
	return func(h *upgradev1.ActionHook) { h.Timeout = &metav1.Duration{Duration: d} }
}

func newHook(t *testing.T, name string, point upgradev1.HookPoint, opts ...hookOption) upgradev1.ActionHook {
	t.Helper()
	h := upgradev1.ActionHook{
		Name:  name,
		Point: point,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "wait", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "ceph", Image: "ceph:v19", Command: []string{"ceph", "osd", "set", "noout"}}},
		}}}},
	}
	for _, o := range opts {
		o(&h)
	}
	return h
}

func newInput(cluster, machine string, point upgradev1.HookPoint, hs ...upgradev1.ActionHook) *hooks.RunInput {
	return &hooks.RunInput{
		UpgradeName: cluster,
		ClusterName: cluster,
		Machine:     machine,
		Node:        machine + "-node",
		FromVersion: "v1.12.6",
		ToVersion:   "v1.13.0",
		Point:       point,
		Hooks:       hs,
	}
}

// runUntil calls Run, feeding back the statuses as the engine does, until
// done accepts the result.
func runUntil(g Gomega, r *hooks.Runner, in *hooks.RunInput, done func(Gomega, hooks.RunResult)) hooks.RunResult {
	var res hooks.RunResult
	g.Eventually(func(g Gomega) {
		var err error
		res, err = r.Run(context.Background(), *in)
		g.Expect(err).NotTo(HaveOccurred())
		in.Previous = res.Statuses
		done(g, res)
	}, eventually, 20*time.Millisecond).Should(Succeed())
	return res
}

func run(g Gomega, r *hooks.Runner, in *hooks.RunInput) hooks.RunResult {
	res, err := r.Run(context.Background(), *in)
	g.Expect(err).NotTo(HaveOccurred())
	in.Previous = res.Statuses
	return res
}

func hookJobs(g Gomega, cluster string) []batchv1.Job {
	jobs := &batchv1.JobList{}
	g.Expect(workload.List(context.Background(), jobs, client.MatchingLabels{
		workloadjob.ClusterLabel: cluster, workloadjob.JobKindLabel: workloadjob.JobKindHook,
	})).To(Succeed())
	return jobs.Items
}

func seenHooks(cluster string) []jobdriver.SeenJob {
	return driver.SeenMatching(jobdriver.HasLabels(map[string]string{workloadjob.ClusterLabel: cluster}))
}

func TestRunNoHooks(t *testing.T) {
	g := NewWithT(t)
	r := &hooks.Runner{Client: workload}
	res := run(g, r, newInput("none", "m", upgradev1.HookPointPreDrain, newHook(t, "later", upgradev1.HookPointNodeReady)))
	g.Expect(res.Done).To(BeTrue())
	g.Expect(res.Statuses).To(BeEmpty())
	g.Expect(hookJobs(g, "none")).To(BeEmpty())
}

func TestRunOncePerMachineAndPoint(t *testing.T) {
	g := NewWithT(t)
	r := &hooks.Runner{Client: workload}
	all := []upgradev1.ActionHook{
		newHook(t, "noout", upgradev1.HookPointPreReboot),
		newHook(t, "unset-noout", upgradev1.HookPointNodeReady),
		newHook(t, "announce", upgradev1.HookPointPreDrain),
	}
	in := newInput("once", "once-md-0-abc", upgradev1.HookPointPreReboot, all...)

	res := run(g, r, in)
	g.Expect(res.Done).To(BeFalse())
	g.Expect(res.Message).To(Equal(`waiting for hook "noout"`))
	g.Expect(res.RequeueAfter).To(Equal(workloadjob.DefaultPollInterval))
	g.Expect(res.Statuses).To(HaveLen(1))
	g.Expect(res.Statuses[0]).To(And(
		HaveField("Name", "noout"),
		HaveField("Point", upgradev1.HookPointPreReboot),
		HaveField("Phase", upgradev1.HookRunRunning),
		HaveField("Attempts", BeEquivalentTo(1)),
		HaveField("JobName", hooks.JobName("once", "once-md-0-abc", "noout", upgradev1.HookPointPreReboot, 1)),
	))

	res = runUntil(g, r, in, func(g Gomega, res hooks.RunResult) { g.Expect(res.Done).To(BeTrue()) })
	g.Expect(res.Statuses[0].Phase).To(Equal(upgradev1.HookRunSucceeded))
	g.Expect(res.RequeueAfter).To(BeZero())

	seen := seenHooks("once")
	g.Expect(seen).To(HaveLen(1))
	wantEnv := map[string]string{
		"TOLLGATE_CLUSTER":      "once",
		"TOLLGATE_MACHINE":      "once-md-0-abc",
		"TOLLGATE_NODE":         "once-md-0-abc-node",
		"TOLLGATE_FROM_VERSION": "v1.12.6",
		"TOLLGATE_TO_VERSION":   "v1.13.0",
		"TOLLGATE_HOOK":         "preReboot",
		"TOLLGATE_HOOK_NAME":    "noout",
		"TOLLGATE_ACTION":       "Upgrade",
	}
	g.Expect(seen[0].Env["ceph"]).To(Equal(wantEnv))
	g.Expect(seen[0].Env["wait"]).To(Equal(wantEnv), "init containers get the context too")
	g.Expect(seen[0].Labels).To(HaveKeyWithValue(workloadjob.HookPointLabel, "preReboot"))
	g.Expect(seen[0].Labels).To(HaveKeyWithValue(workloadjob.UpgradeLabel, "once"))

	// Called again, the hook does not run again, and its Job, whose verdict
	// is now persisted, is deleted.
	res = run(g, r, in)
	g.Expect(res.Done).To(BeTrue())
	g.Expect(hookJobs(g, "once")).To(BeEmpty())
	g.Expect(seenHooks("once")).To(HaveLen(1))

	// The next point runs its own hook; the statuses of both are kept.
	in.Point = upgradev1.HookPointNodeReady
	res = runUntil(g, r, in, func(g Gomega, res hooks.RunResult) { g.Expect(res.Done).To(BeTrue()) })
	g.Expect(res.Statuses).To(HaveLen(2))
	seen = seenHooks("once")
	g.Expect(seen).To(HaveLen(2))
	g.Expect(seen[1].Env["ceph"]).To(HaveKeyWithValue("TOLLGATE_HOOK", "nodeReady"))

	// Another Machine runs the hooks anew; a reboot says so.
	other := newInput("once", "once-md-0-def", upgradev1.HookPointPreReboot, all...)
	other.Action = hooks.ActionReboot
	runUntil(g, r, other, func(g Gomega, res hooks.RunResult) { g.Expect(res.Done).To(BeTrue()) })
	seen = seenHooks("once")
	g.Expect(seen).To(HaveLen(3))
	g.Expect(seen[2].Env["ceph"]).To(HaveKeyWithValue("TOLLGATE_ACTION", "Reboot"))
}

func TestRunRetriesThenFails(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	r := &hooks.Runner{Client: workload, APIReader: workload, Now: clock.Now}
	driver.Script(jobdriver.HasLabels(map[string]string{workloadjob.ClusterLabel: "retries"}),
		jobdriver.Outcome{Fail: true, Message: "ceph: error connecting to the cluster (1)"},
		jobdriver.Outcome{Fail: true, Message: "ceph: error connecting to the cluster (2)"},
		jobdriver.Outcome{Fail: true, Message: "ceph: error connecting to the cluster (3)\n"},
	)
	in := newInput("retries", "m0", upgradev1.HookPointPreDrain, newHook(t, "noout", upgradev1.HookPointPreDrain, withRetries(2)))

	res := runUntil(g, r, in, func(g Gomega, res hooks.RunResult) {
		g.Expect(res.Statuses[0].NextAttemptTime).NotTo(BeNil())
	})
	g.Expect(res.Done).To(BeFalse())
	g.Expect(res.Failed).To(BeFalse())
	g.Expect(res.Statuses[0].Phase).To(Equal(upgradev1.HookRunRunning))
	g.Expect(res.Statuses[0].Message).To(Equal("ceph: error connecting to the cluster (1)"))
	g.Expect(res.Statuses[0].NextAttemptTime.Time).To(BeTemporally("==", clock.Now().Add(10*time.Second)))
	g.Expect(res.RequeueAfter).To(Equal(10 * time.Second))
	g.Expect(res.Message).To(ContainSubstring(`hook "noout" failed (attempt 1 of 3), retrying at`))

	// Not before the backoff.
	clock.Step(9 * time.Second)
	res = run(g, r, in)
	g.Expect(res.Statuses[0].Attempts).To(BeEquivalentTo(1))
	g.Expect(res.RequeueAfter).To(Equal(time.Second))

	clock.Step(time.Second)
	res = run(g, r, in)
	g.Expect(res.Statuses[0].Attempts).To(BeEquivalentTo(2))
	g.Expect(res.Statuses[0].JobName).To(Equal(hooks.JobName("retries", "m0", "noout", upgradev1.HookPointPreDrain, 2)))
	res = runUntil(g, r, in, func(g Gomega, res hooks.RunResult) {
		g.Expect(res.Statuses[0].NextAttemptTime).NotTo(BeNil())
	})
	g.Expect(res.RequeueAfter).To(Equal(20*time.Second), "the backoff doubles")

	clock.Step(20 * time.Second)
	res = runUntil(g, r, in, func(g Gomega, res hooks.RunResult) { g.Expect(res.Failed).To(BeTrue()) })
	g.Expect(res.Done).To(BeFalse())
	g.Expect(res.RequeueAfter).To(BeZero())
	g.Expect(res.Statuses[0].Phase).To(Equal(upgradev1.HookRunFailed))
	g.Expect(res.Statuses[0].Attempts).To(BeEquivalentTo(3))
	g.Expect(res.Message).To(Equal(`hook "noout" failed after 3 attempts: ceph: error connecting to the cluster (3)`))
	g.Expect(seenHooks("retries")).To(HaveLen(3))

	// A failed hook stays failed.
	clock.Step(time.Hour)
	res = run(g, r, in)
	g.Expect(res.Failed).To(BeTrue())
	g.Expect(seenHooks("retries")).To(HaveLen(3))
	g.Expect(hookJobs(g, "retries")).To(BeEmpty(), "Jobs of persisted verdicts and earlier attempts are deleted")
}

func TestRunTimeout(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	r := &hooks.Runner{Client: workload, Now: clock.Now, PollInterval: time.Second}
	driver.Script(jobdriver.HasLabels(map[string]string{workloadjob.ClusterLabel: "timeout"}), jobdriver.Outcome{Hang: true})
	in := newInput("timeout", "m0", upgradev1.HookPointPreReboot, newHook(t, "slow", upgradev1.HookPointPreReboot, withTimeout(30*time.Second)))

	res := runUntil(g, r, in, func(g Gomega, _ hooks.RunResult) { g.Expect(seenHooks("timeout")).To(HaveLen(1)) })
	g.Expect(res.Done).To(BeFalse())
	g.Expect(res.RequeueAfter).To(Equal(time.Second), "the Runner's poll interval")

	clock.Step(35 * time.Second) // Job creation times come from the apiserver's clock.
	res = run(g, r, in)
	g.Expect(res.Failed).To(BeTrue())
	g.Expect(res.Message).To(Equal(`hook "slow" failed after 1 attempts: timed out after 30s`))
	g.Expect(hookJobs(g, "timeout")).To(BeEmpty(), "a Job that ran too long is stopped")
}

func TestRunAfterRestart(t *testing.T) {
	g := NewWithT(t)
	hook := newHook(t, "noout", upgradev1.HookPointPreReboot)
	slow := 300 * time.Millisecond
	driver.Script(jobdriver.HasLabels(map[string]string{workloadjob.ClusterLabel: "restart"}), jobdriver.Outcome{Delay: &slow})

	// The first controller starts the hook and dies.
	first := &hooks.Runner{Client: workload}
	in := newInput("restart", "m0", upgradev1.HookPointPreReboot, hook)
	res := run(g, first, in)
	g.Expect(res.Done).To(BeFalse())

	// A new one, with the persisted statuses, finds the running Job; one
	// that lost them finds it by its name too.
	second := &hooks.Runner{Client: workload}
	lost := newInput("restart", "m0", upgradev1.HookPointPreReboot, hook)
	run(g, second, lost)
	runUntil(g, second, in, func(g Gomega, res hooks.RunResult) { g.Expect(res.Done).To(BeTrue()) })
	g.Expect(seenHooks("restart")).To(HaveLen(1))

	// A third one never runs the completed hook again.
	third := &hooks.Runner{Client: workload}
	res = run(g, third, in)
	g.Expect(res.Done).To(BeTrue())
	g.Expect(hookJobs(g, "restart")).To(BeEmpty())
	res = run(g, third, in)
	g.Expect(res.Done).To(BeTrue())
	g.Expect(seenHooks("restart")).To(HaveLen(1))
}

func TestRunHookMovedToAnotherPoint(t *testing.T) {
	g := NewWithT(t)
	r := &hooks.Runner{Client: workload}
	in := newInput("moved", "m0", upgradev1.HookPointPreDrain, newHook(t, "announce", upgradev1.HookPointPreDrain))
	runUntil(g, r, in, func(g Gomega, res hooks.RunResult) { g.Expect(res.Done).To(BeTrue()) })

	// The policy now runs the hook at preReboot: it has not run there yet.
	in.Point = upgradev1.HookPointPreReboot
	in.Hooks = []upgradev1.ActionHook{newHook(t, "announce", upgradev1.HookPointPreReboot)}
	res := run(g, r, in)
	g.Expect(res.Done).To(BeFalse())
	g.Expect(res.Statuses).To(ConsistOf(And(HaveField("Point", upgradev1.HookPointPreReboot), HaveField("Attempts", BeEquivalentTo(1)))))
	runUntil(g, r, in, func(g Gomega, res hooks.RunResult) { g.Expect(res.Done).To(BeTrue()) })
	g.Expect(seenHooks("moved")).To(HaveLen(2))
}
