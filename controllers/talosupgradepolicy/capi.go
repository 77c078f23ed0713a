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

package talosupgradepolicy

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/inplace"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines;machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=*,verbs=get

// capiTarget returns the Talos version CAPI asks of a Cluster whose policy
// takes its target from CAPI: the version the InfraMachines of the Machines
// CAPI handed over for an in-place update name. The current target is kept
// while some Machine handed over still asks for it (a rollout is not
// retargeted under a Machine); otherwise the lowest version asked for, so
// that several MachineDeployments changed at once are updated one version
// after the other. current when nothing is asked: the rollout stays as it
// ended.
func (r *Reconciler) capiTarget(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, cluster *clusterv1.Cluster, current string) (string, error) {
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(cluster.Namespace), client.MatchingFields{index.MachineClusterNameField: cluster.Name}); err != nil {
		return "", fmt.Errorf("listing the Machines of Cluster %s: %w", klog.KObj(cluster), err)
	}
	var asked []string
	for i := range machines.Items {
		m := &machines.Items[i]
		h, err := r.Claims.ReadHandover(ctx, r.Client, m, policy.Spec.Installer)
		if err != nil {
			// CAPI asks for what Tollgate does not make in place; the
			// Machine's UpdateMachine answer says why.
			ctrl.LoggerFrom(ctx).V(2).Info("Machine marked for an in-place update is not handed over", "Machine", klog.KObj(m), "reason", err.Error())
			continue
		}
		if h == nil {
			continue
		}
		if current != "" && talos.SameVersion(h.Version, current) {
			return current, nil
		}
		asked = append(asked, h.Version)
	}
	if len(asked) == 0 && current == "" {
		// Nothing handed over yet: the rollout is created on what the
		// templates boot, so that it says, before CAPI acts, whether CAPI
		// will hand the Machines to Tollgate (its InPlaceUpdatesReady
		// condition).
		return r.templatesTarget(ctx, cluster)
	}
	if len(asked) == 0 {
		return current, nil
	}
	slices.SortFunc(asked, func(a, b string) int {
		c, _ := talos.CompareVersions(a, b)
		return c
	})
	return asked[0], nil
}

// templatesTarget returns the Talos version the InfraMachine templates of
// the Cluster's MachineDeployments boot, the lowest when they differ: what
// CAPI asks of the Cluster while it hands no Machine over. "" when no
// template names a version Tollgate can read (none exists yet, or its
// provider is not one Tollgate supports).
func (r *Reconciler) templatesTarget(ctx context.Context, cluster *clusterv1.Cluster) (string, error) {
	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Client.List(ctx, mds, client.InNamespace(cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return "", fmt.Errorf("listing the MachineDeployments of Cluster %s: %w", klog.KObj(cluster), err)
	}
	var versions []string
	for i := range mds.Items {
		ref := mds.Items[i].Spec.Template.Spec.InfrastructureRef
		mapping, err := r.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
		if err != nil {
			continue // A provider not installed (yet): nothing to read.
		}
		template := &unstructured.Unstructured{}
		template.SetGroupVersionKind(mapping.GroupVersionKind)
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, template); err != nil {
			if apierrors.IsNotFound(err) {
				continue // Not created yet: the MachineDeployment waits for it too.
			}
			return "", fmt.Errorf("reading %s %s of MachineDeployment %s: %w", ref.Kind, ref.Name, klog.KObj(&mds.Items[i]), err)
		}
		if h, err := r.Claims.TemplateDesired(template.Object); err == nil {
			versions = append(versions, h.Version)
		}
	}
	if len(versions) == 0 {
		return "", nil
	}
	return slices.MinFunc(versions, func(a, b string) int {
		c, _ := talos.CompareVersions(a, b)
		return c
	}), nil
}

// created passes create events only: a MachineDeployment created after
// its Cluster opted in may give a Cluster whose target comes from CAPI its
// first target (templatesTarget).
var created = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return true },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// machineToPolicy maps a Machine (or a MachineDeployment) to the policy of
// its Cluster, when the Cluster is of this shard.
func (r *Reconciler) machineToPolicy(ctx context.Context, o client.Object) []ctrl.Request {
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name}, cluster); err != nil {
		return nil // Gone, or the cache not started: the Cluster's own events follow.
	}
	if r.WatchFilterValue != "" && cluster.Labels[clusterv1.WatchLabel] != r.WatchFilterValue {
		return nil
	}
	return clusterToPolicy(ctx, cluster)
}

// handoverChanged passes the Machine events that may change what CAPI asks
// of a Cluster: a Machine marked for an in-place update, or no longer.
var handoverChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return inplace.Marked(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return inplace.Marked(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return inplace.Marked(e.ObjectOld) != inplace.Marked(e.ObjectNew) },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
