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

package jobdriver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Outcome is what one Job comes to.
type Outcome struct {
	// Fail makes the Job fail; otherwise it succeeds.
	Fail bool

	// Message is the termination message of the Job's first container: with
	// FallbackToLogsOnError, the tail of its output.
	Message string

	// ExitCode is the exit code of the first container. When zero, it is 1
	// for a failing Job and 0 otherwise.
	ExitCode int32

	// Delay, when set, overrides Options.Delay for this Job.
	Delay *time.Duration

	// Hang leaves the Job running for ever, for testing timeouts.
	Hang bool
}

// Matcher selects the Jobs a script applies to.
type Matcher func(job *batchv1.Job) bool

// NamePrefix matches Jobs whose name starts with prefix.
func NamePrefix(prefix string) Matcher {
	return func(job *batchv1.Job) bool { return strings.HasPrefix(job.Name, prefix) }
}

// HasLabels matches Jobs that carry every label of set.
func HasLabels(set map[string]string) Matcher {
	return func(job *batchv1.Job) bool {
		for k, v := range set {
			if job.Labels[k] != v {
				return false
			}
		}
		return true
	}
}

// Options configure a Driver.
type Options struct {
	// Delay is how long a Job runs before it ends. Zero ends it on the next
	// poll.
	Delay time.Duration

	// Default is the outcome of a Job no script matches, or whose script is
	// used up. The zero value succeeds.
	Default Outcome

	// PollInterval is how often the driver lists Jobs; 50ms when zero.
	PollInterval time.Duration
}

// SeenJob is the record of a Job the driver ran.
type SeenJob struct {
	// Namespace and Name identify the Job.
	Namespace, Name string

	// UID is the Job's UID: a Job re-created with the same name is another
	// SeenJob.
	UID types.UID

	// Labels and Annotations are the Job's.
	Labels, Annotations map[string]string

	// PodLabels are the labels of the Job's Pod template.
	PodLabels map[string]string

	// Env is the environment (literal values only) of every container and
	// init container, by container name.
	Env map[string]map[string]string

	// Outcome is the outcome the driver gave the Job.
	Outcome Outcome

	// Finished is true once the driver wrote the Job's terminal status, at
	// FinishedAt.
	Finished   bool
	FinishedAt time.Time
}

type script struct {
	match    Matcher
	outcomes []Outcome
	used     int
}

// run is the driver's memory of one Job.
type run struct {
	seen      *SeenJob
	firstSeen time.Time
	podName   string
	started   bool
	// step is 0 until the Pod is terminated, 1 once the first condition
	// (SuccessCriteriaMet or FailureTarget) is written, 2 when done.
	step int
}

// Driver plays the Job controller and the kubelet for a workload cluster.
type Driver struct {
	c    client.Client
	opts Options

	mu      sync.Mutex
	scripts []*script
	runs    map[types.UID]*run
	order   []types.UID
}

// New returns a Driver for the workload cluster of c. Call Start to run it.
func New(c client.Client, opts Options) *Driver {
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	return &Driver{c: c, opts: opts, runs: map[types.UID]*run{}}
}

// Script gives the Jobs match selects, in the order the driver first sees
// them, the outcomes in turn; once they are used up, Options.Default
// applies. The first script that matches a Job decides its outcome.
func (d *Driver) Script(match Matcher, outcomes ...Outcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.scripts = append(d.scripts, &script{match: match, outcomes: outcomes})
}

// Start runs the driver until ctx is done, in its own goroutine.
func (d *Driver) Start(ctx context.Context) {
	go func() {
		ticker := time.NewTicker(d.opts.PollInterval)
		defer ticker.Stop()
		for {
			if err := d.Step(ctx); err != nil && ctx.Err() == nil {
				ctrl.LoggerFrom(ctx).V(4).Info("Driving Jobs failed, retrying", "err", err.Error())
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

// Step drives every Job one step further, once. Start calls it on every
// poll; tests that want full control may call it instead of Start.
func (d *Driver) Step(ctx context.Context) error {
	jobs := &batchv1.JobList{}
	if err := d.c.List(ctx, jobs); err != nil {
		return fmt.Errorf("listing Jobs: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	present := map[types.UID]bool{}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		present[job.UID] = true
		if err := d.drive(ctx, job); err != nil {
			errs = append(errs, err)
		}
	}
	// Play the garbage collector for the Pods of deleted Jobs.
	for uid, r := range d.runs {
		if present[uid] || r.podName == "" {
			continue
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.seen.Namespace, Name: r.podName}}
		if err := d.c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting Pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		r.podName = ""
	}
	return kerrors.NewAggregate(errs)
}

// Seen returns the Jobs the driver ran, in the order it first saw them.
func (d *Driver) Seen() []SeenJob {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]SeenJob, 0, len(d.order))
	for _, uid := range d.order {
		out = append(out, *d.runs[uid].seen)
	}
	return out
}

// SeenMatching returns the Jobs the driver ran that match selects.
func (d *Driver) SeenMatching(match Matcher) []SeenJob {
	var out []SeenJob
	for _, s := range d.Seen() {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: s.Labels, Annotations: s.Annotations}}
		if match(job) {
			out = append(out, s)
		}
	}
	return out
}

