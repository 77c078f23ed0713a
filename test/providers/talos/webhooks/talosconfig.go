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
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
)

// +kubebuilder:webhook:verbs=create;update,path=/validate-bootstrap-cluster-x-k8s-io-v1alpha3-talosconfig,mutating=false,failurePolicy=fail,groups=bootstrap.cluster.x-k8s.io,resources=talosconfigs,versions=v1alpha3,name=vtalosconfig.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=update,path=/validate-bootstrap-cluster-x-k8s-io-v1alpha3-talosconfigtemplate,mutating=false,failurePolicy=fail,groups=bootstrap.cluster.x-k8s.io,resources=talosconfigtemplates,versions=v1alpha3,name=vtalosconfigtemplate.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// Setup registers the TalosConfig and TalosConfigTemplate webhooks with
// mgr's webhook server.
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &bootstrapv1.TalosConfig{}).WithValidator(TalosConfig{}).Complete(); err != nil {
		return fmt.Errorf("registering the TalosConfig webhook: %w", err)
	}

	if err := ctrl.NewWebhookManagedBy(mgr, &bootstrapv1.TalosConfigTemplate{}).WithValidator(TalosConfigTemplate{}).Complete(); err != nil {
		return fmt.Errorf("registering the TalosConfigTemplate webhook: %w", err)
	}

	return nil
}

// TalosConfig validates TalosConfigs as the real provider's
// TalosConfig.ValidateCreate and ValidateUpdate do: the spec is immutable
// (400 BadRequest, the real message), and spec.hostname.source is one the
// provider knows.
type TalosConfig struct{}

var _ admission.Validator[*bootstrapv1.TalosConfig] = TalosConfig{}

// ValidateCreate checks the hostname source.
func (TalosConfig) ValidateCreate(_ context.Context, c *bootstrapv1.TalosConfig) (admission.Warnings, error) {
	return nil, validateHostname(c)
}

// ValidateUpdate refuses any change of the spec.
func (TalosConfig) ValidateUpdate(_ context.Context, oldC, newC *bootstrapv1.TalosConfig) (admission.Warnings, error) {
	if !reflect.DeepEqual(oldC.Spec, newC.Spec) {
		return nil, apierrors.NewBadRequest("TalosConfig.Spec is immutable")
	}

	return nil, validateHostname(newC)
}

// ValidateDelete allows every deletion.
func (TalosConfig) ValidateDelete(context.Context, *bootstrapv1.TalosConfig) (admission.Warnings, error) {
	return nil, nil
}

// validateHostname refuses a hostname source the real provider does not
// know (its validate).
func validateHostname(c *bootstrapv1.TalosConfig) error {
	switch c.Spec.Hostname.Source {
	case "", bootstrapv1.HostnameSourceMachineName, bootstrapv1.HostnameSourceInfrastructureName:
		return nil
	}

	return apierrors.NewInvalid(schema.GroupKind{Group: bootstrapv1.GroupVersion.Group, Kind: "TalosConfig"}, c.Name, field.ErrorList{
		field.Invalid(field.NewPath("spec", "hostname", "source"), c.Spec.Hostname.Source,
			fmt.Sprintf("valid values are: %q", []bootstrapv1.HostnameSource{bootstrapv1.HostnameSourceMachineName, bootstrapv1.HostnameSourceInfrastructureName})),
	})
}

// TalosConfigTemplate validates TalosConfigTemplates as the real provider's
// TalosConfigTemplate.ValidateUpdate does: the spec is immutable (400
// BadRequest); a change is a new template, and the MachineDeployment
// pointed at it.
type TalosConfigTemplate struct{}

var _ admission.Validator[*bootstrapv1.TalosConfigTemplate] = TalosConfigTemplate{}

// ValidateCreate allows every TalosConfigTemplate.
func (TalosConfigTemplate) ValidateCreate(context.Context, *bootstrapv1.TalosConfigTemplate) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate refuses any change of the spec.
func (TalosConfigTemplate) ValidateUpdate(_ context.Context, oldT, newT *bootstrapv1.TalosConfigTemplate) (admission.Warnings, error) {
	if !reflect.DeepEqual(oldT.Spec, newT.Spec) {
		return nil, apierrors.NewBadRequest("TalosConfigTemplate.Spec is immutable")
	}

	return nil, nil
}

// ValidateDelete allows every deletion.
func (TalosConfigTemplate) ValidateDelete(context.Context, *bootstrapv1.TalosConfigTemplate) (admission.Warnings, error) {
	return nil, nil
}
