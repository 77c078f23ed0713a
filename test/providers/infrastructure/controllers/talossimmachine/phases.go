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
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
)

// missingSecretRequeue is how soon a machine looks again for a Secret that
// does not exist yet: no watch tells it when one is created.
const missingSecretRequeue = 5 * time.Second

// phase is one step of reconcileNormal.
type phase func(ctx context.Context, s *scope) (ctrl.Result, error)

// reconcileNormal runs the phases in order, stopping at the first that
// returns an error or records why the machine is not Ready: each uses what
// the ones before it found.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	res := ctrl.Result{}

	for _, p := range []phase{
		r.reconcileClusterInfrastructure,
		r.reconcileBootstrapData,
		r.reconcileImage,
		r.reconcileHost,
		r.reconcileNode,
	} {
		phaseResult, err := p(ctx, s)
		res = util.LowestNonZeroResult(res, phaseResult)

		if err != nil || s.notReady != nil {
			return res, err
		}
	}

	return res, nil
}

// reconcileClusterInfrastructure waits for the Cluster's infrastructure;
// the Cluster's change brings the machine back.
func (r *Reconciler) reconcileClusterInfrastructure(_ context.Context, s *scope) (ctrl.Result, error) {
	if !ptr.Deref(s.cluster.Status.Initialization.InfrastructureProvisioned, false) {
		s.wait(infrav1.WaitingForClusterInfrastructureReason, fmt.Sprintf("Waiting for the infrastructure of Cluster %s to be provisioned", s.cluster.Name))
	}

	return ctrl.Result{}, nil
}

// reconcileBootstrapData reads the machine's configuration before its first
// boot. A Machine with no data Secret named yet comes back when the
// bootstrap provider names one; a named Secret that does not exist yet is
// looked for again.
func (r *Reconciler) reconcileBootstrapData(ctx context.Context, s *scope) (ctrl.Result, error) {
	if ptr.Deref(s.tsm.GetMachineStatus().Initialization.Provisioned, false) {
		return ctrl.Result{}, nil
	}

	name := ptr.Deref(s.machine.Spec.Bootstrap.DataSecretName, "")
	if name == "" {
		s.wait(infrav1.WaitingForBootstrapDataReason, fmt.Sprintf("Waiting for the bootstrap provider to set spec.bootstrap.dataSecretName of Machine %s: the machine cannot boot without its configuration", s.machine.Name))

		return ctrl.Result{}, nil
	}

	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.machine.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			s.wait(infrav1.WaitingForBootstrapDataReason, fmt.Sprintf("Waiting for the bootstrap data Secret %s, which does not exist", name))

			return ctrl.Result{RequeueAfter: missingSecretRequeue}, nil
		}

		return ctrl.Result{}, fmt.Errorf("reading the bootstrap data Secret %s/%s: %w", s.machine.Namespace, name, err)
	}

	data := secret.Data["value"]
	if len(data) == 0 {
		s.wait(infrav1.WaitingForBootstrapDataReason, fmt.Sprintf("Waiting for the bootstrap data Secret %s to hold a value", name))

		return ctrl.Result{RequeueAfter: missingSecretRequeue}, nil
	}

	s.bootstrapData = data

	return ctrl.Result{}, nil
}

// reconcileImage finds what the machine boots and where: an image that
// names no Talos version waits for a fix of the spec, which brings the
// machine back.
func (r *Reconciler) reconcileImage(_ context.Context, s *scope) (ctrl.Result, error) {
	parsed, err := hosts.ParseImage(s.tsm.BootImage())
	if err != nil {
		s.wait(infrav1.InvalidImageReason, err.Error())

		return ctrl.Result{}, nil
	}

	s.os = parsed

	s.failureDomain = s.machine.Spec.FailureDomain
	if s.failureDomain == "" {
		s.failureDomain = s.tsm.GetFailureDomain()
	}

	if s.failureDomain != "" && s.infraCluster != nil && !slices.Contains(s.infraCluster.Spec.FailureDomains, s.failureDomain) {
		s.wait(infrav1.FailureDomainNotFoundReason, fmt.Sprintf("Failure domain %q is not one of TalosSimCluster %s's: %q", s.failureDomain, s.infraCluster.Name, s.infraCluster.Spec.FailureDomains))
	}

	return ctrl.Result{}, nil
}