// drive moves one Job a step towards its outcome.
func (d *Driver) drive(ctx context.Context, job *batchv1.Job) error {
	r, ok := d.runs[job.UID]
	if !ok {
		if isFinished(job) {
			return nil // Not ours to drive.
		}
		r = &run{seen: d.record(job), firstSeen: time.Now()}
		d.runs[job.UID] = r
		d.order = append(d.order, job.UID)
	}
	if r.step == 2 {
		return nil
	}
	if !r.started {
		if err := d.start(ctx, job, r); err != nil {
			return err
		}
		r.started = true
		return nil
	}
	o := r.seen.Outcome
	delay := d.opts.Delay
	if o.Delay != nil {
		delay = *o.Delay
	}
	if o.Hang || time.Since(r.firstSeen) < delay {
		return nil
	}
	return d.finish(ctx, job, r)
}

// record picks the outcome of a new Job and records it.
func (d *Driver) record(job *batchv1.Job) *SeenJob {
	outcome := d.opts.Default
	for _, s := range d.scripts {
		if !s.match(job) {
			continue
		}
		if s.used < len(s.outcomes) {
			outcome = s.outcomes[s.used]
			s.used++
		}
		break
	}
	env := map[string]map[string]string{}
	spec := job.Spec.Template.Spec
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		vars := map[string]string{}
		for _, e := range c.Env {
			vars[e.Name] = e.Value
		}
		env[c.Name] = vars
	}
	return &SeenJob{
		Namespace:   job.Namespace,
		Name:        job.Name,
		UID:         job.UID,
		Labels:      maps.Clone(job.Labels),
		Annotations: maps.Clone(job.Annotations),
		PodLabels:   maps.Clone(job.Spec.Template.Labels),
		Env:         env,
		Outcome:     outcome,
	}
}

// start creates the Job's Pod and marks the Job active, as the Job
// controller does.
func (d *Driver) start(ctx context.Context, job *batchv1.Job, r *run) error {
	name := fmt.Sprintf("%s-%s", job.Name, strings.ReplaceAll(string(job.UID), "-", "")[:5])
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			Name:            name,
			Labels:          maps.Clone(job.Spec.Template.Labels),
			Annotations:     maps.Clone(job.Spec.Template.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := d.c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Pod %s/%s of Job %s: %w", pod.Namespace, pod.Name, job.Name, err)
	}
	r.podName = name

	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Active = 1
	job.Status.Ready = ptr.To[int32](0)
	job.Status.Terminating = ptr.To[int32](0)
	job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	if err := d.c.Status().Update(ctx, job); err != nil {
		return fmt.Errorf("starting Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// finish terminates the Pod's containers and writes the Job's terminal
// status in the two steps of the Job controller.
func (d *Driver) finish(ctx context.Context, job *batchv1.Job, r *run) error {
	o := r.seen.Outcome
	if r.step == 0 {
		if err := d.terminatePod(ctx, job, r); err != nil {
			return err
		}
		now := metav1.Now()
		job.Status.Active = 0
		if o.Fail {
			job.Status.Failed = 1
			job.Status.Conditions = append(job.Status.Conditions, condition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit", now))
		} else {
			job.Status.Succeeded = 1
			job.Status.Conditions = append(job.Status.Conditions, condition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods", now))
		}
		if err := d.c.Status().Update(ctx, job); err != nil {
			return fmt.Errorf("ending Job %s/%s: %w", job.Namespace, job.Name, err)
		}
		r.step = 1
		return nil
	}

	now := metav1.Now()
	if o.Fail {
		job.Status.Conditions = append(job.Status.Conditions, condition(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit", now))
	} else {
		job.Status.CompletionTime = &now
		job.Status.Conditions = append(job.Status.Conditions, condition(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods", now))
	}
	if err := d.c.Status().Update(ctx, job); err != nil {
		return fmt.Errorf("ending Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	r.step = 2
	r.seen.Finished, r.seen.FinishedAt = true, time.Now()
	return nil
}

// terminatePod writes the Pod status the kubelet writes when its containers
// exit: init containers completed, the first container with the outcome's
// exit code and message, the others completed.
func (d *Driver) terminatePod(ctx context.Context, job *batchv1.Job, r *run) error {
	o := r.seen.Outcome
	pod := &corev1.Pod{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: r.podName}, pod); err != nil {
		return fmt.Errorf("getting Pod %s/%s: %w", job.Namespace, r.podName, err)
	}
	now := metav1.Now()
	terminated := func(c corev1.Container, code int32, message string) corev1.ContainerStatus {
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		return corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			ImageID: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode:   code,
				Reason:     reason,
				Message:    message,
				StartedAt:  metav1.NewTime(r.firstSeen),
				FinishedAt: now,
			}},
		}
	}
	pod.Status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, terminated(c, 0, ""))
	}
	pod.Status.ContainerStatuses = nil
	for i, c := range pod.Spec.Containers {
		code, message := int32(0), ""
		if i == 0 {
			code, message = o.ExitCode, o.Message
			if code == 0 && o.Fail {
				code = 1
			}
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, terminated(c, code, message))
	}
	pod.Status.Phase = corev1.PodSucceeded
	if o.Fail {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.StartTime = ptr.To(metav1.NewTime(r.firstSeen))
	if err := d.c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("terminating Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func condition(typ batchv1.JobConditionType, reason, message string, now metav1.Time) batchv1.JobCondition {
	return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: now, LastTransitionTime: now}
}

func isFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
