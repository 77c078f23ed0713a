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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

// machineLabels are the labels of every control-plane Machine of tcp, its
// InfraMachine and TalosConfig; status.selector selects them.
func machineLabels(tcp *controlplanev1.TalosControlPlane, cluster *clusterv1.Cluster) map[string]string {
	return map[string]string{
		clusterv1.ClusterNameLabel:           cluster.Name,
		clusterv1.MachineControlPlaneLabel:   "",
		controlplanev1.ControlPlaneNameLabel: tcp.Name,
	}
}

// ownerRef makes tcp the controller of an object it creates; CAPI's
// Machine controller hands the InfraMachine and TalosConfig to their
// Machine.
func ownerRef(tcp *controlplanev1.TalosControlPlane) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: controlplanev1.GroupVersion.String(), Kind: "TalosControlPlane", Name: tcp.Name, UID: tcp.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// createMachine creates a control-plane Machine with its InfraMachine
// (cloned from the infrastructure template) and TalosConfig, undoing what
// it created when a later step fails.
func (r *Reconciler) createMachine(ctx context.Context, s *scope) (ctrl.Result, error) {
	tcp := s.tcp
	name := names.SimpleNameGenerator.GenerateName(tcp.Name + "-")
	labels := machineLabels(tcp, s.cluster)
	owner := ownerRef(tcp)

	template := tcp.Spec.InfrastructureTemplate
	templateRef := &corev1.ObjectReference{APIVersion: template.APIVersion, Kind: template.Kind, Name: template.Name, Namespace: tcp.Namespace}

	infra, infraRef, err := external.CreateFromTemplate(ctx, &external.CreateFromTemplateInput{
		Client: r.Client, TemplateRef: templateRef, Namespace: tcp.Namespace, Name: name,
		ClusterName: s.cluster.Name, OwnerRef: &owner, Labels: labels,
	})
	if err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			markFalse(s, controlplanev1.MachinesCreatedCondition, controlplanev1.InfrastructureTemplateNotFoundReason, clusterv1.ConditionSeverityError,
				"spec.infrastructureTemplate %s %s (%s) cannot be read: %v; create it or fix the reference", template.Kind, template.Name, template.APIVersion, err)

			return ctrl.Result{RequeueAfter: waitAfter}, nil
		}

		markFalse(s, controlplanev1.MachinesCreatedCondition, controlplanev1.MachineCreationFailedReason, clusterv1.ConditionSeverityWarning,
			"Cloning %s %s: %v", template.Kind, template.Name, err)

		return ctrl.Result{}, fmt.Errorf("cloning the infrastructure template %s %s of TalosControlPlane %s: %w", template.Kind, template.Name, klog.KObj(tcp), err)
	}

	spec := tcp.Spec.ControlPlaneConfig.ControlPlaneConfig
	if len(s.machines) == 0 && !tcp.Status.Initialized && tcp.Spec.ControlPlaneConfig.InitConfig.GenerateType != "" {
		spec = tcp.Spec.ControlPlaneConfig.InitConfig
	}

	config := &bootstrapv1.TalosConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: tcp.Namespace, Name: name, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       *spec.DeepCopy(),
	}

	if err := r.Client.Create(ctx, config); err != nil {
		return r.creationFailed(ctx, s, err, infra)
	}

	var annotations map[string]string
	if r.ScaleDown == PreTerminateHook {
		annotations = map[string]string{PreTerminateHookAnnotation: ""}
	}

	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: tcp.Namespace, Name: name, Labels: labels, Annotations: annotations, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: clusterv1.MachineSpec{
			ClusterName: s.cluster.Name,
			Version:     tcp.Spec.Version,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "TalosConfig", Name: name,
			}},
			InfrastructureRef: infraRef,
		},
	}

	if err := r.Client.Create(ctx, machine); err != nil {
		return r.creationFailed(ctx, s, err, infra, config)
	}

	ctrl.LoggerFrom(ctx).Info("Created a control-plane Machine", "Machine", klog.KObj(machine), "version", machine.Spec.Version)
	v1beta1conditions.MarkTrue(tcp, controlplanev1.MachinesCreatedCondition)

	return ctrl.Result{}, nil
}

// clonedFromAnotherTemplate reports whether m's InfraMachine was cloned from
// another template than tcp's spec.infrastructureTemplate, as CACPPT's
// MatchesTemplateClonedFrom tells: by its cluster.x-k8s.io/cloned-from-name
// and cloned-from-groupkind annotations. An InfraMachine gone, or without
// the annotations, is not.
func (r *Reconciler) clonedFromAnotherTemplate(ctx context.Context, tcp *controlplanev1.TalosControlPlane, m *clusterv1.Machine) (bool, error) {
	ref := m.Spec.InfrastructureRef

	infra, err := external.GetObjectFromContractVersionedRef(ctx, r.Client, ref, m.Namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}

		return false, fmt.Errorf("reading %s %s of Machine %s: %w", ref.Kind, ref.Name, klog.KObj(m), err)
	}

	name, okName := infra.GetAnnotations()[clusterv1.TemplateClonedFromNameAnnotation]
	groupKind, okGroupKind := infra.GetAnnotations()[clusterv1.TemplateClonedFromGroupKindAnnotation]

	if !okName || !okGroupKind {
		return false, nil
	}

	want := tcp.Spec.InfrastructureTemplate

	return name != want.Name || groupKind != want.GroupVersionKind().GroupKind().String(), nil
}

