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
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Defaults of KubeletOptions.
const (
	// DefaultNodeName is the node a Kubelet binds Pods to.
	DefaultNodeName = "tollgate-test-kubelet"
	// DefaultRestartDelay is the kubelet's first CrashLoopBackOff delay.
	DefaultRestartDelay = 10 * time.Second
)

// resyncPeriod is how often the Kubelet looks at every Pod again, as the
// kubelet's sync loop does: should a Pod's event ever be missed, its Job
// waits this long, not until its deadline.
const resyncPeriod = 30 * time.Second

// Exit codes and reasons the Kubelet reports, as a container runtime does.
const (
	// exitCodeSIGTERM is the exit code of a process that SIGTERM ended:
	// 128 + 15. The Kubelet reports it for every container it stops, a
	// sidecar at the end of its Pod and every container of a deleted Pod.
	exitCodeSIGTERM = 143
	reasonCompleted = "Completed"
	reasonError     = "Error"
	reasonCrashLoop = "CrashLoopBackOff"
	reasonPodDone   = "PodCompleted"
)

// KubeletOptions configure a Kubelet.
type KubeletOptions struct {
	// Delay is how long a container runs before it exits; Outcome.Delay
	// overrides it for one run. Zero exits it as soon as it runs.
	Delay time.Duration

	// Default is the outcome of a run no script decides. The zero value
	// succeeds.
	Default Outcome

	// NodeName is the node the Kubelet binds the Pods of Jobs to, as the
	// scheduler would, and whose Pods it runs: DefaultNodeName when empty.
	// No Node object is created.
	NodeName string

	// StopDelay is how long the containers of a deleted Pod take to stop,
	// capped by the Pod's grace period. Zero stops them at once.
	StopDelay time.Duration

	// RestartDelay is how long a failed container of a Pod that restarts
	// OnFailure waits in CrashLoopBackOff before it runs again:
	// DefaultRestartDelay when zero, at once when negative. The kubelet
	// waits 10s, doubling at each restart; the Kubelet does not double.
	RestartDelay time.Duration
}

// Kubelet plays the scheduler and the kubelet for the Pods of Jobs, beside
// the real Job controller (kube-controller-manager, see
// envtest.StartJobController): it binds each Pod of a Job to one node,
// starts its containers (init containers completed, sidecars and
// containers running, the Pod Ready), and after a delay ends the run with
// the exit code and termination message its Outcome asks for. The Job
// controller, not the Kubelet, decides what the Job comes to.
//
// Outcomes are scripted by Job, like a Driver's: the first Pod of a Job
// takes the outcome picked when the Job was first seen, and every further
// run (a Pod the Job controller creates to retry, or a restart of the
// container of a Pod that restarts OnFailure) takes the next outcome of the
// same script.
type Kubelet struct {
	*book
	cs   kubernetes.Interface
	opts KubeletOptions

	mu   sync.Mutex
	runs map[types.UID]*podRun
}

var _ Runner = (*Kubelet)(nil)

// podRun is the Kubelet's memory of one Pod.
type podRun struct {
	// outcome is the outcome of the current run of the container.
	outcome Outcome
	// since is when the current state began.
	since time.Time
	state podState
}

type podState int

const (
	// running: the containers run; the first exits when its outcome's
	// delay is over.
	running podState = iota
	// backingOff: the container failed and waits to run again.
	backingOff
	// exited: the Pod is Succeeded or Failed.
	exited
	// stopped: the Pod was deleted and its containers stopped.
	stopped
)

// NewKubelet returns a Kubelet for the workload cluster of cfg. Call Start
// to run it.
func NewKubelet(cfg *rest.Config, opts KubeletOptions) (*Kubelet, error) {
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	switch {
	case opts.RestartDelay == 0:
		opts.RestartDelay = DefaultRestartDelay
	case opts.RestartDelay < 0:
		opts.RestartDelay = 0
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a clientset for the Kubelet: %w", err)
	}
	return &Kubelet{book: newBook(opts.Default), cs: cs, opts: opts, runs: map[types.UID]*podRun{}}, nil
}

