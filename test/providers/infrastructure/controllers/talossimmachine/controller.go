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

package talossimmachine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
)

var (
	errNilClient = errors.New("the machine reconciler needs a client")
	errNilHosts  = errors.New("the machine reconciler needs Hosts to run its machines")
	errNoKind    = errors.New("the machine reconciler needs the Kind it reconciles")
)

// Object is what the controller needs of a kind of machine of the
// provider: its conditions, what it boots, its provider ID, failure domain
// and status, which every kind shares.
type Object interface {
	client.Object
	GetConditions() []metav1.Condition
	SetConditions(conditions []metav1.Condition)
	// BootImage is what the machine boots (hosts.ParseImage).
	BootImage() string
	GetProviderID() string
	SetProviderID(id string)
	GetFailureDomain() string
	GetMachineStatus() *infrav1.TalosSimMachineStatus
}

// Kind is a kind of machine the controller reconciles.
type Kind struct {
	// Name is the kind's name.
	Name string
	// New returns an empty object of the kind; NewList an empty list.
	New     func() Object
	NewList func() client.ObjectList
}

var (
	// MachineKind is TalosSimMachine, whose image is mutable (the family of
	// Metal3, Proxmox, Nutanix).
	MachineKind = Kind{
		Name:    "TalosSimMachine",
		New:     func() Object { return &infrav1.TalosSimMachine{} },
		NewList: func() client.ObjectList { return &infrav1.TalosSimMachineList{} },
	}
	// CloudMachineKind is TalosSimCloudMachine, whose spec is immutable
	// and image an opaque ID (the family of the cloud providers).
	CloudMachineKind = Kind{
		Name:    "TalosSimCloudMachine",
		New:     func() Object { return &infrav1.TalosSimCloudMachine{} },
		NewList: func() client.ObjectList { return &infrav1.TalosSimCloudMachineList{} },
	}
)

// Reconciler reconciles the machines of one Kind.
type Reconciler struct {
	// Kind is the kind of machine reconciled.
	Kind Kind
	// Client reads (from the manager's cache) and writes the management
	// cluster.
	Client client.Client
	// APIReader reads Secrets (bootstrap data, kubeconfigs) from the
	// apiserver, so that the manager caches no Secret; Client when nil.
	APIReader client.Reader
	// Hosts runs the machines.
	Hosts hosts.Hosts
	// WatchFilterValue, when set, limits the controller to objects with
	// the cluster.x-k8s.io/watch-filter label of that value.
	WatchFilterValue string

	workloads workloadClients
}

// SetupWithManager registers the controller with mgr: it reconciles a
// machine on its own changes, its Machine's (the bootstrap data
// named, for example) and its Cluster's (unpaused, infrastructure
// provisioned).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		return errNilClient
	}

	if r.Hosts == nil {
		return errNilHosts
	}

	if r.Kind.New == nil {
		return errNoKind
	}

	if r.APIReader == nil {
		r.APIReader = r.Client
	}

	log := ctrl.LoggerFrom(ctx)

	clusterToMachines, err := util.ClusterToTypedObjectsMapper(mgr.GetClient(), r.Kind.NewList(), mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("mapping Clusters to %ss: %w", r.Kind.Name, err)
	}

	err = ctrl.NewControllerManagedBy(mgr).
		For(r.Kind.New()).
		Named(strings.ToLower(r.Kind.Name)).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		Watches(&clusterv1.Machine{},
			handler.EnqueueRequestsFromMapFunc(util.MachineToInfrastructureMapFunc(infrav1.GroupVersion.WithKind(r.Kind.Name))),
		).
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(clusterToMachines),
			builder.WithPredicates(predicates.ClusterPausedTransitionsOrInfrastructureProvisioned(mgr.GetScheme(), log)),
		).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the %s controller: %w", r.Kind.Name, err)
	}

	return nil
}