// reconcileHost boots the machine's node, or finds it running, and reports
// it per the InfraMachine contract.
func (r *Reconciler) reconcileHost(ctx context.Context, s *scope) (ctrl.Result, error) {
	cluster := client.ObjectKeyFromObject(s.cluster)

	workload, err := r.workloads.get(ctx, r.APIReader, cluster)
	switch {
	case err == nil:
		s.workload = workload
	case apierrors.IsNotFound(err):
	default:
		s.wait(infrav1.NodeRegistrationFailedReason, err.Error())

		return ctrl.Result{}, err
	}

	booted, err := r.Hosts.Boot(ctx, hosts.Host{
		Cluster:           cluster,
		Name:              s.tsm.GetName(),
		Version:           s.os.Version,
		Schematic:         s.os.Schematic,
		ControlPlane:      util.IsControlPlaneMachine(s.machine),
		KubernetesVersion: s.machine.Spec.Version,
		BootstrapData:     s.bootstrapData,
		Workload:          s.workload,
	})
	if err != nil {
		s.wait(infrav1.BootFailedReason, err.Error())

		return ctrl.Result{}, fmt.Errorf("booting %s %s: %w", r.Kind.Name, klog.KObj(s.tsm), err)
	}

	s.booted = booted

	status := s.tsm.GetMachineStatus()
	if !ptr.Deref(status.Initialization.Provisioned, false) {
		ctrl.LoggerFrom(ctx).Info("Booted the simulated node", "version", booted.Version, "address", booted.Address)
	}

	if s.tsm.GetProviderID() == "" {
		s.tsm.SetProviderID(providerID(cluster, s.tsm.GetName()))
	}

	status.Addresses = clusterv1.MachineAddresses{
		{Type: clusterv1.MachineInternalIP, Address: booted.Address},
		{Type: clusterv1.MachineHostName, Address: s.tsm.GetName()},
	}
	status.Version = booted.Version
	status.FailureDomain = s.failureDomain
	status.Initialization.Provisioned = ptr.To(true)

	return ctrl.Result{}, nil
}

// reconcileNode registers the machine's Node in the workload cluster.
func (r *Reconciler) reconcileNode(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.workload == nil {
		s.wait(infrav1.WaitingForWorkloadClusterReason, fmt.Sprintf("Waiting for the kubeconfig Secret of Cluster %s to register the Node", s.cluster.Name))

		return ctrl.Result{RequeueAfter: missingSecretRequeue}, nil
	}

	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()

	err := registerNode(ctx, s.workload, nodeSpec{
		name:         s.tsm.GetName(),
		providerID:   s.tsm.GetProviderID(),
		address:      s.booted.Address,
		version:      s.booted.Version,
		kubelet:      s.machine.Spec.Version,
		controlPlane: util.IsControlPlaneMachine(s.machine),
	})
	if err != nil {
		s.wait(infrav1.NodeRegistrationFailedReason, err.Error())

		return ctrl.Result{}, fmt.Errorf("registering the Node of %s %s: %w", r.Kind.Name, klog.KObj(s.tsm), err)
	}

	s.nodeRegistered = true

	return ctrl.Result{}, nil
}

// reconcileDelete removes the machine's node, then its Node (unless the
// whole Cluster goes, its workload cluster with it), then the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.tsm, infrav1.MachineFinalizer) {
		return ctrl.Result{}, nil
	}

	if cluster, ok := clusterOf(s); ok {
		if err := r.Hosts.Remove(ctx, cluster, s.tsm.GetName()); err != nil {
			s.wait(infrav1.DeletionFailedReason, err.Error())

			return ctrl.Result{}, fmt.Errorf("removing the simulated node of %s %s: %w", r.Kind.Name, klog.KObj(s.tsm), err)
		}

		if err := r.deleteNode(ctx, s, cluster); err != nil {
			s.wait(infrav1.DeletionFailedReason, err.Error())

			return ctrl.Result{}, err
		}

		ctrl.LoggerFrom(ctx).Info("Removed the simulated node and its Node")
	}

	controllerutil.RemoveFinalizer(s.tsm, infrav1.MachineFinalizer)

	return ctrl.Result{}, nil
}

// deleteNode deletes the Node of the machine in the workload cluster of
// cluster, unless that Cluster or its kubeconfig is gone or going.
func (r *Reconciler) deleteNode(ctx context.Context, s *scope, cluster client.ObjectKey) error {
	if s.cluster == nil || !s.cluster.DeletionTimestamp.IsZero() {
		return nil
	}

	workload, err := r.workloads.get(ctx, r.APIReader, cluster)
	if apierrors.IsNotFound(err) {
		return nil
	}

	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()

	return deleteNode(ctx, workload, s.tsm.GetName())
}
