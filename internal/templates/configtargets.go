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

package templates

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
)

// This file answers "which machine configuration should a node run": the
// one its CAPI objects say. The Talos bootstrap provider renders a
// Machine's configuration once, when the Machine is created, with the
// patches of its TalosConfig. What happens when those patches change
// depends on who owns the Machines and how they roll out:
//
//   - A MachineDeployment's TalosConfigTemplate cannot change (the Talos
//     bootstrap provider's webhook keeps the spec of TalosConfigTemplates
//     and TalosConfigs immutable): new patches come with a new template,
//     named by the MachineDeployment's spec.template.spec.bootstrap.configRef.
//     With its default rollout strategy, RollingUpdate, CAPI replaces the
//     Machines, each through the removal gate. CAPI's in-place update
//     extension cannot take the change instead: CAPI writes the new spec
//     to the Machine's TalosConfig before it asks the extension, and the
//     bootstrap provider refuses it, so Tollgate does not claim it
//     (internal/inplace). With the OnDelete strategy CAPI replaces none
//     until a user deletes them: the Machines keep the configuration they
//     booted with.
//   - A TalosControlPlane's controlPlaneConfig.controlplane can change.
//     With its default rolloutStrategy, RollingUpdate, the Talos
//     control-plane provider replaces every Machine whose TalosConfig
//     differs. With OnDelete it replaces none, as above.
//
// The changes that roll out OnDelete are the ones Tollgate brings to the
// nodes in place, through the gate (the configure kind of
// internal/disruption, applied by talosnode.Nodes.ApplyConfig): the control
// plane one at a time, the workers within their budget.
//
// The templates stay the one source of truth, in the users' Git: Tollgate
// never writes them, and never keeps a copy new Machines would not get.

// readConfigTarget reads the patches of obj into t.
func readConfigTarget(t *disruption.ConfigTarget, obj *unstructured.Unstructured) {
	t.Patches, t.Err = machineconfig.Read(obj)
	if t.Err == nil && !t.Patches.Empty() {
		t.Hash = t.Patches.Hash()
	}
}

// ControlPlaneConfigTarget returns the target of the control plane of
// cluster when it is a TalosControlPlane, nil else, and the control plane
// as read (nil when it could not be), whose kind the controller watches so
// that an edit of the patches brings the rollouts back.
func (r Reader) ControlPlaneConfigTarget(ctx context.Context, cluster *clusterv1.Cluster) (*disruption.ConfigTarget, *unstructured.Unstructured) {
	ref := cluster.Spec.ControlPlaneRef
	if !ref.IsDefined() || ref.Kind != machineconfig.TalosControlPlaneKind {
		return nil, nil
	}
	t := &disruption.ConfigTarget{Source: ref.Kind + " " + ref.Name}
	obj, err := r.Get(ctx, machineconfig.ControlPlaneGroup, ref.Kind, cluster.Namespace, ref.Name)
	if err != nil {
		// Said by the MachineConfigs condition; the rollout goes on with
		// what it knows, and the control plane's watch brings it back.
		t.Err = err
		return t, nil
	}
	if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "rolloutStrategy", "type"); strategy != machineconfig.OnDelete {
		return t, obj // The provider replaces the outdated Machines.
	}
	readConfigTarget(t, obj)
	return t, obj
}

// MachineDeploymentConfigTargets adds to targets the target of each
// MachineDeployment of cluster that rolls out OnDelete and whose Machines
// are bootstrapped by a TalosConfigTemplate, by the MachineDeployment's
// name. It reports whether a template could not be read.
//
// An edit of a MachineDeployment (its template, its strategy) reconciles the
// rollout through the MachineDeployment watch (see SetupWithManager). The
// TalosConfigTemplates need no watch: their spec is immutable, so their
// patches change only with an edit of the MachineDeployment. A template that
// cannot be read (it may be created after the MachineDeployment that names
// it) is a target with its error, which the MachineConfigs condition says,
// read again later.
func (r Reader) MachineDeploymentConfigTargets(ctx context.Context, cluster *clusterv1.Cluster, targets map[string]*disruption.ConfigTarget) (unread bool, err error) {
	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Client.List(ctx, mds, client.InNamespace(cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return false, fmt.Errorf("listing the MachineDeployments of Cluster %s: %w", klog.KObj(cluster), err)
	}
	for i := range mds.Items {
		md := &mds.Items[i]
		ref := md.Spec.Template.Spec.Bootstrap.ConfigRef
		if md.Spec.Rollout.Strategy.Type != clusterv1.OnDeleteMachineDeploymentStrategyType ||
			ref.APIGroup != machineconfig.BootstrapGroup || ref.Kind != machineconfig.TalosConfigTemplateKind {
			continue // CAPI replaces the outdated Machines, or they are not Talos'.
		}
		t := &disruption.ConfigTarget{Source: fmt.Sprintf("%s %s of MachineDeployment %s", ref.Kind, ref.Name, md.Name)}
		targets[md.Name] = t
		obj, err := r.Get(ctx, ref.APIGroup, ref.Kind, md.Namespace, ref.Name)
		if err != nil {
			t.Err = err
			unread = true
			continue
		}
		readConfigTarget(t, obj)
	}
	return unread, nil
}
