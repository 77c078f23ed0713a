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
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// +kubebuilder:webhook:verbs=create;update,path=/validate-upgrade-tollgate-dev-v1alpha1-clusterhealthcheck,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=clusterhealthchecks,versions=v1alpha1,name=validation.clusterhealthcheck.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:verbs=create;update,path=/mutate-upgrade-tollgate-dev-v1alpha1-clusterhealthcheck,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=clusterhealthchecks,versions=v1alpha1,name=default.clusterhealthcheck.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10

// ClusterHealthCheck defaults and validates ClusterHealthChecks: a check of
// no kind or of two, whose Job could never run or never end, whose http or
// prometheus probe could never be sent or judged, or that runs too often is
// refused.
type ClusterHealthCheck struct{}

var (
	_ admission.Defaulter[*upgradev1.ClusterHealthCheck] = &ClusterHealthCheck{}
	_ admission.Validator[*upgradev1.ClusterHealthCheck] = &ClusterHealthCheck{}
)

// Default sets the interval, timeout (by kind) and successThreshold of a
// check that has none, restartPolicy Never on the template of a Job check,
// and the method of an http check.
func (w *ClusterHealthCheck) Default(_ context.Context, c *upgradev1.ClusterHealthCheck) error {
	if c.Spec.Interval == nil {
		c.Spec.Interval = &metav1.Duration{Duration: healthchecks.DefaultInterval}
	}
	if c.Spec.Timeout == nil {
		c.Spec.Timeout = &metav1.Duration{Duration: healthchecks.DefaultTimeoutOf(c.Spec.Kind())}
	}
	if c.Spec.SuccessThreshold == nil {
		c.Spec.SuccessThreshold = ptr.To[int32](1)
	}
	if slices.Contains(c.Spec.Kinds(), upgradev1.HealthCheckKindJob) {
		// Only a template that is set: defaulting an absent one would add a
		// second kind to an http or prometheus check.
		plan.DefaultJobTemplate(&c.Spec.Template)
	}
	if c.Spec.HTTP != nil && c.Spec.HTTP.Method == "" {
		c.Spec.HTTP.Method = http.MethodGet
	}
	return nil
}

// ValidateCreate validates a new check.
func (w *ClusterHealthCheck) ValidateCreate(_ context.Context, c *upgradev1.ClusterHealthCheck) (admission.Warnings, error) {
	return healthCheckWarnings(c), w.validate(c)
}

// ValidateUpdate validates a change to a check.
func (w *ClusterHealthCheck) ValidateUpdate(_ context.Context, _, newC *upgradev1.ClusterHealthCheck) (admission.Warnings, error) {
	return healthCheckWarnings(newC), w.validate(newC)
}

// ValidateDelete allows every deletion; a policy that still references the
// check holds its rollouts until the check exists again.
func (w *ClusterHealthCheck) ValidateDelete(_ context.Context, _ *upgradev1.ClusterHealthCheck) (admission.Warnings, error) {
	return nil, nil
}

// healthCheckWarnings are what the user should know of a check it admits:
// plan.HealthCheckWarnings of a Job check; labels or annotations on an http
// or prometheus check, which has no Job to put them on.
func healthCheckWarnings(c *upgradev1.ClusterHealthCheck) admission.Warnings {
	warnings := plan.HealthCheckWarnings(c)
	if c.Spec.IsProbe() && (len(c.Spec.Labels) > 0 || len(c.Spec.Annotations) > 0) {
		warnings = append(warnings, "spec.labels and spec.annotations apply to the Job of a Job check only: an http or prometheus check runs no Job, and ignores them")
	}
	return warnings
}

func (w *ClusterHealthCheck) validate(c *upgradev1.ClusterHealthCheck) error {
	return invalid("ClusterHealthCheck", c.Name, plan.ValidateClusterHealthCheck(c))
}
