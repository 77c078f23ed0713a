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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/inventory"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// clusterValidatePath is the path of the Cluster webhook; it differs from
// CAPI's own Cluster webhook path.
const clusterValidatePath = "/validate-tollgate-cluster-x-k8s-io-v1beta2-cluster"

// The Cluster webhook uses failurePolicy Ignore: a Tollgate outage must never
// block CAPI. controller-gen cannot set an objectSelector, so the webhook
// itself allows at once every request that does not add or change the
// policy label.
//
// +kubebuilder:webhook:verbs=create;update,path=/validate-tollgate-cluster-x-k8s-io-v1beta2-cluster,mutating=false,failurePolicy=ignore,matchPolicy=Equivalent,groups=cluster.x-k8s.io,resources=clusters,versions=v1beta2,name=policylabel.cluster.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=5

// Cluster validates the policy label of CAPI Clusters, and nothing else: the
// TalosUpgradePolicy it names in the Cluster's namespace must be able to
// upgrade the Cluster's Machines, and it must not move a Cluster to another
// policy while a rollout of the first one is in progress there (two policies
// would then cover the Cluster). A policy that does not exist yet is only a
// warning: GitOps tools and clusterctl move create objects in any order.
type Cluster struct {
	// Client reads TalosUpgradePolicies and TalosUpgrades.
	Client client.Reader
	// Versions reads what the Cluster's Machines run: the manager's
	// inventory; when nil, they are listed through Client by the field
	// indexes of package index.
	Versions inventory.Reader
}

var _ admission.Validator[*clusterv1.Cluster] = &Cluster{}

// ValidateCreate validates the policy label of a new Cluster.
func (w *Cluster) ValidateCreate(ctx context.Context, c *clusterv1.Cluster) (admission.Warnings, error) {
	return w.validate(ctx, nil, c)
}

// ValidateUpdate validates a change of the policy label of a Cluster.
func (w *Cluster) ValidateUpdate(ctx context.Context, oldC, newC *clusterv1.Cluster) (admission.Warnings, error) {
	return w.validate(ctx, oldC, newC)
}

// ValidateDelete allows every deletion.
func (w *Cluster) ValidateDelete(_ context.Context, _ *clusterv1.Cluster) (admission.Warnings, error) {
	return nil, nil
}

func (w *Cluster) validate(ctx context.Context, oldC, newC *clusterv1.Cluster) (admission.Warnings, error) {
	policyName, has := newC.Labels[upgradev1.PolicyLabel]
	oldPolicyName, oldHas := "", false
	if oldC != nil {
		oldPolicyName, oldHas = oldC.Labels[upgradev1.PolicyLabel]
	}
	if !has || (oldHas && oldPolicyName == policyName) {
		return nil, nil // Not opted in, opting out, or unchanged.
	}
	labelPath := field.NewPath("metadata", "labels").Key(upgradev1.PolicyLabel)

	if msgs := validation.IsDNS1123Subdomain(policyName); len(msgs) > 0 {
		return nil, invalidCluster(newC, field.ErrorList{field.Invalid(labelPath, policyName,
			strings.Join(msgs, "; ")+": set it to the name of a TalosUpgradePolicy in this namespace")})
	}

	var (
		allErrs  field.ErrorList
		warnings admission.Warnings
	)
	policy := &upgradev1.TalosUpgradePolicy{}
	err := w.Client.Get(ctx, client.ObjectKey{Namespace: newC.Namespace, Name: policyName}, policy)
	switch {
	case apierrors.IsNotFound(err):
		// GitOps tools and clusterctl move create objects in an order nobody
		// controls: a policy applied after its Clusters is normal, and the
		// controller waits for it. Warn, as CAPI does for a missing
		// ClusterClass, so that a typo is still seen.
		warnings = append(warnings, missingPolicyWarning(labelPath, policyName, newC.Namespace))
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("getting TalosUpgradePolicy %q: %w", policyName, err))
	default:
		errs, warns, err := w.validatePlan(ctx, policy, newC, labelPath)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		allErrs, warnings = append(allErrs, errs...), warns
	}

	if oldHas {
		errs, err := w.validateMove(ctx, oldPolicyName, newC, labelPath)
		if err != nil {
			return warnings, apierrors.NewInternalError(err)
		}
		allErrs = append(allErrs, errs...)
	}
	return warnings, invalidCluster(newC, allErrs)
}

