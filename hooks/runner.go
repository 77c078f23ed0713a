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

package hooks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

// Environment variables set in every container of a hook Job.
const (
	// EnvCluster is the name of the CAPI Cluster.
	EnvCluster = "TOLLGATE_CLUSTER"
	// EnvMachine is the name of the CAPI Machine.
	EnvMachine = "TOLLGATE_MACHINE"
	// EnvNode is the name of the workload Node.
	EnvNode = "TOLLGATE_NODE"
	// EnvFromVersion is the Talos version the node runs before the
	// disruption.
	EnvFromVersion = "TOLLGATE_FROM_VERSION"
	// EnvToVersion is the Talos version the node runs after it: the same
	// unless it is upgraded, empty for a removal.
	EnvToVersion = "TOLLGATE_TO_VERSION"
	// EnvHook is the point the hook runs at: preDrain, preReboot,
	// nodePreReady, nodeReady or preRemoval.
	EnvHook = "TOLLGATE_HOOK"
	// EnvHookName is the name of the hook in the policy.
	EnvHookName = "TOLLGATE_HOOK_NAME"
	// EnvAction is what the Machine goes through: Upgrade, Kubernetes,
	// Reboot, Configure or Removal (see RunInput.Action).
	EnvAction = "TOLLGATE_ACTION"
)

// The actions a hook runs for, in EnvAction.
const (
	// ActionUpgrade is a Talos upgrade of the Machine's node.
	ActionUpgrade = "Upgrade"
	// ActionReboot is a reboot of the node asked for on its own.
	ActionReboot = "Reboot"
	// ActionConfigure is a change of the node's machine configuration.
	ActionConfigure = "Configure"
	// ActionKubernetes is a change of the node's Kubernetes version: its
	// control-plane components or its kubelet, without a reboot.
	ActionKubernetes = "Kubernetes"
	// ActionRemoval is the deletion of the Machine by CAPI.
	ActionRemoval = "Removal"
)

// Annotations on hook Jobs, for people reading them; Tollgate's own
// bookkeeping is in labels and in the TalosUpgrade status.
const (
	// MachineAnnotation carries the full name of the CAPI Machine of a hook
	// Job (its label may be shortened to fit a label value).
	MachineAnnotation = "upgrade.tollgate.dev/machine"
	// NodeAnnotation carries the workload Node of a hook Job.
	NodeAnnotation = "upgrade.tollgate.dev/node"
	// AttemptAnnotation carries the attempt number of a hook Job, from 1.
	AttemptAnnotation = "upgrade.tollgate.dev/attempt"
)

const (
	// DefaultTimeout is the timeout of a hook that sets none.
	DefaultTimeout = 10 * time.Minute

	// InitialBackoff is the wait before the first retry of a failed hook;
	// it doubles with every further failure, up to MaxBackoff.
	InitialBackoff = 10 * time.Second

	// MaxBackoff caps the wait between two attempts of a hook.
	MaxBackoff = 5 * time.Minute
)

// JobName returns the name of attempt (from 1) of the Job of hook at point
// for machine of the Cluster cluster: a DNS-1123 label of at most 63
// characters that starts "tollgate-hook-<hook>-<point>-<machine>" as far as
// it fits and ends with a hash of all five, so that a restarted controller
// finds the Job of an attempt it started instead of starting a second one.
func JobName(cluster, machine, hook string, point upgradev1.HookPoint, attempt int32) string {
	return workloadjob.HashedName("tollgate-hook", hook, strings.ToLower(string(point)), machine, cluster, strconv.Itoa(int(attempt)))
}

