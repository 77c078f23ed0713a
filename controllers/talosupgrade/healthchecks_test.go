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

package talosupgrade_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// jobTemplate is a Job template of one container.
func jobTemplate(command ...string) batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "main", Image: "quay.io/ceph/ceph:v19", Command: command}},
	}}}}
}

// createCheck creates a ClusterHealthCheck checking every 5s, the minimum.
func (r *rollout) createCheck(g Gomega, name string) {
	g.Expect(mgmt.Client.Create(context.Background(), &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Template: jobTemplate("ceph", "health"),
			Interval: &metav1.Duration{Duration: 5 * time.Second},
			Timeout:  &metav1.Duration{Duration: time.Minute},
		},
	})).To(Succeed())
}

// anyStarted reports whether a Machine of the rollout left Pending.
func anyStarted(u *upgradev1.TalosUpgrade) bool {
	for _, m := range u.Status.Machines {
		if m.StartTime != nil && m.Phase != upgradev1.MachinePhaseCompleted {
			return true
		}
	}
	return false
}

// TestFailingHealthCheckHoldsRollout fails a check twice: no Machine starts
// while it fails, the status shows the failure reason, the Job is re-created
// on the interval, and the rollout proceeds once the check passes. No
// Tollgate Job is left in the workload cluster at the end.
func TestFailingHealthCheckHoldsRollout(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	reason := "ceph is HEALTH_WARN: 3 pgs degraded"
	r.driver.Script(jobdriver.NamePrefix("tollgate-hc-ceph"), jobdriver.Outcome{Fail: true, Message: reason}, jobdriver.Outcome{Fail: true, Message: reason})
	r.createCheck(g, "ceph")
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
	}))).To(Succeed())
	s := r.sample(ctx)
	r.startManager()

	// While the check fails, the reason is shown and nothing starts.
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseWaitingForHealthChecks))
		g.Expect(u.Status.BlockedBy).To(Equal(`waiting for healthchecks to pass: "ceph": ` + reason))
		g.Expect(conditions.GetReason(u, upgradev1.HealthChecksPassingCondition)).To(Equal(upgradev1.HealthChecksFailingReason))
		g.Expect(anyStarted(u)).To(BeFalse())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(s.maxTotal()).To(BeZero(), "no Machine is disrupted while the check fails")

	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	// The check reports its last result per Cluster.
	g.Eventually(func(g Gomega) {
		check := &upgradev1.ClusterHealthCheck{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "ceph"}, check)).To(Succeed())
		g.Expect(conditions.IsTrue(check, upgradev1.HealthCheckReadyCondition)).To(BeTrue())
		g.Expect(check.Status.Results).To(ConsistOf(HaveField("Cluster", "alpha")))
		g.Expect(check.Status.Results[0].Result).To(Equal(upgradev1.HealthCheckPassed))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	checkRuns := r.driver.SeenMatching(jobdriver.NamePrefix("tollgate-hc-ceph"))
	g.Expect(len(checkRuns)).To(BeNumerically(">=", 3), "the failed check's Job is re-created on its interval")

	// Nothing Tollgate created outlives the rollout.
	g.Eventually(func(g Gomega) {
		jobs := &batchv1.JobList{}
		g.Expect(r.workload.Client.List(ctx, jobs, client.MatchingLabels{workloadjob.ManagedByLabel: workloadjob.ManagedByValue})).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// TestHookJobsRunOncePerMachineAndPoint runs a preReboot and a nodeReady
// hook and checks that each ran exactly once per Machine with the context
// in its environment, even across a controller restart.
func TestHookJobsRunOncePerMachineAndPoint(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Hooks = []upgradev1.ActionHook{
			{Name: "noout", Point: upgradev1.HookPointPreReboot, Template: jobTemplate("ceph", "osd", "set", "noout")},
			{Name: "unset-noout", Point: upgradev1.HookPointNodeReady, Template: jobTemplate("ceph", "osd", "unset", "noout")},
		}
	}))).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(len(r.driver.SeenMatching(jobdriver.HasLabels(map[string]string{workloadjob.JobKindLabel: workloadjob.JobKindHook})))).To(BeNumerically(">=", 1))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	r.stopManager()
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())

	runs := r.driver.SeenMatching(jobdriver.HasLabels(map[string]string{workloadjob.JobKindLabel: workloadjob.JobKindHook}))
	g.Expect(runs).To(HaveLen(4), "two hooks, two Machines, once each")
	seen := map[string]bool{}
	for _, run := range runs {
		env := run.Env["main"]
		key := env[hooks.EnvMachine] + "/" + env[hooks.EnvHook]
		g.Expect(seen).NotTo(HaveKey(key), "hook %s ran twice", key)
		seen[key] = true
		g.Expect(env).To(HaveKeyWithValue(hooks.EnvCluster, "alpha"))
		g.Expect(env).To(HaveKeyWithValue(hooks.EnvNode, env[hooks.EnvMachine]))
		g.Expect(env).To(HaveKeyWithValue(hooks.EnvFromVersion, fromVersion))
		g.Expect(env).To(HaveKeyWithValue(hooks.EnvToVersion, toVersion))
	}
	g.Expect(seen).To(HaveKey("alpha-cp-0/preReboot"))
	g.Expect(seen).To(HaveKey("alpha-worker-0/nodeReady"))
}

