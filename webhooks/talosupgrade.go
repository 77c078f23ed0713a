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
	"encoding/json"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/inventory"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// +kubebuilder:webhook:verbs=create;update,path=/validate-upgrade-tollgate-dev-v1alpha1-talosupgrade,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=talosupgrades,versions=v1alpha1,name=validation.talosupgrade.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:verbs=create;update,path=/mutate-upgrade-tollgate-dev-v1alpha1-talosupgrade,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=talosupgrades,versions=v1alpha1,name=default.talosupgrade.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10

// TalosUpgrade defaults and validates TalosUpgrades. A TalosUpgrade is
// owned by the controller, which creates it from a policy: other users may
// only change paused, cancel and bypass, a cancel cannot be undone, and only
// the controller may set the admitted annotation.
type TalosUpgrade struct {
	// Client reads Clusters and other TalosUpgrades.
	Client client.Reader
	// Versions reads what the Cluster's Machines run: the manager's
	// inventory; when nil, they are listed through Client by the field
	// indexes of package index.
	Versions inventory.Reader

	// ControllerUsername is the username of the controller's requests, which
	// may change any field; see WithControllerUsername.
	ControllerUsername string
}

var (
	_ admission.Defaulter[*upgradev1.TalosUpgrade] = &TalosUpgrade{}
	_ admission.Validator[*upgradev1.TalosUpgrade] = &TalosUpgrade{}
)

// userFields are the spec fields, by JSON name, that anybody may change.
var userFields = []string{"paused", "cancel", "bypass"}

// Default sets the defaults of the rollout's plan. A TalosUpgrade created by
// anybody but the controller (clusterctl move, a restore from a backup)
// loses the admitted annotation: the policy controller admits it again
// within maxClustersInProgress, and its Machines in flight finish meanwhile.
func (w *TalosUpgrade) Default(ctx context.Context, u *upgradev1.TalosUpgrade) error {
	plan.Default(&u.Spec.UpgradePlan)
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Create && !w.isController(ctx) {
		delete(u.Annotations, upgradev1.AdmittedAnnotation)
	}
	recordRequester(ctx, bypassOf(ctx, decodeUpgradeBypass), u.Spec.Bypass)
	return nil
}

// ValidateCreate validates a new rollout: its plan, that no other rollout
// covers the Cluster and, for a rollout a user creates by hand, its pair of
// targets (whether its Cluster exists yet or not) and the plan against the
// Cluster. A rollout the controller creates is checked against the Cluster
// by its preflight, whose condition says what is wrong.
func (w *TalosUpgrade) ValidateCreate(ctx context.Context, u *upgradev1.TalosUpgrade) (admission.Warnings, error) {
	specPath := field.NewPath("spec")
	allErrs, warnings := validateBypass(nil, u.Spec.Bypass, u.Spec.Hooks, false, specPath.Child("bypass"))
	allErrs = append(allErrs, plan.Validate(&u.Spec.UpgradePlan, specPath)...)
	if !w.isController(ctx) {
		allErrs = append(allErrs, plan.ValidateTargets(&u.Spec.UpgradePlan, specPath)...)
		allErrs = append(allErrs, validateAdmission(nil, u)...)
		errs, warns, err := w.validateCluster(ctx, u, specPath)
		if err != nil {
			return warnings, apierrors.NewInternalError(err)
		}
		allErrs, warnings = append(allErrs, errs...), append(warnings, warns...)
	}

	active, err := upgradesOf(ctx, w.Client, u.Namespace, index.UpgradeClusterNameField, u.Spec.ClusterName, func(other *upgradev1.TalosUpgrade) bool {
		return other.Name != u.Name && !other.Finished()
	})
	if err != nil {
		return warnings, apierrors.NewInternalError(err)
	}
	for i := range active {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterName"), fmt.Sprintf(
			"Cluster %q is already being upgraded by TalosUpgrade %q (policy %q): two rollouts must not cover one Cluster; wait for it to end, or set cancel: true on it",
			u.Spec.ClusterName, active[i].Name, active[i].Spec.PolicyName)))
	}
	return warnings, invalid("TalosUpgrade", u.Name, allErrs)
}

// ValidateUpdate validates a change to a rollout. The controller may change
// the plan, which is then validated again; anybody else may only change
// paused, cancel and bypass.
func (w *TalosUpgrade) ValidateUpdate(ctx context.Context, oldU, newU *upgradev1.TalosUpgrade) (admission.Warnings, error) {
	specPath := field.NewPath("spec")
	allErrs, warnings := validateBypass(oldU.Spec.Bypass, newU.Spec.Bypass, newU.Spec.Hooks, false, specPath.Child("bypass"))

	if oldU.Spec.Cancel && !newU.Spec.Cancel {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("cancel"),
			"cannot be undone: a cancelled rollout ends Failed; delete this TalosUpgrade to let its policy start a new rollout"))
	}
	if oldU.Spec.ClusterName != newU.Spec.ClusterName {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterName"), "is immutable: create a new TalosUpgrade for another Cluster"))
	}

	if w.isController(ctx) {
		if !equality.Semantic.DeepEqual(oldU.Spec.UpgradePlan, newU.Spec.UpgradePlan) {
			allErrs = append(allErrs, plan.Validate(&newU.Spec.UpgradePlan, specPath)...)
		}
		return warnings, invalid("TalosUpgrade", newU.Name, allErrs)
	}

	allErrs = append(allErrs, validateAdmission(oldU, newU)...)
	changed, err := changedControllerFields(&oldU.Spec, &newU.Spec)
	if err != nil {
		return warnings, apierrors.NewInternalError(err)
	}
	for _, name := range changed {
		allErrs = append(allErrs, field.Forbidden(specPath.Child(name), fmt.Sprintf(
			"is set by the Tollgate controller from TalosUpgradePolicy %q: change the policy instead; on a TalosUpgrade only paused, cancel and bypass may be changed",
			oldU.Spec.PolicyName)))
	}
	return warnings, invalid("TalosUpgrade", newU.Name, allErrs)
}

