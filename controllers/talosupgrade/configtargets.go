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
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
)

// This file answers "which machine configuration should a node run": the
// one its CAPI objects say. The Talos bootstrap provider renders a
// Machine's configuration once, when the Machine is created, with the
// patches of its TalosConfig. What happens when those patches change
// depends on who owns the Machines:
//
//   - A MachineDeployment's TalosConfigTemplate cannot change (the Talos
//     bootstrap provider's webhook keeps it immutable): new patches come
//     with a new template, and CAPI rolls the MachineDeployment out by
//     replacing its Machines (or, with its in-place update extension, by
//     handing them over). No change is left for Tollgate to bring.
//   - A TalosControlPlane's controlPlaneConfig.controlplane can change.
//     With its default rolloutStrategy, RollingUpdate, the Talos
//     control-plane provider replaces every Machine whose TalosConfig
//     differs. With OnDelete it replaces none: the Machines keep the
//     configuration they booted with until a user deletes them. That is
//     the change Tollgate brings to the nodes in place, through the gate
//     (configure.go), control plane first and one at a time.
//
// The TalosControlPlane stays the one source of truth, in the users' Git:
// Tollgate never writes it, and never keeps a copy new Machines would not
// get.

// controlPlaneConfigSource is the key of the control plane's target in
// scope.configTargets, beside the MachineDeployments' names.
const controlPlaneConfigSource = "control plane"

// configTarget is the machine configuration the nodes made from one
// template should run: the template's patches.
type configTarget struct {
	// source names the template, for example "TalosConfigTemplate
	// alpha-md-0".
	source string
	// patches are the template's patches and hash their hash; a template
	// with no patches has no target.
	patches machineconfig.Patches
	hash    string
	// err says why the template's patches could not be read.
	err error
}

// onDelete is the TalosControlPlane rollout strategy that replaces no
// Machine whose configuration is outdated.
const onDelete = "OnDelete"

// reconcileConfigTargets reads the patches of the Cluster's
// TalosControlPlane when its rolloutStrategy is OnDelete (see above). Its
// kind is watched once it is seen, so that an edit of the patches brings
// the rollouts back.
func (r *Reconciler) reconcileConfigTargets(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.upgrade.Spec.CAPIDriven() || r.Templates == nil || s.cluster == nil {
		return ctrl.Result{}, nil
	}
	s.configTargets = map[string]*configTarget{}
	ref := s.cluster.Spec.ControlPlaneRef
	if !ref.IsDefined() || ref.Kind != machineconfig.TalosControlPlaneKind {
		return ctrl.Result{}, nil
	}
	t := &configTarget{source: ref.Kind + " " + ref.Name}
	s.configTargets[controlPlaneConfigSource] = t
	obj, err := r.readUnstructured(ctx, machineconfig.ControlPlaneGroup, ref.Kind, s.cluster.Namespace, ref.Name)
	if err != nil {
		// Said by the MachineConfigs condition; the rollout goes on with
		// what it knows, and the control plane's watch brings it back.
		t.err = err
		return ctrl.Result{}, nil //nolint:nilerr // Surfaced in a condition, not retried.
	}
	r.watchConfigTemplates(ctx, obj)
	if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "rolloutStrategy", "type"); strategy != onDelete {
		return ctrl.Result{}, nil // The provider replaces the outdated Machines.
	}
	t.patches, t.err = machineconfig.Read(obj)
	if t.err == nil && !t.patches.Empty() {
		t.hash = t.patches.Hash()
	}
	return ctrl.Result{}, nil
}

// configTarget returns the target of m's node: its control plane's for a
// control-plane Machine; nil when there is none or it has no patches.
func (s *scope) configTarget(m *clusterv1.Machine) *configTarget {
	if m == nil || s.configTargets == nil || !isControlPlane(m) {
		return nil
	}
	t := s.configTargets[controlPlaneConfigSource]
	if t == nil || (t.err == nil && t.hash == "") {
		return nil
	}
	return t
}

