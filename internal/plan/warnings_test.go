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
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

func TestJobTemplateWarnings(t *testing.T) {
	template := func(restart corev1.RestartPolicy) batchv1.JobTemplateSpec {
		return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers:    []corev1.Container{{Name: "check", Image: "quay.io/ceph/ceph:v19"}},
		}}}}
	}
	tests := []struct {
		name    string
		restart corev1.RestartPolicy
		want    []string
	}{
		{name: "unset", restart: ""},
		{name: "Never", restart: corev1.RestartPolicyNever},
		{
			// TestDriverAgreesWithTheJobController (test/framework/jobdriver) shows the
			// real Job controller deleting the Pod, and its output with it.
			name: "OnFailure: the output of a failed run is lost", restart: corev1.RestartPolicyOnFailure,
			want: []string{`spec.template.spec.template.spec.restartPolicy is "OnFailure": when the Job fails, the Job controller deletes its Pod before Tollgate can read the container's output, so a failed run may show only "Job has reached the specified backoff limit"; leave it unset ("Never") to see why a run failed`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := template(tt.restart)
			NewWithT(t).Expect(plan.JobTemplateWarnings(&tmpl, field.NewPath("spec", "template"))).To(Equal(tt.want))
		})
	}

	t.Run("a plan warns of each hook", func(t *testing.T) {
		g := NewWithT(t)
		p := &upgradev1.UpgradePlan{
			HealthChecks: []upgradev1.HealthCheckRef{{Name: "ceph"}},
			Hooks: []upgradev1.ActionHook{
				{Name: "noout", Point: upgradev1.HookPointPreReboot, Template: template(corev1.RestartPolicyNever)},
				{Name: "unset-noout", Point: upgradev1.HookPointNodeReady, Template: template(corev1.RestartPolicyOnFailure)},
			},
		}
		warnings := plan.Warnings(p)
		g.Expect(warnings).To(HaveLen(1))
		g.Expect(warnings[0]).To(HavePrefix(`spec.hooks[1].template.spec.template.spec.restartPolicy is "OnFailure"`))
	})
}

func TestHealthCheckWarnings(t *testing.T) {
	check := func(restart corev1.RestartPolicy, backoffLimit *int32) *upgradev1.ClusterHealthCheck {
		return &upgradev1.ClusterHealthCheck{Spec: upgradev1.ClusterHealthCheckSpec{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			BackoffLimit: backoffLimit,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: restart,
				Containers:    []corev1.Container{{Name: "check", Image: "quay.io/ceph/ceph:v19"}},
			}},
		}}}}
	}
	retries := `spec.template.spec.backoffLimit is 3: the Job controller runs the check again within one run when it fails, up to 3 more times, so a check that fails and then passes counts as a pass (the result's message says at which attempt it passed); leave it unset (0) for a failure to fail the run, and set successThreshold to ask for passes in a row`
	tests := []struct {
		name  string
		check *upgradev1.ClusterHealthCheck
		want  []string
	}{
		{name: "backoffLimit unset: Tollgate's Job runs once", check: check(corev1.RestartPolicyNever, nil)},
		{name: "backoffLimit 0", check: check(corev1.RestartPolicyNever, ptr.To[int32](0))},
		{
			// The Job controller retries the failed Pod (TestEvaluateCountsAttempts
			// in internal/healthchecks shows such a pass).
			name: "backoffLimit 3: a failure and then a pass is a pass", check: check(corev1.RestartPolicyNever, ptr.To[int32](3)),
			want: []string{retries},
		},
		{
			name: "OnFailure and backoffLimit 3: both warnings", check: check(corev1.RestartPolicyOnFailure, ptr.To[int32](3)),
			want: []string{
				`spec.template.spec.template.spec.restartPolicy is "OnFailure": when the Job fails, the Job controller deletes its Pod before Tollgate can read the container's output, so a failed run may show only "Job has reached the specified backoff limit"; leave it unset ("Never") to see why a run failed`,
				retries,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(plan.HealthCheckWarnings(tt.check)).To(Equal(tt.want))
		})
	}
}
