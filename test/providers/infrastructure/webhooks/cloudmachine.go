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
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
)

// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-talossimcloudmachine,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=talossimcloudmachines,versions=v1alpha1,name=validation.talossimcloudmachine.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-talossimcloudmachinetemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=talossimcloudmachinetemplates,versions=v1alpha1,name=validation.talossimcloudmachinetemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// Setup registers the webhooks with mgr's webhook server.
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &infrav1.TalosSimCloudMachine{}).WithValidator(CloudMachine{}).Complete(); err != nil {
		return fmt.Errorf("registering the TalosSimCloudMachine webhook: %w", err)
	}

	if err := ctrl.NewWebhookManagedBy(mgr, &infrav1.TalosSimCloudMachineTemplate{}).WithValidator(CloudMachineTemplate{}).Complete(); err != nil {
		return fmt.Errorf("registering the TalosSimCloudMachineTemplate webhook: %w", err)
	}

	return nil
}

// CloudMachine validates TalosSimCloudMachines as CAPA's
// AWSMachine.ValidateUpdate validates AWSMachines: the spec of an existing
// machine cannot change, but for spec.providerID (the controller sets it)
// and spec.additionalTags.
type CloudMachine struct{}

var _ admission.Validator[*infrav1.TalosSimCloudMachine] = CloudMachine{}

// ValidateCreate allows every new machine: its image is looked for when it
// boots, as a cloud looks for an AMI.
func (CloudMachine) ValidateCreate(context.Context, *infrav1.TalosSimCloudMachine) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate refuses a change of the spec.
func (CloudMachine) ValidateUpdate(_ context.Context, oldM, newM *infrav1.TalosSimCloudMachine) (admission.Warnings, error) {
	oldSpec, newSpec := oldM.Spec, newM.Spec
	oldSpec.ProviderID, newSpec.ProviderID = "", ""
	oldSpec.AdditionalTags, newSpec.AdditionalTags = nil, nil

	if reflect.DeepEqual(oldSpec, newSpec) {
		return nil, nil
	}

	return nil, apierrors.NewInvalid(infrav1.GroupVersion.WithKind("TalosSimCloudMachine").GroupKind(), newM.Name, field.ErrorList{
		field.Forbidden(field.NewPath("spec"), "cannot be modified"),
	})
}

// ValidateDelete allows every deletion.
func (CloudMachine) ValidateDelete(context.Context, *infrav1.TalosSimCloudMachine) (admission.Warnings, error) {
	return nil, nil
}

// CloudMachineTemplate validates TalosSimCloudMachineTemplates as CAPA's
// AWSMachineTemplate webhook does: the spec is immutable.
type CloudMachineTemplate struct{}

var _ admission.Validator[*infrav1.TalosSimCloudMachineTemplate] = CloudMachineTemplate{}

// ValidateCreate allows every template.
func (CloudMachineTemplate) ValidateCreate(context.Context, *infrav1.TalosSimCloudMachineTemplate) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate refuses a change of the spec.
func (CloudMachineTemplate) ValidateUpdate(_ context.Context, oldT, newT *infrav1.TalosSimCloudMachineTemplate) (admission.Warnings, error) {
	if reflect.DeepEqual(oldT.Spec, newT.Spec) {
		return nil, nil
	}

	return nil, apierrors.NewInvalid(infrav1.GroupVersion.WithKind("TalosSimCloudMachineTemplate").GroupKind(), newT.Name, field.ErrorList{
		field.Invalid(field.NewPath("spec"), newT.Spec, "TalosSimCloudMachineTemplate.Spec is immutable"),
	})
}

// ValidateDelete allows every deletion.
func (CloudMachineTemplate) ValidateDelete(context.Context, *infrav1.TalosSimCloudMachineTemplate) (admission.Warnings, error) {
	return nil, nil
}