// ValidateDelete allows every deletion.
func (w *TalosUpgrade) ValidateDelete(_ context.Context, _ *upgradev1.TalosUpgrade) (admission.Warnings, error) {
	return nil, nil
}

// validateCluster checks that the Cluster of a rollout exists and that the
// plan can upgrade its Machines.
func (w *TalosUpgrade) validateCluster(ctx context.Context, u *upgradev1.TalosUpgrade, specPath *field.Path) (field.ErrorList, admission.Warnings, error) {
	cluster := &clusterv1.Cluster{}
	err := w.Client.Get(ctx, client.ObjectKey{Namespace: u.Namespace, Name: u.Spec.ClusterName}, cluster)
	switch {
	case apierrors.IsNotFound(err):
		// Objects arrive in any order (GitOps, clusterctl move): the rollout
		// waits for its Cluster, with the condition ClusterNotFound.
		return nil, admission.Warnings{fmt.Sprintf("%s: Cluster %q does not exist in namespace %q yet: the rollout waits for it; if the name is a typo, fix spec.clusterName",
			specPath.Child("clusterName"), u.Spec.ClusterName, u.Namespace)}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("getting Cluster %q: %w", u.Spec.ClusterName, err)
	}
	versions, err := versionsOf(w.Versions, w.Client).Cluster(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	return plan.NewClusterValidator(&u.Spec.UpgradePlan, specPath).Validate(&versions), plan.ClusterWarnings(&versions), nil
}

// validateAdmission refuses a user who sets the admitted annotation, which
// only the policy controller sets to keep a fleet within
// maxClustersInProgress. Removing it is allowed: it only holds the rollout.
func validateAdmission(oldU, newU *upgradev1.TalosUpgrade) field.ErrorList {
	value, has := newU.Annotations[upgradev1.AdmittedAnnotation]
	if !has {
		return nil
	}
	if oldU != nil {
		if oldValue, oldHas := oldU.Annotations[upgradev1.AdmittedAnnotation]; oldHas && oldValue == value {
			return nil
		}
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(upgradev1.AdmittedAnnotation), fmt.Sprintf(
		"is set by the Tollgate controller when policy %q has room for another Cluster: raise spec.rollout.maxClustersInProgress on the policy instead",
		newU.Spec.PolicyName))}
}

// isController reports whether the admission request comes from the
// controller's user.
func (w *TalosUpgrade) isController(ctx context.Context) bool {
	req, err := admission.RequestFromContext(ctx)
	return err == nil && w.ControllerUsername != "" && req.UserInfo.Username == w.ControllerUsername
}

// changedControllerFields returns the JSON names of the spec fields, other
// than paused, cancel and bypass, that differ between old and new, sorted.
// Both are compared with their defaults set, so that a default filled in on
// this update does not count as a change.
func changedControllerFields(oldSpec, newSpec *upgradev1.TalosUpgradeSpec) ([]string, error) {
	oldSpec, newSpec = oldSpec.DeepCopy(), newSpec.DeepCopy()
	plan.Default(&oldSpec.UpgradePlan)
	plan.Default(&newSpec.UpgradePlan)
	oldFields, err := specFields(oldSpec)
	if err != nil {
		return nil, err
	}
	newFields, err := specFields(newSpec)
	if err != nil {
		return nil, err
	}
	var changed []string
	for name := range mergeKeys(oldFields, newFields) {
		if slices.Contains(userFields, name) || equality.Semantic.DeepEqual(oldFields[name], newFields[name]) {
			continue
		}
		changed = append(changed, name)
	}
	slices.Sort(changed)
	return changed, nil
}

// specFields returns the top-level JSON fields of a spec.
func specFields(spec *upgradev1.TalosUpgradeSpec) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding a TalosUpgrade spec: %w", err)
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("decoding a TalosUpgrade spec: %w", err)
	}
	return fields, nil
}

// mergeKeys returns the union of the keys of two maps.
func mergeKeys[V any](a, b map[string]V) map[string]struct{} {
	keys := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		keys[k] = struct{}{}
	}
	for k := range b {
		keys[k] = struct{}{}
	}
	return keys
}

// invalid returns an Invalid error for an object of a Tollgate kind, or nil
// when allErrs is empty.
func invalid(kind, name string, allErrs field.ErrorList) error {
	if len(allErrs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(upgradev1.GroupVersion.WithKind(kind).GroupKind(), name, allErrs)
}
