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
	"net/http"
	"reflect"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment/mdutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/inplace"
)

// Paths of the replacement webhooks; they differ from CAPI's and the
// providers' own webhook paths.
const (
	machineDeploymentReplacementsPath = "/validate-tollgate-cluster-x-k8s-io-v1beta2-machinedeployment"
	talosControlPlaneReplacementsPath = "/validate-tollgate-controlplane-cluster-x-k8s-io-v1alpha3-taloscontrolplane"
)

// The replacement webhooks use failurePolicy Ignore, as the Cluster webhook
// does: a Tollgate outage must never block CAPI, whose controllers write
// these objects too. They refuse nothing for a Cluster whose policy does
// not ask for it (replacements: Refuse).
//
// +kubebuilder:webhook:verbs=update,path=/validate-tollgate-cluster-x-k8s-io-v1beta2-machinedeployment,mutating=false,failurePolicy=ignore,matchPolicy=Equivalent,groups=cluster.x-k8s.io,resources=machinedeployments,versions=v1beta2,name=replacements.machinedeployment.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:verbs=update,path=/validate-tollgate-controlplane-cluster-x-k8s-io-v1alpha3-taloscontrolplane,mutating=false,failurePolicy=ignore,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=taloscontrolplanes,versions=v1alpha3,name=replacements.taloscontrolplane.upgrade.tollgate.dev,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10

// Replacements refuses, for a Cluster whose policy says replacements:
// Refuse, a change of its MachineDeployment or TalosControlPlane that
// Cluster API would carry out by replacing Machines the policy keeps, and
// says what to change instead. A MachineDeployment change is judged as
// CAPI's rollout planner does: a rollout field of its template (CAPI's
// MachineTemplateUpToDate) under RollingUpdate, unless Tollgate's in-place
// update extension serves the namespace and would make it in place
// (inplace.Extension.Replaced: the fields, the policy, the provider's
// dry-run). A TalosControlPlane change is judged as the Talos control-plane
// provider rolls out (spec.version, spec.infrastructureTemplate,
// spec.controlPlaneConfig.controlplane under RollingUpdate): it never asks
// an in-place update extension.
type Replacements struct {
	// Client reads the Cluster, its policy, the namespace, CAPI's
	// ExtensionConfigs, MachineSets and templates, and dry-runs the writes
	// of the provider objects CAPI would make.
	Client client.Client
	// Claims are the fields Tollgate changes in place.
	Claims inplace.Claims
}

var _ admission.Validator[*clusterv1.MachineDeployment] = &Replacements{}

// ValidateCreate admits every MachineDeployment: a new one replaces no
// Machine.
func (w *Replacements) ValidateCreate(context.Context, *clusterv1.MachineDeployment) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete admits every deletion.
func (w *Replacements) ValidateDelete(context.Context, *clusterv1.MachineDeployment) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate refuses a change of a MachineDeployment that CAPI would
// carry out by replacing Machines its Cluster's policy keeps.
func (w *Replacements) ValidateUpdate(ctx context.Context, oldMD, newMD *clusterv1.MachineDeployment) (admission.Warnings, error) {
	if newMD.Spec.Rollout.Strategy.Type == clusterv1.OnDeleteMachineDeploymentStrategyType {
		return nil, nil // CAPI replaces no Machine: the user deletes them.
	}
	upToDate, res := mdutil.MachineTemplateUpToDate(&oldMD.Spec.Template, &newMD.Spec.Template)
	if upToDate {
		return nil, nil
	}
	policy, err := w.refusingPolicy(ctx, newMD.Namespace, newMD.Spec.ClusterName)
	if err != nil || policy == nil {
		return nil, err
	}
	why, warnings, err := w.replacedFor(ctx, oldMD, newMD, res.LogMessages)
	if err != nil || why == nil {
		return warnings, err
	}
	path := field.NewPath("spec", "template", "spec")
	return warnings, apierrors.NewInvalid(clusterv1.GroupVersion.WithKind("MachineDeployment").GroupKind(), newMD.Name, field.ErrorList{field.Forbidden(path,
		fmt.Sprintf("CAPI would replace the Machines of MachineDeployment %s for this change (%s), which TalosUpgradePolicy %s keeps (spec.replacements: Refuse): %s",
			newMD.Name, strings.Join(why, "; "), policy.Name, machineDeploymentAdvice(policy)))})
}