// Reconcile boots the node of a machine and registers its Node, or removes
// both when it is deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	tsm := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, tsm); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}

		return ctrl.Result{}, fmt.Errorf("reading %s %s: %w", r.Kind.Name, req.NamespacedName, err)
	}

	s := &scope{tsm: tsm}

	if err := r.readOwners(ctx, s); err != nil {
		return ctrl.Result{}, err
	}

	if s.cluster != nil {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KObj(s.machine), "Cluster", klog.KObj(s.cluster)))
	}

	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, s.cluster, tsm); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}

	if tsm.GetDeletionTimestamp().IsZero() && s.machine != nil {
		if added, err := finalizers.EnsureFinalizer(ctx, r.Client, tsm, infrav1.MachineFinalizer); err != nil || added {
			return ctrl.Result{}, err
		}
	}

	helper, err := patch.NewHelper(tsm, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}

	defer func() {
		setReadyCondition(s)

		if err := helper.Patch(ctx, tsm, patch.WithOwnedConditions{Conditions: []string{infrav1.ReadyCondition}}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if !tsm.GetDeletionTimestamp().IsZero() {
		return r.reconcileDelete(ctx, s)
	}

	if s.machine == nil {
		s.wait(infrav1.WaitingForMachineReason, "Waiting for the Machine controller to set the owner reference")

		return ctrl.Result{}, nil
	}

	return r.reconcileNormal(ctx, s)
}

// readOwners reads the owner Machine, its Cluster and the Cluster's
// TalosSimCluster into s, before any phase runs. A machine being deleted
// may have lost them.
func (r *Reconciler) readOwners(ctx context.Context, s *scope) error {
	deleting := !s.tsm.GetDeletionTimestamp().IsZero()

	machine, err := util.GetOwnerMachine(ctx, r.Client, metav1.ObjectMeta{Namespace: s.tsm.GetNamespace(), OwnerReferences: s.tsm.GetOwnerReferences()})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading the owner Machine of %s %s: %w", r.Kind.Name, klog.KObj(s.tsm), err)
	}

	if machine == nil {
		return nil
	}

	s.machine = machine

	cluster, err := util.GetClusterFromMetadata(ctx, r.Client, machine.ObjectMeta)
	switch {
	case err == nil:
		s.cluster = cluster
	case deleting:
		return nil
	default:
		return fmt.Errorf("reading the Cluster of Machine %s: %w", klog.KObj(machine), err)
	}

	if ref := cluster.Spec.InfrastructureRef; ref.IsDefined() && ref.GroupKind() == infrav1.GroupVersion.WithKind("TalosSimCluster").GroupKind() {
		tsc := &infrav1.TalosSimCluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, tsc); err != nil {
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("reading TalosSimCluster %s/%s: %w", cluster.Namespace, ref.Name, err)
			}
		} else {
			s.infraCluster = tsc
		}
	}

	return nil
}

// clusterOf returns the Cluster a machine's node belongs to: its
// Cluster's, else the one its provider ID or cluster-name label names;
// false when none is known (no node was ever booted).
func clusterOf(s *scope) (client.ObjectKey, bool) {
	if s.cluster != nil {
		return client.ObjectKeyFromObject(s.cluster), true
	}

	if rest, ok := strings.CutPrefix(s.tsm.GetProviderID(), infrav1.ProviderIDPrefix); ok {
		if parts := strings.Split(rest, "/"); len(parts) == 3 {
			return client.ObjectKey{Namespace: parts[0], Name: parts[1]}, true
		}
	}

	if name := s.tsm.GetLabels()[clusterv1.ClusterNameLabel]; name != "" {
		return client.ObjectKey{Namespace: s.tsm.GetNamespace(), Name: name}, true
	}

	return client.ObjectKey{}, false
}

// providerID is the provider ID of the machine name of cluster.
func providerID(cluster client.ObjectKey, name string) string {
	return fmt.Sprintf("%s%s/%s/%s", infrav1.ProviderIDPrefix, cluster.Namespace, cluster.Name, name)
}
