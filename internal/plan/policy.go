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

// ValidatePolicy checks what can be judged of a TalosUpgradePolicy without
// its Clusters: the rules of its plan, its target as its kind of policy
// names it (talosVersion; follow; targetFrom CAPI; targetFrom Channel;
// kubernetesVersion alone, each Cluster keeping its Talos) and the pair of targets it ends on
// (ValidateTargets). It returns what is wrong, naming the fields under
// field.NewPath("spec"), and the warnings of what is allowed but worth
// knowing. The admission webhook refuses such a policy, and judges it
// against its Clusters too; the policy controller reports it in the
// policy's Ready condition, for a policy admitted by an earlier Tollgate or
// while the webhook was bypassed, and starts no rollout of it.
func ValidatePolicy(p *upgradev1.TalosUpgradePolicy) (field.ErrorList, []string) {
	specPath := field.NewPath("spec")
	var allErrs field.ErrorList
	var warnings []string
	switch {
	case p.Spec.ChannelDriven():
		// Each Cluster's version is its stage's: each rollout's preflight
		// judges its Cluster against it.
		allErrs = append(allErrs, validateChannelDriven(p, specPath)...)
		allErrs = append(allErrs, ValidateRules(&p.Spec.UpgradePlan, specPath)...)
	case p.Spec.CAPIDriven():
		allErrs = append(allErrs, validateCAPIDriven(p, specPath)...)
		allErrs = append(allErrs, ValidateRules(&p.Spec.UpgradePlan, specPath)...)
	case p.Spec.Follow != nil:
		followErrs, followWarnings := validateFollow(p, specPath)
		allErrs = append(allErrs, followErrs...)
		allErrs = append(allErrs, ValidateRules(&p.Spec.UpgradePlan, specPath)...)
		warnings = append(warnings, followWarnings...)
	case p.KeepsTalos():
		// Kubernetes alone, or no target: each Cluster keeps the Talos its
		// Machines run, but where its objects declare one.
		allErrs = append(allErrs, ValidateRules(&p.Spec.UpgradePlan, specPath)...)
	default:
		allErrs = append(allErrs, Validate(&p.Spec.UpgradePlan, specPath)...)
	}
	allErrs = append(allErrs, ValidateTargets(&p.Spec.UpgradePlan, specPath)...)
	return allErrs, append(warnings, Warnings(&p.Spec.UpgradePlan)...)
}
