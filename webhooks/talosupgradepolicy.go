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
	"cmp"
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/inventory"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// +kubebuilder:webhook:verbs=create;update,path=/validate-upgrade-tollgate-dev-v1alpha1-talosupgradepolicy,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=talosupgradepolicies,versions=v1alpha1,name=validation.talosupgradepolicy.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:verbs=create;update,path=/mutate-upgrade-tollgate-dev-v1alpha1-talosupgradepolicy,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=upgrade.tollgate.dev,resources=talosupgradepolicies,versions=v1alpha1,name=default.talosupgradepolicy.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10

// TalosUpgradePolicy defaults and validates TalosUpgradePolicies. Besides the
// plan's own rules, it checks the plan against every Cluster that selects the
// policy and its Machines, and refuses to change the target of a policy
// while one of its rollouts is in progress.
type TalosUpgradePolicy struct {
	// Client reads TalosUpgrades and ClusterHealthChecks.
	Client client.Reader
	// Versions reads what the Clusters of the policy and their Machines
	// run: the manager's inventory, kept from its informers; when nil, they
	// are listed through Client by the field indexes of package index.
	Versions inventory.Reader
	// SecretReader reads the installer's pull Secret, live, so that no
	// Secret is cached; Client when nil.
	SecretReader client.Reader
	// Releases lists the installer releases and the Kubernetes releases of
	// KubeletRepository, to explain Auto upgrade paths; a lister of its own
	// when nil.
	Releases *talos.ReleaseLister
	// KubeletRepository is the repository whose tags are the Kubernetes
	// releases a path through Kubernetes minors is explained with;
	// kubernetes.DefaultKubeletRepository, Talos' default, when empty. The
	// webhook does not read the nodes' machine configuration: the
	// controller's preflight plans from the kubelet repository each node
	// names, and refuses there a minor a mirror lacks.
	KubeletRepository string
	// ControlPlanes reads the control-plane objects of the policy's
	// Clusters (providers' kinds), for the Talos version they declare; nil
	// reads none.
	ControlPlanes ObjectReader
}

// ObjectReader reads an object of a provider's kind, known by its group and
// kind (templates.Reader).
type ObjectReader interface {
	Get(ctx context.Context, group, kind, namespace, name string) (*unstructured.Unstructured, error)
}

var (
	_ admission.Defaulter[*upgradev1.TalosUpgradePolicy] = &TalosUpgradePolicy{}
	_ admission.Validator[*upgradev1.TalosUpgradePolicy] = &TalosUpgradePolicy{}
)

// Default sets the defaults of the policy's plan.
func (w *TalosUpgradePolicy) Default(ctx context.Context, p *upgradev1.TalosUpgradePolicy) error {
	plan.Default(&p.Spec.UpgradePlan)
	recordRequester(ctx, bypassOf(ctx, decodePolicyBypass), p.Spec.Bypass)
	return nil
}

// ValidateCreate validates a new policy.
func (w *TalosUpgradePolicy) ValidateCreate(ctx context.Context, p *upgradev1.TalosUpgradePolicy) (admission.Warnings, error) {
	return w.validate(ctx, nil, p)
}

// ValidateUpdate validates a change to a policy.
func (w *TalosUpgradePolicy) ValidateUpdate(ctx context.Context, oldP, newP *upgradev1.TalosUpgradePolicy) (admission.Warnings, error) {
	return w.validate(ctx, oldP, newP)
}

// ValidateDelete allows every deletion.
func (w *TalosUpgradePolicy) ValidateDelete(_ context.Context, _ *upgradev1.TalosUpgradePolicy) (admission.Warnings, error) {
	return nil, nil
}