// creationFailed deletes the objects created for a Machine that could not
// be completed and reports err.
func (r *Reconciler) creationFailed(ctx context.Context, s *scope, err error, created ...client.Object) (ctrl.Result, error) {
	markFalse(s, controlplanev1.MachinesCreatedCondition, controlplanev1.MachineCreationFailedReason, clusterv1.ConditionSeverityWarning,
		"Creating a control-plane Machine: %v", err)

	errs := []error{fmt.Errorf("creating a control-plane Machine of TalosControlPlane %s: %w", klog.KObj(s.tcp), err)}

	for _, o := range created {
		if derr := r.Client.Delete(ctx, o); derr != nil && !apierrors.IsNotFound(derr) {
			errs = append(errs, fmt.Errorf("deleting %s %s after the failure: %w", o.GetObjectKind().GroupVersionKind().Kind, klog.KObj(o), derr))
		}
	}

	return ctrl.Result{}, errors.Join(errs...)
}

// removeMachine takes a control-plane Machine out once another
// control-plane node says its etcd members keep a healthy quorum without it
// (the stand-in's reading of CACPPT's EtcdClusterHealthy gate): with
// LeaveEtcdFirst, as CACPPT v0.5.x's scaleDownControlPlane, its node leaves
// etcd (a failed leave is logged and ignored), the Machine is deleted and its
// Node deleted; with PreTerminateHook the Machine is only deleted, its node
// leaving etcd at the hook.
func (r *Reconciler) removeMachine(ctx context.Context, s *scope, machine *clusterv1.Machine, why string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KObj(machine))
	hostname := machine.Status.NodeRef.Name

	members, via, err := r.etcdMembers(ctx, s, machine)
	if err != nil {
		markFalse(s, controlplanev1.ScaleDownSafeCondition, controlplanev1.EtcdUnreachableReason, clusterv1.ConditionSeverityWarning,
			"Not deleting Machine %s: no other control-plane node answered the etcd member check: %v", machine.Name, err)
		log.Info("Waiting to delete a control-plane Machine: etcd cannot be checked", "reason", why, "err", err.Error())

		return ctrl.Result{RequeueAfter: waitAfter}, nil
	}

	ok, message := removalKeepsQuorum(members, hostname)
	if !ok {
		markFalse(s, controlplanev1.ScaleDownSafeCondition, controlplanev1.EtcdQuorumAtRiskReason, clusterv1.ConditionSeverityWarning,
			"Not deleting Machine %s: %s (as Machine %s's node sees etcd)", machine.Name, message, via)
		log.Info("Waiting to delete a control-plane Machine: etcd would lose its quorum", "reason", why, "etcd", message)

		return ctrl.Result{RequeueAfter: waitAfter}, nil
	}

	v1beta1conditions.MarkTrue(s.tcp, controlplanev1.ScaleDownSafeCondition)

	if r.ScaleDown == LeaveEtcdFirst {
		log.Info("Leaving etcd from the node of a control-plane Machine before deleting it", "reason", why, "etcd", message)

		if err := r.Etcd.Leave(ctx, s.cluster, machine); err != nil {
			// As the real provider: the Machine goes all the same.
			log.Info("The node did not leave etcd", "err", err.Error())
		}
	}

	log.Info("Deleting a control-plane Machine", "reason", why, "etcd", message)

	if err := r.Client.Delete(ctx, machine); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("deleting control-plane Machine %s: %w", klog.KObj(machine), err)
	}

	if r.ScaleDown == LeaveEtcdFirst {
		return r.deleteNode(ctx, s, machine)
	}

	return ctrl.Result{}, nil
}

// etcdMembers asks the control-plane nodes other than machine's, oldest
// first, for the etcd members, and returns the first answer and who gave it.
func (r *Reconciler) etcdMembers(ctx context.Context, s *scope, machine *clusterv1.Machine) ([]EtcdMember, string, error) {
	var errs []error

	for _, via := range byAge(s.machines) {
		if via.Name == machine.Name || !via.Status.NodeRef.IsDefined() || !via.DeletionTimestamp.IsZero() {
			continue
		}

		members, err := r.Etcd.Members(ctx, s.cluster, via)
		if err == nil {
			return members, via.Name, nil
		}

		errs = append(errs, err)
	}

	if len(errs) == 0 {
		return nil, "", fmt.Errorf("no other control-plane Machine has a node")
	}

	return nil, "", errors.Join(errs...)
}
