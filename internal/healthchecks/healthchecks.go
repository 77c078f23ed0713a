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
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

const (
	// DefaultInterval is the interval of a check that sets none.
	DefaultInterval = 30 * time.Second

	// MinInterval is the shortest interval of a check; the API refuses
	// shorter ones, and Evaluate treats them as MinInterval.
	MinInterval = 5 * time.Second

	// DefaultTimeout is the timeout of a Job check that sets none.
	DefaultTimeout = 5 * time.Minute

	// DefaultProbeTimeout is the timeout of an http or prometheus check that
	// sets none: one request, which the ClusterHealthCheck controller waits
	// for.
	DefaultProbeTimeout = 10 * time.Second

	// BlockedByPrefix starts Result.BlockedBy.
	BlockedByPrefix = "waiting for healthchecks to pass: "

	// staleJobRequeue is how soon Evaluate looks again after deleting a
	// stale Job that stood in the way of a new run.
	staleJobRequeue = time.Second
)

// JobName returns the name of the Job of the check checkName in the Cluster
// clusterName: "tollgate-hc-<check>-<cluster>" when that is a DNS-1123 label
// of at most 63 characters, and otherwise a truncated form with a short hash
// of both names. It is stable: every run of a check re-uses the name.
func JobName(checkName, clusterName string) string {
	return workloadjob.Name("tollgate-hc", checkName, clusterName)
}

// Input is what Evaluate needs to know about a rollout.
type Input struct {
	// UpgradeName is the name of the TalosUpgrade; its Jobs carry it.
	UpgradeName string

	// ClusterName is the name of the CAPI Cluster the checks run in.
	ClusterName string

	// Checks are the checks that gate the next Machine. Statuses of checks
	// not listed are dropped and their Jobs deleted.
	Checks []upgradev1.ClusterHealthCheck

	// Previous are the statuses returned by the previous Evaluate, as
	// persisted in TalosUpgrade.status.healthChecks.
	Previous []upgradev1.HealthCheckStatus
}

// Result is the verdict of Evaluate.
type Result struct {
	// Statuses are the new statuses of the checks, in the order of
	// Input.Checks, to persist in TalosUpgrade.status.healthChecks.
	Statuses []upgradev1.HealthCheckStatus

	// Passed is true when every check passed and its pass is fresh: the next
	// Machine may start. It is true when there is no check.
	Passed bool

	// BlockedBy says what the rollout waits for when Passed is false, for
	// example `waiting for healthchecks to pass: "ceph": ceph is HEALTH_WARN`.
	BlockedBy string

	// Reason is the reason of the HealthChecksPassing condition:
	// HealthChecksPassedReason, HealthChecksFailingReason when a check
	// failed, HealthChecksRunningReason otherwise.
	Reason string

	// RequeueAfter is when to call Evaluate again: the earliest time a check
	// is due or its running Job should be looked at. While checks fail it is
	// the shortest interval among them. Zero when Passed.
	RequeueAfter time.Duration
}

// Evaluator runs the health checks of rollouts in a workload cluster. Its
// fields are workloadjob.Poller's: Client, the workload cluster's client (it
// may read from a cache of Jobs); APIReader, an uncached reader of the Pods
// of failed Jobs; Now, the clock; PollInterval, how often a check whose Job
// runs is looked at again (workloadjob.DefaultPollInterval when zero).
type Evaluator workloadjob.Poller