// validate checks newP, and the change from oldP when it is an update. An
// update that leaves the plan as it is (paused, bypass) is always allowed, so
// that a rollout can be paused whatever the state of the world.
func (w *TalosUpgradePolicy) validate(ctx context.Context, oldP, newP *upgradev1.TalosUpgradePolicy) (admission.Warnings, error) {
	specPath := field.NewPath("spec")
	bypassErrs, warnings := validateBypass(oldBypass(oldP), newP.Spec.Bypass, newP.Spec.Hooks, true, specPath.Child("bypass"))
	if oldP != nil && equality.Semantic.DeepEqual(oldP.Spec.UpgradePlan, newP.Spec.UpgradePlan) && oldP.Spec.Channel == newP.Spec.Channel {
		return warnings, invalid("TalosUpgradePolicy", newP.Name, bypassErrs)
	}

	allErrs := bypassErrs
	planErrs, planWarnings := plan.ValidatePolicy(newP)
	allErrs = append(allErrs, planErrs...)
	warnings = append(warnings, planWarnings...)
	// named is a policy that names its target now; a following policy
	// chooses it later, CAPI chooses it for a CAPI-driven one, and a
	// ReleaseChannel for a policy of a channel: each rollout's preflight
	// judges its Cluster against it.
	named := newP.Spec.Follow == nil && !newP.Spec.CAPIDriven() && !newP.Spec.ChannelDriven()
	if newP.Spec.ChannelDriven() {
		channelErrs, channelWarnings, err := validateChannelPolicy(ctx, w.Client, newP, specPath)
		if err != nil {
			return warnings, apierrors.NewInternalError(err)
		}
		allErrs, warnings = append(allErrs, channelErrs...), append(warnings, channelWarnings...)
	}

	clusters, err := versionsOf(w.Versions, w.Client).ClustersOfPolicy(ctx, newP.Namespace, newP.Name)
	if err != nil {
		return warnings, apierrors.NewInternalError(err)
	}
	// One validator for every Cluster: a fleet runs a handful of versions,
	// each judged once.
	validator := plan.NewClusterValidator(&newP.Spec.UpgradePlan, specPath)
	var clusterWarnings []string
	for i := range clusters {
		switch {
		case newP.KeepsTalos():
			allErrs = append(allErrs, validator.ValidateKubernetes(&clusters[i])...)
		case named:
			allErrs = append(allErrs, validator.Validate(&clusters[i])...)
		}
		clusterWarnings = append(clusterWarnings, plan.ClusterWarnings(&clusters[i])...)
	}
	warnings = append(warnings, summarize(clusterWarnings, "more Clusters have a single control-plane Machine")...)
	if named && newP.Spec.TalosVersion != "" {
		declared, err := declaredElsewhere(ctx, w.Client, w.ControlPlanes, newP, clusters)
		if err != nil {
			return warnings, apierrors.NewInternalError(err)
		}
		warnings = append(warnings, summarize(declared, "more objects declare another Talos version than spec.talosVersion")...)
	}
	if named {
		releases := w.Releases
		if releases == nil {
			releases = &talos.ReleaseLister{}
		}
		secrets := w.SecretReader
		if secrets == nil {
			secrets = w.Client
		}
		pathErrs, pathWarnings := explainPaths(ctx, secrets, releases, validator, newP, clusters, specPath)
		allErrs, warnings = append(allErrs, pathErrs...), append(warnings, pathWarnings...)
		kubeletRepo := cmp.Or(w.KubeletRepository, kubernetes.DefaultKubeletRepository)
		pathErrs, pathWarnings = explainVersions(ctx, secrets, releases, kubeletRepo, validator, newP, clusters, specPath)
		allErrs, warnings = append(allErrs, pathErrs...), append(warnings, pathWarnings...)
	}

	missing, err := missingHealthChecks(ctx, w.Client, newP.Namespace, newP.Spec.HealthChecks)
	if err != nil {
		return warnings, apierrors.NewInternalError(err)
	}
	warnings = append(warnings, missingHealthCheckWarnings(missing)...)

	if oldP != nil {
		errs, err := w.validateTargetChange(ctx, oldP, newP, specPath)
		if err != nil {
			return warnings, apierrors.NewInternalError(err)
		}
		allErrs = append(allErrs, errs...)
	}

	return warnings, invalid("TalosUpgradePolicy", newP.Name, allErrs)
}

// validateTargetChange refuses a new talosVersion or installer while a
// rollout of the policy is in progress: Machines of one Cluster would end up
// on different targets.
func (w *TalosUpgradePolicy) validateTargetChange(ctx context.Context, oldP, newP *upgradev1.TalosUpgradePolicy, specPath *field.Path) (field.ErrorList, error) {
	versionChanged := !talos.SameVersion(oldP.Spec.TalosVersion, newP.Spec.TalosVersion)
	installerChanged := !equality.Semantic.DeepEqual(oldP.Spec.Installer, newP.Spec.Installer)
	sourceChanged := oldP.Spec.CAPIDriven() != newP.Spec.CAPIDriven()
	if !versionChanged && !installerChanged && !sourceChanged {
		return nil, nil
	}
	inProgress, err := upgradesOf(ctx, w.Client, newP.Namespace, index.UpgradeInProgressPolicyField, newP.Name, (*upgradev1.TalosUpgrade).InProgress)
	if err != nil || len(inProgress) == 0 {
		return nil, err
	}
	names := make([]string, 0, len(inProgress))
	for i := range inProgress {
		names = append(names, fmt.Sprintf("%q (Cluster %q)", inProgress[i].Name, inProgress[i].Spec.ClusterName))
	}
	msg := fmt.Sprintf("cannot change while rollouts of this policy are in progress: TalosUpgrade %s; "+
		"wait for them to complete, or set cancel: true on them and wait for them to stop, then change the target (paused and bypass may change at any time)",
		strings.Join(names, ", "))
	var allErrs field.ErrorList
	if versionChanged {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("talosVersion"), msg))
	}
	if installerChanged {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("installer"), msg))
	}
	if sourceChanged {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("targetFrom"), msg))
	}
	return allErrs, nil
}

