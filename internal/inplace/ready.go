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

package inplace

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// This file answers, for a rollout whose target comes from CAPI, "will CAPI
// hand this Cluster's Machines to Tollgate, or replace them": it checks what
// CAPI needs to call Tollgate's in-place update extension (the extension
// discovered, serving the Cluster's namespace, alone) and forecasts each
// MachineDeployment rollout under way as CAPI's rollout planner will decide
// it. The InPlaceUpdatesReady condition says it before CAPI replaces a
// Machine Tollgate could have updated, where Tollgate can see it coming.

// ObjectReader reads an object of a provider's kind, known by its group
// and kind (internal/templates' Reader).
type ObjectReader interface {
	Get(ctx context.Context, group, kind, namespace, name string) (*unstructured.Unstructured, error)
}

// Readiness reads whether CAPI hands the Machines of a Cluster to Tollgate,
// for the InPlaceUpdatesReady condition of a rollout whose target comes
// from CAPI.
type Readiness struct {
	// Reader reads the Namespaces, CAPI's ExtensionConfigs, the
	// MachineDeployments and the MachineSets: the manager's cache.
	Reader client.Reader
	// Objects reads the templates the Machines are made from.
	Objects ObjectReader
	// Extension is what answers CAPI, asked the same (Replaced).
	Extension *Extension
}

// controlPlanesInPlace are the control-plane kinds whose providers ask
// CAPI's in-place update extension (CanUpdateMachine) before they replace a
// Machine. The Talos control-plane provider is not one of them.
var controlPlanesInPlace = []string{"KubeadmControlPlane"}

