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

package corpus

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// jobShape is a change to a health-check or hook Job template and, when it
// must be refused, the field under the template and a part of the message.
type jobShape struct {
	name    string
	mutate  func(*batchv1.JobTemplateSpec)
	field   string // relative to the template; "" when admitted
	message string
}

// unsafeJobShapes are the Job templates that could pass without their
// container deciding, or never be decided: Tollgate judges a check or a hook
// by its Job's Complete and Failed conditions, so each is refused.
func unsafeJobShapes() []jobShape {
	return []jobShape{
		{name: "completions 0: completes at once without running", field: "spec.completions", message: "would let the Job complete at once without running its container",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.Completions = ptr.To[int32](0) }},
		{name: "completions 3", field: "spec.completions", message: "would need 3 Pods to succeed where Tollgate judges a run by one Pod",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.Completions = ptr.To[int32](3) }},
		{name: "parallelism 0: never starts", field: "spec.parallelism", message: "would never start the Job's Pod",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.Parallelism = ptr.To[int32](0) }},
		{name: "parallelism 3: a work queue that completes when any Pod does", field: "spec.parallelism", message: "completes as soon as any one of them succeeds",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.Parallelism = ptr.To[int32](3) }},
		{name: "Indexed completionMode", field: "spec.completionMode", message: `leave it unset ("NonIndexed")`,
			mutate: func(t *batchv1.JobTemplateSpec) {
				t.Spec.CompletionMode, t.Spec.Completions = ptr.To(batchv1.IndexedCompletion), ptr.To[int32](1)
			}},
		{name: "successPolicy that succeeds on one index", field: "spec.successPolicy", message: "would declare the Job succeeded once some of its indexes succeeded",
			mutate: func(t *batchv1.JobTemplateSpec) {
				t.Spec.CompletionMode, t.Spec.Completions = ptr.To(batchv1.IndexedCompletion), ptr.To[int32](2)
				t.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
			}},
		{name: "backoffLimitPerIndex", field: "spec.backoffLimitPerIndex", message: "applies to Indexed Jobs",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.BackoffLimitPerIndex = ptr.To[int32](1) }},
		{name: "maxFailedIndexes", field: "spec.maxFailedIndexes", message: "applies to Indexed Jobs",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.MaxFailedIndexes = ptr.To[int32](1) }},
		{name: "podFailurePolicy that ignores failed containers", field: "spec.podFailurePolicy.rules[0].action", message: "could no longer fail by its container's exit code, only time out",
			mutate: func(t *batchv1.JobTemplateSpec) {
				t.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action:      batchv1.PodFailurePolicyActionIgnore,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}},
				}}}
			}},
		{name: "managedBy another controller", field: "spec.managedBy", message: "would hand the Job to another controller",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue") }},
		{name: "manualSelector", field: "spec.manualSelector", message: "another Pod's success could complete it",
			mutate: func(t *batchv1.JobTemplateSpec) {
				t.Spec.ManualSelector = ptr.To(true)
				t.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ceph"}}
			}},
		{name: "suspend", field: "spec.suspend", message: "would create the Job without starting its Pod",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.Suspend = ptr.To(true) }},
		{name: "activeDeadlineSeconds 0", field: "spec.activeDeadlineSeconds", message: "must be positive",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) }},
		{name: "ttlSecondsAfterFinished 0: gone before it is read", field: "spec.ttlSecondsAfterFinished", message: "the run could repeat without a verdict",
			mutate: func(t *batchv1.JobTemplateSpec) { t.Spec.TTLSecondsAfterFinished = ptr.To[int32](0) }},
		{name: "container restartPolicy OnFailure in a Pod that restarts Never", field: "spec.template.spec.containers[0].restartPolicy", message: "which backoffLimit does not count",
			mutate: func(t *batchv1.JobTemplateSpec) {
				t.Spec.Template.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
			}},
		{name: "container restartPolicyRules", field: "spec.template.spec.containers[0].restartPolicyRules", message: "those exit codes could no longer fail the run",
			mutate: func(t *batchv1.JobTemplateSpec) {
				c := &t.Spec.Template.Spec.Containers[0]
				c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
				c.RestartPolicyRules = []corev1.ContainerRestartRule{{
					Action:    corev1.ContainerRestartRuleActionRestart,
					ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}},
				}}
			}},
	}
}

