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

package plan

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MinJobTTLSecondsAfterFinished is the smallest ttlSecondsAfterFinished of a
// health-check or hook Job template. Tollgate reads a finished Job (its
// condition, and its Pod for the failure message) and then deletes it
// itself; a Job that disappears before it is read is run again, so a Job the
// TTL controller deletes sooner could be run again and again without a
// verdict. An hour covers a restart or an upgrade of the controller.
const MinJobTTLSecondsAfterFinished int32 = 3600

// leaveUnset is how every refusal of a Job field ends when the field has no
// safe value other than its default.
const leaveUnset = "leave it unset"

// validateJobVerdict refuses every JobSpec that lets the Job's Complete or
// Failed condition be decided by something other than the exit codes of its
// one Pod's containers, or that keeps the Job from ever being decided:
//
//   - one Pod for one success (completions and parallelism 1, NonIndexed): no
//     Job that completes at once (completions 0), never starts (parallelism
//     0), completes when any one of several Pods does (a work queue), or has
//     per-index success rules (successPolicy, backoffLimitPerIndex,
//     maxFailedIndexes) or completions that can be changed after creation
//     (Indexed Jobs are elastic);
//   - no podFailurePolicy rule that ignores a failure of the container: Ignore
//     is for Pods disrupted (DisruptionTarget) before their container
//     decided;
//   - the built-in Job controller counts only the Job's own Pods: no
//     managedBy, no selector of one's own (manualSelector);
//   - a Job that runs and stays until Tollgate has read it: no suspend, a
//     positive activeDeadlineSeconds and a ttlSecondsAfterFinished of at least
//     MinJobTTLSecondsAfterFinished.
func validateJobVerdict(spec *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	allErrs := validateOnePod(spec, specPath)
	allErrs = append(allErrs, validatePodFailurePolicy(spec.PodFailurePolicy, spec.Template.Spec.RestartPolicy, specPath.Child("podFailurePolicy"))...)
	allErrs = append(allErrs, validateJobController(spec, specPath)...)
	allErrs = append(allErrs, validateJobLifetime(spec, specPath)...)
	return allErrs
}

// validateOnePod checks that the Job runs one Pod at a time and completes on
// that Pod's success: the failure message Tollgate shows is read from the
// Job's newest Pod, and a check is run again at its interval (successThreshold
// times in a row when asked), a hook retried (retries), by Tollgate.
func validateOnePod(spec *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c := spec.Completions; c != nil && *c != 1 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("completions"), *c, countMessage(*c,
			"would let the Job complete at once without running its container, so it would pass without checking anything",
			fmt.Sprintf("would need %d Pods to succeed where Tollgate judges a run by one Pod", *c),
			"a ClusterHealthCheck that must pass several times in a row sets successThreshold")))
	}
	if p := spec.Parallelism; p != nil && *p != 1 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("parallelism"), *p, countMessage(*p,
			"would never start the Job's Pod, so every run would wait until it times out",
			fmt.Sprintf("would run up to %d Pods at once, and without completions the Job completes as soon as any one of them succeeds, whatever the others exit with", *p),
			"")))
	}
	if m := spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion {
		if *m == batchv1.IndexedCompletion {
			allErrs = append(allErrs, field.Invalid(specPath.Child("completionMode"), *m,
				`an Indexed Job's completions can be lowered after it is created and its success decided per index, so it could complete without its container deciding: `+leaveUnset+` ("NonIndexed")`))
		} else {
			allErrs = append(allErrs, field.NotSupported(specPath.Child("completionMode"), *m, []string{string(batchv1.NonIndexedCompletion)}))
		}
	}
	if spec.SuccessPolicy != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("successPolicy"),
			"would declare the Job succeeded once some of its indexes succeeded, whatever the other Pods' containers exit with: remove it; the Job then succeeds only when its Pod does"))
	}
	if spec.BackoffLimitPerIndex != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("backoffLimitPerIndex"),
			"applies to Indexed Jobs, which a health check or hook cannot be: remove it; to let the Job retry its Pod, set backoffLimit"))
	}
	if spec.MaxFailedIndexes != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("maxFailedIndexes"),
			"applies to Indexed Jobs, which a health check or hook cannot be: remove it"))
	}
	return allErrs
}