// Evaluate moves every check one step on and returns the verdict; see the
// package documentation for the life of a check. It never waits for a Job.
// On error, Result still carries the statuses as far as they got, which
// are safe to persist.
func (e *Evaluator) Evaluate(ctx context.Context, in Input) (Result, error) {
	now := e.jobs().Time()
	var errs []error
	if err := e.deleteUnreferencedJobs(ctx, in); err != nil {
		errs = append(errs, err)
	}

	previous := make(map[string]upgradev1.HealthCheckStatus, len(in.Previous))
	for _, st := range in.Previous {
		previous[st.Name] = st
	}
	res := Result{Statuses: make([]upgradev1.HealthCheckStatus, 0, len(in.Checks))}
	requeues := make([]time.Duration, 0, len(in.Checks))
	for i := range in.Checks {
		chk := &in.Checks[i]
		st, ok := previous[chk.Name]
		if !ok {
			st = upgradev1.HealthCheckStatus{Name: chk.Name, Result: upgradev1.HealthCheckUnknown}
		}
		requeue, err := e.evaluate(ctx, in, chk, &st, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("evaluating health check %q: %w", chk.Name, err))
		}
		res.Statuses = append(res.Statuses, st)
		requeues = append(requeues, requeue)
	}
	summarize(&res, in.Checks, requeues, now)
	return res, kerrors.NewAggregate(errs)
}

// evaluate moves one check one step on and returns when to look at it again.
func (e *Evaluator) evaluate(ctx context.Context, in Input, chk *upgradev1.ClusterHealthCheck, st *upgradev1.HealthCheckStatus, now time.Time) (time.Duration, error) {
	if chk.Spec.IsProbe() {
		return evaluateProbe(in, chk, st, now), nil
	}
	if inFlight(st) {
		job := &batchv1.Job{}
		key := client.ObjectKey{Namespace: workloadjob.Namespace(&chk.Spec.Template), Name: st.JobName}
		err := e.Client.Get(ctx, key, job)
		switch {
		case apierrors.IsNotFound(err):
			// The Job is gone before we saw its end: run the check again.
			ctrl.LoggerFrom(ctx).Info("Health-check Job disappeared, running the check again", "Job", klog.KRef(key.Namespace, key.Name))
		case err != nil:
			return 0, fmt.Errorf("getting Job %s: %w", key, err)
		default:
			return e.observe(ctx, chk, st, job, now)
		}
	} else if st.NextRunTime != nil && now.Before(st.NextRunTime.Time) {
		return st.NextRunTime.Sub(now), nil
	}
	return e.start(ctx, in, chk, st, now)
}

// start creates the Job of a new run of the check.
func (e *Evaluator) start(ctx context.Context, in Input, chk *upgradev1.ClusterHealthCheck, st *upgradev1.HealthCheckStatus, now time.Time) (time.Duration, error) {
	runTime := metav1.NewTime(now).Rfc3339Copy()
	job := workloadjob.Build(workloadjob.Spec{
		Name:            JobName(chk.Name, in.ClusterName),
		Template:        &chk.Spec.Template,
		Labels:          jobLabels(in, chk.Name),
		Annotations:     map[string]string{workloadjob.RunAnnotation: runID(runTime)},
		UserLabels:      chk.Spec.Labels,
		UserAnnotations: chk.Spec.Annotations,
	})
	log := ctrl.LoggerFrom(ctx).WithValues("Job", klog.KObj(job), "healthCheck", chk.Name)
	err := e.Client.Create(ctx, job)
	adopted := apierrors.IsAlreadyExists(err)
	if adopted {
		existing := &batchv1.Job{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(job), existing); err != nil {
			if apierrors.IsNotFound(err) {
				// A cached client that has not seen the Job yet: look again
				// soon, leaving the status as it is.
				return staleJobRequeue, nil
			}
			return 0, fmt.Errorf("getting Job %s: %w", klog.KObj(job), err)
		}
		if workloadjob.OutcomeOf(existing) != workloadjob.Running {
			// A finished Job of an earlier run stands in the way.
			log.Info("Deleting the finished Job of an earlier run")
			if err := workloadjob.Delete(ctx, e.Client, existing); err != nil {
				return 0, err
			}
			return staleJobRequeue, nil
		}
		// A run we started but did not record (or a cache that lags behind
		// our own create): adopt it.
		log.Info("Adopting the running Job of the check")
		if t, err := time.Parse(time.RFC3339, existing.Annotations[workloadjob.RunAnnotation]); err == nil {
			runTime = metav1.NewTime(t)
		}
		err = nil
	}
	if err != nil {
		return 0, fmt.Errorf("creating Job %s: %w", klog.KObj(job), err)
	}
	if !adopted {
		log.V(4).Info("Created health-check Job")
	}
	st.JobName = job.Name
	st.LastRunTime = &runTime
	st.NextRunTime = nil
	if st.Result == "" || st.Result == upgradev1.HealthCheckUnknown {
		setResult(st, upgradev1.HealthCheckRunning, now)
	}
	return e.jobs().NextPoll(timeout(chk)), nil
}

