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
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/inplace"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/talosnode"
	"github.com/tollgate-dev/tollgate/internal/templates"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

// Finalizer lets the controller undo what it did in the workload cluster
// (cordons, Jobs, skip-remediation annotations) before a TalosUpgrade goes.
const Finalizer = "upgrade.tollgate.dev/talosupgrade"

// ImageChecker checks that an installer image exists, with the credentials of
// an optional dockerconfigjson pull Secret.
type ImageChecker func(ctx context.Context, ref string, pullSecret *corev1.Secret) error

var (
	errNilDependency = errors.New("a required dependency of the TalosUpgrade controller is nil")
)

// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=talosupgrades,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=talosupgrades/status;talosupgrades/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=upgrade.tollgate.dev,resources=clusterhealthchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=*,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles TalosUpgrade objects.
type Reconciler struct {
	// Client reads and writes management objects through the manager's cache.
	Client client.Client
	// APIReader reads Secrets live, so that no Secret is cached.
	APIReader client.Reader
	// ClusterCache gives clients to, and watches on, the workload clusters.
	ClusterCache clustercache.ClusterCache
	// Dialer opens Talos API clients to the Machines' nodes.
	Dialer talos.Dialer
	// CheckImage checks that an installer image exists.
	CheckImage ImageChecker
	// Recorder records events on TalosUpgrades.
	Recorder events.EventRecorder
	// WatchFilterValue is the value of the cluster.x-k8s.io/watch-filter
	// label that objects must carry to be reconciled; empty for all.
	WatchFilterValue string
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
	// Releases lists the Talos releases of installer repositories and the
	// Kubernetes releases of kubelet repositories, for Auto upgrade paths;
	// a lister caching for two minutes when nil.
	Releases *talos.ReleaseLister
	// Claims are the fields of CAPI's objects whose changes Tollgate makes
	// in place: for a rollout whose target comes from CAPI, they say what
	// a Machine handed over is to run; inplace.DefaultClaims when empty.
	Claims inplace.Claims
	// Templates reads the Cluster's MachineDeployments, control plane and
	// InfraMachine templates, for the TemplatesOnTarget condition: the
	// manager's cache, which keeps informers of the few templates of a
	// fleet. nil leaves the condition unset.
	Templates client.Reader

	controller controller.Controller
	// tracker watches the kinds of the Talos templates whose patches the
	// nodes should run, once each is seen (see reconcileConfigTargets).
	tracker *external.ObjectTracker
	// unknownKinds are the provider kinds no CRD served a moment ago; see
	// templateReader.
	unknownKinds templates.KindCache
	// calls are the upgrade calls in flight, made outside of the reconcile
	// workers; see talosnode.UpgradeCalls.
	calls *talosnode.UpgradeCalls
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.APIReader == nil || r.ClusterCache == nil || r.Dialer == nil || r.CheckImage == nil || r.Recorder == nil {
		return errNilDependency
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.calls = talosnode.NewUpgradeCalls(r.nodes(), r.Now)
	if r.Claims.Infrastructure == nil {
		r.Claims = inplace.DefaultClaims()
	}
	if r.Releases == nil {
		r.Releases = &talos.ReleaseLister{TTL: 2 * time.Minute, MinInterval: 30 * time.Second}
	}
	// A shard (--watch-filter) is a set of Clusters, their policies and
	// their TalosUpgrades, all labelled with it. Machines and
	// ClusterHealthChecks carry no shard label (CAPI's MachineSets do not
	// put one on the Machines they create): their events are mapped to the
	// rollouts they concern and kept for those of this shard (inShard).
	inShard := predicates.ResourceHasFilterLabel(mgr.GetScheme(), ctrl.LoggerFrom(ctx), r.WatchFilterValue)
	b := ctrl.NewControllerManagedBy(mgr).
		For(&upgradev1.TalosUpgrade{}, builder.WithPredicates(inShard)).
		WithOptions(options).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToUpgrade), builder.WithPredicates(inShard)).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.machineToUpgrade)).
		Watches(&clusterv1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(r.machineToUpgrade)).
		Watches(&upgradev1.ClusterHealthCheck{}, handler.EnqueueRequestsFromMapFunc(r.healthCheckToUpgrades)).
		Watches(&upgradev1.TalosUpgradePolicy{}, handler.EnqueueRequestsFromMapFunc(r.policyToUpgrades), builder.WithPredicates(inShard, admittingChanged)).
		WatchesRawSource(r.ClusterCache.GetClusterSource("talosupgrade", clusterToUpgrade)).
		WatchesRawSource(source.Channel(r.calls.Done, &handler.EnqueueRequestForObject{}))
	if r.Templates != nil {
		// What decides whether CAPI hands Machines to Tollgate (see
		// inplace.go): the ExtensionConfigs CAPI discovers and the labels of
		// the namespaces they select.
		b = b.Watches(&runtimev1.ExtensionConfig{}, handler.EnqueueRequestsFromMapFunc(r.capiDrivenUpgrades)).
			Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToUpgrades), builder.WithPredicates(labelsChanged))
	}
	c, err := b.Build(r)
	if err != nil {
		return fmt.Errorf("creating the TalosUpgrade controller: %w", err)
	}
	r.controller = c
	if r.Templates != nil {
		log := ctrl.LoggerFrom(ctx)
		r.tracker = &external.ObjectTracker{Controller: c, Cache: mgr.GetCache(), Scheme: mgr.GetScheme(), PredicateLogger: &log}
	}
	return nil
}

