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
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure a Driver.
type Options struct {
	// Delay is how long a Job runs before it ends. Zero ends it on the next
	// poll.
	Delay time.Duration

	// Default is the outcome of a Job no script matches, or whose script is
	// used up. The zero value succeeds.
	Default Outcome

	// PollInterval is how often the driver lists Jobs when it cannot watch
	// them, and how soon it retries a step that failed; 50ms when zero.
	PollInterval time.Duration
}

// run is the driver's memory of one Job.
type run struct {
	namespace string
	outcome   Outcome
	firstSeen time.Time
	podName   string
	started   bool
	// step is 0 until the Pod is terminated, 1 once the first condition
	// (SuccessCriteriaMet or FailureTarget) is written, 2 when done.
	step int
	// present says whether the last Step listed the Job.
	present bool
}

// Driver plays the Job controller and the kubelet for a workload cluster.
type Driver struct {
	*book
	c    client.Client
	opts Options

	mu   sync.Mutex
	runs map[types.UID]*run
}

var _ Runner = (*Driver)(nil)

// New returns a Driver for the workload cluster of c. Call Start to run it.
func New(c client.Client, opts Options) *Driver {
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	return &Driver{book: newBook(opts.Default), c: c, opts: opts, runs: map[types.UID]*run{}}
}

// Start runs the driver until ctx is done, in its own goroutine. With a
// client that can watch (client.WithWatch, as envtest's are), it steps when a
// Job changes and when a running Job's delay ends, as the Job controller
// reacts to its informer's events, and lists nothing in between; with one that
// cannot, or while its watch cannot be opened, it steps every PollInterval.
func (d *Driver) Start(ctx context.Context) {
	wc, _ := d.c.(client.WithWatch)
	go d.run(ctx, wc)
}

// run steps until ctx is done: on a change of a Job that wc's watch reports,
// when the earliest running Job's delay ends, and every PollInterval when it
// has no watch or a step failed.
func (d *Driver) run(ctx context.Context, wc client.WithWatch) {
	log := ctrl.LoggerFrom(ctx)
	var w watch.Interface
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for ctx.Err() == nil {
		if w == nil && wc != nil {
			// Opened before the step that lists, so that no change made
			// after the list goes unseen.
			var err error
			if w, err = wc.Watch(ctx, &batchv1.JobList{}); err != nil {
				w = nil
				if ctx.Err() == nil {
					log.V(4).Info("Watching Jobs failed, polling until it works again", "err", err.Error())
				}
			}
		}
		wake := d.opts.PollInterval
		if err := d.Step(ctx); err != nil {
			if ctx.Err() == nil {
				log.V(4).Info("Driving Jobs failed, retrying", "err", err.Error())
			}
		} else if w != nil {
			wake = d.untilNextStep()
		}
		var events <-chan watch.Event
		if w != nil {
			events = w.ResultChan()
		}
		if wake >= 0 {
			timer.Reset(wake)
		}
		select {
		case <-ctx.Done():
		case <-timer.C:
		case _, open := <-events:
			if !open {
				w = nil
			}
			discardQueued(events)
		}
		timer.Stop()
	}
}

// discardQueued takes the events already queued, so that one step answers
// them all.
func discardQueued(events <-chan watch.Event) {
	for {
		select {
		case _, open := <-events:
			if !open {
				return
			}
		default:
			return
		}
	}
}

// untilNextStep is how long until a running Job needs a step without a change
// of its own: when its delay ends, or at once when it is mid-way through
// its steps; -1 when none does (no Job, or only Jobs that hang or ended).
func (d *Driver) untilNextStep() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	next := time.Duration(-1)
	for _, r := range d.runs {
		if !r.present || r.step == 2 || r.outcome.Hang {
			continue
		}
		wait := time.Duration(0)
		if r.started && r.step == 0 {
			wait = max(time.Until(r.firstSeen.Add(d.delay(r))), 0)
		}
		if next < 0 || wait < next {
			next = wait
		}
	}
	return next
}

// delay is how long the Job of r runs before it ends.
func (d *Driver) delay(r *run) time.Duration {
	if r.outcome.Delay != nil {
		return *r.outcome.Delay
	}
	return d.opts.Delay
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
		r.present = present[uid]
		if r.present || r.podName == "" {
			continue
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.podName}}
		if err := d.c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting Pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		r.podName = ""
	}
	return kerrors.NewAggregate(errs)
}

// drive moves one Job a step towards its outcome.
func (d *Driver) drive(ctx context.Context, job *batchv1.Job) error {
	r, ok := d.runs[job.UID]
	if !ok {
		if isFinished(job) {
			return nil // Not ours to drive.
		}
		r = &run{namespace: job.Namespace, outcome: d.nextRun(job), firstSeen: time.Now()}
		d.runs[job.UID] = r
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
	o := r.outcome
	if o.Hang || time.Since(r.firstSeen) < d.delay(r) {
		return nil
	}
	return d.finish(ctx, job, r)
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
	o := r.outcome
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
	d.finished(job.UID, o.Fail)
	return nil
}

// terminatePod writes the Pod status the kubelet writes when its containers
// exit: init containers completed, sidecars stopped (the exit code of
// SIGTERM), the first container with the outcome's exit code and message,
// the others completed.
func (d *Driver) terminatePod(ctx context.Context, job *batchv1.Job, r *run) error {
	o := r.outcome
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
		code := int32(0)
		if isSidecar(c) {
			code = exitCodeSIGTERM // Stopped once the containers ended, as the Kubelet does.
		}
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, terminated(c, code, ""))
	}
	pod.Status.ContainerStatuses = nil
	for i, c := range pod.Spec.Containers {
		code, message := int32(0), ""
		if i == 0 {
			code, message = o.exitCode(), o.Message
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
