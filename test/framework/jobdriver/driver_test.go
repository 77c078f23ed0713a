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
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

var (
	// workload is a client of the envtest workload cluster of the Driver's
	// tests: it has no Job controller.
	workload client.Client
	// real is the workload cluster of the Kubelet's tests, whose Jobs the
	// real Job controller runs (kube-controller-manager).
	real *envtest.ControlPlane
)

func TestMain(m *testing.M) {
	envtest.ExitWithoutAssets("Job driver suite")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	cp, err := envtest.StartControlPlane()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the workload control plane: %v\n", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	workload = cp.Client
	if real, err = envtest.StartControlPlane(); err != nil {
		fmt.Fprintf(os.Stderr, "Starting the workload control plane of the Job controller: %v\n", err)
		return 1
	}
	defer func() { _ = real.Stop() }()
	jc, err := real.StartJobController()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the Job controller: %v\n", err)
		return 1
	}
	defer func() { _ = jc.Stop() }()
	return m.Run()
}

func newJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"test": name}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:  corev1.RestartPolicyNever,
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
				Containers: []corev1.Container{
					{Name: "main", Image: "busybox", Env: []corev1.EnvVar{{Name: "TOLLGATE_HOOK", Value: "preDrain"}}},
					{Name: "side", Image: "busybox"},
				},
			}},
		},
	}
}

func TestDriver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := jobdriver.New(workload, jobdriver.Options{Delay: 100 * time.Millisecond})
	d.Script(jobdriver.NamePrefix("ceph-"),
		jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN: 3 pgs degraded"},
		jobdriver.Outcome{Fail: true, ExitCode: 2, Message: "ceph is HEALTH_WARN: 1 pgs degraded"},
	)
	d.Script(jobdriver.HasLabels(map[string]string{"test": "hang"}), jobdriver.Outcome{Hang: true})
	d.Start(ctx)

	tests := []struct {
		name     string
		wantFail bool
		wantCode int32
		wantMsg  string
	}{
		{name: "ceph-1", wantFail: true, wantCode: 1, wantMsg: "ceph is HEALTH_WARN: 3 pgs degraded"},
		{name: "ceph-2", wantFail: true, wantCode: 2, wantMsg: "ceph is HEALTH_WARN: 1 pgs degraded"},
		{name: "ceph-3"},
		{name: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			job := newJob(tt.name)
			g.Expect(workload.Create(ctx, job)).To(Succeed())

			terminal, early := batchv1.JobComplete, batchv1.JobSuccessCriteriaMet
			if tt.wantFail {
				terminal, early = batchv1.JobFailed, batchv1.JobFailureTarget
			}
			g.Eventually(func(g Gomega) {
				g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
				g.Expect(job.Status.Conditions).To(ContainElement(HaveField("Type", terminal)))
			}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
			g.Expect(job.Status.Conditions).To(HaveLen(2))
			g.Expect(job.Status.Conditions[0].Type).To(Equal(early), "the early condition comes first")
			g.Expect(job.Status.StartTime).NotTo(BeNil())
			if tt.wantFail {
				g.Expect(job.Status.Failed).To(BeEquivalentTo(1))
				g.Expect(job.Status.CompletionTime).To(BeNil())
			} else {
				g.Expect(job.Status.Succeeded).To(BeEquivalentTo(1))
				g.Expect(job.Status.CompletionTime).NotTo(BeNil())
			}

			pods := &corev1.PodList{}
			g.Expect(workload.List(ctx, pods, client.InNamespace("default"),
				client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID), batchv1.JobNameLabel: job.Name})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			pod := pods.Items[0]
			g.Expect(metav1.IsControlledBy(&pod, job)).To(BeTrue())
			g.Expect(pod.Status.InitContainerStatuses).To(HaveLen(1))
			g.Expect(pod.Status.ContainerStatuses).To(HaveLen(2))
			main := pod.Status.ContainerStatuses[0].State.Terminated
			g.Expect(main).NotTo(BeNil())
			g.Expect(main.ExitCode).To(Equal(tt.wantCode))
			g.Expect(main.Message).To(Equal(tt.wantMsg))
		})
	}

	t.Run("records the Jobs it saw with their environment", func(t *testing.T) {
		g := NewWithT(t)
		seen := d.SeenMatching(jobdriver.NamePrefix("ceph-"))
		g.Expect(seen).To(HaveLen(3))
		g.Expect(seen[0].Env["main"]).To(HaveKeyWithValue("TOLLGATE_HOOK", "preDrain"))
		g.Expect(seen[0].Env).To(HaveKey("init"))
		g.Expect(seen[2].Finished).To(BeTrue())
		g.Expect(seen[2].Outcome.Fail).To(BeFalse(), "the default outcome once the script is used up")
	})

	t.Run("a hanging Job stays running", func(t *testing.T) {
		g := NewWithT(t)
		job := newJob("hang")
		g.Expect(workload.Create(ctx, job)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.StartTime).NotTo(BeNil())
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Conditions).To(BeEmpty())
		}, 300*time.Millisecond, 50*time.Millisecond).Should(Succeed())

		// The Pods of a deleted Job go with it.
		g.Expect(workload.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		g.Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(workload.List(ctx, pods, client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)})).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		g.Expect(apierrors.IsNotFound(workload.Get(ctx, client.ObjectKeyFromObject(job), job))).To(BeTrue())
	})
}

// TestDriverWatchesOrPolls runs a Job on a Driver whose client can watch,
// which then steps on the watch's events and when the Job's delay ends, and
// on one whose client cannot, which polls: either way the Job ends, and not
// before its delay.
func TestDriverWatchesOrPolls(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    client.Client
	}{
		{name: "watching", c: workload},
		{name: "polling", c: struct{ client.Client }{workload}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const delay = time.Second
			d := jobdriver.New(tt.c, jobdriver.Options{Delay: delay})
			d.Start(ctx)
			job := newJob("delayed-" + tt.name)
			created := time.Now() // Before the Driver can see the Job.
			g.Expect(workload.Create(ctx, job)).To(Succeed())
			g.Eventually(func(g Gomega) {
				g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
				g.Expect(job.Status.Conditions).To(ContainElement(HaveField("Type", batchv1.JobComplete)))
			}, time.Minute, 20*time.Millisecond).Should(Succeed())
			g.Expect(time.Since(created)).To(BeNumerically(">=", delay), "the Job ran for its delay")
			// The Driver records the end once the Job's status is written.
			g.Eventually(func() []jobdriver.SeenJob {
				return d.SeenMatching(jobdriver.NamePrefix(job.Name))
			}, 10*time.Second, 20*time.Millisecond).Should(ConsistOf(HaveField("Finished", BeTrue())))
		})
	}
}