// clusterToUpgrade maps a Cluster to its TalosUpgrade, which has its name.
func clusterToUpgrade(_ context.Context, o client.Object) []ctrl.Request {
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}}}
}

// machineToUpgrade maps a Machine to the TalosUpgrade of its Cluster, when
// that rollout is of this shard.
func (r *Reconciler) machineToUpgrade(ctx context.Context, o client.Object) []ctrl.Request {
	name, ok := o.GetLabels()[clusterv1.ClusterNameLabel]
	if !ok || name == "" {
		return nil
	}
	key := client.ObjectKey{Namespace: o.GetNamespace(), Name: name}
	if r.WatchFilterValue != "" {
		u := &upgradev1.TalosUpgrade{}
		if err := r.Client.Get(ctx, key, u); err != nil || !r.inShard(u) {
			// No rollout of this shard (a NotFound, or another shard's).
			// Any other error of a cache read is the cache not being
			// started, and then the rollout is reconciled when it is.
			return nil
		}
	}
	return []ctrl.Request{{NamespacedName: key}}
}

// inShard reports whether o is served by this manager: always without a
// watch filter, else when o is labelled cluster.x-k8s.io/watch-filter with
// its value.
func (r *Reconciler) inShard(o client.Object) bool {
	return r.WatchFilterValue == "" || o.GetLabels()[clusterv1.WatchLabel] == r.WatchFilterValue
}

// shardSelector returns the list options that keep the objects of this
// shard: none without a watch filter.
func (r *Reconciler) shardSelector() []client.ListOption {
	if r.WatchFilterValue == "" {
		return nil
	}
	return []client.ListOption{client.MatchingLabels{clusterv1.WatchLabel: r.WatchFilterValue}}
}

