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

package taloscontrolplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

// waitAfter is when a control plane that waits on something no watch
// reports (etcd's health, a missing template) is looked at again.
const waitAfter = 5 * time.Second

var (
	errNilClient = errors.New("the TalosControlPlane reconciler needs a client")
	errNilEtcd   = errors.New("the TalosControlPlane reconciler needs an Etcd to check the members before a scale-down")
)

// Reconciler reconciles TalosControlPlanes.
type Reconciler struct {
	// Client reads (from the manager's cache) and writes the management
	// cluster.
	Client client.Client
	// APIReader reads the Cluster's kubeconfig Secret, to delete a
	// removed Machine's Node; Client when nil.
	APIReader client.Reader
	// Etcd reads and changes the etcd members when a control-plane Machine
	// is removed, for example &TalosEtcd{Reader: mgr.GetAPIReader()}.
	Etcd Etcd
	// ScaleDown is how a Machine is taken out: LeaveEtcdFirst (CACPPT
	// v0.5.x, the default) or PreTerminateHook.
	ScaleDown ScaleDown
	// WatchFilterValue, when set, limits the controller to objects with
	// the cluster.x-k8s.io/watch-filter label of that value.
	WatchFilterValue string
}

// scope is what one reconcile reads before it decides, and what it writes.
type scope struct {
	// tcp is the TalosControlPlane, patched at the end.
	tcp *controlplanev1.TalosControlPlane
	// cluster is its owner Cluster.
	cluster *clusterv1.Cluster
	// machines are its control-plane Machines, by name (readMachines).
	machines map[string]*clusterv1.Machine
	// outdated are the names of the Machines to replace (readMachines).
	outdated map[string]bool
	// requeue is when to look again at what no watch reports (a Machine at
	// its pre-terminate hook whose etcd member cannot leave yet).
	requeue time.Duration
}

// SetupWithManager registers the controller with mgr: it reconciles a
// TalosControlPlane on its own changes, its Machines' and its Cluster's.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		return errNilClient
	}

	if r.Etcd == nil {
		return errNilEtcd
	}

	if r.APIReader == nil {
		r.APIReader = r.Client
	}

	switch r.ScaleDown {
	case "":
		r.ScaleDown = LeaveEtcdFirst
	case LeaveEtcdFirst, PreTerminateHook:
	default:
		return fmt.Errorf("unknown ScaleDown %q: use %s or %s", r.ScaleDown, LeaveEtcdFirst, PreTerminateHook)
	}

	log := ctrl.LoggerFrom(ctx)

	err := ctrl.NewControllerManagedBy(mgr).
		For(&controlplanev1.TalosControlPlane{}).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		Owns(&clusterv1.Machine{}).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToControlPlane)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the TalosControlPlane controller: %w", err)
	}

	return nil
}

// clusterToControlPlane maps a Cluster to the TalosControlPlane it names.
func clusterToControlPlane(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*clusterv1.Cluster)
	if !ok {
		return nil
	}

	ref := c.Spec.ControlPlaneRef
	if ref.APIGroup != controlplanev1.GroupVersion.Group || ref.Kind != "TalosControlPlane" {
		return nil
	}

	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}}}
}

// Reconcile makes one change towards the desired control plane, then
// reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	tcp := &controlplanev1.TalosControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, tcp); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}

		return ctrl.Result{}, fmt.Errorf("reading TalosControlPlane %s: %w", req.NamespacedName, err)
	}

	if !tcp.DeletionTimestamp.IsZero() {
		// Its Machines are owned by it: the garbage collector deletes them.
		return ctrl.Result{}, nil
	}

	cluster, err := util.GetOwnerCluster(ctx, r.Client, tcp.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the owner Cluster of TalosControlPlane %s: %w", klog.KObj(tcp), err)
	}

	if cluster == nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Waiting for the Cluster controller to set the owner reference")

		return ctrl.Result{}, nil
	}

	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Cluster", klog.KObj(cluster)))

	if annotations.IsPaused(cluster, tcp) {
		ctrl.LoggerFrom(ctx).V(4).Info("Reconciliation is paused")

		return ctrl.Result{}, nil
	}

	helper, err := patch.NewHelper(tcp, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}

	s := &scope{tcp: tcp, cluster: cluster}

	defer func() {
		setStatus(s)

		if reterr == nil {
			tcp.Status.ObservedGeneration = tcp.Generation
		}

		if err := helper.Patch(ctx, tcp); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if err := r.readMachines(ctx, s); err != nil {
		return ctrl.Result{}, err
	}

	if r.ScaleDown == PreTerminateHook {
		// First: a Machine waiting at the hook blocks its deletion, and the
		// scale-down waits for it.
		if err := r.reconcilePreTerminateHooks(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}

	res, err := r.reconcileMachines(ctx, s)
	if s.requeue > 0 && (res.RequeueAfter == 0 || s.requeue < res.RequeueAfter) {
		res.RequeueAfter = s.requeue
	}

	return res, err
}

// readMachines reads the control-plane Machines of s and which of them are
// outdated.
func (r *Reconciler) readMachines(ctx context.Context, s *scope) error {
	list := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.tcp.Namespace), client.MatchingLabels(machineLabels(s.tcp, s.cluster))); err != nil {
		return fmt.Errorf("listing the Machines of TalosControlPlane %s: %w", klog.KObj(s.tcp), err)
	}

	s.machines = map[string]*clusterv1.Machine{}
	s.outdated = map[string]bool{}

	for i := range list.Items {
		m := &list.Items[i]
		if !util.IsControlledBy(m, s.tcp, controlplanev1.GroupVersion.WithKind("TalosControlPlane").GroupKind()) {
			continue
		}

		s.machines[m.Name] = m

		outdated, err := r.isOutdated(ctx, s.tcp, m)
		if err != nil {
			return err
		}

		s.outdated[m.Name] = outdated
	}

	return nil
}