// maxClusterWarnings is how many per-Cluster warnings a response carries
// before it summarises the rest.
const maxClusterWarnings = 5

// summarize returns the first maxClusterWarnings warnings and a count of the
// rest, described by more.
func summarize(warnings []string, more string) []string {
	if len(warnings) <= maxClusterWarnings {
		return warnings
	}
	return append(warnings[:maxClusterWarnings:maxClusterWarnings], fmt.Sprintf("%d %s", len(warnings)-maxClusterWarnings, more))
}

// declaredElsewhere warns, for each control plane (its own annotations, read
// through controlPlanes) and MachineDeployment (its spec.template.metadata)
// of the policy's Clusters that declares another Talos version than the
// policy's target (upgradev1.DesiredTalosVersionAnnotation), that its
// version wins for its Machines: the two places disagree, which is allowed
// (a pool held back) but worth knowing. A control plane that cannot be read
// (not created yet, its CRD not installed) declares nothing yet.
func declaredElsewhere(ctx context.Context, c client.Reader, controlPlanes ObjectReader, p *upgradev1.TalosUpgradePolicy, clusters []plan.ClusterVersions) ([]string, error) {
	var warnings []string
	for _, cluster := range clusters {
		if cluster.Name == "" {
			continue
		}
		if w := controlPlaneDeclares(ctx, c, controlPlanes, p, cluster.Name); w != "" {
			warnings = append(warnings, w)
		}
		mds := &clusterv1.MachineDeploymentList{}
		if err := c.List(ctx, mds, client.InNamespace(p.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
			return nil, fmt.Errorf("listing the MachineDeployments of Cluster %s: %w", cluster.Name, err)
		}
		for _, md := range mds.Items {
			v := strings.TrimSpace(md.Spec.Template.Annotations[upgradev1.DesiredTalosVersionAnnotation])
			if v == "" || talos.SameVersion(v, p.Spec.TalosVersion) {
				continue
			}
			warnings = append(warnings, fmt.Sprintf("MachineDeployment %s of Cluster %s declares Talos %q in spec.template.metadata.annotations[%s]: it wins over spec.talosVersion %s for its Machines",
				md.Name, cluster.Name, v, upgradev1.DesiredTalosVersionAnnotation, p.Spec.TalosVersion))
		}
	}
	return warnings, nil
}

// controlPlaneDeclares returns the warning of declaredElsewhere for the
// control plane of Cluster name, "" when it declares the policy's target,
// nothing, or cannot be read.
func controlPlaneDeclares(ctx context.Context, c client.Reader, controlPlanes ObjectReader, p *upgradev1.TalosUpgradePolicy, name string) string {
	if controlPlanes == nil {
		return ""
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, cluster); err != nil || !cluster.Spec.ControlPlaneRef.IsDefined() {
		return ""
	}
	ref := cluster.Spec.ControlPlaneRef
	cp, err := controlPlanes.Get(ctx, ref.APIGroup, ref.Kind, p.Namespace, ref.Name)
	if err != nil {
		return ""
	}
	v := strings.TrimSpace(cp.GetAnnotations()[upgradev1.DesiredTalosVersionAnnotation])
	if v == "" || talos.SameVersion(v, p.Spec.TalosVersion) {
		return ""
	}
	return fmt.Sprintf("%s %s of Cluster %s declares Talos %q in metadata.annotations[%s]: it wins over spec.talosVersion %s for its Machines",
		ref.Kind, ref.Name, name, v, upgradev1.DesiredTalosVersionAnnotation, p.Spec.TalosVersion)
}

// oldBypass returns the bypass of an old policy, or nil on create.
func oldBypass(oldP *upgradev1.TalosUpgradePolicy) *upgradev1.BypassSpec {
	if oldP == nil {
		return nil
	}
	return oldP.Spec.Bypass
}

// missingHealthCheckWarnings warns about referenced ClusterHealthChecks that
// do not exist yet: they may be applied later, in any order, so this is no
// reason to refuse, but the controller's preflight holds the rollout until
// they exist.
func missingHealthCheckWarnings(missing []string) []string {
	warnings := make([]string, 0, len(missing))
	for _, name := range missing {
		warnings = append(warnings, fmt.Sprintf(
			"ClusterHealthCheck %q does not exist in this namespace: no rollout of this policy starts until it is created", name))
	}
	return warnings
}
