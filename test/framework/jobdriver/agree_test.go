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

package jobdriver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// verdict is what Tollgate reads of a Job once it ended (or once the test
// stopped waiting): its outcome and failure message, as workloadjob reads
// them, and the status the Job controller wrote.
type verdict struct {
	Outcome workloadjob.Outcome
	// Message is workloadjob.FailureMessage of a failed Job.
	Message string
	// Conditions are the types of the Job's True conditions, in order.
	Conditions []batchv1.JobConditionType
	// Reason is the reason of the terminal condition.
	Reason            string
	Succeeded, Failed int32
}

// errSideFailed stops the goroutine of one side of a case at its first
// failure.
var errSideFailed = errors.New("failed")

var (
	passed = []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete}
	failed = []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobFailed}
)

// TestDriverAgreesWithTheJobController runs the same Jobs, built by
// workloadjob.Build from templates the webhooks admit, on the Driver and on
// the real Job controller with the Kubelet, and compares what Tollgate
// reads of them. Where the two differ, the case says how and what Tollgate
// does about it; the book's Development page (docs/book/src/development.md)
// lists the differences.
func TestDriverAgreesWithTheJobController(t *testing.T) {
	ctx := t.Context()
	d := jobdriver.New(workload, jobdriver.Options{Delay: 100 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	k := startKubelet(t, jobdriver.KubeletOptions{Delay: 100 * time.Millisecond})
	driverCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	d.Start(driverCtx)

	withBackoffLimit := func(n int32) func(*batchv1.JobTemplateSpec) {
		return func(tmpl *batchv1.JobTemplateSpec) { tmpl.Spec.BackoffLimit = ptr.To(n) }
	}
	tests := []struct {
		name     string
		template func(*batchv1.JobTemplateSpec)
		outcomes []jobdriver.Outcome
		// wait bounds the wait for the Job to end on either side.
		wait   time.Duration
		driver verdict
		// real is what the Job controller comes to, when it differs from
		// the driver's.
		real *verdict
	}{
		{
			name:     "passes",
			outcomes: []jobdriver.Outcome{{}},
			driver:   verdict{Outcome: workloadjob.Succeeded, Conditions: passed, Reason: batchv1.JobReasonCompletionsReached, Succeeded: 1},
		},
		{
			name:     "fails with its output",
			outcomes: []jobdriver.Outcome{{Fail: true, Message: "ceph is HEALTH_WARN:\n  3 pgs degraded\n"}},
			driver:   verdict{Outcome: workloadjob.Failed, Message: "ceph is HEALTH_WARN: | 3 pgs degraded", Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 1},
		},
		{
			name:     "fails with an exit code and no output",
			outcomes: []jobdriver.Outcome{{Fail: true, ExitCode: 3}},
			driver:   verdict{Outcome: workloadjob.Failed, Message: `container "check" exited with code 3 (Error)`, Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 1},
		},
		{
			name:     "backoffLimit 1: fails, then passes on its retry",
			template: withBackoffLimit(1),
			outcomes: []jobdriver.Outcome{{Fail: true, Message: "first"}, {}},
			driver:   verdict{Outcome: workloadjob.Failed, Message: "first", Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 1},
			real:     &verdict{Outcome: workloadjob.Succeeded, Conditions: passed, Reason: batchv1.JobReasonCompletionsReached, Succeeded: 1, Failed: 1},
		},
		{
			name:     "backoffLimit 1: fails twice",
			template: withBackoffLimit(1),
			outcomes: []jobdriver.Outcome{{Fail: true, Message: "first"}, {Fail: true, Message: "second"}},
			driver:   verdict{Outcome: workloadjob.Failed, Message: "first", Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 1},
			real:     &verdict{Outcome: workloadjob.Failed, Message: "second", Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 2},
		},
		{
			name: "podFailurePolicy FailJob on exit code 2, backoffLimit 3",
			template: func(tmpl *batchv1.JobTemplateSpec) {
				tmpl.Spec.BackoffLimit = ptr.To[int32](3)
				tmpl.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action: batchv1.PodFailurePolicyActionFailJob,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
						Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{2},
					},
				}}}
			},
			outcomes: []jobdriver.Outcome{{Fail: true, ExitCode: 2, Message: "bad configuration"}},
			driver:   verdict{Outcome: workloadjob.Failed, Message: "bad configuration", Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 1},
			real:     &verdict{Outcome: workloadjob.Failed, Message: "bad configuration", Conditions: failed, Reason: batchv1.JobReasonPodFailurePolicy, Failed: 1},
		},
		{
			name:     "activeDeadlineSeconds 2: runs for ever",
			template: func(tmpl *batchv1.JobTemplateSpec) { tmpl.Spec.ActiveDeadlineSeconds = ptr.To[int64](2) },
			outcomes: []jobdriver.Outcome{{Hang: true}},
			wait:     10 * time.Second,
			driver:   verdict{Outcome: workloadjob.Running},
			real:     &verdict{Outcome: workloadjob.Failed, Message: "Job was active longer than specified deadline", Conditions: failed, Reason: batchv1.JobReasonDeadlineExceeded, Failed: 1},
		},
		{
			name: "restartPolicy OnFailure: fails, and its restart runs for ever",
			template: func(tmpl *batchv1.JobTemplateSpec) {
				tmpl.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			},
			outcomes: []jobdriver.Outcome{{Fail: true, Message: "noout failed"}, {Hang: true}},
			// The Job controller counts the restart against backoffLimit 0
			// and deletes the Pod before it marks the Job Failed: the
			// container's output is gone. The webhooks warn of such a
			// template (plan.JobTemplateWarnings).
			driver: verdict{Outcome: workloadjob.Failed, Message: "noout failed", Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 1},
			real:   &verdict{Outcome: workloadjob.Failed, Message: "Job has reached the specified backoff limit", Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 1},
		},
		{
			name: "an init container and a sidecar: fails with its output",
			template: func(tmpl *batchv1.JobTemplateSpec) {
				tmpl.Spec.Template.Spec.InitContainers = []corev1.Container{
					{Name: "wait-for-mons", Image: "quay.io/ceph/ceph:v19"},
					{Name: "proxy", Image: "registry.example.com/tools/socks-proxy:1.4", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
				}
			},
			outcomes: []jobdriver.Outcome{{Fail: true, Message: "HEALTH_ERR"}},
			// The kubelet stops the sidecar once the container ended
			// (SIGTERM: exit code 143). workloadjob.FailureMessage read
			// init containers first and reported the sidecar's stop instead
			// of the container's output; it now reads sidecars last. The
			// Driver stops the sidecar as the kubelet does.
			driver: verdict{Outcome: workloadjob.Failed, Message: "HEALTH_ERR", Conditions: failed, Reason: batchv1.JobReasonBackoffLimitExceeded, Failed: 1},
		},
	}
	for i, tt := range tests {
		name := fmt.Sprintf("agree-%d", i)
		d.Script(jobdriver.NamePrefix(name), tt.outcomes...)
		k.Script(jobdriver.NamePrefix(name), tt.outcomes...)
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl := &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "check", Image: "quay.io/ceph/ceph:v19", Command: []string{"ceph", "health"}}},
			}}}}
			if tt.template != nil {
				tt.template(tmpl)
			}
			timeout := tt.wait
			if timeout == 0 {
				timeout = time.Minute
			}
			want := tt.driver
			if tt.real != nil {
				want = *tt.real
			}
			results := make(chan func(), 2)
			for _, side := range []struct {
				name string
				c    client.Client
				want verdict
			}{{"the Driver", workload, tt.driver}, {"the Job controller", real.Client, want}} {
				// Both sides run at once. A goroutine may not fail the test:
				// it stops at its first failure and the test reports it.
				go func() {
					var failure string
					defer func() {
						if p := recover(); p != nil {
							if err, ok := p.(error); !ok || !errors.Is(err, errSideFailed) {
								panic(p)
							}
						}
						results <- func() {
							t.Helper()
							g := NewWithT(t)
							g.Expect(failure).To(BeEmpty(), "running the Job on %s", side.name)
						}
					}()
					g := NewGomega(func(message string, _ ...int) {
						failure = message
						panic(errSideFailed)
					})
					got := runJob(ctx, g, side.c, workloadjob.Build(workloadjob.Spec{Name: name, Template: tmpl}), timeout)
					g.Expect(got).To(Equal(side.want), "what Tollgate reads of the Job on %s", side.name)
				}()
			}
			for range 2 {
				(<-results)()
			}
		})
	}
}

// runJob creates job with c, waits until it ended (at most timeout) and
// returns what Tollgate reads of it at that instant.
func runJob(ctx context.Context, g Gomega, c client.Client, job *batchv1.Job, timeout time.Duration) verdict {
	g.Expect(c.Create(ctx, job)).To(Succeed())
	// Not every case ends: the wait running out is not a failure, it is
	// what Tollgate would read of a Job that still runs.
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, false, func(context.Context) (bool, error) {
		// The test's context, not the poll's: a read is not cut short.
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, err
		}
		return workloadjob.OutcomeOf(job) != workloadjob.Running, nil
	})
	if !wait.Interrupted(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	v := verdict{Outcome: workloadjob.OutcomeOf(job), Succeeded: job.Status.Succeeded, Failed: job.Status.Failed}
	if v.Outcome == workloadjob.Failed {
		msg, err := workloadjob.FailureMessage(ctx, c, job)
		g.Expect(err).NotTo(HaveOccurred())
		v.Message = msg
	}
	for _, cond := range job.Status.Conditions {
		if cond.Status == corev1.ConditionTrue {
			v.Conditions = append(v.Conditions, cond.Type)
			v.Reason = cond.Reason
		}
	}
	return v
}