// Backoff returns the wait before the next attempt of a hook that failed
// failures times: InitialBackoff doubled for every failure after the first,
// at most MaxBackoff.
func Backoff(failures int32) time.Duration {
	d := InitialBackoff
	for i := int32(1); i < failures && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// RunInput is what Run needs to know about one Machine at one point.
type RunInput struct {
	// UpgradeName is the name of the TalosUpgrade; its Jobs carry it.
	UpgradeName string
	// ClusterName is the name of the CAPI Cluster.
	ClusterName string
	// Machine is the name of the CAPI Machine.
	Machine string
	// Node is the name of the Machine's workload Node.
	Node string
	// FromVersion is the Talos version the node runs before the disruption.
	FromVersion string
	// ToVersion is the Talos version it runs after: the same unless it is
	// upgraded, empty for a removal.
	ToVersion string
	// Action is what the Machine goes through: ActionUpgrade, ActionReboot,
	// ActionConfigure, ActionKubernetes or ActionRemoval; ActionRemoval at the preRemoval point and
	// ActionUpgrade elsewhere when empty.
	Action string
	// Point is the point the Machine is at.
	Point upgradev1.HookPoint
	// Hooks are all the hooks of the plan; Run runs those at Point.
	Hooks []upgradev1.ActionHook
	// Previous are the hook statuses of the Machine as persisted in
	// TalosUpgrade.status.machines[].hooks. They must be what is persisted:
	// Run deletes the Job of a hook only once Previous records its verdict,
	// so that a completed hook is never run again.
	Previous []upgradev1.HookRunStatus
}

// action is what the Machine goes through, for EnvAction.
func (in *RunInput) action() string {
	switch {
	case in.Action != "":
		return in.Action
	case in.Point == upgradev1.HookPointPreRemoval:
		return ActionRemoval
	}
	return ActionUpgrade
}

// RunResult is the state of the hooks of a Machine at a point.
type RunResult struct {
	// Statuses are the new hook statuses of the Machine, every point
	// included, to persist in TalosUpgrade.status.machines[].hooks.
	Statuses []upgradev1.HookRunStatus
	// Done is true when every hook at the point succeeded (or there is
	// none): the Machine may go on.
	Done bool
	// Failed is true when a hook at the point failed after its retries: the
	// Machine fails under the failure policy, with Message as the reason.
	Failed bool
	// Message says what the Machine waits for, or why it failed, for
	// example `hook "ceph-noout" failed after 3 attempts: ceph: error
	// connecting to the cluster`.
	Message string
	// RequeueAfter is when to call Run again: the next poll of a running
	// Job, a timeout, or the next attempt of a failed hook. Zero when Done
	// or Failed.
	RequeueAfter time.Duration
}

// Runner runs the action hooks of Machines as Jobs in a workload cluster.
// Its fields are workloadjob.Poller's: Client, the workload cluster's client
// (it may read from a cache of Jobs); APIReader, an uncached reader of the
// Pods of failed Jobs; Now, the clock; PollInterval, how often a running
// hook Job is looked at again (workloadjob.DefaultPollInterval when zero).
type Runner workloadjob.Poller

// Run moves every hook of in.Point one step on and returns where they
// stand. It never waits for a Job: call it again after RequeueAfter, with
// the statuses it returned (once persisted) as Previous. On error, RunResult
// still carries the statuses as far as they got, which are safe to persist.
//
// The Job of a hook is deleted by the first Run whose Previous records the
// hook's verdict, which for the last point (nodeReady) may never come: the
// rollout's cleanup (internal/workloadjob.Cleanup) deletes what is left.
func (r *Runner) Run(ctx context.Context, in RunInput) (RunResult, error) {
	now := r.jobs().Time()
	var errs []error
	hooks := make(map[string]*upgradev1.ActionHook, len(in.Hooks))
	for i := range in.Hooks {
		hooks[in.Hooks[i].Name] = &in.Hooks[i]
	}

	statuses := make([]upgradev1.HookRunStatus, 0, len(in.Previous)+len(in.Hooks))
	index := map[string]int{}
	for _, st := range in.Previous {
		index[st.Name] = len(statuses)
		statuses = append(statuses, st)
		// The verdict is persisted: the Job is no longer needed.
		if h := hooks[st.Name]; h != nil && st.JobName != "" && st.NextAttemptTime == nil &&
			(st.Phase == upgradev1.HookRunSucceeded || st.Phase == upgradev1.HookRunFailed || st.Phase == upgradev1.HookRunSkipped) {
			if err := r.deleteJob(ctx, workloadjob.Namespace(&h.Template), st.JobName); err != nil {
				errs = append(errs, err)
			}
		}
	}

	res := RunResult{Done: true}
	var waiting []string
	for i := range in.Hooks {
		h := &in.Hooks[i]
		if h.Point != in.Point {
			continue
		}
		idx, ok := index[h.Name]
		if ok && statuses[idx].Point != "" && statuses[idx].Point != h.Point {
			// The hook moved to another point: it has not run at this one.
			statuses[idx] = upgradev1.HookRunStatus{Name: h.Name, Point: h.Point}
		}
		if !ok {
			idx = len(statuses)
			statuses = append(statuses, upgradev1.HookRunStatus{Name: h.Name, Point: h.Point})
		}
		st := &statuses[idx]
		requeue, err := r.step(ctx, in, h, st, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("running hook %q: %w", h.Name, err))
		}
		switch st.Phase {
		case upgradev1.HookRunSucceeded, upgradev1.HookRunSkipped:
			continue
		case upgradev1.HookRunFailed:
			if !res.Failed {
				res.Failed = true
				res.Message = fmt.Sprintf("hook %q failed after %d attempts: %s", h.Name, st.Attempts, st.Message)
			}
		default:
			switch {
			case st.NextAttemptTime != nil:
				waiting = append(waiting, fmt.Sprintf("hook %q failed (attempt %d of %d), retrying at %s: %s",
					h.Name, st.Attempts, retries(h)+1, st.NextAttemptTime.UTC().Format(time.RFC3339), st.Message))
			default:
				waiting = append(waiting, fmt.Sprintf("waiting for hook %q", h.Name))
			}
		}
		res.Done = false
		if requeue > 0 && (res.RequeueAfter == 0 || requeue < res.RequeueAfter) {
			res.RequeueAfter = requeue
		}
	}
	res.Statuses = statuses
	switch {
	case res.Failed:
		res.Done, res.RequeueAfter = false, 0
	case !res.Done:
		res.Message = strings.Join(waiting, "; ")
	default:
		res.RequeueAfter = 0
	}
	return res, kerrors.NewAggregate(errs)
}

