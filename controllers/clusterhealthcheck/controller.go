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

// Package clusterhealthcheck implements the controller of
// ClusterHealthCheck: it reports whether the check can run, and the last
// result of the check in every Cluster whose rollout runs it. A Job check's
// results are those the TalosUpgrades recorded; an http or prometheus check
// the controller runs itself (probes.go), on its interval, in every Cluster
// whose unfinished rollout lists it in its status, and the rollouts read the
// results it records.
package clusterhealthcheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/probe"
)

var errNilClient = errors.New("the ClusterHealthCheck controller needs a client")

// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=clusterhealthchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=clusterhealthchecks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=talosupgrades,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconciler reconciles ClusterHealthCheck objects.
type Reconciler struct {
	// Client reads and writes through the manager's cache; it reads
	// Secrets (the Clusters' kubeconfigs, the checks' headers and CAs) from
	// the apiserver, as the manager's client does.
	Client client.Client
	// WatchFilterValue is the value of the cluster.x-k8s.io/watch-filter
	// label that objects must carry to be reconciled; empty for all. The
	// http and prometheus checks run only for the rollouts that carry it.
	WatchFilterValue string
	// Prober runs the http and prometheus checks; one reading Secrets with
	// Client when nil.
	Prober *probe.Prober
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		return errNilClient
	}
	if r.Prober == nil {
		r.Prober = &probe.Prober{Client: r.Client}
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&upgradev1.ClusterHealthCheck{}).
		Watches(&upgradev1.TalosUpgrade{}, handler.EnqueueRequestsFromMapFunc(upgradeToChecks)).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), ctrl.LoggerFrom(ctx), r.WatchFilterValue)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the ClusterHealthCheck controller: %w", err)
	}
	return nil
}

// upgradeToChecks maps a TalosUpgrade to the checks its plan references.
func upgradeToChecks(_ context.Context, o client.Object) []ctrl.Request {
	u, ok := o.(*upgradev1.TalosUpgrade)
	if !ok {
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(u.Spec.HealthChecks))
	for _, ref := range u.Spec.HealthChecks {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: u.Namespace, Name: ref.Name}})
	}
	return reqs
}

// Reconcile updates the status of a ClusterHealthCheck.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	check := &upgradev1.ClusterHealthCheck{}
	if err := r.Client.Get(ctx, req.NamespacedName, check); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading ClusterHealthCheck %s: %w", req.NamespacedName, err)
	}
	helper, err := patch.NewHelper(check, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		opts := []patch.Option{patch.WithOwnedConditions{Conditions: []string{upgradev1.HealthCheckReadyCondition}}}
		if reterr == nil {
			opts = append(opts, patch.WithStatusObservedGeneration{})
		}
		if err := helper.Patch(ctx, check, opts...); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	invalid := plan.ValidateClusterHealthCheck(check)
	setReady(check, invalid)

	upgrades := &upgradev1.TalosUpgradeList{}
	if err := r.Client.List(ctx, upgrades, client.InNamespace(check.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the TalosUpgrades of namespace %s: %w", check.Namespace, err)
	}
	if check.Spec.IsProbe() {
		return r.reconcileProbes(ctx, check, upgrades.Items, invalid), nil
	}
	check.Status.Results = results(check.Name, upgrades.Items)
	ctrl.LoggerFrom(ctx).V(4).Info("Summarised ClusterHealthCheck results", "ClusterHealthCheck", klog.KObj(check), "clusters", len(check.Status.Results))
	return ctrl.Result{}, nil
}

// setReady sets the Ready condition: whether the check can run, and if not
// why (invalid).
func setReady(check *upgradev1.ClusterHealthCheck, invalid field.ErrorList) {
	valid, invalidReason := upgradev1.TemplateValidReason, upgradev1.InvalidTemplateReason
	if check.Spec.HTTP != nil || check.Spec.Prometheus != nil {
		valid, invalidReason = upgradev1.ProbeValidReason, upgradev1.InvalidProbeReason
	}
	if len(invalid) > 0 {
		conditions.Set(check, metav1.Condition{
			Type: upgradev1.HealthCheckReadyCondition, Status: metav1.ConditionFalse, Reason: invalidReason,
			Message: invalid.ToAggregate().Error(),
		})
		return
	}
	conditions.Set(check, metav1.Condition{Type: upgradev1.HealthCheckReadyCondition, Status: metav1.ConditionTrue, Reason: valid})
}

// results returns the last result of the check in every Cluster whose
// rollout references it, sorted by Cluster.
func results(check string, upgrades []upgradev1.TalosUpgrade) []upgradev1.ClusterHealthCheckResult {
	var out []upgradev1.ClusterHealthCheckResult
	for _, u := range upgrades {
		for _, st := range u.Status.HealthChecks {
			if st.Name != check {
				continue
			}
			out = append(out, upgradev1.ClusterHealthCheckResult{
				Cluster: u.Spec.ClusterName, Result: st.Result, LastRunTime: st.LastRunTime, Message: st.Message,
				ConsecutiveSuccesses: st.ConsecutiveSuccesses, NextRunTime: st.NextRunTime,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.Compare(out[i].Cluster, out[j].Cluster) < 0 })
	return out
}
