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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/labels/format"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// machineSetManager is the field manager CAPI's MachineSet controller
// writes the desired InfraMachine and BootstrapConfig of a Machine it
// updates in place with (completeMoveMachine); the dry-runs write as it.
const machineSetManager = "capi-machineset"

// readWorld reads what judge needs of p's Cluster, and dry-runs the writes
// of the desired provider objects CAPI would make. It reads only what the
// decision needs: nothing past a missing Cluster, opt-in or policy, and no
// dry-run for a change of nothing.
func (e *Extension) readWorld(ctx context.Context, p proposal, fv fieldsVerdict) world {
	var w world
	cluster := &clusterv1.Cluster{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: p.clusterName}, cluster); err != nil {
		if !apierrors.IsNotFound(err) {
			w.err = fmt.Errorf("reading Cluster %s/%s: %w", p.namespace, p.clusterName, err)
		}
		return w
	}
	w.cluster = cluster.Name
	ns := &corev1.Namespace{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: p.namespace}, ns); err != nil {
		w.err = fmt.Errorf("reading namespace %s: %w", p.namespace, err)
		return w
	}
	if w.optedIn = ns.Labels[upgradev1.InPlaceUpdatesNamespaceLabel] == upgradev1.InPlaceUpdatesEnabled; !w.optedIn {
		return w
	}
	if name := cluster.Labels[upgradev1.PolicyLabel]; name != "" {
		policy := &upgradev1.TalosUpgradePolicy{}
		switch err := e.Client.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, policy); {
		case err == nil:
			w.policy = policy
		case !apierrors.IsNotFound(err):
			w.err = fmt.Errorf("reading TalosUpgradePolicy %s: %w", name, err)
			return w
		}
	}
	if w.policy == nil {
		return w
	}
	upgrade := &upgradev1.TalosUpgrade{}
	switch err := e.Client.Get(ctx, client.ObjectKeyFromObject(cluster), upgrade); {
	case err == nil:
		w.upgrade = upgrade
	case !apierrors.IsNotFound(err):
		w.err = fmt.Errorf("reading TalosUpgrade %s/%s: %w", cluster.Namespace, cluster.Name, err)
		return w
	}
	if fv.claimed == 0 {
		return w
	}
	if !p.template && fv.talosImage {
		declared, err := declaredVersion(ctx, e.Client, &unstructured.Unstructured{Object: p.infra().desired})
		if err != nil {
			w.err = err
			return w
		}
		w.declared = declared
	}
	w.refused, w.err = e.dryRuns(ctx, p)
	return w
}

// dryRuns asks the apiserver, and the providers' webhooks behind it,
// whether they admit the desired InfraMachine and BootstrapConfig CAPI
// would write: a server-side apply, dry-run, as field manager
// capi-machineset. For a MachineSet, on the objects of one of its Machines,
// as CAPI's completeMoveMachine computes them from the desired templates.
// It returns the refusals, and an error when it could not tell.
func (e *Extension) dryRuns(ctx context.Context, p proposal) ([]string, error) {
	objects, err := e.desiredObjects(ctx, p)
	if err != nil {
		return nil, err
	}
	var refused []string
	for _, obj := range objects {
		err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
			client.FieldOwner(machineSetManager), client.ForceOwnership, client.DryRunAll)
		switch {
		case err == nil:
		case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
			refused = append(refused, fmt.Sprintf("the provider refuses the change of %s %s, which CAPI writes before it hands the Machine over (%s)",
				obj.GetKind(), obj.GetName(), err))
		default:
			return nil, fmt.Errorf("asking whether the provider admits the change of %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return refused, nil
}

// desiredObjects returns the provider objects CAPI writes for p: those of
// a Machine request as the request carries them; for a MachineSet, those
// of one Machine of the current MachineSet (the first by name), made from
// the desired templates as CAPI's MachineSet controller makes them (the
// template's spec; no labels; the cloned-from and update-in-progress
// annotations).
func (e *Extension) desiredObjects(ctx context.Context, p proposal) ([]*unstructured.Unstructured, error) {
	if !p.template {
		var objects []*unstructured.Unstructured
		for _, o := range []*object{p.infra(), p.bootstrap()} {
			if o != nil {
				u := &unstructured.Unstructured{Object: o.desired}
				if u.GetNamespace() == "" {
					u.SetNamespace(p.namespace)
				}
				objects = append(objects, u)
			}
		}
		return objects, nil
	}
	machines := &clusterv1.MachineList{}
	if err := e.Client.List(ctx, machines, client.InNamespace(p.namespace),
		client.MatchingLabels{clusterv1.MachineSetNameLabel: format.MustFormatValue(p.machineSet)}); err != nil {
		return nil, fmt.Errorf("listing the Machines of MachineSet %s: %w", p.machineSet, err)
	}
	machines.Items = slices.DeleteFunc(machines.Items, func(m clusterv1.Machine) bool { return !m.DeletionTimestamp.IsZero() })
	if len(machines.Items) == 0 {
		return nil, fmt.Errorf("MachineSet %s/%s has no Machine to ask its provider about", p.namespace, p.machineSet)
	}
	slices.SortFunc(machines.Items, func(a, b clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	m := &machines.Items[0]
	var objects []*unstructured.Unstructured
	for _, t := range []struct {
		o   *object
		ref clusterv1.ContractVersionedObjectReference
	}{
		{p.infra(), m.Spec.InfrastructureRef},
		{p.bootstrap(), m.Spec.Bootstrap.ConfigRef},
	} {
		if t.o == nil || !t.ref.IsDefined() {
			continue
		}
		current, err := readObject(ctx, e.Client, schema.GroupKind{Group: t.ref.APIGroup, Kind: t.ref.Kind}, m.Namespace, t.ref.Name)
		if err != nil {
			return nil, fmt.Errorf("reading %s %s of Machine %s/%s: %w", t.ref.Kind, t.ref.Name, m.Namespace, m.Name, err)
		}
		desired, err := fromTemplate(t.o.desired, current)
		if err != nil {
			return nil, err
		}
		objects = append(objects, desired)
	}
	return objects, nil
}

// fromTemplate returns the object CAPI's MachineSet controller writes for
// current from template (computeDesiredInfraMachine, then
// completeMoveMachine).
func fromTemplate(template map[string]any, current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t := &unstructured.Unstructured{Object: template}
	spec, _, err := unstructured.NestedFieldCopy(template, "spec", "template", "spec")
	if err != nil {
		return nil, fmt.Errorf("reading spec.template.spec of %s %s: %w", t.GetKind(), t.GetName(), err)
	}
	gk := t.GroupVersionKind().GroupKind()
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(t.GetAPIVersion())
	u.SetKind(strings.TrimSuffix(t.GetKind(), templateSuffix))
	u.SetNamespace(current.GetNamespace())
	u.SetName(current.GetName())
	u.SetUID(current.GetUID())
	u.SetAnnotations(map[string]string{
		clusterv1.TemplateClonedFromNameAnnotation:      t.GetName(),
		clusterv1.TemplateClonedFromGroupKindAnnotation: gk.String(),
		clusterv1.UpdateInProgressAnnotation:            "",
	})
	if spec != nil {
		if err := unstructured.SetNestedField(u.Object, spec, "spec"); err != nil {
			return nil, fmt.Errorf("writing the spec of %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return u, nil
}
