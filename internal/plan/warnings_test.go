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
			// TestDriverAgreesWithTheJobController (test/jobdriver) shows the
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