// Start runs the Kubelet until ctx is done, in its own goroutines.
func (k *Kubelet) Start(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("kubelet")
	factory := informers.NewSharedInformerFactory(k.cs, resyncPeriod)
	podInformer := factory.Core().V1().Pods()
	jobInformer := factory.Batch().V1().Jobs()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, time.Second))
	enqueue := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			queue.Add(cache.MetaObjectToName(pod))
		}
	}
	_, _ = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				k.mu.Lock()
				delete(k.runs, pod.UID)
				k.mu.Unlock()
			}
		},
	})
	// A Pod's owner UID indexes it, so that a Job's events find its Pods.
	if err := podInformer.Informer().AddIndexers(cache.Indexers{ownerIndex: indexByOwner}); err != nil {
		log.Error(err, "Indexing Pods by their Job") // Only fails once the informer runs.
	}
	onJob := func(obj any) {
		if job, ok := obj.(*batchv1.Job); ok {
			k.record(job)
			if done, failed := jobFinished(job); done {
				k.finished(job.UID, failed)
			}
			// The Pods of the Job may have been seen before it: the two
			// watches are independent, and on a loaded machine the Job's
			// can lag behind the Pod the Job controller created for it.
			// Look at them again now that their Job is known.
			pods, _ := podInformer.Informer().GetIndexer().ByIndex(ownerIndex, string(job.UID))
			for _, p := range pods {
				enqueue(p)
			}
		}
	}
	_, _ = jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onJob,
		UpdateFunc: func(_, obj any) { onJob(obj) },
	})
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), podInformer.Informer().HasSynced, jobInformer.Informer().HasSynced) {
			return
		}
		pods, jobs := podInformer.Lister(), jobInformer.Lister()
		for range 2 {
			go func() {
				for {
					key, shutdown := queue.Get()
					if shutdown {
						return
					}
					after, err := k.sync(ctx, pods, jobs, key)
					switch {
					case err != nil:
						if ctx.Err() == nil {
							log.V(4).Info("Syncing a Pod failed, retrying", "pod", key.String(), "err", err.Error())
						}
						queue.AddRateLimited(key)
					case after > 0:
						queue.Forget(key)
						queue.AddAfter(key, after)
					default:
						queue.Forget(key)
					}
					queue.Done(key)
				}
			}()
		}
	}()
}

// sync moves one Pod a step, as the scheduler and the kubelet would, and
// returns when to look at it again.
func (k *Kubelet) sync(ctx context.Context, pods corelisters.PodLister, jobs batchlisters.JobLister, key cache.ObjectName) (time.Duration, error) {
	cached, err := pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	owner := metav1.GetControllerOf(cached)
	if owner == nil || owner.Kind != "Job" || owner.APIVersion != batchv1.SchemeGroupVersion.String() {
		return 0, nil // Not a Job's Pod: the Kubelet runs no other.
	}
	if cached.Spec.NodeName != "" && cached.Spec.NodeName != k.opts.NodeName {
		return 0, nil // Bound to another node.
	}
	pod := cached.DeepCopy()
	var job *batchv1.Job
	if j, err := jobs.Jobs(pod.Namespace).Get(owner.Name); err == nil && j.UID == owner.UID {
		job = j
	}

	k.mu.Lock()
	r := k.runs[pod.UID]
	k.mu.Unlock()
	switch {
	case pod.DeletionTimestamp != nil:
		return k.stop(ctx, pod, r)
	case pod.Spec.NodeName == "":
		return 0, k.bind(ctx, pod)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return 0, nil
	case r == nil:
		if job == nil {
			// Its Job is not in the cache yet (the Job's event brings the
			// Pod back, see Start), or gone: the garbage collector deletes
			// an orphan.
			return 0, nil
		}
		return k.run(ctx, pod, k.nextRun(job), 0)
	case r.state == backingOff:
		if wait := k.opts.RestartDelay - time.Since(r.since); wait > 0 {
			return wait, nil
		}
		next := k.opts.Default
		if job != nil {
			next = k.nextRun(job)
		}
		return k.run(ctx, pod, next, 1)
	case r.state == running:
		if r.outcome.Hang {
			return 0, nil
		}
		if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
			return 10 * time.Millisecond, nil // The cache has not seen the Pod run yet.
		}
		delay := k.opts.Delay
		if r.outcome.Delay != nil {
			delay = *r.outcome.Delay
		}
		if wait := delay - time.Since(r.since); wait > 0 {
			return wait, nil
		}
		return k.exit(ctx, pod, job, r)
	}
	return 0, nil
}