// healthCheckToUpgrades maps a ClusterHealthCheck to the TalosUpgrades of its
// namespace, of this shard, that reference it.
func (r *Reconciler) healthCheckToUpgrades(ctx context.Context, o client.Object) []ctrl.Request {
	list := &upgradev1.TalosUpgradeList{}
	opts := append([]client.ListOption{client.InNamespace(o.GetNamespace()), client.MatchingFields{index.UpgradeHealthCheckField: o.GetName()}}, r.shardSelector()...)
	if err := r.Client.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing TalosUpgrades for a ClusterHealthCheck", "ClusterHealthCheck", klog.KObj(o))
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// policyToUpgrades maps a TalosUpgradePolicy to its rollouts that are not
// finished: those waiting for admission say what its admission gate waits
// for (see admissionGate), and those it paused or unpaused give back or ask
// for their workload connection (see needsWorkload).
func (r *Reconciler) policyToUpgrades(ctx context.Context, o client.Object) []ctrl.Request {
	list := &upgradev1.TalosUpgradeList{}
	opts := append([]client.ListOption{client.InNamespace(o.GetNamespace()), client.MatchingFields{index.UpgradePolicyNameField: o.GetName()}}, r.shardSelector()...)
	if err := r.Client.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing TalosUpgrades for a TalosUpgradePolicy", "TalosUpgradePolicy", klog.KObj(o))
		return nil
	}
	var reqs []ctrl.Request
	for i := range list.Items {
		u := &list.Items[i]
		if !u.Finished() {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(u)})
		}
	}
	return reqs
}

// capiDrivenUpgrades maps an ExtensionConfig to the rollouts of this shard
// whose target comes from CAPI.
func (r *Reconciler) capiDrivenUpgrades(ctx context.Context, _ client.Object) []ctrl.Request {
	list := &upgradev1.TalosUpgradeList{}
	if err := r.Client.List(ctx, list, r.shardSelector()...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing TalosUpgrades whose target comes from CAPI")
		return nil
	}
	return capiDriven(list)
}

// namespaceToUpgrades maps a Namespace to its rollouts of this shard whose
// target comes from CAPI.
func (r *Reconciler) namespaceToUpgrades(ctx context.Context, o client.Object) []ctrl.Request {
	list := &upgradev1.TalosUpgradeList{}
	if err := r.Client.List(ctx, list, append([]client.ListOption{client.InNamespace(o.GetName())}, r.shardSelector()...)...); err != nil {
		// A namespace the manager does not serve (--namespace) has no
		// rollout of its.
		ctrl.LoggerFrom(ctx).V(4).Info("Not listing TalosUpgrades of a Namespace", "Namespace", o.GetName(), "reason", err.Error())
		return nil
	}
	return capiDriven(list)
}

// capiDriven returns the requests of the rollouts of list whose target
// comes from CAPI.
func capiDriven(list *upgradev1.TalosUpgradeList) []ctrl.Request {
	var reqs []ctrl.Request
	for i := range list.Items {
		if u := &list.Items[i]; u.Spec.CAPIDriven() {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(u)})
		}
	}
	return reqs
}

// labelsChanged passes the updates of an object's labels only: every
// rollout is reconciled when the manager starts, so the Namespaces listed
// then need not map to theirs.
var labelsChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc:  predicate.LabelChangedPredicate{}.Update,
}

// admittingChanged passes the updates of a policy whose Admitting condition
// changed: its admission gate, or its pause. The other changes of a policy
// reach its rollouts through their spec, which the policy controller writes.
var admittingChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldPolicy, okOld := e.ObjectOld.(*upgradev1.TalosUpgradePolicy)
		newPolicy, okNew := e.ObjectNew.(*upgradev1.TalosUpgradePolicy)
		if !okOld || !okNew {
			return true
		}
		before, after := conditions.Get(oldPolicy, upgradev1.PolicyAdmittingCondition), conditions.Get(newPolicy, upgradev1.PolicyAdmittingCondition)
		if before == nil || after == nil {
			return before != after
		}
		return before.Status != after.Status || before.Reason != after.Reason || before.Message != after.Message
	},
}