// observe reads the Job of a run in flight and records its outcome.
func (e *Evaluator) observe(ctx context.Context, chk *upgradev1.ClusterHealthCheck, st *upgradev1.HealthCheckStatus, job *batchv1.Job, now time.Time) (time.Duration, error) {
	deadline := st.LastRunTime.Add(timeout(chk))
	outcome := workloadjob.OutcomeOf(job)
	if run, err := time.Parse(time.RFC3339, job.Annotations[workloadjob.RunAnnotation]); err == nil && run.After(st.LastRunTime.Time) {
		// The Job of a later run that was started but not recorded (the
		// controller stopped between creating the Job and persisting the
		// status): adopt it rather than wait out the timeout.
		ctrl.LoggerFrom(ctx).Info("Adopting the Job of an unrecorded run", "Job", klog.KObj(job))
		adopted := metav1.NewTime(run)
		st.LastRunTime = &adopted
		deadline = run.Add(timeout(chk))
	}
	if job.Annotations[workloadjob.RunAnnotation] != runID(*st.LastRunTime) {
		// Not the Job of this run but one of an earlier run, for example in
		// a cache that has not seen its deletion yet: its outcome is not
		// this run's. Look again soon; should it stay, the run times out.
		if now.Before(deadline) {
			return min(staleJobRequeue, deadline.Sub(now)), nil
		}
		outcome = workloadjob.Running
	}
	var message, passedAt string
	result := workloadjob.RunSucceeded
	switch outcome {
	case workloadjob.Succeeded:
		passedAt = passedAtAttempt(job)
	case workloadjob.Failed:
		msg, err := workloadjob.FailureMessage(ctx, e.jobs().PodReader(), job)
		if err != nil {
			return 0, err
		}
		message, result = msg, workloadjob.RunFailed
	default:
		if now.Before(deadline) {
			return e.jobs().NextPoll(deadline.Sub(now)), nil
		}
		message, result = fmt.Sprintf("timed out after %s", timeout(chk)), workloadjob.RunTimedOut
	}
	// The Job is deleted before its result is recorded: should the status
	// not be persisted, the next Evaluate runs the check again, which is
	// harmless.
	if err := workloadjob.Delete(ctx, e.Client, job); err != nil {
		return 0, err
	}
	e.jobs().RunEnded(job, result)
	recordRun(st, chk, message, passedAt, now)
	return interval(chk), nil
}

// recordRun records the verdict of a run of chk that ended at now: a
// failure when message is set, else a pass, passedAt saying how (see
// passedAtAttempt). A pass is Passed at successThreshold passes in a row,
// Running before. The check runs again an interval later. Job checks and
// http and prometheus checks (RecordProbe) keep their results alike.
func recordRun(st *upgradev1.HealthCheckStatus, chk *upgradev1.ClusterHealthCheck, message, passedAt string, now time.Time) {
	next := metav1.NewTime(now.Add(interval(chk)))
	st.NextRunTime = &next
	if message != "" {
		st.ConsecutiveSuccesses = 0
		st.Message = message
		setResult(st, upgradev1.HealthCheckFailed, now)
		return
	}
	st.ConsecutiveSuccesses++
	if threshold := successThreshold(chk); st.ConsecutiveSuccesses < threshold {
		st.Message = fmt.Sprintf("passed %d of %d times in a row", st.ConsecutiveSuccesses, threshold)
		if passedAt != "" {
			st.Message += ", the last " + passedAt
		}
		setResult(st, upgradev1.HealthCheckRunning, now)
		return
	}
	st.Message = ""
	if passedAt != "" {
		st.Message = "passed " + passedAt
	}
	setResult(st, upgradev1.HealthCheckPassed, now)
}

