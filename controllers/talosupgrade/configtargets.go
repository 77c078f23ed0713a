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

package talosupgrade

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
)

// This file answers "which machine configuration should a node run": the
// one its CAPI objects say, read from the templates whose Machines are not
// replaced when their patches change (templates.Reader's
// ControlPlaneConfigTarget and MachineDeploymentConfigTargets say which).
// Tollgate brings those changes to the nodes in place, through the gate.

// configTemplateRetry is how often the TalosConfigTemplate of a
// MachineDeployment that could not be read is read again: templates are
// not watched (see templates.Reader.MachineDeploymentConfigTargets), and
// one may be created after the MachineDeployment that names it.
const configTemplateRetry = time.Minute

// reconcileConfigTargets reads the patches of the templates whose Machines
// are not replaced when they change (see internal/templates): those of the
// Cluster's TalosControlPlane when its rolloutStrategy is OnDelete, and
// those of the TalosConfigTemplate of each of its MachineDeployments that
// rolls out OnDelete.
func (r *Reconciler) reconcileConfigTargets(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.Upgrade.Spec.CAPIDriven() || r.Templates == nil || s.Cluster == nil {
		return ctrl.Result{}, nil
	}
	reader := r.templateReader()
	s.ConfigTargets = map[string]*disruption.ConfigTarget{}
	if t, cp := reader.ControlPlaneConfigTarget(ctx, s.Cluster); t != nil {
		s.ConfigTargets[disruption.ControlPlaneConfigSource] = t
		if cp != nil {
			r.watchConfigTemplates(ctx, cp)
		}
	}
	unread, err := reader.MachineDeploymentConfigTargets(ctx, s.Cluster, s.ConfigTargets)
	if err != nil || !unread {
		return ctrl.Result{}, err
	}
	return requeueAfter(configTemplateRetry), nil
}

// watchConfigTemplates watches the kind of obj, a control plane, once: an
// edit of a TalosControlPlane's patches, or of the Talos version a control
// plane declares, reconciles the rollout of its Cluster.
func (r *Reconciler) watchConfigTemplates(ctx context.Context, obj *unstructured.Unstructured) {
	if r.tracker == nil {
		return
	}
	watched := &unstructured.Unstructured{}
	watched.SetGroupVersionKind(obj.GroupVersionKind())
	if err := r.tracker.Watch(ctrl.LoggerFrom(ctx), watched, handler.EnqueueRequestsFromMapFunc(r.configTemplateToUpgrades)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Watching Talos templates", "kind", obj.GetKind())
	}
}

// configTemplateToUpgrades maps a control plane to the rollouts of the
// Clusters it is the control plane of.
func (r *Reconciler) configTemplateToUpgrades(ctx context.Context, o client.Object) []reconcile.Request {
	clusters := &clusterv1.ClusterList{}
	if err := r.Client.List(ctx, clusters, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	kind := o.GetObjectKind().GroupVersionKind().Kind
	var requests []reconcile.Request
	for _, c := range clusters.Items {
		if ref := c.Spec.ControlPlaneRef; ref.Name == o.GetName() && (ref.Kind == kind || kind == "" && ref.Kind == machineconfig.TalosControlPlaneKind) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	return requests
}
