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

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Warnings returns what a user should look at twice in a plan, though it is
// not unsafe enough to refuse: no health checks at all, drain settings that
// force Pods out, and hook templates whose failures would be shown without
// their output (JobTemplateWarnings).
func Warnings(p *upgradev1.UpgradePlan) []string {
	var warnings []string
	if len(p.HealthChecks) == 0 {
		warnings = append(warnings,
			"spec.healthChecks is empty: Machines are taken down one after the other without checking that the workload is healthy in between; consider a ClusterHealthCheck")
	}
	if v := p.Drain.RespectPodDisruptionBudgets; v != nil && !*v {
		warnings = append(warnings,
			"spec.drain.respectPodDisruptionBudgets is false: Pods are deleted regardless of their PodDisruptionBudgets, which can take a replicated workload down")
	}
	if v := p.Drain.EvictUnmanagedPods; v != nil && *v {
		warnings = append(warnings,
			"spec.drain.evictUnmanagedPods is true: Pods no controller manages are deleted and not re-created anywhere")
	}
	hooksPath := field.NewPath("spec", "hooks")
	for i := range p.Hooks {
		warnings = append(warnings, JobTemplateWarnings(&p.Hooks[i].Template, hooksPath.Index(i).Child("template"))...)
	}
	return warnings
}

// JobTemplateWarnings returns what a user should know of a health-check or
// hook Job template at fldPath, though it runs: a Pod that restarts
// OnFailure restarts its failed container in place, and once that restart
// spends backoffLimit the Job controller deletes the Pod before it marks
// the Job Failed, so Tollgate has no container output to show, only the
// Job's condition ("Job has reached the specified backoff limit").
func JobTemplateWarnings(t *batchv1.JobTemplateSpec, fldPath *field.Path) []string {
	if t.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return nil
	}
	return []string{fmt.Sprintf(
		"%s is %q: when the Job fails, the Job controller deletes its Pod before Tollgate can read the container's output, so a failed run may show only %q; leave it unset (%q) to see why a run failed",
		fldPath.Child("spec", "template", "spec", "restartPolicy"), corev1.RestartPolicyOnFailure,
		"Job has reached the specified backoff limit", corev1.RestartPolicyNever)}
}

// HealthCheckWarnings returns what a user should know of a ClusterHealthCheck
// it admits, though it runs: JobTemplateWarnings of its template, and a
// backoffLimit above 0, with which the Job controller retries a failed Pod
// (or, with restartPolicy OnFailure, restarts its container) within one run,
// so a check that fails and then passes counts as a pass.
func HealthCheckWarnings(c *upgradev1.ClusterHealthCheck) []string {
	templatePath := field.NewPath("spec", "template")
	warnings := JobTemplateWarnings(&c.Spec.Template, templatePath)
	if b := c.Spec.Template.Spec.BackoffLimit; b != nil && *b > 0 {
		warnings = append(warnings, fmt.Sprintf(
			"%s is %d: the Job controller runs the check again within one run when it fails, up to %d more times, so a check that fails and then passes counts as a pass (the result's message says at which attempt it passed); leave it unset (0) for a failure to fail the run, and set successThreshold to ask for passes in a row",
			templatePath.Child("spec", "backoffLimit"), *b, *b))
	}
	return warnings
}

// ClusterWarnings returns what a user should know before a Cluster is
// upgraded: a single control-plane Machine means the Kubernetes API is down
// while it reboots.
func ClusterWarnings(c *ClusterVersions) []string {
	if c.SingleControlPlane {
		return []string{fmt.Sprintf(
			"Cluster %q has a single control-plane Machine: its Kubernetes API is unavailable while that Machine reboots", c.Name)}
	}
	return nil
}