// passedAtAttempt says, of a succeeded Job whose Pod the Job controller ran
// more than once (a backoffLimit above 0), at which attempt it passed, for
// example "at attempt 2 of its Job: its Pod failed 1 time first
// (backoffLimit 3)": such a check failed and then passed within one run, and
// counts as a pass. It is "" for a Job that passed at its first attempt.
func passedAtAttempt(job *batchv1.Job) string {
	attempts := workloadjob.Attempts(job)
	if attempts <= 1 {
		return ""
	}
	limit := int32(0)
	if job.Spec.BackoffLimit != nil {
		limit = *job.Spec.BackoffLimit
	}
	times := "times"
	if attempts == 2 {
		times = "time"
	}
	return fmt.Sprintf("at attempt %d of its Job: its Pod failed %d %s first (backoffLimit %d)", attempts, attempts-1, times, limit)
}

// deleteUnreferencedJobs deletes the health-check Jobs of the rollout that
// belong to no check of in, for example of a check removed from the policy
// or whose template moved to another namespace.
func (e *Evaluator) deleteUnreferencedJobs(ctx context.Context, in Input) error {
	jobs := &batchv1.JobList{}
	if err := e.Client.List(ctx, jobs, client.MatchingLabels(jobLabels(in, ""))); err != nil {
		return fmt.Errorf("listing health-check Jobs: %w", err)
	}
	if len(jobs.Items) == 0 {
		return nil
	}
	want := make(map[client.ObjectKey]bool, len(in.Checks))
	for i := range in.Checks {
		chk := &in.Checks[i]
		if chk.Spec.IsProbe() {
			continue // No Job: a Job left from when it was a Job check goes.
		}
		want[client.ObjectKey{Namespace: workloadjob.Namespace(&chk.Spec.Template), Name: JobName(chk.Name, in.ClusterName)}] = true
	}
	var errs []error
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if want[client.ObjectKeyFromObject(job)] {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleting the Job of a health check no longer referenced", "Job", klog.KObj(job))
		if err := workloadjob.Delete(ctx, e.Client, job); err != nil {
			errs = append(errs, err)
		}
	}
	return kerrors.NewAggregate(errs)
}

// summarize sets the verdict of res from its statuses.
func summarize(res *Result, checks []upgradev1.ClusterHealthCheck, requeues []time.Duration, now time.Time) {
	var failing, waiting []string
	for i := range res.Statuses {
		st := &res.Statuses[i]
		if fresh(st, checks[i], now) {
			continue
		}
		switch {
		case st.Result == upgradev1.HealthCheckFailed:
			failing = append(failing, fmt.Sprintf("%q: %s", st.Name, st.Message))
		case st.Result == upgradev1.HealthCheckRunning && st.Message != "":
			waiting = append(waiting, fmt.Sprintf("%q: %s", st.Name, st.Message))
		default:
			waiting = append(waiting, fmt.Sprintf("%q: running", st.Name))
		}
	}
	switch {
	case len(failing) > 0:
		res.Reason = upgradev1.HealthChecksFailingReason
	case len(waiting) > 0:
		res.Reason = upgradev1.HealthChecksRunningReason
	default:
		res.Reason = upgradev1.HealthChecksPassedReason
		res.Passed = true
		return
	}
	res.BlockedBy = upgradev1.Truncate(BlockedByPrefix+strings.Join(append(failing, waiting...), "; "), upgradev1.MaxMessageLength)
	for _, r := range requeues {
		if r > 0 && (res.RequeueAfter == 0 || r < res.RequeueAfter) {
			res.RequeueAfter = r
		}
	}
}

