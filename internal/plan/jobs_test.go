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

package plan_test

import (
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/tollgate-dev/tollgate/internal/plan"
)

// jobTemplate returns a valid Job template of one container, changed by
// mutate.
func jobTemplate(mutate ...func(*batchv1.JobTemplateSpec)) *batchv1.JobTemplateSpec {
	t := &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "check", Image: "registry.example.com/ceph-check:1", Command: []string{"ceph", "health"}}},
	}}}}
	for _, m := range mutate {
		m(t)
	}
	return t
}

func podSpec(t *batchv1.JobTemplateSpec) *corev1.PodSpec { return &t.Spec.Template.Spec }

func pfp(rules ...batchv1.PodFailurePolicyRule) func(*batchv1.JobTemplateSpec) {
	return func(t *batchv1.JobTemplateSpec) { t.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules} }
}

func onExitCodes(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
}

func onConditions(action batchv1.PodFailurePolicyAction, conds ...batchv1.PodFailurePolicyOnPodConditionsPattern) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: conds}
}

// TestValidateJobTemplateAccepts lists Job templates whose Job passes only
// when its one Pod's containers exit 0.
func TestValidateJobTemplateAccepts(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*batchv1.JobTemplateSpec)
	}{
		{name: "one container, restartPolicy Never", modify: func(*batchv1.JobTemplateSpec) {}},
		{name: "restartPolicy left to the default", modify: func(t *batchv1.JobTemplateSpec) { podSpec(t).RestartPolicy = "" }},
		{name: "restartPolicy OnFailure", modify: func(t *batchv1.JobTemplateSpec) { podSpec(t).RestartPolicy = corev1.RestartPolicyOnFailure }},
		{name: "container without a command: the image's entrypoint runs", modify: func(t *batchv1.JobTemplateSpec) { podSpec(t).Containers[0].Command = nil }},
		{name: "completions and parallelism 1, NonIndexed, said out loud", modify: func(t *batchv1.JobTemplateSpec) {
			t.Spec.Completions, t.Spec.Parallelism = ptr.To[int32](1), ptr.To[int32](1)
			t.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
		}},
		{name: "backoffLimit: the Job retries its Pod, a later Pod's exit code decides", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.BackoffLimit = ptr.To[int32](3) }},
		{name: "podFailurePolicy that fails the Job or counts failures", modify: pfp(
			onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42),
			onExitCodes(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 0),
		)},
		{name: "podFailurePolicy that ignores disrupted Pods", modify: pfp(
			onConditions(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnPodConditionsPattern{Type: corev1.DisruptionTarget}),
			onConditions(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnPodConditionsPattern{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}),
		)},
		{name: "managedBy the built-in Job controller", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.ManagedBy = ptr.To(batchv1.JobControllerName) }},
		{name: "manualSelector false, suspend false", modify: func(t *batchv1.JobTemplateSpec) {
			t.Spec.ManualSelector, t.Spec.Suspend = ptr.To(false), ptr.To(false)
		}},
		{name: "activeDeadlineSeconds", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.ActiveDeadlineSeconds = ptr.To[int64](300) }},
		{name: "ttlSecondsAfterFinished of the minimum", modify: func(t *batchv1.JobTemplateSpec) {
			t.Spec.TTLSecondsAfterFinished = ptr.To(plan.MinJobTTLSecondsAfterFinished)
		}},
		{name: "ttlSecondsAfterFinished of a day", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.TTLSecondsAfterFinished = ptr.To[int32](86400) }},
		{name: "podReplacementPolicy", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }},
		{name: "init container and sidecar", modify: func(t *batchv1.JobTemplateSpec) {
			podSpec(t).InitContainers = []corev1.Container{
				{Name: "wait-for-mon", Image: "registry.example.com/wait:1"},
				{Name: "proxy", Image: "registry.example.com/proxy:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
			}
		}},
		{name: "container restartPolicy Never", modify: func(t *batchv1.JobTemplateSpec) {
			podSpec(t).Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
		}},
		{name: "container restartPolicy OnFailure in a Pod that restarts OnFailure", modify: func(t *batchv1.JobTemplateSpec) {
			podSpec(t).RestartPolicy = corev1.RestartPolicyOnFailure
			podSpec(t).Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(plan.ValidateJobTemplate(jobTemplate(tt.modify), field.NewPath("spec", "template"))).To(BeEmpty())
		})
	}
}

