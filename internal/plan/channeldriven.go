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
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// validateChannelDriven checks what a policy whose targets come from a
// ReleaseChannel (targetFrom: Channel) can be judged on alone: it names the
// channel and no target of its own. Whether the channel exists, and whether
// another channel's stage names the policy, the admission webhook judges
// against the apiserver.
func validateChannelDriven(p *upgradev1.TalosUpgradePolicy, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	why := "must not be set with targetFrom: Channel, where the ReleaseChannel grants each Cluster its version; remove it, or set targetFrom: Policy to roll out the policy's own target"
	// The CRD's CEL rules say the same, in case the webhook was bypassed.
	if p.Spec.TalosVersion != "" {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("talosVersion"), why))
	}
	if p.Spec.KubernetesVersion != "" {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("kubernetesVersion"), why))
	}
	if p.Spec.Follow != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("follow"), why))
	}
	if p.Spec.Channel == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("channel"), "names the ReleaseChannel the targets come from"))
	}
	return allErrs
}