// machineDeploymentAdvice says what to change instead of a refused
// MachineDeployment change.
func machineDeploymentAdvice(policy *upgradev1.TalosUpgradePolicy) string {
	instead := "change only what Tollgate makes in place (a new Talos image its provider admits, declared if the image is opaque, and the next Kubernetes version), with its in-place update extension serving the namespace"
	if !policy.Spec.CAPIDriven() {
		instead = "move the Talos (and Kubernetes) version with the policy's target instead of the template"
	}
	return instead + "; or set spec.rollout.strategy.type OnDelete and delete the Machines yourself; or set spec.replacements: Warn on the policy to let CAPI replace them through the removal gate"
}

// refusingPolicy returns the policy of Cluster namespace/name when it asks
// for replacements to be refused; nil otherwise (no such Cluster or
// policy: GitOps applies in any order).
func (w *Replacements) refusingPolicy(ctx context.Context, namespace, name string) (*upgradev1.TalosUpgradePolicy, error) {
	cluster := &clusterv1.Cluster{}
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("reading Cluster %s/%s: %w", namespace, name, err))
	}
	policyName := cluster.Labels[upgradev1.PolicyLabel]
	if policyName == "" {
		return nil, nil
	}
	policy := &upgradev1.TalosUpgradePolicy{}
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: policyName}, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("reading TalosUpgradePolicy %s/%s: %w", namespace, policyName, err))
	}
	if policy.Spec.Replacements != upgradev1.ReplacementsRefuse {
		return nil, nil
	}
	return policy, nil
}

// replacedFor returns why CAPI would replace the Machines of oldMD moving
// to newMD (changes, CAPI's words), nil when it would hand them to
// Tollgate's extension instead.
func (w *Replacements) replacedFor(ctx context.Context, oldMD, newMD *clusterv1.MachineDeployment, changes []string) ([]string, admission.Warnings, error) {
	ns := &corev1.Namespace{}
	if err := w.Client.Get(ctx, client.ObjectKey{Name: newMD.Namespace}, ns); err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("reading namespace %s: %w", newMD.Namespace, err))
	}
	configs := &runtimev1.ExtensionConfigList{}
	if err := w.Client.List(ctx, configs); err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("listing CAPI's ExtensionConfigs: %w", err))
	}
	if serving := inplace.Serving(configs.Items, ns); len(serving) != 1 {
		return append(changes, fmt.Sprintf("no in-place update extension serves namespace %s", newMD.Namespace)), nil, nil
	}
	ms, err := w.currentMachineSet(ctx, oldMD)
	if err != nil || ms == nil {
		return nil, nil, err // No Machine to replace.
	}
	current, err := w.templates(ctx, ms.Namespace, ms.Spec.Template.Spec)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	desired, err := w.templates(ctx, newMD.Namespace, newMD.Spec.Template.Spec)
	if apierrors.IsNotFound(err) {
		// GitOps may create the new template after the MachineDeployment:
		// what CAPI will do cannot be told yet.
		return nil, admission.Warnings{fmt.Sprintf("spec.template.spec: %v: whether CAPI would replace the Machines cannot be told until it exists", err)}, nil
	}
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	e := &inplace.Extension{Client: w.Client, Claims: w.Claims}
	why, err := e.Replaced(ctx, ms, current, desired)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	return why, nil, nil
}

