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

// validateCAPIDriven checks a policy whose target comes from CAPI's
// in-place updates: it names no target of its own, follows no releases, and
// takes one version per in-place update, as CAPI hands them over: CAPI
// moves the Machines of a MachineDeployment to its new template directly,
// so there is no path of hops to plan, and a downgrade is a template change
// CAPI asks for like any other (the preflight still refuses one Talos does
// not support).
func validateCAPIDriven(p *upgradev1.TalosUpgradePolicy, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	why := `must not be set with targetFrom: CAPI, where the Talos version of the machine templates is the target; remove it, or set targetFrom: Policy to roll out the policy's own target`
	if p.Spec.TalosVersion != "" {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("talosVersion"), why))
	}
	if p.Spec.Follow != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("follow"), why))
	}
	if p.Spec.UpgradePath == upgradev1.UpgradePathAuto {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("upgradePath"),
			`must be Direct with targetFrom: CAPI: CAPI updates a Machine to its template's version in one step; change the templates one minor at a time`))
	}
	return allErrs
}
