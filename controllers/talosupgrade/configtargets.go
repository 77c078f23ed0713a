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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
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
// nodes in place, through the gate (configure.go): the control plane one at
// a time, the workers within their budget.
//
// The templates stay the one source of truth, in the users' Git: Tollgate
// never writes them, and never keeps a copy new Machines would not get.

// controlPlaneConfigSource is the key of the control plane's target in
// scope.configTargets, beside the MachineDeployments' names (which hold no
// space).
const controlPlaneConfigSource = "control plane"

// configTemplateRetry is how often the TalosConfigTemplate of a
// MachineDeployment that could not be read is read again: templates are
// not watched (see machineDeploymentConfigTargets), and one may be created
// after the MachineDeployment that names it.
const configTemplateRetry = time.Minute

// configTarget is the machine configuration the nodes made from one
// template should run: the template's patches.
type configTarget struct {
	// source names the template, for example "TalosConfigTemplate
	// alpha-md-0-v2 of MachineDeployment alpha-md-0".
	source string
	// patches are the template's patches and hash their hash; a template
	// with no patches has no target.
	patches machineconfig.Patches
	hash    string
	// err says why the template's patches could not be read.
	err error
}

// read reads the patches of obj into t.
func (t *configTarget) read(obj *unstructured.Unstructured) {
	t.patches, t.err = machineconfig.Read(obj)
	if t.err == nil && !t.patches.Empty() {
		t.hash = t.patches.Hash()
	}
}

// onDelete is the rollout strategy of a TalosControlPlane that replaces no
// Machine whose configuration is outdated; MachineDeployments spell it
// clusterv1.OnDeleteMachineDeploymentStrategyType.
const onDelete = "OnDelete"

// reconcileConfigTargets reads the patches of the templates whose Machines
// are not replaced when they change (see above): those of the Cluster's
// TalosControlPlane when its rolloutStrategy is OnDelete, and those of the
// TalosConfigTemplate of each of its MachineDeployments that rolls out
// OnDelete.
func (r *Reconciler) reconcileConfigTargets(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.upgrade.Spec.CAPIDriven() || r.Templates == nil || s.cluster == nil {
		return ctrl.Result{}, nil
	}
	s.configTargets = map[string]*configTarget{}
	if t := r.controlPlaneConfigTarget(ctx, s.cluster); t != nil {
		s.configTargets[controlPlaneConfigSource] = t
	}
	return r.machineDeploymentConfigTargets(ctx, s)
}

// controlPlaneConfigTarget returns the target of the control plane of
// cluster when it is a TalosControlPlane, nil else. Its kind is watched
// once it is seen, so that an edit of the patches brings the rollouts
// back.
func (r *Reconciler) controlPlaneConfigTarget(ctx context.Context, cluster *clusterv1.Cluster) *configTarget {
	ref := cluster.Spec.ControlPlaneRef
	if !ref.IsDefined() || ref.Kind != machineconfig.TalosControlPlaneKind {
		return nil
	}
	t := &configTarget{source: ref.Kind + " " + ref.Name}
	obj, err := r.readUnstructured(ctx, machineconfig.ControlPlaneGroup, ref.Kind, cluster.Namespace, ref.Name)
	if err != nil {
		// Said by the MachineConfigs condition; the rollout goes on with
		// what it knows, and the control plane's watch brings it back.
		t.err = err
		return t
	}
	r.watchConfigTemplates(ctx, obj)
	if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "rolloutStrategy", "type"); strategy != onDelete {
		return t // The provider replaces the outdated Machines.
	}
	t.read(obj)
	return t
}

// machineDeploymentConfigTargets adds the target of each MachineDeployment
// of the Cluster that rolls out OnDelete and whose Machines are bootstrapped
// by a TalosConfigTemplate, by the MachineDeployment's name.
//
// An edit of a MachineDeployment (its template, its strategy) reconciles the
// rollout through the MachineDeployment watch (see SetupWithManager). The
// TalosConfigTemplates need no watch: their spec is immutable, so their
// patches change only with an edit of the MachineDeployment. A template that
// cannot be read (it may be created after the MachineDeployment that names
// it) is a target with its error, which the MachineConfigs condition says,
// read again after configTemplateRetry.
func (r *Reconciler) machineDeploymentConfigTargets(ctx context.Context, s *scope) (ctrl.Result, error) {
	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Templates.List(ctx, mds, client.InNamespace(s.cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: s.cluster.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the MachineDeployments of Cluster %s: %w", klog.KObj(s.cluster), err)
	}
	res := ctrl.Result{}
	for i := range mds.Items {
		md := &mds.Items[i]
		ref := md.Spec.Template.Spec.Bootstrap.ConfigRef
		if md.Spec.Rollout.Strategy.Type != clusterv1.OnDeleteMachineDeploymentStrategyType ||
			ref.APIGroup != machineconfig.BootstrapGroup || ref.Kind != machineconfig.TalosConfigTemplateKind {
			continue // CAPI replaces the outdated Machines, or they are not Talos'.
		}
		t := &configTarget{source: fmt.Sprintf("%s %s of MachineDeployment %s", ref.Kind, ref.Name, md.Name)}
		s.configTargets[md.Name] = t
		obj, err := r.readUnstructured(ctx, ref.APIGroup, ref.Kind, md.Namespace, ref.Name)
		if err != nil {
			t.err = err
			res = requeueAfter(configTemplateRetry)
			continue
		}
		t.read(obj)
	}
	return res, nil
}

// configTarget returns the target of m's node: its control plane's for a
// control-plane Machine, its MachineDeployment's for a worker; nil when
// there is none (a worker of no MachineDeployment, or of one that rolls out
// by replacing its Machines) or it has no patches. A worker of an old
// MachineSet gets its MachineDeployment's current template's: the one a
// Machine made now would boot with.
func (s *scope) configTarget(m *clusterv1.Machine) *configTarget {
	if m == nil || s.configTargets == nil {
		return nil
	}
	key := controlPlaneConfigSource
	if !disruption.IsControlPlane(m) {
		key = m.Labels[clusterv1.MachineDeploymentNameLabel]
	}
	t := s.configTargets[key]
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
