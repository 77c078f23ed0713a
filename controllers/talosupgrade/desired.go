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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// This file reads where the Cluster's own objects say its Machines should go
// (upgradev1.DesiredTalosVersionAnnotation): its control plane's
// annotations and its MachineDeployments' template annotations. Which
// version each Machine goes to is decided in internal/disruption
// (Rollout.TargetOf); a Machine that neither makes declares its own, read
// with it.

// reconcileDesiredVersions reads what the Cluster's control plane and
// MachineDeployments declare. A control plane that cannot be read yet (not
// created, its CRD not installed) declares nothing until it can: it is
// watched once read, and the Cluster's changes reconcile the rollout too.
func (r *Reconciler) reconcileDesiredVersions(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.Upgrade.Spec.CAPIDriven() || s.Cluster == nil {
		return ctrl.Result{}, nil
	}
	var controlPlane map[string]string
	if ref := s.Cluster.Spec.ControlPlaneRef; ref.IsDefined() && r.Templates != nil {
		cp, err := r.templateReader().Get(ctx, ref.APIGroup, ref.Kind, s.Cluster.Namespace, ref.Name)
		switch {
		case err == nil:
			controlPlane = cp.GetAnnotations()
			r.watchConfigTemplates(ctx, cp)
		case apierrors.IsNotFound(err):
		default:
			ctrl.LoggerFrom(ctx).V(2).Info("Reading the control plane for its desired Talos version", "kind", ref.Kind, "name", ref.Name, "err", err.Error())
		}
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Client.List(ctx, mds, client.InNamespace(s.Cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: s.Cluster.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the MachineDeployments of Cluster %s: %w", klog.KObj(s.Cluster), err)
	}
	s.Declared = disruption.DeclaredBy(s.Cluster, controlPlane, mds.Items)
	return ctrl.Result{}, nil
}

// setDesiredVersions sets status.targets and the DesiredVersions condition,
// and tells with an event when a declared version stops the Machines of its
// object: they do not start, the rest of the Cluster goes on.
func (r *Reconciler) setDesiredVersions(u *upgradev1.TalosUpgrade, s *scope) {
	if s.Machines == nil {
		return // Not read in this reconcile: left as they were.
	}
	targets, c := s.Targets()
	u.Status.Targets = targets
	if c == nil {
		conditions.Delete(u, upgradev1.DesiredVersionsCondition)
		return
	}
	c.ObservedGeneration = u.Generation
	if previous := conditions.Get(u, upgradev1.DesiredVersionsCondition); c.Status == metav1.ConditionFalse && (previous == nil || previous.Message != c.Message) {
		reason := "DesiredVersionUnreachable"
		if c.Reason == upgradev1.DesiredVersionInvalidReason {
			reason = "DesiredVersionInvalid"
		}
		r.event(s, corev1.EventTypeWarning, reason, "Plan", "%s", c.Message)
	}
	conditions.Set(u, *c)
}