// Condition returns the InPlaceUpdatesReady condition of cluster.
func (r Readiness) Condition(ctx context.Context, cluster *clusterv1.Cluster) metav1.Condition {
	cond := func(status metav1.ConditionStatus, reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: upgradev1.InPlaceUpdatesReadyCondition, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	unknown := func(err error) metav1.Condition {
		return cond(metav1.ConditionUnknown, upgradev1.InPlaceUpdatesUnknownReason, "cannot tell whether CAPI updates the Machines in place: %v", err)
	}

	ns := &corev1.Namespace{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: cluster.Namespace}, ns); err != nil {
		return unknown(fmt.Errorf("reading namespace %s: %w", cluster.Namespace, err))
	}
	configs := &runtimev1.ExtensionConfigList{}
	if err := r.Reader.List(ctx, configs); err != nil {
		return unknown(fmt.Errorf("listing CAPI's ExtensionConfigs: %w", err))
	}
	ext := extensionFor(configs.Items, ns)
	switch {
	case len(ext.serving) == 0 && len(ext.discovered) == 0:
		return cond(metav1.ConditionFalse, upgradev1.ExtensionNotDiscoveredReason,
			"CAPI has discovered no in-place update extension, and replaces Machines for every change: %s", ext.why())
	case len(ext.serving) == 0:
		return cond(metav1.ConditionFalse, upgradev1.NamespaceNotSelectedReason,
			"the in-place update extension of ExtensionConfig %s does not serve namespace %s, whose Machines CAPI replaces for every change: label the namespace with %s=%s, as config/extension's namespaceSelector asks",
			strings.Join(ext.discovered, ", "), cluster.Namespace, upgradev1.InPlaceUpdatesNamespaceLabel, upgradev1.InPlaceUpdatesEnabled)
	case len(ext.serving) > 1:
		return cond(metav1.ConditionFalse, upgradev1.ExtensionConflictReason,
			"more than one in-place update extension serves namespace %s (ExtensionConfigs %s): CAPI supports one and updates nothing in place; keep Tollgate's",
			cluster.Namespace, strings.Join(ext.serving, ", "))
	}

	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Reader.List(ctx, mds, client.InNamespace(cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return unknown(fmt.Errorf("listing MachineDeployments: %w", err))
	}
	slices.SortFunc(mds.Items, func(a, b clusterv1.MachineDeployment) int { return strings.Compare(a.Name, b.Name) })
	var unsupported, ahead, served []string
	for i := range mds.Items {
		md := &mds.Items[i]
		desired, err := r.machineTemplates(ctx, md.Namespace, md.Spec.Template.Spec)
		if err != nil {
			return unknown(fmt.Errorf("MachineDeployment %s: %w", md.Name, err))
		}
		if _, err := r.Extension.Claims.TemplateDesired(desired.Infrastructure); err != nil {
			unsupported = append(unsupported, fmt.Sprintf("MachineDeployment %s makes Machines from %s %s: %v",
				md.Name, md.Spec.Template.Spec.InfrastructureRef.Kind, md.Spec.Template.Spec.InfrastructureRef.Name, err))
			continue
		}
		served = append(served, md.Name)
		replaced, err := r.replacementAhead(ctx, md, desired)
		if err != nil {
			return unknown(fmt.Errorf("MachineDeployment %s: %w", md.Name, err))
		}
		ahead = append(ahead, replaced...)
	}
	switch {
	case len(ahead) > 0:
		return cond(metav1.ConditionFalse, upgradev1.ReplacementAheadReason,
			"CAPI replaces Machines for changes Tollgate does not make in place (it makes the Talos image's): %s; to keep the Machines, change only the Talos image and roll out the rest after",
			strings.Join(ahead, "; "))
	case len(unsupported) > 0:
		return cond(metav1.ConditionFalse, upgradev1.ProvidersNotSupportedReason,
			"CAPI replaces the Machines of providers whose Talos Tollgate cannot change in place: %s", strings.Join(unsupported, "; "))
	}
	message := fmt.Sprintf("CAPI hands the Talos image changes of %s to Tollgate (ExtensionConfig %s)", machineDeploymentsPhrase(served), ext.serving[0])
	if ref := cluster.Spec.ControlPlaneRef; ref.IsDefined() && !slices.Contains(controlPlanesInPlace, ref.Kind) {
		message += fmt.Sprintf("; %s %s replaces its Machines on a change, its provider does not ask in-place update extensions", ref.Kind, ref.Name)
	}
	return cond(metav1.ConditionTrue, upgradev1.InPlaceUpdatesReadyReason, "%s", message)
}

// machineDeploymentsPhrase names mds for a message.
func machineDeploymentsPhrase(mds []string) string {
	switch len(mds) {
	case 0:
		return "no MachineDeployment"
	case 1:
		return "MachineDeployment " + mds[0]
	}
	return "MachineDeployments " + strings.Join(mds, ", ")
}

// extensions are the ExtensionConfigs with in-place update handlers CAPI
// discovered, and why there are none.
type extensions struct {
	// discovered are the ExtensionConfigs with an UpdateMachine handler;
	// serving those of them whose namespaceSelector selects the namespace.
	discovered, serving []string
	// undiscovered say, per ExtensionConfig without handlers, why.
	undiscovered []string
}

// why says why no in-place update extension was discovered.
func (e extensions) why() string {
	if len(e.undiscovered) == 0 {
		return "no ExtensionConfig registers one; install Tollgate's (config/extension, in the release's components)"
	}
	return strings.Join(e.undiscovered, "; ")
}

// extensionFor sorts configs by what they do for namespace ns.
func extensionFor(configs []runtimev1.ExtensionConfig, ns *corev1.Namespace) extensions {
	var e extensions
	slices.SortFunc(configs, func(a, b runtimev1.ExtensionConfig) int { return strings.Compare(a.Name, b.Name) })
	for i := range configs {
		ec := &configs[i]
		updates := slices.ContainsFunc(ec.Status.Handlers, func(h runtimev1.ExtensionHandler) bool {
			return h.RequestHook.Hook == runtimecatalog.HookName(runtimehooksv1.UpdateMachine)
		})
		if !updates {
			if why := undiscovered(ec); why != "" {
				e.undiscovered = append(e.undiscovered, why)
			}
			continue
		}
		e.discovered = append(e.discovered, ec.Name)
		if selects(ec.Spec.NamespaceSelector, ns) {
			e.serving = append(e.serving, ec.Name)
		}
	}
	return e
}

// undiscovered says why CAPI knows no handler of ec, "" when it has some
// (none of them an in-place update hook).
func undiscovered(ec *runtimev1.ExtensionConfig) string {
	if len(ec.Status.Handlers) > 0 {
		return ""
	}
	c := conditions.Get(ec, runtimev1.ExtensionConfigDiscoveredCondition)
	switch {
	case c == nil:
		return fmt.Sprintf("ExtensionConfig %s was never discovered: CAPI discovers extensions only with its RuntimeSDK feature disruption.Gate on (and calls in-place update hooks only with InPlaceUpdates on too)", ec.Name)
	case c.Status != metav1.ConditionTrue:
		return fmt.Sprintf("CAPI failed to discover ExtensionConfig %s: %s", ec.Name, c.Message)
	}
	return ""
}

// selects reports whether selector (an ExtensionConfig's namespaceSelector,
// every namespace when nil) selects ns.
func selects(selector *metav1.LabelSelector, ns *corev1.Namespace) bool {
	if selector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	return err == nil && sel.Matches(labels.Set(ns.Labels))
}

// machineTemplates reads what Machines of spec are made from.
func (r Readiness) machineTemplates(ctx context.Context, namespace string, spec clusterv1.MachineSpec) (Templates, error) {
	t := Templates{Machine: spec}
	infra := spec.InfrastructureRef
	obj, err := r.Objects.Get(ctx, infra.APIGroup, infra.Kind, namespace, infra.Name)
	if err != nil {
		return t, err
	}
	t.Infrastructure = obj.Object
	if boot := spec.Bootstrap.ConfigRef; boot.IsDefined() {
		obj, err := r.Objects.Get(ctx, boot.APIGroup, boot.Kind, namespace, boot.Name)
		if err != nil {
			return t, err
		}
		t.Bootstrap = obj.Object
	}
	return t, nil
}

// replacementAhead forecasts the rollout of md: for each of its MachineSets
// that still has Machines and makes them otherwise than md asks, the
// changes CAPI would replace them for.
func (r Readiness) replacementAhead(ctx context.Context, md *clusterv1.MachineDeployment, desired Templates) ([]string, error) {
	sets := &clusterv1.MachineSetList{}
	if err := r.Reader.List(ctx, sets, client.InNamespace(md.Namespace), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md.Name}); err != nil {
		return nil, fmt.Errorf("listing its MachineSets: %w", err)
	}
	var ahead []string
	for i := range sets.Items {
		ms := &sets.Items[i]
		if ptr.Deref(ms.Spec.Replicas, 0) == 0 && ptr.Deref(ms.Status.Replicas, 0) == 0 {
			continue
		}
		current, err := r.machineTemplates(ctx, ms.Namespace, ms.Spec.Template.Spec)
		if err != nil {
			return nil, fmt.Errorf("MachineSet %s: %w", ms.Name, err)
		}
		// What the extension would answer CAPI, on the same objects: the
		// fields it claims, the policy, and whether the provider admits
		// the change (a dry-run).
		changes, err := r.Extension.Replaced(ctx, ms, current, desired)
		if err != nil {
			return nil, fmt.Errorf("MachineSet %s: %w", ms.Name, err)
		}
		if len(changes) > 0 {
			ahead = append(ahead, fmt.Sprintf("MachineDeployment %s, the Machines of MachineSet %s (%s)", md.Name, ms.Name, strings.Join(changes, ", ")))
		}
	}
	slices.Sort(ahead)
	return ahead, nil
}
