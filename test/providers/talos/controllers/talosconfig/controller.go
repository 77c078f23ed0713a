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

package talosconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
)

const (
	// DataKey is the key of the machine configuration in a bootstrap data
	// Secret, as CAPI's bootstrap contract names it.
	DataKey = "value"
	// FormatKey is the key of the data's format in a bootstrap data Secret.
	FormatKey = "format"
	// Format is the format of a Talos machine configuration.
	Format = "talos"

	// BundleSecretSuffix is appended to a Cluster's name to name the
	// Secret of its secrets bundle.
	BundleSecretSuffix = "-talos"
	// BundleKey is the key of the secrets bundle in that Secret.
	BundleKey = "bundle"
)

var errNilClient = errors.New("the TalosConfig reconciler needs a client")

// Reconciler reconciles TalosConfigs.
type Reconciler struct {
	// Client reads (from the manager's cache) and writes the management
	// cluster.
	Client client.Client
	// APIReader reads Secrets from the apiserver, so that the manager
	// caches no Secret; Client when nil.
	APIReader client.Reader
	// WatchFilterValue, when set, limits the controller to objects with
	// the cluster.x-k8s.io/watch-filter label of that value.
	WatchFilterValue string
}

// SetupWithManager registers the controller with mgr: it reconciles a
// TalosConfig on its own changes, its Machine's and its Cluster's
// (control plane initialized, endpoint set, unpaused).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		return errNilClient
	}

	if r.APIReader == nil {
		r.APIReader = r.Client
	}

	log := ctrl.LoggerFrom(ctx)

	err := ctrl.NewControllerManagedBy(mgr).
		For(&bootstrapv1.TalosConfig{}).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(machineToConfig)).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToConfigs)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the TalosConfig controller: %w", err)
	}

	return nil
}

// machineToConfig maps a Machine to the TalosConfig it names.
func machineToConfig(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*clusterv1.Machine)
	if !ok {
		return nil
	}

	ref := m.Spec.Bootstrap.ConfigRef
	if ref.APIGroup != bootstrapv1.GroupVersion.Group || ref.Kind != "TalosConfig" {
		return nil
	}

	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}}}
}

// clusterToConfigs maps a Cluster to its TalosConfigs that are not ready.
func (r *Reconciler) clusterToConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	configs := &bootstrapv1.TalosConfigList{}
	if err := r.Client.List(ctx, configs, client.InNamespace(o.GetNamespace()), client.MatchingLabels{clusterv1.ClusterNameLabel: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the TalosConfigs of a Cluster", "Cluster", klog.KObj(o))

		return nil
	}

	var requests []reconcile.Request

	for i := range configs.Items {
		if !configs.Items[i].Status.Ready {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&configs.Items[i])})
		}
	}

	return requests
}

// Reconcile writes the bootstrap data of a TalosConfig once its Machine
// and Cluster allow it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	config := &bootstrapv1.TalosConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, config); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}

		return ctrl.Result{}, fmt.Errorf("reading TalosConfig %s: %w", req.NamespacedName, err)
	}

	if !config.DeletionTimestamp.IsZero() || annotations.HasPaused(config) {
		return ctrl.Result{}, nil
	}

	machine, err := util.GetOwnerMachine(ctx, r.Client, config.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading the owner Machine of TalosConfig %s: %w", klog.KObj(config), err)
	}

	var cluster *clusterv1.Cluster

	if machine != nil {
		if cluster, err = util.GetClusterByName(ctx, r.Client, machine.Namespace, machine.Spec.ClusterName); err != nil {
			return ctrl.Result{}, fmt.Errorf("reading the Cluster of Machine %s: %w", klog.KObj(machine), err)
		}

		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KObj(machine), "Cluster", klog.KObj(cluster)))

		if annotations.IsPaused(cluster, config) {
			ctrl.LoggerFrom(ctx).V(4).Info("Reconciliation is paused")

			return ctrl.Result{}, nil
		}
	}

	helper, err := patch.NewHelper(config, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}

	defer func() {
		v1beta1conditions.SetSummary(config, v1beta1conditions.WithConditions(bootstrapv1.DataSecretAvailableCondition))

		if reterr == nil {
			config.Status.ObservedGeneration = config.Generation
		}

		// The conditions are this controller's alone: what it read may lag
		// its own last write (a cache that has not seen it yet), and a
		// condition patch that conflicted with it would otherwise leave the
		// condition of before behind a ready status for good.
		if err := helper.Patch(ctx, config, patch.WithOwnedV1Beta1Conditions{Conditions: []clusterv1.ConditionType{ //nolint:staticcheck // The real provider keeps CAPI v1beta1 conditions; so does its stand-in.
			bootstrapv1.DataSecretAvailableCondition, clusterv1.ReadyV1Beta1Condition,
		}}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	switch {
	case config.Status.Ready && config.Status.DataSecretName != nil:
		// Written once: the conditions say so again, whatever an earlier
		// reconcile left in them.
		v1beta1conditions.MarkTrue(config, bootstrapv1.DataSecretAvailableCondition)

		return ctrl.Result{}, nil
	case machine == nil:
		v1beta1conditions.MarkFalse(config, bootstrapv1.DataSecretAvailableCondition, bootstrapv1.WaitingForMachineReason, clusterv1.ConditionSeverityInfo,
			"Waiting for the Machine controller to set the owner reference")

		return ctrl.Result{}, nil
	case !ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false):
		v1beta1conditions.MarkFalse(config, bootstrapv1.DataSecretAvailableCondition, bootstrapv1.WaitingForClusterInfrastructureReason, clusterv1.ConditionSeverityInfo,
			"Waiting for the infrastructure of Cluster %s to be provisioned", cluster.Name)

		return ctrl.Result{}, nil
	case machine.Spec.Bootstrap.DataSecretName != nil:
		// The Machine names its data already (a move, a restore of a
		// backup, neither of which keeps the status): it is taken as this
		// TalosConfig's, as the real provider takes it.
		config.Status.Ready = true
		config.Status.DataSecretName = machine.Spec.Bootstrap.DataSecretName
		v1beta1conditions.MarkTrue(config, bootstrapv1.DataSecretAvailableCondition)

		return ctrl.Result{}, nil
	case !cluster.Spec.ControlPlaneEndpoint.IsValid():
		v1beta1conditions.MarkFalse(config, bootstrapv1.DataSecretAvailableCondition, bootstrapv1.WaitingForClusterEndpointReason, clusterv1.ConditionSeverityInfo,
			"Waiting for spec.controlPlaneEndpoint of Cluster %s: the machine configuration names it", cluster.Name)

		return ctrl.Result{}, nil
	}

	return ctrl.Result{}, r.writeDataSecret(ctx, config, machine, cluster)
}