// currentMachineSet returns the MachineSet of md that makes Machines from
// its current template and has some; nil when none has.
func (w *Replacements) currentMachineSet(ctx context.Context, md *clusterv1.MachineDeployment) (*clusterv1.MachineSet, error) {
	sets := &clusterv1.MachineSetList{}
	if err := w.Client.List(ctx, sets, client.InNamespace(md.Namespace), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md.Name}); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("listing the MachineSets of MachineDeployment %s: %w", md.Name, err))
	}
	for i := range sets.Items {
		ms := &sets.Items[i]
		if ptr.Deref(ms.Status.Replicas, 0) == 0 && ptr.Deref(ms.Spec.Replicas, 0) == 0 {
			continue
		}
		if up, _ := mdutil.MachineTemplateUpToDate(&ms.Spec.Template, &md.Spec.Template); up {
			return ms, nil
		}
	}
	return nil, nil
}

// templates reads what Machines of spec are made from.
func (w *Replacements) templates(ctx context.Context, namespace string, spec clusterv1.MachineSpec) (inplace.Templates, error) {
	t := inplace.Templates{Machine: spec}
	infra, err := w.readObject(ctx, spec.InfrastructureRef, namespace)
	if err != nil {
		return t, err
	}
	t.Infrastructure = infra.Object
	if ref := spec.Bootstrap.ConfigRef; ref.IsDefined() {
		boot, err := w.readObject(ctx, ref, namespace)
		if err != nil {
			return t, err
		}
		t.Bootstrap = boot.Object
	}
	return t, nil
}

// readObject reads the object ref names, at the version the apiserver
// prefers.
func (w *Replacements) readObject(ctx context.Context, ref clusterv1.ContractVersionedObjectReference, namespace string) (*unstructured.Unstructured, error) {
	mapping, err := w.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		return nil, fmt.Errorf("finding the API of %s %s: %w", ref.Kind, ref.Name, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
	}
	return obj, nil
}

// TalosControlPlaneReplacements is the admission handler of
// TalosControlPlanes (a kind Tollgate has no Go type of): it refuses, for a
// Cluster whose policy says replacements: Refuse, a change the Talos
// control-plane provider rolls out by replacing every control-plane Machine
// (its MachinesNeedingRollout: spec.version, spec.infrastructureTemplate,
// spec.controlPlaneConfig.controlplane), unless it rolls out OnDelete; and a
// decrease of spec.replicas while the provider takes a Machine out of etcd
// and deletes its Node before CAPI consults Tollgate's deletion hook (the
// released v0.5.x; its Machines lack the pre-terminate hook
// PreTerminateTCPCleanupHook of the variant that leaves etcd after it):
// Tollgate could gate nothing of that but what is left, and no order of
// changes avoids it with that provider.
type TalosControlPlaneReplacements struct {
	// Replacements reads the Cluster and its policy.
	Replacements *Replacements
}