// countMessage is the refusal of a Pod count n other than 1: what 0 would
// do, what more would do, and how to get what more was wanted, if anything.
func countMessage(n int32, zero, many, instead string) string {
	msg := zero
	switch {
	case n < 0:
		msg = "must not be negative, or the Job API refuses the Job and no run could start"
	case n > 1:
		msg = many
	}
	msg += ": " + leaveUnset + " (1)"
	if n > 1 && instead != "" {
		msg += "; " + instead
	}
	return msg
}

// validatePodFailurePolicy checks that no rule keeps a failed container from
// failing the Job. Count and FailJob fail it (at once or once backoffLimit is
// spent); Ignore does not count the failed Pod and starts another, so it is
// allowed only for Pods that were disrupted (evicted, preempted, their node
// drained) before their container could decide.
func validatePodFailurePolicy(pfp *batchv1.PodFailurePolicy, restartPolicy corev1.RestartPolicy, pfpPath *field.Path) field.ErrorList {
	if pfp == nil {
		return nil
	}
	var allErrs field.ErrorList
	if restartPolicy == corev1.RestartPolicyOnFailure {
		allErrs = append(allErrs, field.Forbidden(pfpPath,
			`the Job API refuses a podFailurePolicy with restartPolicy "OnFailure", so no run could start: set the Pod's restartPolicy to "Never" (the default), or remove the podFailurePolicy`))
	}
	for i := range pfp.Rules {
		r := &pfp.Rules[i]
		path := pfpPath.Child("rules").Index(i).Child("action")
		switch r.Action {
		case batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailJob:
		case batchv1.PodFailurePolicyActionIgnore:
			if !onlyDisruptions(r) {
				allErrs = append(allErrs, field.Invalid(path, r.Action,
					`would not count a Pod that failed by this rule and start another in its place, so the run could no longer fail by its container's exit code, only time out: use "Count" or "FailJob"; "Ignore" is for Pods with the condition DisruptionTarget only (evicted or preempted before their container decided)`))
			}
		case batchv1.PodFailurePolicyActionFailIndex:
			allErrs = append(allErrs, field.Invalid(path, r.Action,
				`applies to Indexed Jobs, which a health check or hook cannot be: use "FailJob"`))
		default:
			allErrs = append(allErrs, field.NotSupported(path, r.Action, []string{
				string(batchv1.PodFailurePolicyActionCount), string(batchv1.PodFailurePolicyActionFailJob), string(batchv1.PodFailurePolicyActionIgnore),
			}))
		}
	}
	return allErrs
}

// onlyDisruptions reports whether rule matches only Pods with the condition
// DisruptionTarget=True: no exit codes, and every pattern that one.
func onlyDisruptions(rule *batchv1.PodFailurePolicyRule) bool {
	if rule.OnExitCodes != nil || len(rule.OnPodConditions) == 0 {
		return false
	}
	for _, c := range rule.OnPodConditions {
		if c.Type != corev1.DisruptionTarget || (c.Status != "" && c.Status != corev1.ConditionTrue) {
			return false
		}
	}
	return true
}

// validateJobController checks that the built-in Job controller sets the
// Job's conditions, from the Job's own Pods only.
func validateJobController(spec *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if m := spec.ManagedBy; m != nil && *m != batchv1.JobControllerName {
		allErrs = append(allErrs, field.Invalid(specPath.Child("managedBy"), *m,
			"would hand the Job to another controller, which then sets its Complete and Failed conditions instead of the Job controller counting its Pod: "+leaveUnset))
	}
	if spec.ManualSelector != nil && *spec.ManualSelector {
		allErrs = append(allErrs, field.Invalid(specPath.Child("manualSelector"), *spec.ManualSelector,
			"would let Pods that are not the Job's own count as its Pods, so another Pod's success could complete it: "+leaveUnset+"; the Job controller then selects the Job's own Pods"))
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("selector"),
			"would choose which Pods count as the Job's, so another Pod's success could complete it: remove it; the Job controller then selects the Job's own Pods"))
	}
	return allErrs
}