// Reconcile moves a rollout forward by as many steps as it can without
// waiting.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	upgrade, err := r.readUpgrade(ctx, req)
	if err != nil || upgrade == nil {
		return ctrl.Result{}, err
	}
	if !r.inShard(upgrade) {
		// Another shard's rollout, asked for by an event mapped before it
		// was labelled: its own manager serves it.
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("Cluster", klog.KRef(upgrade.Namespace, upgrade.Spec.ClusterName))
	ctx = ctrl.LoggerInto(ctx, log)

	s := &scope{Rollout: disruption.Rollout{Upgrade: upgrade, Now: r.Now()}, base: newBase(upgrade)}
	if err := r.restoreLog(s); err != nil {
		return ctrl.Result{}, err
	}

	// Add the finalizer first, so nothing is done in a workload cluster that
	// cannot be undone.
	if upgrade.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(upgrade, Finalizer) {
		controllerutil.AddFinalizer(upgrade, Finalizer)
		return ctrl.Result{}, writeUpgrade(ctx, r.Client, s)
	}

	defer func() {
		s.abandonRequests()
		if upgrade.DeletionTimestamp.IsZero() {
			r.updateStatus(s)
			if reterr == nil {
				upgrade.Status.ObservedGeneration = upgrade.Generation
			}
		}
		if err := writeUpgrade(ctx, r.Client, s); err != nil && !apierrors.IsNotFound(err) {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if !upgrade.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}

// readUpgrade reads the TalosUpgrade of a request; nil when it is gone.
//
// The status is the write-ahead log of the rollout, so a rollout that may
// act is read live, not from the cache: no side effect is ever decided on a
// stale copy (writes are fenced too, see writeUpgrade). A rollout at rest
// (atRest) is read from the cache: a reconcile of it makes no side effect, a
// stale copy of it costs at most a conflict on its fenced write and another
// reconcile, and so a converged fleet is reconciled (at a restart, a resync)
// without a request per rollout.
func (r *Reconciler) readUpgrade(ctx context.Context, req ctrl.Request) (*upgradev1.TalosUpgrade, error) {
	cached := &upgradev1.TalosUpgrade{}
	if err := r.Client.Get(ctx, req.NamespacedName, cached); err == nil && r.atRest(ctx, cached) {
		return cached, nil
	}
	upgrade := &upgradev1.TalosUpgrade{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, upgrade); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading TalosUpgrade %s: %w", req.NamespacedName, err)
	}
	return upgrade, nil
}

// atRest reports whether a rollout can take no step: it is finished and not
// admitted, not being deleted, no Machine of it is in flight or still
// disrupted, none is being removed, and its Cluster (as cached) holds no
// workload connection that would have to be given back.
func (r *Reconciler) atRest(ctx context.Context, u *upgradev1.TalosUpgrade) bool {
	if !u.Finished() || !u.DeletionTimestamp.IsZero() || u.Annotations[upgradev1.AdmittedAnnotation] != "" || len(u.Status.Removals) > 0 {
		return false
	}
	for _, st := range u.Status.Machines {
		if !st.Phase.Ended() || st.Cordoned || st.SkipRemediationSet {
			return false
		}
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: u.Namespace, Name: u.Spec.ClusterName}, cluster); err != nil {
		return false
	}
	return !WorkloadConnectionFilter(cluster)
}

// phaseFunc is one phase of a reconcile. A phase that must stop the
// reconcile sets scope.stop.
type phaseFunc func(ctx context.Context, s *scope) (ctrl.Result, error)

// reconcileNormal runs the phases in order. Each phase reads what the ones
// before it filled in the scope (see scope), so the reconcile ends at the
// first phase that fails or stops it: no phase ever acts on what an earlier
// one could not read. A gate computed on partial data would be open.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	phases := []phaseFunc{
		r.reconcileCluster,
		r.reconcileConfigTargets,
		r.reconcileDesiredVersions,
		r.reconcileKubernetesVersions,
		r.reconcileMachines,
		r.reconcileTemplates,
		r.reconcileInPlace,
		r.reconcileBypasses,
		r.reconcileConnection,
		r.reconcileWorkload,
		r.reconcileHealthCheckObjects,
		r.reconcilePreflight,
		r.recheckUnavailable,
		r.recheckDeclaredPaths,
		r.reconcileNodeReads,
		r.reconcileHealthChecks,
		r.reconcileRemovals,
		r.reconcileInFlight,
		r.reconcilePath,
		r.reconcileNextMachines,
		r.reconcileEnd,
		r.reconcileDisconnect,
	}
	res := ctrl.Result{}
	for _, phase := range phases {
		phaseResult, err := phase(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		res = util.LowestNonZeroResult(res, phaseResult)
		if s.stop {
			break
		}
	}
	return res, nil
}