// step moves one hook one step on and returns when to look at it again.
func (r *Runner) step(ctx context.Context, in RunInput, h *upgradev1.ActionHook, st *upgradev1.HookRunStatus, now time.Time) (time.Duration, error) {
	st.Point = h.Point
	switch {
	case st.Phase == upgradev1.HookRunSucceeded || st.Phase == upgradev1.HookRunFailed || st.Phase == upgradev1.HookRunSkipped:
		return 0, nil
	case st.Attempts == 0:
		return r.start(ctx, in, h, st, 1)
	case st.NextAttemptTime != nil:
		if now.Before(st.NextAttemptTime.Time) {
			return st.NextAttemptTime.Sub(now), nil
		}
		// The failure of the last attempt is persisted: its Job may go.
		if err := r.deleteJob(ctx, workloadjob.Namespace(&h.Template), st.JobName); err != nil {
			return 0, err
		}
		return r.start(ctx, in, h, st, st.Attempts+1)
	}

	job := &batchv1.Job{}
	key := client.ObjectKey{Namespace: workloadjob.Namespace(&h.Template), Name: st.JobName}
	if err := r.Client.Get(ctx, key, job); err != nil {
		if apierrors.IsNotFound(err) {
			// Not created yet as far as we can see (or deleted by someone):
			// create the same attempt again, which is idempotent by name.
			return r.start(ctx, in, h, st, st.Attempts)
		}
		return 0, fmt.Errorf("getting Job %s: %w", key, err)
	}

	var message string
	switch workloadjob.OutcomeOf(job) {
	case workloadjob.Succeeded:
		ctrl.LoggerFrom(ctx).Info("Hook succeeded", "hook", h.Name, "Job", klog.KObj(job))
		st.Phase = upgradev1.HookRunSucceeded
		st.Message = ""
		st.NextAttemptTime = nil
		r.jobs().RunEnded(job, workloadjob.RunSucceeded)
		return 0, nil
	case workloadjob.Failed:
		msg, err := workloadjob.FailureMessage(ctx, r.jobs().PodReader(), job)
		if err != nil {
			return 0, err
		}
		message = msg
		r.jobs().RunEnded(job, workloadjob.RunFailed)
	default:
		deadline := job.CreationTimestamp.Add(timeout(h))
		if now.Before(deadline) {
			return r.jobs().NextPoll(deadline.Sub(now)), nil
		}
		// Stop the Job that ran too long.
		if err := workloadjob.Delete(ctx, r.Client, job); err != nil {
			return 0, err
		}
		message = fmt.Sprintf("timed out after %s", timeout(h))
		r.jobs().RunEnded(job, workloadjob.RunTimedOut)
	}

	ctrl.LoggerFrom(ctx).Info("Hook failed", "hook", h.Name, "Job", klog.KObj(job), "attempt", st.Attempts, "reason", message)
	st.Message = message
	if st.Attempts > retries(h) {
		st.Phase = upgradev1.HookRunFailed
		st.NextAttemptTime = nil
		return 0, nil
	}
	backoff := Backoff(st.Attempts)
	next := metav1.NewTime(now.Add(backoff))
	st.NextAttemptTime = &next
	return backoff, nil
}