// Handle answers an admission request for a TalosControlPlane.
func (w *TalosControlPlaneReplacements) Handle(ctx context.Context, req admission.Request) admission.Response {
	oldObj, newObj := map[string]any{}, map[string]any{}
	if err := json.Unmarshal(req.OldObject.Raw, &oldObj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the old TalosControlPlane: %w", err))
	}
	if err := json.Unmarshal(req.Object.Raw, &newObj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the TalosControlPlane: %w", err))
	}
	var changed []string
	scaledDown := replicas(newObj) < replicas(oldObj)
	if strategy, _, _ := unstructured.NestedString(newObj, "spec", "rolloutStrategy", "type"); strategy == "OnDelete" && !scaledDown {
		return admission.Allowed("")
	}
	for _, f := range [][]string{{"spec", "version"}, {"spec", "infrastructureTemplate", "name"}, {"spec", "infrastructureTemplate", "kind"}, {"spec", "controlPlaneConfig", "controlplane"}} {
		a, _, _ := unstructured.NestedFieldNoCopy(oldObj, f...)
		b, _, _ := unstructured.NestedFieldNoCopy(newObj, f...)
		if !reflect.DeepEqual(a, b) {
			changed = append(changed, strings.Join(f, "."))
		}
	}
	if strategy, _, _ := unstructured.NestedString(newObj, "spec", "rolloutStrategy", "type"); strategy == "OnDelete" {
		changed = nil
	}
	if len(changed) == 0 && !scaledDown {
		return admission.Allowed("")
	}
	u := &unstructured.Unstructured{Object: newObj}
	clusterName := u.GetLabels()[clusterv1.ClusterNameLabel]
	if clusterName == "" {
		for _, o := range u.GetOwnerReferences() {
			if o.Kind == "Cluster" {
				clusterName = o.Name
			}
		}
	}
	if clusterName == "" {
		return admission.Allowed("") // Not a Cluster's control plane yet.
	}
	policy, err := w.Replacements.refusingPolicy(ctx, u.GetNamespace(), clusterName)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if policy == nil {
		return admission.Allowed("")
	}
	slices.Sort(changed)
	var allErrs field.ErrorList
	if scaledDown {
		leavesFirst, err := w.leavesEtcdFirst(ctx, u.GetNamespace(), clusterName)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if leavesFirst {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "replicas"),
				fmt.Sprintf("the Talos control-plane provider takes the Machine it scales down out of etcd and deletes its Node before CAPI consults Tollgate's deletion hook, so Tollgate cannot gate this scale-down, which TalosUpgradePolicy %s asks for (spec.replacements: Refuse): run a control-plane provider that takes the Machine out of etcd at a pre-terminate hook (its Machines carry %s), or set spec.replacements: Warn on the policy to scale down with what is left of the gate (the Removals condition and a RemovalNotGuarded event say what it did not guard)",
					policy.Name, PreTerminateTCPCleanupHook)))
		}
	}
	for _, f := range changed {
		allErrs = append(allErrs, field.Forbidden(field.NewPath(f),
			fmt.Sprintf("the Talos control-plane provider would replace every control-plane Machine of Cluster %s for this change (RollingUpdate), which TalosUpgradePolicy %s keeps (spec.replacements: Refuse): move the control plane with the policy (talosVersion, kubernetesVersion) and set spec.rolloutStrategy.type OnDelete, so that the provider replaces nothing; or set spec.replacements: Warn on the policy",
				clusterName, policy.Name)))
	}
	if len(allErrs) == 0 {
		return admission.Allowed("")
	}
	status := apierrors.NewInvalid(schema.GroupKind{Group: "controlplane.cluster.x-k8s.io", Kind: "TalosControlPlane"}, u.GetName(), allErrs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// replicas returns a TalosControlPlane's spec.replicas, 1 (its default)
// when unset or not a number.
func replicas(obj map[string]any) float64 {
	v, found, err := unstructured.NestedFieldNoCopy(obj, "spec", "replicas")
	if n, ok := v.(float64); found && err == nil && ok {
		return n
	}
	if n, ok := v.(int64); found && err == nil && ok {
		return float64(n)
	}
	return 1
}

// PreTerminateTCPCleanupHook is the pre-terminate hook the unreleased
// variant of the Talos control-plane provider puts on its Machines, at which
// it takes a Machine out of etcd after CAPI drained it (and after Tollgate's
// pre-drain hook released it).
const PreTerminateTCPCleanupHook = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/tcp-cleanup"

// leavesEtcdFirst reports whether the control plane of Cluster
// namespace/name takes a Machine out of etcd before CAPI's deletion hooks:
// one of its Machines lacks the variant's pre-terminate hook.
func (w *TalosControlPlaneReplacements) leavesEtcdFirst(ctx context.Context, namespace, name string) (bool, error) {
	machines := &clusterv1.MachineList{}
	if err := w.Replacements.Client.List(ctx, machines, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: name, clusterv1.MachineControlPlaneLabel: ""}); err != nil {
		return false, fmt.Errorf("listing the control-plane Machines of Cluster %s/%s: %w", namespace, name, err)
	}
	for i := range machines.Items {
		if _, ok := machines.Items[i].Annotations[PreTerminateTCPCleanupHook]; !ok {
			return true, nil
		}
	}
	return false, nil
}