// reconcileDelete undoes what the rollout left in the workload cluster:
// Tollgate's cordons, skip-remediation annotations and Jobs.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.Upgrade, Finalizer) {
		return ctrl.Result{}, nil
	}
	if _, moved := s.Upgrade.Annotations[clusterctlv1.DeleteForMoveAnnotation]; moved {
		// clusterctl move deletes the source copy once the target has its
		// own: the rollout goes on there, so nothing is undone here.
		ctrl.LoggerFrom(ctx).Info("TalosUpgrade deleted by clusterctl move; leaving the workload cluster as it is")
		controllerutil.RemoveFinalizer(s.Upgrade, Finalizer)
		return ctrl.Result{}, nil
	}
	if err := r.readCluster(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.Cluster != nil {
		// No deletion of the Cluster's Machines waits for a rollout that is
		// gone.
		if err := r.readMachines(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.releaseDeletionHooks(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.Connected() {
		// Only a Cluster with the workload connection can have anything of
		// Tollgate's in its workload cluster (see connection.go).
		if err := r.readMachines(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		if _, err := r.reconcileWorkload(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		if s.workload != nil {
			if err := r.releaseAll(ctx, s); err != nil {
				return ctrl.Result{}, err
			}
		}
		if err := r.setConnectionAnnotation(ctx, s, false); err != nil {
			return ctrl.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(s.Upgrade, Finalizer)
	return ctrl.Result{}, nil
}

// releaseAll uncordons what Tollgate cordoned, removes the skip-remediation
// annotations it added and deletes its Jobs in the workload cluster.
//
// The Jobs are listed live, not from the cache of the workload cluster: the
// cache may not have seen a Job created a moment ago (in this very
// reconcile, a health check that came due as the rollout ended) or may lag
// behind a watch that was cut, and a Job it misses would outlive the
// connection, with nothing left to delete it.
func (r *Reconciler) releaseAll(ctx context.Context, s *scope) error {
	var errs []error
	for i := range s.Upgrade.Status.Machines {
		errs = append(errs, r.release(ctx, s, &s.Upgrade.Status.Machines[i]))
	}
	live, err := r.ClusterCache.GetUncachedClient(ctx, client.ObjectKeyFromObject(s.Cluster))
	if err != nil {
		errs = append(errs, fmt.Errorf("getting a client of the workload cluster to delete Tollgate's Jobs: %w", err))
	} else if err := workloadjob.Cleanup(ctx, live, s.Upgrade.Name, s.Upgrade.Spec.ClusterName); err != nil {
		errs = append(errs, fmt.Errorf("deleting Tollgate's Jobs in the workload cluster: %w", err))
	}
	return kerrors.NewAggregate(errs)
}

// nodes reads from and acts on the Machines' nodes over their Talos API:
// every call to a node goes through it (talosnode.Nodes.With), dialed by
// r.Dialer.
func (r *Reconciler) nodes() talosnode.Nodes {
	return talosnode.Nodes{Dialer: r.Dialer}
}

// upgradeCalls returns the upgrade calls of the controller, made by
// SetupWithManager, or here for a Reconciler set up without it.
func (r *Reconciler) upgradeCalls() *talosnode.UpgradeCalls {
	if r.calls == nil {
		r.calls = talosnode.NewUpgradeCalls(r.nodes(), r.Now)
	}
	return r.calls
}