// validateJobLifetime checks that the Job starts, may run until Tollgate's
// timeout ends it, and stays until Tollgate has read how it ended.
func validateJobLifetime(spec *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s := spec.Suspend; s != nil && *s {
		allErrs = append(allErrs, field.Invalid(specPath.Child("suspend"), *s,
			"would create the Job without starting its Pod, so every run would wait until it times out: "+leaveUnset))
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *d,
			"must be positive, or the Job API refuses the Job and no run could start: "+leaveUnset+" and let the check's or hook's timeout bound the run"))
	}
	if b := spec.BackoffLimit; b != nil && *b < 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("backoffLimit"), *b,
			"must not be negative, or the Job API refuses the Job and no run could start: "+leaveUnset+" for 0, Tollgate then runs a failed check again at its interval and retries a failed hook"))
	}
	if ttl := spec.TTLSecondsAfterFinished; ttl != nil && *ttl < MinJobTTLSecondsAfterFinished {
		allErrs = append(allErrs, field.Invalid(specPath.Child("ttlSecondsAfterFinished"), *ttl,
			fmt.Sprintf("would delete the finished Job and its Pod, maybe before Tollgate has read how it ended, and a Job that disappears is run again, so the run could repeat without a verdict: %s (Tollgate deletes each Job once it has read it) or set at least %d", leaveUnset, MinJobTTLSecondsAfterFinished)))
	}
	return allErrs
}

// validateContainerRestarts checks that a container is not restarted in place
// behind the Job's back: a container restartPolicy or restartPolicyRules
// other than the Pod's own restart the container without backoffLimit
// counting it, so its failure could never fail the run, only time it out. An
// init container may be a sidecar (restartPolicy Always): it runs beside the
// containers and cannot make the Pod succeed.
func validateContainerRestarts(c *corev1.Container, podRestart corev1.RestartPolicy, initContainer bool, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if rp := c.RestartPolicy; rp != nil {
		switch {
		case *rp == corev1.ContainerRestartPolicyNever:
		case *rp == corev1.ContainerRestartPolicyAlways && initContainer:
		case *rp == corev1.ContainerRestartPolicyOnFailure && podRestart == corev1.RestartPolicyOnFailure:
		case *rp == corev1.ContainerRestartPolicyAlways:
			allErrs = append(allErrs, field.Invalid(path.Child("restartPolicy"), *rp,
				`would restart the container whenever it exits, so the Pod would never end and every run would time out: `+leaveUnset+` (the Pod's restartPolicy applies)`))
		case *rp == corev1.ContainerRestartPolicyOnFailure:
			allErrs = append(allErrs, field.Invalid(path.Child("restartPolicy"), *rp,
				`would restart the failed container in place, which backoffLimit does not count, so its exit code could no longer fail the run, only time it out: `+leaveUnset+` (the Pod's restartPolicy applies)`))
		default:
			supported := []string{string(corev1.ContainerRestartPolicyNever)}
			if initContainer {
				supported = append(supported, string(corev1.ContainerRestartPolicyAlways))
			}
			if podRestart == corev1.RestartPolicyOnFailure {
				supported = append(supported, string(corev1.ContainerRestartPolicyOnFailure))
			}
			allErrs = append(allErrs, field.NotSupported(path.Child("restartPolicy"), *rp, supported))
		}
	}
	if len(c.RestartPolicyRules) > 0 {
		allErrs = append(allErrs, field.Forbidden(path.Child("restartPolicyRules"),
			"would restart the container in place on the exit codes the rules name, which backoffLimit does not count, so those exit codes could no longer fail the run, only time it out: remove them; Tollgate runs a failed check again at its interval and retries a failed hook"))
	}
	return allErrs
}