// bind binds pod to the Kubelet's node, as the scheduler does.
func (k *Kubelet) bind(ctx context.Context, pod *corev1.Pod) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.opts.NodeName},
	}
	if err := k.cs.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("binding Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// run starts a run of pod's containers with outcome: init containers
// completed, sidecars and containers running, the Pod Running and Ready.
// restart is 1 when the first container runs again in the same Pod.
func (k *Kubelet) run(ctx context.Context, pod *corev1.Pod, outcome Outcome, restart int32) (time.Duration, error) {
	now := metav1.Now()
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = &now
	}
	pod.Status.Phase = corev1.PodRunning
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(pod, t, corev1.ConditionTrue, "", now)
	}
	inits := make([]corev1.ContainerStatus, 0, len(pod.Spec.InitContainers))
	for _, c := range pod.Spec.InitContainers {
		if isSidecar(c) {
			inits = append(inits, runningStatus(pod, c, now, statusOf(pod.Status.InitContainerStatuses, c.Name)))
			continue
		}
		inits = append(inits, terminatedStatus(pod, c, 0, "", pod.Status.StartTime.Time, now))
	}
	pod.Status.InitContainerStatuses = inits
	statuses := make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		st := runningStatus(pod, c, now, statusOf(pod.Status.ContainerStatuses, c.Name))
		if i == 0 {
			st.RestartCount += restart
		}
		statuses = append(statuses, st)
	}
	pod.Status.ContainerStatuses = statuses
	if err := k.updateStatus(ctx, pod); err != nil {
		return 0, err
	}
	k.setRun(pod.UID, &podRun{outcome: outcome, since: now.Time, state: running})
	if outcome.Hang {
		return 0, nil
	}
	delay := k.opts.Delay
	if outcome.Delay != nil {
		delay = *outcome.Delay
	}
	return max(delay, time.Millisecond), nil
}

// exit ends the current run of pod's first container with the run's
// outcome. A failed container of a Pod that restarts OnFailure runs again in
// the same Pod, as the kubelet does: at once the first time, then after
// RestartDelay in CrashLoopBackOff. Otherwise every container ends and the
// Pod is Succeeded or Failed, its sidecars stopped.
func (k *Kubelet) exit(ctx context.Context, pod *corev1.Pod, job *batchv1.Job, r *podRun) (time.Duration, error) {
	now := metav1.Now()
	code := r.outcome.exitCode()
	if code != 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure {
		st := &pod.Status.ContainerStatuses[0]
		last := terminatedStatus(pod, pod.Spec.Containers[0], code, r.outcome.Message, startedAt(*st, r.since), now)
		st.LastTerminationState = last.State
		if st.RestartCount == 0 {
			next := k.opts.Default
			if job != nil {
				next = k.nextRun(job)
			}
			return k.run(ctx, pod, next, 1)
		}
		st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  reasonCrashLoop,
			Message: fmt.Sprintf("back-off restarting failed container %s in pod %s_%s(%s)", st.Name, pod.Name, pod.Namespace, pod.UID),
		}}
		st.Ready, st.Started = false, ptr.To(false)
		setPodCondition(pod, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", now)
		setPodCondition(pod, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", now)
		if err := k.updateStatus(ctx, pod); err != nil {
			return 0, err
		}
		k.setRun(pod.UID, &podRun{since: now.Time, state: backingOff})
		return max(k.opts.RestartDelay, time.Millisecond), nil
	}
	failed := false
	for i, c := range pod.Spec.Containers {
		code, message := int32(0), ""
		if i == 0 {
			code, message = r.outcome.exitCode(), r.outcome.Message
		}
		failed = failed || code != 0
		pod.Status.ContainerStatuses[i] = terminatedStatus(pod, c, code, message, startedAt(pod.Status.ContainerStatuses[i], r.since), now, pod.Status.ContainerStatuses[i])
	}
	k.stopSidecars(pod, now)
	pod.Status.Phase = corev1.PodSucceeded
	if failed {
		pod.Status.Phase = corev1.PodFailed
	}
	setPodCondition(pod, corev1.ContainersReady, corev1.ConditionFalse, reasonPodDone, now)
	setPodCondition(pod, corev1.PodReady, corev1.ConditionFalse, reasonPodDone, now)
	if err := k.updateStatus(ctx, pod); err != nil {
		return 0, err
	}
	k.setRun(pod.UID, &podRun{outcome: r.outcome, since: now.Time, state: exited})
	return 0, nil
}