// missingPolicyWarning warns that the policy a Cluster opts in to does not
// exist (yet).
func missingPolicyWarning(labelPath *field.Path, policyName, namespace string) string {
	return fmt.Sprintf("%s: TalosUpgradePolicy %q does not exist in namespace %q yet: no rollout starts on this Cluster until it is created; if the name is a typo, fix the label",
		labelPath, policyName, namespace)
}

// validatePlan checks the plan of the policy a Cluster opts in to against
// the Cluster's Machines, as the policy's own webhook does for the Clusters
// that already select it.
func (w *Cluster) validatePlan(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, c *clusterv1.Cluster, labelPath *field.Path) (field.ErrorList, admission.Warnings, error) {
	versions, err := versionsOf(w.Versions, w.Client).Cluster(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	var allErrs field.ErrorList
	target := policy.Spec.UpgradePlan.DeepCopy()
	target.TalosVersion = policy.Target()
	if policy.KeepsTalos() {
		// Kubernetes alone: the Cluster keeps the Talos it runs.
		for _, e := range plan.NewClusterValidator(target, field.NewPath("spec")).ValidateKubernetes(&versions) {
			allErrs = append(allErrs, field.Invalid(labelPath, policy.Name, fmt.Sprintf(
				"TalosUpgradePolicy %q (kubernetesVersion %s) cannot upgrade this Cluster: %s; opt in to another policy, or bring the Cluster to a version the policy can upgrade first",
				policy.Name, target.KubernetesVersion, e.Detail)))
		}
		return allErrs, plan.ClusterWarnings(&versions), nil
	}
	if target.TalosVersion == "" {
		// A policy following releases has not chosen its target yet: each
		// rollout's preflight judges the Cluster against the one it chooses.
		return nil, plan.ClusterWarnings(&versions), nil
	}
	for _, e := range plan.NewClusterValidator(target, field.NewPath("spec")).Validate(&versions) {
		allErrs = append(allErrs, field.Invalid(labelPath, policy.Name, fmt.Sprintf(
			"TalosUpgradePolicy %q (talosVersion %s) cannot upgrade this Cluster: %s; opt in to another policy, or bring the Cluster to a version the policy can upgrade first",
			policy.Name, target.TalosVersion, e.Detail)))
	}
	return allErrs, plan.ClusterWarnings(&versions), nil
}

// validateMove refuses to move a Cluster from one policy to another while a
// rollout of the first is in progress there: two policies would cover it.
func (w *Cluster) validateMove(ctx context.Context, oldPolicyName string, c *clusterv1.Cluster, labelPath *field.Path) (field.ErrorList, error) {
	inProgress, err := upgradesOf(ctx, w.Client, c.Namespace, index.UpgradeClusterNameField, c.Name, func(u *upgradev1.TalosUpgrade) bool {
		return u.Spec.PolicyName == oldPolicyName && u.InProgress()
	})
	if err != nil {
		return nil, err
	}
	var allErrs field.ErrorList
	for i := range inProgress {
		allErrs = append(allErrs, field.Forbidden(labelPath, fmt.Sprintf(
			"cannot move to policy %q while TalosUpgrade %q of policy %q is in progress on this Cluster: two policies would cover it; wait for the rollout to end or set cancel: true on it, or remove the label to opt out",
			c.Labels[upgradev1.PolicyLabel], inProgress[i].Name, oldPolicyName)))
	}
	return allErrs, nil
}

// invalidCluster returns an Invalid error for a Cluster, or nil when allErrs
// is empty.
func invalidCluster(c *clusterv1.Cluster, allErrs field.ErrorList) error {
	if len(allErrs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(clusterv1.GroupVersion.WithKind("Cluster").GroupKind(), c.Name, allErrs)
}