// generationFailed says in the TalosConfig's condition why its
// configuration cannot be generated.
func generationFailed(config *bootstrapv1.TalosConfig, err error) {
	v1beta1conditions.MarkFalse(config, bootstrapv1.DataSecretAvailableCondition, bootstrapv1.DataSecretGenerationFailedReason, clusterv1.ConditionSeverityError,
		"Generating the machine configuration: %v; fix spec and the controller tries again", err)
}

// writeDataSecret generates the machine configuration and writes the
// bootstrap data Secret, then the status that names it.
func (r *Reconciler) writeDataSecret(ctx context.Context, config *bootstrapv1.TalosConfig, machine *clusterv1.Machine, cluster *clusterv1.Cluster) error {
	// A bad spec is the user's to fix, not an error to retry: its change
	// brings the TalosConfig back.
	if _, err := versionContract(config.Spec.TalosVersion); err != nil {
		generationFailed(config, err)

		return nil
	}

	bundle, err := r.clusterBundle(ctx, cluster, config.Spec.TalosVersion)
	if err != nil {
		return err
	}

	data, err := generateMachineConfig(machineConfigInput{
		spec:              config.Spec,
		clusterName:       cluster.Name,
		endpoint:          cluster.Spec.ControlPlaneEndpoint,
		kubernetesVersion: machine.Spec.Version,
		bundle:            bundle,
	})
	if err != nil {
		generationFailed(config, err)

		return nil
	}

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: config.Namespace,
			Name:      config.Name,
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
		},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{DataKey: data, FormatKey: []byte(Format)},
	}
	if err := controllerutil.SetControllerReference(config, secret, r.Client.Scheme()); err != nil {
		return fmt.Errorf("owning the bootstrap data Secret of TalosConfig %s: %w", klog.KObj(config), err)
	}

	ctrl.LoggerFrom(ctx).Info("Writing the bootstrap data Secret", "Secret", klog.KObj(secret), "generateType", config.Spec.GenerateType)

	if err := r.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the bootstrap data Secret %s: %w", klog.KObj(secret), err)
	}

	config.Status.Ready = true
	config.Status.DataSecretName = ptr.To(secret.Name)
	v1beta1conditions.MarkTrue(config, bootstrapv1.DataSecretAvailableCondition)

	return nil
}

// clusterBundle returns the Cluster's secrets bundle, generating and
// storing it (Secret <cluster>-talos, owned by the Cluster) the first time.
func (r *Reconciler) clusterBundle(ctx context.Context, cluster *clusterv1.Cluster, talosVersion string) (*secrets.Bundle, error) {
	key := client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Name + BundleSecretSuffix}

	existing := &corev1.Secret{}

	err := r.APIReader.Get(ctx, key, existing)
	if err == nil {
		return unmarshalBundle(existing.Data[BundleKey])
	}

	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the secrets bundle Secret %s: %w", key, err)
	}

	bundle, err := newBundle(talosVersion)
	if err != nil {
		return nil, err
	}

	data, err := marshalBundle(bundle)
	if err != nil {
		return nil, fmt.Errorf("encoding the secrets bundle of Cluster %s: %w", klog.KObj(cluster), err)
	}

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace,
			Name:      key.Name,
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
			}},
		},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{BundleKey: data},
	}

	if err := r.Client.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another TalosConfig of the Cluster stored one first: use it.
			if err := r.APIReader.Get(ctx, key, existing); err != nil {
				return nil, fmt.Errorf("reading the secrets bundle Secret %s: %w", key, err)
			}

			return unmarshalBundle(existing.Data[BundleKey])
		}

		return nil, fmt.Errorf("creating the secrets bundle Secret %s: %w", key, err)
	}

	return bundle, nil
}
