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
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/probe"
)

// MaxSuccessThreshold is the largest successThreshold of a
// ClusterHealthCheck, the same as the CRD schema's; the shortest interval is
// healthchecks.MinInterval.
const MaxSuccessThreshold = 100

// longestClusterName is a Cluster name of the greatest length allowed.
var longestClusterName = strings.Repeat("c", validation.DNS1123LabelMaxLength)

// ValidateClusterHealthCheck returns what is wrong with a check: no kind of
// check or more than one, a Job that could never run or never end, an http
// or prometheus probe that could never be sent or judged (probe.ValidateHTTP,
// probe.ValidatePrometheus), or a check that runs too often. The admission webhook
// refuses such a check; the ClusterHealthCheck controller reports it in the
// check's Ready condition, for a check admitted while the webhook was
// bypassed or down.
func ValidateClusterHealthCheck(c *upgradev1.ClusterHealthCheck) field.ErrorList {
	specPath := field.NewPath("spec")
	namePath := field.NewPath("metadata", "name")
	allErrs := ValidateJobNameSource(c.Name, namePath)
	if len(allErrs) == 0 {
		// The Job name is derived in one place, healthchecks.JobName; check
		// it with the longest Cluster name there can be.
		jobName := healthchecks.JobName(c.Name, longestClusterName)
		for _, msg := range validation.IsDNS1123Label(jobName) {
			allErrs = append(allErrs, field.Invalid(namePath, c.Name, fmt.Sprintf("derives the Job name %q, which is not a DNS-1123 label (%s): choose a shorter name", jobName, msg)))
		}
	}
	if i := c.Spec.Interval; i != nil && i.Duration < healthchecks.MinInterval {
		allErrs = append(allErrs, field.Invalid(specPath.Child("interval"), i.Duration.String(),
			fmt.Sprintf("must be at least %s: every run is a Job or a request in every Cluster under rollout; leave it unset for %s", healthchecks.MinInterval, healthchecks.DefaultInterval)))
	}
	if t := c.Spec.Timeout; t != nil && t.Duration <= 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("timeout"), t.Duration.String(),
			fmt.Sprintf("must be positive: a run that may take no time always fails; leave it unset for %s", healthchecks.DefaultTimeoutOf(c.Spec.Kind()))))
	}
	if s := c.Spec.SuccessThreshold; s != nil && (*s < 1 || *s > MaxSuccessThreshold) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("successThreshold"), *s,
			fmt.Sprintf("must be between 1 and %d consecutive passes", MaxSuccessThreshold)))
	}
	allErrs = append(allErrs, validateKind(c, specPath)...)
	switch c.Spec.Kind() {
	case upgradev1.HealthCheckKindJob:
		allErrs = append(allErrs, ValidateJobTemplate(&c.Spec.Template, specPath.Child("template"))...)
	case upgradev1.HealthCheckKindHTTP:
		allErrs = append(allErrs, probe.ValidateHTTP(c.Spec.HTTP, specPath.Child("http"))...)
	case upgradev1.HealthCheckKindPrometheus:
		allErrs = append(allErrs, probe.ValidatePrometheus(c.Spec.Prometheus, specPath.Child("prometheus"))...)
	}
	allErrs = append(allErrs, metav1validation.ValidateLabels(c.Spec.Labels, specPath.Child("labels"))...)
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(c.Spec.Annotations, specPath.Child("annotations"))...)
	return allErrs
}

// validateKind refuses a check that sets no kind of check, or more than one.
func validateKind(c *upgradev1.ClusterHealthCheck, specPath *field.Path) field.ErrorList {
	kinds := c.Spec.Kinds()
	switch len(kinds) {
	case 0:
		return field.ErrorList{field.Required(specPath.Child("template"),
			"set exactly one of template (a Job), http or prometheus: a Job run in the workload cluster, a request, or a PromQL query")}
	case 1:
		return nil
	}
	var errs field.ErrorList
	for _, k := range kinds[1:] {
		errs = append(errs, field.Forbidden(specPath.Child(kindField[k]),
			fmt.Sprintf("set exactly one of template (a Job), http or prometheus: this check is already a %s check (%s); remove one, or make two checks", kinds[0], kindField[kinds[0]])))
	}
	return errs
}

// kindField is the spec field of each kind of check.
var kindField = map[upgradev1.HealthCheckKind]string{
	upgradev1.HealthCheckKindJob:        "template",
	upgradev1.HealthCheckKindHTTP:       "http",
	upgradev1.HealthCheckKindPrometheus: "prometheus",
}
