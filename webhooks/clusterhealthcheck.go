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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

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

// healthCheckWarnings are what the user should know of a check it admits.
func healthCheckWarnings(c *upgradev1.ClusterHealthCheck) admission.Warnings {
	return plan.HealthCheckWarnings(c)
}

func (w *ClusterHealthCheck) validate(c *upgradev1.ClusterHealthCheck) error {
	return invalid("ClusterHealthCheck", c.Name, plan.ValidateClusterHealthCheck(c))
}