// isOutdated reports whether a Machine needs a rollout, as CACPPT's
// MachinesNeedingRollout decides it (controllers/controlplane.go): its
// spec.version differs from the TalosControlPlane's, its InfraMachine was
// cloned from another template than spec.infrastructureTemplate (the
// cluster.x-k8s.io/cloned-from-* annotations; one without them is not
// outdated), or its TalosConfig spec differs from the TalosControlPlane's
// (one whose TalosConfig is gone is not).
func (r *Reconciler) isOutdated(ctx context.Context, tcp *controlplanev1.TalosControlPlane, m *clusterv1.Machine) (bool, error) {
	if m.Spec.Version != tcp.Spec.Version {
		return true, nil
	}

	if cloned, err := r.clonedFromAnotherTemplate(ctx, tcp, m); err != nil || cloned {
		return cloned, err
	}

	config := &bootstrapv1.TalosConfig{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, config); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}

		return false, fmt.Errorf("reading the TalosConfig of Machine %s: %w", klog.KObj(m), err)
	}

	cp := tcp.Spec.ControlPlaneConfig
	if config.Spec.GenerateType == bootstrapv1.GenerateTypeInit && cp.InitConfig.GenerateType != "" {
		return !apiequality.Semantic.DeepEqual(config.Spec, cp.InitConfig), nil
	}

	return !apiequality.Semantic.DeepEqual(config.Spec, cp.ControlPlaneConfig), nil
}

// reconcileMachines makes the one change plan chooses.
func (r *Reconciler) reconcileMachines(ctx context.Context, s *scope) (ctrl.Result, error) {
	states := make([]machineState, 0, len(s.machines))
	for _, m := range byAge(s.machines) {
		_, annotated := m.Annotations[clusterv1.DeleteMachineAnnotation]
		states = append(states, machineState{
			name:     m.Name,
			created:  m.CreationTimestamp.Time,
			deleting: !m.DeletionTimestamp.IsZero(),
			// OnDelete: an outdated Machine is not rolled out; one a
			// user deletes is replaced as a scale-up.
			outdated:        s.outdated[m.Name] && !s.tcp.OnDelete(),
			deleteAnnotated: annotated,
			hasNode:         m.Status.NodeRef.IsDefined(),
		})
	}

	next := plan(int(s.tcp.DesiredReplicas()), s.tcp.MaxSurge(), r.ScaleDown, states)
	log := ctrl.LoggerFrom(ctx)

	switch next.action {
	case actionCreate:
		log.Info("Creating a control-plane Machine", "reason", next.reason)

		return r.createMachine(ctx, s)
	case actionRemove:
		return r.removeMachine(ctx, s, s.machines[next.machine], next.reason)
	case actionDeleteNode:
		return r.deleteNode(ctx, s, s.machines[next.machine])
	default:
		log.V(4).Info("Not changing the control plane", "reason", next.reason)

		return ctrl.Result{}, nil
	}
}

// markFalse sets a condition of s's TalosControlPlane to False.
func markFalse(s *scope, t clusterv1.ConditionType, reason string, severity clusterv1.ConditionSeverity, format string, args ...any) { //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
	v1beta1conditions.MarkFalse(s.tcp, t, reason, severity, format, args...)
}