// watchConfigTemplates watches the kind of obj, once: an edit of a
// TalosControlPlane's patches reconciles the rollout of its Cluster.
func (r *Reconciler) watchConfigTemplates(ctx context.Context, obj *unstructured.Unstructured) {
	if r.tracker == nil {
		return
	}
	watched := &unstructured.Unstructured{}
	watched.SetGroupVersionKind(obj.GroupVersionKind())
	if err := r.tracker.Watch(ctrl.LoggerFrom(ctx), watched, handler.EnqueueRequestsFromMapFunc(r.configTemplateToUpgrades)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Watching Talos templates", "kind", obj.GetKind())
	}
}

// configTemplateToUpgrades maps a TalosControlPlane to the rollouts of the
// Clusters it is the control plane of.
func (r *Reconciler) configTemplateToUpgrades(ctx context.Context, o client.Object) []reconcile.Request {
	clusters := &clusterv1.ClusterList{}
	if err := r.Client.List(ctx, clusters, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for _, c := range clusters.Items {
		if ref := c.Spec.ControlPlaneRef; ref.Kind == machineconfig.TalosControlPlaneKind && ref.Name == o.GetName() {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	return requests
}

// configRecord returns the config part of a record that has not started,
// for target: kept while the target's patches are those it was made for,
// made anew (their state unknown until the node is read) when they changed,
// nil when there is no target. A target whose patches cannot be read
// changes nothing: the MachineConfigs condition says why.
func configRecord(cur *upgradev1.MachineConfigStatus, t *configTarget) *upgradev1.MachineConfigStatus {
	switch {
	case t == nil:
		return nil
	case t.err != nil:
		return cur
	case cur != nil && cur.Hash == t.hash:
		return cur
	}
	return &upgradev1.MachineConfigStatus{Source: t.source, Hash: t.hash, State: upgradev1.MachineConfigUnknown}
}

// newerConfig reports whether the patches of an ended record's Machine
// changed since the record: its node is looked at again.
func newerConfig(st *upgradev1.MachineUpgradeStatus, t *configTarget) bool {
	return t != nil && t.err == nil && (st.Config == nil || st.Config.Hash != t.hash)
}

// machineConfigsCondition is the MachineConfigs condition of a rollout
// whose Cluster's templates are targets, with the records' verdicts; false
// when no template has patches.
func machineConfigsCondition(targets map[string]*configTarget, records []upgradev1.MachineUpgradeStatus) (metav1.Condition, bool) {
	c := metav1.Condition{Type: upgradev1.MachineConfigsCondition, Status: metav1.ConditionTrue, Reason: upgradev1.MachineConfigsApplicableReason}
	var invalid, unknown, refused []string
	targeted := false
	for _, key := range slices.Sorted(maps.Keys(targets)) {
		t := targets[key]
		switch {
		case errors.Is(t.err, machineconfig.ErrMalformedPatches):
			invalid = append(invalid, fmt.Sprintf("%s: %v", t.source, t.err))
		case t.err != nil:
			unknown = append(unknown, fmt.Sprintf("%s: %v", t.source, t.err))
		case t.hash != "":
			targeted = true
		}
	}
	seen := map[string]bool{}
	for _, st := range records {
		if cfg := st.Config; cfg != nil && cfg.State == upgradev1.MachineConfigRefused && !seen[cfg.Source] {
			seen[cfg.Source] = true
			refused = append(refused, fmt.Sprintf("%s (Machine %s): %s", cfg.Source, st.Machine, cfg.Message))
		}
	}
	switch {
	case len(invalid) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, upgradev1.MachineConfigPatchesInvalidReason
		c.Message = "the patches of " + strings.Join(invalid, "; ") + "; nothing of them is applied until they are fixed"
	case len(refused) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, upgradev1.MachineConfigNotInPlaceReason
		c.Message = "not applied to the Machines that exist: the patches of " + strings.Join(refused, "; ") + "; new Machines boot with them: replace the Machines to bring them to the others, or change the patches"
	case len(unknown) > 0:
		c.Status, c.Reason = metav1.ConditionUnknown, upgradev1.MachineConfigsUnknownReason
		c.Message = "cannot read " + strings.Join(unknown, "; ")
	case !targeted:
		return c, false
	}
	return c, true
}