// fresh reports whether a check lets the next Machine start: it passed, no
// new run is in flight and its pass is not older than its interval.
func fresh(st *upgradev1.HealthCheckStatus, chk upgradev1.ClusterHealthCheck, now time.Time) bool {
	return st.Result == upgradev1.HealthCheckPassed &&
		st.ConsecutiveSuccesses >= successThreshold(&chk) &&
		!inFlight(st) &&
		st.NextRunTime != nil && now.Before(st.NextRunTime.Time)
}

// inFlight reports whether a Job of the check runs: a run started and has
// not been given a next run time yet.
func inFlight(st *upgradev1.HealthCheckStatus) bool {
	return st.JobName != "" && st.LastRunTime != nil && st.NextRunTime == nil
}

func setResult(st *upgradev1.HealthCheckStatus, result upgradev1.HealthCheckResult, now time.Time) {
	if st.Result != result {
		t := metav1.NewTime(now)
		st.LastTransitionTime = &t
	}
	st.Result = result
}

// jobLabels returns the labels of the Jobs of check in the rollout of in;
// with an empty check name, the labels of every health-check Job of it.
func jobLabels(in Input, check string) map[string]string {
	labels := workloadjob.RolloutLabels(in.UpgradeName, in.ClusterName)
	labels[workloadjob.JobKindLabel] = workloadjob.JobKindHealthCheck
	if check != "" {
		labels[workloadjob.HealthCheckLabel] = workloadjob.LabelValue(check)
	}
	return labels
}

func runID(t metav1.Time) string {
	return t.UTC().Format(time.RFC3339)
}

func interval(chk *upgradev1.ClusterHealthCheck) time.Duration {
	if chk.Spec.Interval == nil || chk.Spec.Interval.Duration <= 0 {
		return DefaultInterval
	}
	return max(chk.Spec.Interval.Duration, MinInterval)
}

func timeout(chk *upgradev1.ClusterHealthCheck) time.Duration {
	return Timeout(chk)
}

// Timeout returns how long one run of chk may take: its timeout, or
// DefaultTimeoutOf its kind.
func Timeout(chk *upgradev1.ClusterHealthCheck) time.Duration {
	if chk.Spec.Timeout != nil && chk.Spec.Timeout.Duration > 0 {
		return chk.Spec.Timeout.Duration
	}
	return DefaultTimeoutOf(chk.Spec.Kind())
}

// DefaultTimeoutOf returns the timeout of a check of kind that sets none:
// DefaultProbeTimeout for an http or prometheus check, DefaultTimeout for a
// Job.
func DefaultTimeoutOf(kind upgradev1.HealthCheckKind) time.Duration {
	if kind == upgradev1.HealthCheckKindHTTP || kind == upgradev1.HealthCheckKindPrometheus {
		return DefaultProbeTimeout
	}
	return DefaultTimeout
}

func successThreshold(chk *upgradev1.ClusterHealthCheck) int32 {
	if chk.Spec.SuccessThreshold != nil && *chk.Spec.SuccessThreshold > 0 {
		return *chk.Spec.SuccessThreshold
	}
	return 1
}

// jobs returns e as the Poller it is.
func (e *Evaluator) jobs() *workloadjob.Poller {
	return (*workloadjob.Poller)(e)
}

// Gates reports whether the check that ref names gates the next Machine:
// every Machine for HealthCheckGateEveryMachine (the default), the first
// Machine of the rollout only for HealthCheckGateFirstMachine. The engine
// passes to Evaluate only the checks that gate.
func Gates(ref upgradev1.HealthCheckRef, firstMachine bool) bool {
	return ref.Gate != upgradev1.HealthCheckGateFirstMachine || firstMachine
}
