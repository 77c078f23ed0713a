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

package workloadjob

import (
	"context"
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Outcome is what a Job came to.
type Outcome int

const (
	// Running is a Job without a terminal condition.
	Running Outcome = iota
	// Succeeded is a Job with the condition Complete=True.
	Succeeded
	// Failed is a Job with the condition Failed=True.
	Failed
)

// String returns the name of the outcome.
func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "Succeeded"
	case Failed:
		return "Failed"
	default:
		return "Running"
	}
}

// OutcomeOf returns what job came to, from its terminal conditions only:
// SuccessCriteriaMet and FailureTarget are early signals that the Job
// controller follows with Complete and Failed once the Pods are gone.
func OutcomeOf(job *batchv1.Job) Outcome {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return Succeeded
		case batchv1.JobFailed:
			return Failed
		}
	}
	return Running
}

// Attempts returns how many Pods job ran to an end: its failed Pods and its
// succeeded one, so that a succeeded Job whose backoffLimit let the Job
// controller retry a failed Pod took more than one attempt. The restarts of
// a container in place (restartPolicy OnFailure) are not counted: the Job
// counts Pods.
func Attempts(job *batchv1.Job) int32 {
	return job.Status.Failed + job.Status.Succeeded
}

// FailureMessage returns why a failed Job failed, truncated by
// TruncateMessage: the termination message of the failed container of the
// Job's newest Pod (with FallbackToLogsOnError, the tail of its output), or
// failing that how the container ended, or the Job's Failed condition. Pods
// are selected by the Job's UID, so that Pods of an earlier Job of the same
// name are never read.
func FailureMessage(ctx context.Context, c client.Reader, job *batchv1.Job) (string, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return "", fmt.Errorf("listing Pods of Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	sort.SliceStable(pods.Items, func(i, j int) bool {
		return pods.Items[j].CreationTimestamp.Before(&pods.Items[i].CreationTimestamp)
	})
	for i := range pods.Items {
		if msg := podFailureMessage(&pods.Items[i]); msg != "" {
			return TruncateMessage(msg), nil
		}
	}
	for _, cond := range job.Status.Conditions {
		if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
			if cond.Message != "" {
				return TruncateMessage(cond.Message), nil
			}
			if cond.Reason != "" {
				return TruncateMessage("Job failed: " + cond.Reason), nil
			}
		}
	}
	return "Job failed", nil
}

// podFailureMessage returns the message of the first container of pod, init
// containers first, that terminated with a non-zero exit code, or how it
// ended when it left no message. Sidecars (init containers that restart
// Always) come last: the kubelet stops them once the containers ended, with
// SIGTERM and its non-zero exit code, so a sidecar's termination is the
// cause only when no other container failed.
func podFailureMessage(pod *corev1.Pod) string {
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	var sidecarStatuses []corev1.ContainerStatus
	for _, st := range statuses {
		if sidecars[st.Name] {
			sidecarStatuses = append(sidecarStatuses, st)
			continue
		}
		if msg := containerFailureMessage(st); msg != "" {
			return msg
		}
	}
	for _, st := range sidecarStatuses {
		if msg := containerFailureMessage(st); msg != "" {
			return msg
		}
	}
	return ""
}

// containerFailureMessage returns the termination message of a container
// that terminated with a non-zero exit code, or how it ended when it left
// no message, and "" for a container that did not fail.
func containerFailureMessage(st corev1.ContainerStatus) string {
	t := st.State.Terminated
	if t == nil {
		t = st.LastTerminationState.Terminated
	}
	if t == nil || t.ExitCode == 0 {
		return ""
	}
	if strings.TrimSpace(t.Message) != "" {
		return t.Message
	}
	reason := t.Reason
	if reason == "" {
		reason = "Error"
	}
	return fmt.Sprintf("container %q exited with code %d (%s)", st.Name, t.ExitCode, reason)
}

// TruncateMessage makes a container's output fit a one-line status message:
// surrounding blank space is trimmed, lines are joined with " | ", and a
// result longer than MaxMessageLength characters keeps its end, where a
// check writes its verdict last (the kubelet's FallbackToLogsOnError keeps
// the tail of the output too): upgradev1.TruncationMarker and the last
// MaxMessageLength-1 characters (upgradev1.TruncateStart).
func TruncateMessage(msg string) string {
	var lines []string
	for line := range strings.Lines(msg) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return upgradev1.TruncateStart(strings.Join(lines, " | "), MaxMessageLength)
}

// Delete deletes job and, through background propagation, its Pods. A Job
// already gone is not an error.
func Delete(ctx context.Context, c client.Client, job *batchv1.Job) error {
	if err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// Cleanup deletes, in every namespace of the workload cluster c, every Job
// that Tollgate created for the rollout upgradeName of the Cluster
// clusterName: health-check and hook Jobs alike, found by RolloutLabels.
// Their Pods go with them (background propagation).
func Cleanup(ctx context.Context, c client.Client, upgradeName, clusterName string) error {
	jobs := &batchv1.JobList{}
	if err := c.List(ctx, jobs, client.MatchingLabels(RolloutLabels(upgradeName, clusterName))); err != nil {
		return fmt.Errorf("listing Jobs of TalosUpgrade %q in Cluster %q: %w", upgradeName, clusterName, err)
	}
	var errs []error
	for i := range jobs.Items {
		if err := Delete(ctx, c, &jobs.Items[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return kerrors.NewAggregate(errs)
}