// stop stops the containers of a deleted Pod, after StopDelay (at most its
// grace period): every running container ends with the exit code of
// SIGTERM and the Pod turns Failed. The Kubelet then deletes the Pod for
// good, as the kubelet does; the Job controller's finalizer may keep it a
// little longer.
func (k *Kubelet) stop(ctx context.Context, pod *corev1.Pod, r *podRun) (time.Duration, error) {
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if !terminal && (r == nil || r.state != stopped) {
		// DeletionTimestamp is when the grace period ends.
		grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
		deleted := pod.DeletionTimestamp.Add(-grace)
		if wait := min(k.opts.StopDelay, grace) - time.Since(deleted); wait > 0 {
			return wait, nil
		}
		now := metav1.Now()
		for i, c := range pod.Spec.Containers {
			if i < len(pod.Status.ContainerStatuses) && pod.Status.ContainerStatuses[i].State.Running != nil {
				st := pod.Status.ContainerStatuses[i]
				pod.Status.ContainerStatuses[i] = terminatedStatus(pod, c, exitCodeSIGTERM, "", st.State.Running.StartedAt.Time, now, st)
			}
		}
		k.stopSidecars(pod, now)
		pod.Status.Phase = corev1.PodFailed
		setPodCondition(pod, corev1.ContainersReady, corev1.ConditionFalse, reasonPodDone, now)
		setPodCondition(pod, corev1.PodReady, corev1.ConditionFalse, reasonPodDone, now)
		if pod.Spec.NodeName != "" {
			if err := k.updateStatus(ctx, pod); err != nil {
				return 0, err
			}
		}
		k.setRun(pod.UID, &podRun{since: now.Time, state: stopped})
	}
	if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 {
		return 0, nil // Deleted for good already; only finalizers keep it.
	}
	err := k.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return 0, fmt.Errorf("deleting Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return 0, nil
}

// stopSidecars ends the sidecars of pod, as the kubelet does once the
// Pod's containers ended: with SIGTERM.
func (k *Kubelet) stopSidecars(pod *corev1.Pod, now metav1.Time) {
	for i, c := range pod.Spec.InitContainers {
		if !isSidecar(c) || i >= len(pod.Status.InitContainerStatuses) {
			continue
		}
		st := pod.Status.InitContainerStatuses[i]
		if st.State.Running != nil {
			pod.Status.InitContainerStatuses[i] = terminatedStatus(pod, c, exitCodeSIGTERM, "", st.State.Running.StartedAt.Time, now, st)
		}
	}
}

func (k *Kubelet) updateStatus(ctx context.Context, pod *corev1.Pod) error {
	if _, err := k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (k *Kubelet) setRun(uid types.UID, r *podRun) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.runs[uid] = r
}

// isSidecar reports whether an init container is a sidecar: one that
// restarts Always and runs beside the containers.
func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func statusOf(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func startedAt(st corev1.ContainerStatus, def time.Time) time.Time {
	if st.State.Running != nil {
		return st.State.Running.StartedAt.Time
	}
	return def
}

// runningStatus is the status of a running container; prev, when set, is
// its status before (a restart keeps its count and last state).
func runningStatus(pod *corev1.Pod, c corev1.Container, now metav1.Time, prev *corev1.ContainerStatus) corev1.ContainerStatus {
	st := corev1.ContainerStatus{
		Name:        c.Name,
		Image:       c.Image,
		ImageID:     c.Image,
		ContainerID: containerID(pod, c),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		Ready:       true,
		Started:     ptr.To(true),
	}
	if prev != nil {
		st.RestartCount, st.LastTerminationState = prev.RestartCount, prev.LastTerminationState
	}
	return st
}

// terminatedStatus is the status of a container that exited with code.
func terminatedStatus(pod *corev1.Pod, c corev1.Container, code int32, message string, started time.Time, now metav1.Time, prev ...corev1.ContainerStatus) corev1.ContainerStatus {
	reason := reasonCompleted
	if code != 0 {
		reason = reasonError
	}
	st := corev1.ContainerStatus{
		Name:        c.Name,
		Image:       c.Image,
		ImageID:     c.Image,
		ContainerID: containerID(pod, c),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode:    code,
			Reason:      reason,
			Message:     message,
			StartedAt:   metav1.NewTime(started),
			FinishedAt:  now,
			ContainerID: containerID(pod, c),
		}},
		Started: ptr.To(false),
	}
	for _, p := range prev {
		st.RestartCount, st.LastTerminationState = p.RestartCount, p.LastTerminationState
	}
	return st
}

func containerID(pod *corev1.Pod, c corev1.Container) string {
	return fmt.Sprintf("sim://%s/%s", pod.UID, c.Name)
}

func setPodCondition(pod *corev1.Pod, t corev1.PodConditionType, status corev1.ConditionStatus, reason string, now metav1.Time) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason = status, reason
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: now})
}

// ownerIndex indexes Pods by the UID of their controller.
const ownerIndex = "controllerUID"

func indexByOwner(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if owner := metav1.GetControllerOf(pod); owner != nil {
		return []string{string(owner.UID)}, nil
	}
	return nil, nil
}

// jobFinished reports whether job has a terminal condition, and whether it
// is Failed.
func jobFinished(job *batchv1.Job) (done, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}