// TestFailingHookFailsMachine fails a preDrain hook past its retries: the
// Machine fails with the hook's output as the reason, before any
// disruption.
func TestFailingHookFailsMachine(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	out := "Error EPERM: osd set noout: permission denied"
	r.driver.Script(jobdriver.HasLabels(map[string]string{workloadjob.JobKindLabel: workloadjob.JobKindHook}),
		jobdriver.Outcome{Fail: true, Message: out}, jobdriver.Outcome{Fail: true, Message: out})
	retries := int32(1)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Hooks = []upgradev1.ActionHook{{Name: "noout", Point: upgradev1.HookPointPreDrain, Template: jobTemplate("ceph", "osd", "set", "noout"), Retries: &retries}}
	}))).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseFailed))
		rec := machineRecord(u, "alpha-cp-0")
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseFailed))
		g.Expect(rec.Message).To(ContainSubstring(out))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(r.driver.SeenMatching(jobdriver.HasLabels(map[string]string{workloadjob.JobKindLabel: workloadjob.JobKindHook}))).To(HaveLen(2), "the first run and one retry")
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(BeZero())
	node := &corev1.Node{}
	g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: "alpha-cp-0"}, node)).To(Succeed())
	g.Expect(node.Spec.Unschedulable).To(BeFalse())
}

// TestBypassProceedsPastFailingCheck bypasses a check that always fails:
// the rollout proceeds, and the bypass shows in a condition and an event.
func TestBypassProceedsPastFailingCheck(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	r.driver.Script(jobdriver.NamePrefix("tollgate-hc-ceph"), jobdriver.Outcome{Fail: true, Message: "ceph mon unreachable"})
	r.driver.Script(jobdriver.NamePrefix("tollgate-hc-ceph"), jobdriver.Outcome{Fail: true, Message: "ceph mon unreachable"})
	r.createCheck(g, "ceph")
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
		p.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true, Reason: "the ceph check image is broken, INC-42"}
	}))).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
		g.Expect(conditions.IsTrue(u, upgradev1.BypassedCondition)).To(BeTrue())
		g.Expect(conditions.GetMessage(u, upgradev1.BypassedCondition)).To(ContainSubstring("INC-42"))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(mgmt.Client.List(ctx, events, client.InNamespace(r.ns))).To(Succeed())
		found := false
		for _, e := range events.Items {
			if e.Reason == "HealthChecksBypassed" && strings.Contains(e.Note, "INC-42") {
				found = true
			}
		}
		g.Expect(found).To(BeTrue())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
