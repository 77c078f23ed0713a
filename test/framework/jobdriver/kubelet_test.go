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
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// startKubelet runs a Kubelet on the Job controller's workload cluster
// until the test ends.
func startKubelet(t *testing.T, opts jobdriver.KubeletOptions) *jobdriver.Kubelet {
	t.Helper()
	k, err := jobdriver.NewKubelet(real.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	k.Start(ctx)
	return k
}

// podsOf lists the Pods of job, oldest first.
func podsOf(g Gomega, c client.Client, job *batchv1.Job) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(c.List(context.Background(), pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)})).To(Succeed())
	return pods.Items
}

func TestKubelet(t *testing.T) {
	ctx := t.Context()
	k := startKubelet(t, jobdriver.KubeletOptions{Delay: 100 * time.Millisecond})
	k.Script(jobdriver.NamePrefix("k-ceph-"),
		jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN: 3 pgs degraded"},
		jobdriver.Outcome{Fail: true, ExitCode: 2, Message: "ceph is HEALTH_WARN: 1 pgs degraded"},
	)
	k.Script(jobdriver.NamePrefix("k-hang"), jobdriver.Outcome{Hang: true})
	k.Script(jobdriver.NamePrefix("k-retry"), jobdriver.Outcome{Fail: true, Message: "first"}, jobdriver.Outcome{Message: "second"})
	// The container fails, then runs for ever in the same Pod: a restart
	// that succeeds within the Job controller's batch period (1s) would
	// complete the Job before it counted the restart.
	k.Script(jobdriver.NamePrefix("k-restart"), jobdriver.Outcome{Fail: true, ExitCode: 3, Message: "restarted"}, jobdriver.Outcome{Hang: true})

	tests := []struct {
		name     string
		wantFail bool
		wantCode int32
		wantMsg  string
	}{
		{name: "k-ceph-1", wantFail: true, wantCode: 1, wantMsg: "ceph is HEALTH_WARN: 3 pgs degraded"},
		{name: "k-ceph-2", wantFail: true, wantCode: 2, wantMsg: "ceph is HEALTH_WARN: 1 pgs degraded"},
		{name: "k-ceph-3"},
		{name: "k-other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			job := newJob(tt.name)
			g.Expect(real.Client.Create(ctx, job)).To(Succeed())

			terminal, early := batchv1.JobComplete, batchv1.JobSuccessCriteriaMet
			if tt.wantFail {
				terminal, early = batchv1.JobFailed, batchv1.JobFailureTarget
			}
			g.Eventually(func(g Gomega) {
				g.Expect(real.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
				g.Expect(job.Status.Conditions).To(ContainElement(HaveField("Type", terminal)))
			}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
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

			pods := podsOf(g, real.Client, job)
			g.Expect(pods).To(HaveLen(1))
			pod := pods[0]
			g.Expect(metav1.IsControlledBy(&pod, job)).To(BeTrue())
			g.Expect(pod.Spec.NodeName).To(Equal(jobdriver.DefaultNodeName))
			g.Expect(pod.Finalizers).To(BeEmpty(), "the Job controller removed its tracking finalizer")
			g.Expect(pod.Status.InitContainerStatuses).To(HaveLen(1))
			g.Expect(pod.Status.ContainerStatuses).To(HaveLen(2))
			main := pod.Status.ContainerStatuses[0].State.Terminated
			g.Expect(main).NotTo(BeNil())
			g.Expect(main.ExitCode).To(Equal(tt.wantCode))
			g.Expect(main.Message).To(Equal(tt.wantMsg))
			g.Expect(pod.Status.Phase).To(Equal(map[bool]corev1.PodPhase{true: corev1.PodFailed, false: corev1.PodSucceeded}[tt.wantFail]))
		})
	}

	t.Run("records the Jobs it saw with their environment and how they ended", func(t *testing.T) {
		g := NewWithT(t)
		seen := k.SeenMatching(jobdriver.NamePrefix("k-ceph-"))
		g.Expect(seen).To(HaveLen(3))
		g.Expect(seen[0].Env["main"]).To(HaveKeyWithValue("TOLLGATE_HOOK", "preDrain"))
		g.Expect(seen[0].Env).To(HaveKey("init"))
		g.Expect(seen[0].Runs).To(Equal(1))
		g.Expect(seen[0].Finished).To(BeTrue())
		g.Expect(seen[0].Failed).To(BeTrue())
		g.Expect(seen[2].Finished).To(BeTrue())
		g.Expect(seen[2].Failed).To(BeFalse())
		g.Expect(seen[2].Outcome.Fail).To(BeFalse(), "the default outcome once the script is used up")
	})

	// The cases below run at once.
	t.Run("a Job the Job controller retries takes the next outcome for its next Pod", func(t *testing.T) {
		t.Parallel() // Each waits for the Job controller: a retry, a restart.
		g := NewWithT(t)
		job := newJob("k-retry")
		job.Spec.BackoffLimit = ptr.To[int32](1)
		g.Expect(real.Client.Create(ctx, job)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(real.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Conditions).To(ContainElement(HaveField("Type", batchv1.JobComplete)))
		}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
		g.Expect(job.Status.Failed).To(BeEquivalentTo(1))
		g.Expect(job.Status.Succeeded).To(BeEquivalentTo(1))
		g.Expect(podsOf(g, real.Client, job)).To(HaveLen(2))
		g.Expect(k.SeenMatching(jobdriver.NamePrefix("k-retry"))).To(ConsistOf(HaveField("Runs", 2)))
	})

	t.Run("a failed container of a Pod that restarts OnFailure restarts in place", func(t *testing.T) {
		t.Parallel() // Each waits for the Job controller: a retry, a restart.
		g := NewWithT(t)
		job := newJob("k-restart")
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		g.Expect(real.Client.Create(ctx, job)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(real.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Conditions).To(ContainElement(And(HaveField("Type", batchv1.JobFailed), HaveField("Reason", batchv1.JobReasonBackoffLimitExceeded))))
		}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
		// The Job controller counts the restart against backoffLimit 0 and
		// deletes the Pod; the Kubelet stops it.
		g.Eventually(func(g Gomega) { g.Expect(podsOf(g, real.Client, job)).To(BeEmpty()) }, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	})

	t.Run("a hanging Job stays running; its Pods go with it when it is deleted", func(t *testing.T) {
		t.Parallel() // Each waits for the Job controller: a retry, a restart.
		g := NewWithT(t)
		job := newJob("k-hang")
		g.Expect(real.Client.Create(ctx, job)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(real.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Ready).To(HaveValue(BeEquivalentTo(1)))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(real.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Conditions).To(BeEmpty())
		}, 2*time.Second, 100*time.Millisecond).Should(Succeed())

		// The garbage collector deletes the Pods of a deleted Job; the
		// Kubelet stops their containers, as the kubelet does.
		g.Expect(real.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		g.Expect(apierrors.IsNotFound(real.Client.Get(ctx, client.ObjectKeyFromObject(job), job))).To(BeTrue())
		g.Eventually(func(g Gomega) { g.Expect(podsOf(g, real.Client, job)).To(BeEmpty()) }, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	})
}

// TestKubeletRunsAPodSeenBeforeItsJob runs a Kubelet whose watch of Jobs
// lags behind its watch of Pods, as on a loaded machine: the Pod the Job
// controller creates, and binds, is seen before its Job. The Kubelet runs
// it once the Job's event arrives; it used to drop the Pod as an orphan, and
// the Job ran until its deadline (a demo stalled on its hook for minutes).
func TestKubeletRunsAPodSeenBeforeItsJob(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	const lag = 2 * time.Second
	cfg := rest.CopyConfig(real.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return lagJobWatch{next: rt, lag: lag} })
	k, err := jobdriver.NewKubelet(cfg, jobdriver.KubeletOptions{Delay: 100 * time.Millisecond})
	g.Expect(err).NotTo(HaveOccurred())
	kctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	k.Start(kctx)

	job := newJob("k-late-job")
	g.Expect(real.Client.Create(ctx, job)).To(Succeed())
	// The Job controller creates the Pod at once and the Kubelet binds it,
	// seconds before it hears of the Job.
	g.Eventually(func(g Gomega) {
		g.Expect(real.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Conditions).To(ContainElement(HaveField("Type", batchv1.JobComplete)))
	}, lag+8*time.Second, 50*time.Millisecond).Should(Succeed(), "promptly, not at the Kubelet's resync (30s)")
	g.Expect(k.SeenMatching(jobdriver.NamePrefix("k-late-job"))).To(ConsistOf(HaveField("Runs", 1)))
}

// lagJobWatch delays what a watch of Jobs receives by lag.
type lagJobWatch struct {
	next http.RoundTripper
	lag  time.Duration
}

func (l lagJobWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err == nil && strings.HasSuffix(req.URL.Path, "/jobs") && req.URL.Query().Get("watch") == "true" {
		resp.Body = newLagReader(resp.Body, l.lag)
	}
	return resp, err
}

// lagReader hands on each read of body lag after it arrived.
type lagReader struct {
	body   io.ReadCloser
	lag    time.Duration
	chunks chan lagChunk
	rest   []byte
	err    error
}

type lagChunk struct {
	data []byte
	at   time.Time
	err  error
}

func newLagReader(body io.ReadCloser, lag time.Duration) *lagReader {
	r := &lagReader{body: body, lag: lag, chunks: make(chan lagChunk, 1024)}
	go func() {
		for {
			buf := make([]byte, 32<<10)
			n, err := body.Read(buf)
			r.chunks <- lagChunk{data: buf[:n], at: time.Now(), err: err}
			if err != nil {
				close(r.chunks)
				return
			}
		}
	}()
	return r
}

func (r *lagReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		c, ok := <-r.chunks
		if !ok {
			return 0, io.EOF
		}
		time.Sleep(time.Until(c.at.Add(r.lag))) // The lag under test, not a wait for a condition.
		r.rest, r.err = c.data, c.err
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

func (r *lagReader) Close() error { return r.body.Close() }