// start creates the Job of an attempt of the hook.
func (r *Runner) start(ctx context.Context, in RunInput, h *upgradev1.ActionHook, st *upgradev1.HookRunStatus, attempt int32) (time.Duration, error) {
	labels := workloadjob.RolloutLabels(in.UpgradeName, in.ClusterName)
	labels[workloadjob.JobKindLabel] = workloadjob.JobKindHook
	labels[workloadjob.HookLabel] = workloadjob.LabelValue(h.Name)
	labels[workloadjob.HookPointLabel] = string(h.Point)
	labels[workloadjob.MachineLabel] = workloadjob.LabelValue(in.Machine)
	job := workloadjob.Build(workloadjob.Spec{
		Name:     JobName(in.ClusterName, in.Machine, h.Name, h.Point, attempt),
		Template: &h.Template,
		Labels:   labels,
		Annotations: map[string]string{
			MachineAnnotation: in.Machine,
			NodeAnnotation:    in.Node,
			AttemptAnnotation: strconv.Itoa(int(attempt)),
		},
		Env: []corev1.EnvVar{
			{Name: EnvCluster, Value: in.ClusterName},
			{Name: EnvMachine, Value: in.Machine},
			{Name: EnvNode, Value: in.Node},
			{Name: EnvFromVersion, Value: in.FromVersion},
			{Name: EnvToVersion, Value: in.ToVersion},
			{Name: EnvHook, Value: string(h.Point)},
			{Name: EnvHookName, Value: h.Name},
			{Name: EnvAction, Value: in.action()},
		},
	})
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("creating Job %s: %w", klog.KObj(job), err)
	}
	ctrl.LoggerFrom(ctx).V(4).Info("Started hook Job", "hook", h.Name, "Job", klog.KObj(job), "attempt", attempt)
	st.Phase = upgradev1.HookRunRunning
	st.Attempts = attempt
	st.JobName = job.Name
	st.NextAttemptTime = nil
	return r.jobs().NextPoll(timeout(h)), nil
}

// deleteJob deletes a hook Job when it still exists.
func (r *Runner) deleteJob(ctx context.Context, namespace, name string) error {
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("getting Job %s/%s: %w", namespace, name, err)
	}
	return workloadjob.Delete(ctx, r.Client, job)
}

// jobs returns r as the Poller it is.
func (r *Runner) jobs() *workloadjob.Poller {
	return (*workloadjob.Poller)(r)
}

func timeout(h *upgradev1.ActionHook) time.Duration {
	if h.Timeout != nil && h.Timeout.Duration > 0 {
		return h.Timeout.Duration
	}
	return DefaultTimeout
}

func retries(h *upgradev1.ActionHook) int32 {
	if h.Retries != nil && *h.Retries > 0 {
		return *h.Retries
	}
	return 0
}