// UnsafeJobTemplates returns one refused ClusterHealthCheck, one refused
// policy hook and one refused policy preRemoval hook (the hook a Machine
// CAPI deletes waits for, judged by the same rules) per unsafe Job template
// shape, and a preRemoval hook refused by the rules of every Job's Pod.
func UnsafeJobTemplates() []Case {
	shapes := unsafeJobShapes()
	cases := make([]Case, 0, 3*len(shapes)+2)
	for _, s := range shapes {
		cases = append(cases,
			Case{
				Name:    "health-check Job " + s.name,
				Object:  HealthCheck("ceph", func(c *upgradev1.ClusterHealthCheck) { s.mutate(&c.Spec.Template) }),
				Field:   "spec.template." + s.field,
				Message: s.message,
			},
			Case{
				Name:    "hook Job " + s.name,
				Object:  Policy("p", hooks(hook("noout", upgradev1.HookPointPreReboot, func(h *upgradev1.ActionHook) { s.mutate(&h.Template) }))),
				Field:   "spec.hooks[0].template." + s.field,
				Message: s.message,
			},
			Case{
				Name:    "preRemoval hook Job " + s.name,
				Object:  Policy("p", hooks(hook("osd-out", upgradev1.HookPointPreRemoval, func(h *upgradev1.ActionHook) { s.mutate(&h.Template) }))),
				Field:   "spec.hooks[0].template." + s.field,
				Message: s.message,
			})
	}
	return append(cases,
		Case{
			Name:    "preRemoval hook Job restartPolicy Always",
			Object:  Policy("p", hooks(hook("osd-out", upgradev1.HookPointPreRemoval, func(h *upgradev1.ActionHook) { h.Template.Spec.Template.Spec.RestartPolicy = "Always" }))),
			Field:   "spec.hooks[0].template.spec.template.spec.restartPolicy",
			Message: `a Job's Pods cannot restart "Always"`,
		},
		Case{
			Name:    "preRemoval hook timeout zero",
			Object:  Policy("p", hooks(hook("osd-out", upgradev1.HookPointPreRemoval, func(h *upgradev1.ActionHook) { h.Timeout = duration(0) }))),
			Field:   "spec.hooks[0].timeout",
			Message: "must be positive",
			Schema:  "timeout must be positive",
		})
}

// oneRunJob makes a template as explicit as a careful user writes it: one
// Pod for one success, retried once by the Job, with a deadline, a TTL that
// only cleans up what Tollgate left behind, a podFailurePolicy that fails at
// once on a configuration error and does not count a Pod evicted by a drain,
// an init container and a sidecar.
func oneRunJob(t *batchv1.JobTemplateSpec) {
	t.Spec.Completions, t.Spec.Parallelism = ptr.To[int32](1), ptr.To[int32](1)
	t.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	t.Spec.BackoffLimit = ptr.To[int32](1)
	t.Spec.ActiveDeadlineSeconds = ptr.To[int64](240)
	t.Spec.TTLSecondsAfterFinished = ptr.To[int32](86400)
	t.Spec.ManagedBy = ptr.To(batchv1.JobControllerName)
	t.Spec.Suspend, t.Spec.ManualSelector = ptr.To(false), ptr.To(false)
	t.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	t.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr.To("run"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{2},
		}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}},
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0},
		}},
	}}
	t.Spec.Template.Spec.InitContainers = []corev1.Container{
		{Name: "wait-for-mons", Image: "quay.io/ceph/ceph:v19", Command: []string{"ceph", "mon", "stat"}},
		{Name: "proxy", Image: "registry.example.com/tools/socks-proxy:1.4", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
	}
}

// ValidJobTemplates returns a ClusterHealthCheck and policy hooks (a
// preRemoval hook among them) whose Job templates set every JobSpec field
// Tollgate checks to a value it admits.
func ValidJobTemplates() []Case {
	return []Case{
		{
			Name:   "health check: an explicit one-Pod Job with a deadline, a TTL, a podFailurePolicy, an init container and a sidecar",
			Object: HealthCheck("ceph-health", func(c *upgradev1.ClusterHealthCheck) { oneRunJob(&c.Spec.Template) }),
			// Its Job retries once: a run that fails and then passes is a pass.
			Warning: "spec.template.spec.backoffLimit is 1: the Job controller runs the check again within one run when it fails",
		},
		{
			Name: "hooks, preRemoval included: an explicit one-Pod Job with a deadline, a TTL, a podFailurePolicy, an init container and a sidecar",
			Object: Policy("careful", hooks(
				hook("ceph-noout", upgradev1.HookPointPreReboot, func(h *upgradev1.ActionHook) { oneRunJob(&h.Template) }),
				hook("ceph-unset-noout", upgradev1.HookPointNodeReady, func(h *upgradev1.ActionHook) {
					h.Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
					h.Template.Spec.TTLSecondsAfterFinished = ptr.To[int32](3600)
				}),
				hook("osd-out", upgradev1.HookPointPreRemoval, func(h *upgradev1.ActionHook) { oneRunJob(&h.Template) }),
			)),
			Warning: "spec.healthChecks is empty",
		},
	}
}