// TestValidateJobTemplateRefuses lists Job templates that could pass without
// their container deciding, or never be decided, each with the field and a
// part of the message of every refusal.
func TestValidateJobTemplateRefuses(t *testing.T) {
	const pod = "spec.template.spec.template.spec"
	const job = "spec.template.spec"
	tests := []struct {
		name   string
		modify func(*batchv1.JobTemplateSpec)
		want   map[string]string // field: part of its message
	}{
		{name: "completions 0", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.Completions = ptr.To[int32](0) },
			want: map[string]string{job + ".completions": "would let the Job complete at once without running its container"}},
		{name: "completions 3", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.Completions = ptr.To[int32](3) },
			want: map[string]string{job + ".completions": "would need 3 Pods to succeed where Tollgate judges a run by one Pod: leave it unset (1); a ClusterHealthCheck that must pass several times in a row sets successThreshold"}},
		{name: "completions -1", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.Completions = ptr.To[int32](-1) },
			want: map[string]string{job + ".completions": "must not be negative"}},
		{name: "parallelism 0", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.Parallelism = ptr.To[int32](0) },
			want: map[string]string{job + ".parallelism": "would never start the Job's Pod, so every run would wait until it times out: leave it unset (1)"}},
		{name: "parallelism 2: a work queue Job", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.Parallelism = ptr.To[int32](2) },
			want: map[string]string{job + ".parallelism": "completes as soon as any one of them succeeds"}},
		{name: "Indexed with one completion", modify: func(t *batchv1.JobTemplateSpec) {
			t.Spec.CompletionMode, t.Spec.Completions = ptr.To(batchv1.IndexedCompletion), ptr.To[int32](1)
		}, want: map[string]string{job + ".completionMode": `leave it unset ("NonIndexed")`}},
		{name: "unknown completionMode", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.CompletionMode = ptr.To[batchv1.CompletionMode]("Sparse") },
			want: map[string]string{job + ".completionMode": "Unsupported value"}},
		{name: "successPolicy: succeeds on one index of three", modify: func(t *batchv1.JobTemplateSpec) {
			t.Spec.CompletionMode, t.Spec.Completions = ptr.To(batchv1.IndexedCompletion), ptr.To[int32](3)
			t.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
		}, want: map[string]string{
			job + ".completions":    "would need 3 Pods",
			job + ".completionMode": "could complete without its container deciding",
			job + ".successPolicy":  "would declare the Job succeeded once some of its indexes succeeded",
		}},
		{name: "backoffLimitPerIndex and maxFailedIndexes", modify: func(t *batchv1.JobTemplateSpec) {
			t.Spec.BackoffLimitPerIndex, t.Spec.MaxFailedIndexes = ptr.To[int32](2), ptr.To[int32](1)
		}, want: map[string]string{
			job + ".backoffLimitPerIndex": "set backoffLimit",
			job + ".maxFailedIndexes":     "applies to Indexed Jobs",
		}},
		{name: "podFailurePolicy ignoring an exit code", modify: pfp(onExitCodes(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpIn, 1)),
			want: map[string]string{job + ".podFailurePolicy.rules[0].action": "could no longer fail by its container's exit code"}},
		{name: "podFailurePolicy ignoring every failure (NotIn 0)", modify: pfp(
			onConditions(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnPodConditionsPattern{Type: corev1.DisruptionTarget}),
			onExitCodes(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 0),
		), want: map[string]string{job + ".podFailurePolicy.rules[1].action": `"Ignore" is for Pods with the condition DisruptionTarget only`}},
		{name: "podFailurePolicy ignoring Pods that are not Ready, which every failed Pod is", modify: pfp(
			onConditions(batchv1.PodFailurePolicyActionIgnore,
				batchv1.PodFailurePolicyOnPodConditionsPattern{Type: corev1.DisruptionTarget},
				batchv1.PodFailurePolicyOnPodConditionsPattern{Type: corev1.PodReady, Status: corev1.ConditionFalse}),
		), want: map[string]string{job + ".podFailurePolicy.rules[0].action": `use "Count" or "FailJob"`}},
		{name: "podFailurePolicy ignoring Pods without DisruptionTarget", modify: pfp(
			onConditions(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnPodConditionsPattern{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}),
		), want: map[string]string{job + ".podFailurePolicy.rules[0].action": "only time out"}},
		{name: "podFailurePolicy FailIndex", modify: pfp(onExitCodes(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, 1)),
			want: map[string]string{job + ".podFailurePolicy.rules[0].action": `use "FailJob"`}},
		{name: "podFailurePolicy with an unknown action", modify: pfp(onExitCodes("Retry", batchv1.PodFailurePolicyOnExitCodesOpIn, 1)),
			want: map[string]string{job + ".podFailurePolicy.rules[0].action": "Unsupported value"}},
		{name: "podFailurePolicy with restartPolicy OnFailure", modify: func(t *batchv1.JobTemplateSpec) {
			pfp(onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42))(t)
			podSpec(t).RestartPolicy = corev1.RestartPolicyOnFailure
		}, want: map[string]string{job + ".podFailurePolicy": `the Job API refuses a podFailurePolicy with restartPolicy "OnFailure"`}},
		{name: "managedBy another controller", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue") },
			want: map[string]string{job + ".managedBy": "would hand the Job to another controller"}},
		{name: "manualSelector with a selector", modify: func(t *batchv1.JobTemplateSpec) {
			t.Spec.ManualSelector = ptr.To(true)
			t.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ceph-check"}}
		}, want: map[string]string{
			job + ".manualSelector": "another Pod's success could complete it",
			job + ".selector":       "another Pod's success could complete it: remove it",
		}},
		{name: "suspend", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.Suspend = ptr.To(true) },
			want: map[string]string{job + ".suspend": "would create the Job without starting its Pod"}},
		{name: "activeDeadlineSeconds 0", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) },
			want: map[string]string{job + ".activeDeadlineSeconds": "must be positive"}},
		{name: "negative backoffLimit", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.BackoffLimit = ptr.To[int32](-1) },
			want: map[string]string{job + ".backoffLimit": "must not be negative"}},
		{name: "ttlSecondsAfterFinished 0", modify: func(t *batchv1.JobTemplateSpec) { t.Spec.TTLSecondsAfterFinished = ptr.To[int32](0) },
			want: map[string]string{job + ".ttlSecondsAfterFinished": "or set at least 3600"}},
		{name: "ttlSecondsAfterFinished under the minimum", modify: func(t *batchv1.JobTemplateSpec) {
			t.Spec.TTLSecondsAfterFinished = ptr.To(plan.MinJobTTLSecondsAfterFinished - 1)
		}, want: map[string]string{job + ".ttlSecondsAfterFinished": "maybe before Tollgate has read how it ended"}},
		{name: "restartPolicy Always", modify: func(t *batchv1.JobTemplateSpec) { podSpec(t).RestartPolicy = corev1.RestartPolicyAlways },
			want: map[string]string{pod + ".restartPolicy": `a Job's Pods cannot restart "Always"`}},
		{name: "no containers", modify: func(t *batchv1.JobTemplateSpec) { podSpec(t).Containers = nil },
			want: map[string]string{pod + ".containers": "at least one container is required"}},
		{name: "container restartPolicy Always", modify: func(t *batchv1.JobTemplateSpec) {
			podSpec(t).Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}, want: map[string]string{pod + ".containers[0].restartPolicy": "so the Pod would never end"}},
		{name: "container restartPolicy OnFailure in a Pod that restarts Never", modify: func(t *batchv1.JobTemplateSpec) {
			podSpec(t).Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
		}, want: map[string]string{pod + ".containers[0].restartPolicy": "which backoffLimit does not count"}},
		{name: "init container restartPolicy OnFailure", modify: func(t *batchv1.JobTemplateSpec) {
			podSpec(t).RestartPolicy = ""
			podSpec(t).InitContainers = []corev1.Container{{Name: "init", Image: "registry.example.com/init:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyOnFailure)}}
		}, want: map[string]string{pod + ".initContainers[0].restartPolicy": "would restart the failed container in place"}},
		{name: "unknown container restartPolicy", modify: func(t *batchv1.JobTemplateSpec) {
			podSpec(t).Containers[0].RestartPolicy = ptr.To[corev1.ContainerRestartPolicy]("Sometimes")
		}, want: map[string]string{pod + ".containers[0].restartPolicy": "Unsupported value"}},
		{name: "restartPolicyRules", modify: func(t *batchv1.JobTemplateSpec) {
			rules := []corev1.ContainerRestartRule{{
				Action:    corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}},
			}}
			podSpec(t).Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			podSpec(t).Containers[0].RestartPolicyRules = rules
			podSpec(t).InitContainers = []corev1.Container{{Name: "init", Image: "registry.example.com/init:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyNever), RestartPolicyRules: rules}}
		}, want: map[string]string{
			pod + ".containers[0].restartPolicyRules":     "those exit codes could no longer fail the run",
			pod + ".initContainers[0].restartPolicyRules": "those exit codes could no longer fail the run",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := plan.ValidateJobTemplate(jobTemplate(tt.modify), field.NewPath("spec", "template"))
			got := map[string]string{}
			for _, err := range errs {
				got[err.Field] = err.Error()
			}
			g.Expect(got).To(HaveLen(len(tt.want)), "refusals: %v", errs)
			for f, msg := range tt.want {
				g.Expect(got).To(HaveKeyWithValue(f, ContainSubstring(msg)))
			}
		})
	}
}
