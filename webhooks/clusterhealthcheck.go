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

package webhooks

import (
	"context"
	"fmt"
	"strings"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// Bounds of a ClusterHealthCheck, the same as the CRD schema's; its defaults
// are the health-check engine's (healthchecks.DefaultInterval, DefaultTimeout).
const (
	// MinHealthCheckInterval is the shortest interval between two runs of a
	// check: a Job per Cluster every few seconds would load the workload
	// clusters for nothing.
	MinHealthCheckInterval = 5 * time.Second

	// MaxSuccessThreshold is the largest successThreshold.
	MaxSuccessThreshold = 100
)

// longestClusterName is a Cluster name of the greatest length allowed.
var longestClusterName = strings.Repeat("c", validation.DNS1123LabelMaxLength)

// +kubebuilder:webhook:verbs=create;update,path=/validate-upgrade-tollgate-dev-v1alpha1-clusterhealthcheck,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=clusterhealthchecks,versions=v1alpha1,name=validation.clusterhealthcheck.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:verbs=create;update,path=/mutate-upgrade-tollgate-dev-v1alpha1-clusterhealthcheck,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=clusterhealthchecks,versions=v1alpha1,name=default.clusterhealthcheck.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10

// ClusterHealthCheck defaults and validates ClusterHealthChecks: a check
// whose Job could never run, never end, or run too often is refused.
type ClusterHealthCheck struct{}

var (
	_ admission.Defaulter[*upgradev1.ClusterHealthCheck] = &ClusterHealthCheck{}
	_ admission.Validator[*upgradev1.ClusterHealthCheck] = &ClusterHealthCheck{}
)

// Default sets the interval, timeout and successThreshold of a check that
// has none, and restartPolicy Never on its Job template.
func (w *ClusterHealthCheck) Default(_ context.Context, c *upgradev1.ClusterHealthCheck) error {
	if c.Spec.Interval == nil {
		c.Spec.Interval = &metav1.Duration{Duration: healthchecks.DefaultInterval}
	}
	if c.Spec.Timeout == nil {
		c.Spec.Timeout = &metav1.Duration{Duration: healthchecks.DefaultTimeout}
	}
	if c.Spec.SuccessThreshold == nil {
		c.Spec.SuccessThreshold = ptr.To[int32](1)
	}
	plan.DefaultJobTemplate(&c.Spec.Template)
	return nil
}

// ValidateCreate validates a new check.
func (w *ClusterHealthCheck) ValidateCreate(_ context.Context, c *upgradev1.ClusterHealthCheck) (admission.Warnings, error) {
	return nil, w.validate(c)
}

// ValidateUpdate validates a change to a check.
func (w *ClusterHealthCheck) ValidateUpdate(_ context.Context, _, newC *upgradev1.ClusterHealthCheck) (admission.Warnings, error) {
	return nil, w.validate(newC)
}

// ValidateDelete allows every deletion; a policy that still references the
// check holds its rollouts until the check exists again.
func (w *ClusterHealthCheck) ValidateDelete(_ context.Context, _ *upgradev1.ClusterHealthCheck) (admission.Warnings, error) {
	return nil, nil
}

func (w *ClusterHealthCheck) validate(c *upgradev1.ClusterHealthCheck) error {
	allErrs := ValidateClusterHealthCheck(c)
	return invalid("ClusterHealthCheck", c.Name, allErrs)
}

// ValidateClusterHealthCheck returns what is wrong with a check. The
// controller calls it too, before it runs the check's Job.
func ValidateClusterHealthCheck(c *upgradev1.ClusterHealthCheck) field.ErrorList {
	specPath := field.NewPath("spec")
	namePath := field.NewPath("metadata", "name")
	allErrs := plan.ValidateJobNameSource(c.Name, namePath)
	if len(allErrs) == 0 {
		// The Job name is derived in one place, healthchecks.JobName; check
		// it with the longest Cluster name there can be.
		jobName := healthchecks.JobName(c.Name, longestClusterName)
		for _, msg := range validation.IsDNS1123Label(jobName) {
			allErrs = append(allErrs, field.Invalid(namePath, c.Name, fmt.Sprintf("derives the Job name %q, which is not a DNS-1123 label (%s): choose a shorter name", jobName, msg)))
		}
	}
	if i := c.Spec.Interval; i != nil && i.Duration < MinHealthCheckInterval {
		allErrs = append(allErrs, field.Invalid(specPath.Child("interval"), i.Duration.String(),
			fmt.Sprintf("must be at least %s: every run is a Job in every Cluster under rollout; leave it unset for %s", MinHealthCheckInterval, healthchecks.DefaultInterval)))
	}
	if t := c.Spec.Timeout; t != nil && t.Duration <= 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("timeout"), t.Duration.String(),
			fmt.Sprintf("must be positive: a run that may take no time always fails; leave it unset for %s", healthchecks.DefaultTimeout)))
	}
	if s := c.Spec.SuccessThreshold; s != nil && (*s < 1 || *s > MaxSuccessThreshold) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("successThreshold"), *s,
			fmt.Sprintf("must be between 1 and %d consecutive passes", MaxSuccessThreshold)))
	}
	allErrs = append(allErrs, plan.ValidateJobTemplate(&c.Spec.Template, specPath.Child("template"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabels(c.Spec.Labels, specPath.Child("labels"))...)
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(c.Spec.Annotations, specPath.Child("annotations"))...)
	return allErrs
}
