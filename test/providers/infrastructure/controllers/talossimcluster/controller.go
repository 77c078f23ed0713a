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

package talossimcluster

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
)

var errNilClient = errors.New("the TalosSimCluster reconciler needs a client")

// Reconciler reconciles TalosSimClusters.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// WatchFilterValue, when set, limits the controller to objects with
	// the cluster.x-k8s.io/watch-filter label of that value.
	WatchFilterValue string
}

// SetupWithManager registers the controller with mgr: it reconciles a
// TalosSimCluster on its own changes and on its Cluster's (unpaused, or a
// new owner).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		return errNilClient
	}

	log := ctrl.LoggerFrom(ctx)

	err := ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.TalosSimCluster{}).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(util.ClusterToInfrastructureMapFunc(ctx, infrav1.GroupVersion.WithKind("TalosSimCluster"), mgr.GetClient(), &infrav1.TalosSimCluster{})),
			builder.WithPredicates(predicates.ClusterPausedTransitions(mgr.GetScheme(), log)),
		).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the TalosSimCluster controller: %w", err)
	}

	return nil
}

// Reconcile marks a TalosSimCluster provisioned once its owner Cluster is
// set, with the failure domains of its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	tsc := &infrav1.TalosSimCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, tsc); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}

		return ctrl.Result{}, fmt.Errorf("reading TalosSimCluster %s: %w", req.NamespacedName, err)
	}

	cluster, err := util.GetOwnerCluster(ctx, r.Client, tsc.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading the owner Cluster of TalosSimCluster %s: %w", klog.KObj(tsc), err)
	}

	if cluster != nil {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Cluster", klog.KObj(cluster)))
	}

	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, tsc); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}

	helper, err := patch.NewHelper(tsc, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}

	defer func() {
		if err := helper.Patch(ctx, tsc, patch.WithOwnedConditions{Conditions: []string{infrav1.ReadyCondition}}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	reconcile(tsc, cluster)

	return ctrl.Result{}, nil
}

// reconcile sets the status of tsc, owned by cluster (nil while it has no
// owner).
func reconcile(tsc *infrav1.TalosSimCluster, cluster *clusterv1.Cluster) {
	switch {
	case !tsc.DeletionTimestamp.IsZero():
		conditions.Set(tsc, metav1.Condition{
			Type:    infrav1.ReadyCondition,
			Status:  metav1.ConditionFalse,
			Reason:  infrav1.DeletingReason,
			Message: "The TalosSimCluster is being deleted",
		})
	case cluster == nil:
		conditions.Set(tsc, metav1.Condition{
			Type:    infrav1.ReadyCondition,
			Status:  metav1.ConditionFalse,
			Reason:  infrav1.WaitingForClusterReason,
			Message: "Waiting for the Cluster controller to set the owner reference",
		})
	default:
		tsc.Status.FailureDomains = failureDomains(tsc.Spec.FailureDomains)
		tsc.Status.Initialization.Provisioned = ptr.To(true)
		conditions.Set(tsc, metav1.Condition{
			Type:   infrav1.ReadyCondition,
			Status: metav1.ConditionTrue,
			Reason: infrav1.ReadyReason,
		})
	}
}

// failureDomains are names in the shape of the contract, each suitable for
// control-plane machines.
func failureDomains(names []string) []clusterv1.FailureDomain {
	if len(names) == 0 {
		return nil
	}

	domains := make([]clusterv1.FailureDomain, 0, len(names))
	for _, name := range names {
		domains = append(domains, clusterv1.FailureDomain{Name: name, ControlPlane: ptr.To(true)})
	}

	return domains
}
