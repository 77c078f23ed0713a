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

package disruption

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "which Talos version does this Machine go to": the one
// the object of its Cluster that makes it declares
// (upgradev1.DesiredTalosVersionAnnotation), which wins, or the rollout's
// target (its policy's, or the hop of its path). The gates, budgets, ledger
// and failure policy are the same whatever the source.
//
// The rule, in one sentence: a version written on a Cluster's object wins
// for the Machines that object makes; the policy's target applies to the
// others; the policy keeps the gates.

// Kinds of owners besides the control plane, whose kind is the Cluster's
// spec.controlPlaneRef.kind.
const (
	// KindMachineDeployment makes the Machines of its MachineSets.
	KindMachineDeployment = "MachineDeployment"
	// KindMachine makes itself: a Machine that neither the control plane
	// nor a MachineDeployment makes.
	KindMachine = "Machine"
)

// Owner is the object of a Cluster that makes a Machine, and may declare
// the Talos version its Machines should run.
type Owner struct {
	// Kind is the control plane's kind, KindMachineDeployment or
	// KindMachine.
	Kind string
	// Name is the object's name, in the Cluster's namespace.
	Name string
}

// String names the owner for a message: "MachineDeployment alpha-md-0".
func (o Owner) String() string { return o.Kind + " " + o.Name }

// Field is the path of the field in which the owner declares its version:
// spec.template.metadata.annotations[...] of a MachineDeployment,
// metadata.annotations[...] of the control plane or a Machine.
func (o Owner) Field() string {
	path := field.NewPath("metadata")
	if o.Kind == KindMachineDeployment {
		path = field.NewPath("spec", "template", "metadata")
	}
	return path.Child("annotations").Key(upgradev1.DesiredTalosVersionAnnotation).String()
}

// OwnerOf returns the owner of m, a Machine of cluster: the control plane
// (spec.controlPlaneRef) for a control-plane Machine, its MachineDeployment
// for a worker that has one, the Machine itself otherwise.
func OwnerOf(cluster *clusterv1.Cluster, m *clusterv1.Machine) Owner {
	if IsControlPlane(m) && cluster != nil && cluster.Spec.ControlPlaneRef.IsDefined() {
		return Owner{Kind: cluster.Spec.ControlPlaneRef.Kind, Name: cluster.Spec.ControlPlaneRef.Name}
	}
	if md := m.Labels[clusterv1.MachineDeploymentNameLabel]; md != "" {
		return Owner{Kind: KindMachineDeployment, Name: md}
	}
	return Owner{Kind: KindMachine, Name: m.Name}
}

// DeclaredVersion returns the version annotations declare, as written but
// for surrounding spaces; "" when they declare none.
func DeclaredVersion(annotations map[string]string) string {
	return strings.TrimSpace(annotations[upgradev1.DesiredTalosVersionAnnotation])
}

// Declared are the versions the control plane and the MachineDeployments of
// a Cluster declare, by owner, as written; a Machine that neither makes
// declares its own in its annotations, read with it.
type Declared map[Owner]string

// DeclaredBy returns what cluster's control plane (its annotations,
// nil when it has none or it was not read) and MachineDeployments declare.
// A MachineDeployment being deleted declares nothing.
func DeclaredBy(cluster *clusterv1.Cluster, controlPlane map[string]string, mds []clusterv1.MachineDeployment) Declared {
	d := Declared{}
	if cluster != nil && cluster.Spec.ControlPlaneRef.IsDefined() {
		if v := DeclaredVersion(controlPlane); v != "" {
			d[Owner{Kind: cluster.Spec.ControlPlaneRef.Kind, Name: cluster.Spec.ControlPlaneRef.Name}] = v
		}
	}
	for i := range mds {
		if v := DeclaredVersion(mds[i].Spec.Template.Annotations); v != "" && mds[i].DeletionTimestamp.IsZero() {
			d[Owner{Kind: KindMachineDeployment, Name: mds[i].Name}] = v
		}
	}
	return d
}

// Versions returns the versions declared that are Talos versions,
// canonical, by owner as Owner.String names it.
func (d Declared) Versions() map[string]string {
	out := make(map[string]string, len(d))
	for o, v := range d {
		if canonical, err := talos.CanonicalVersion(v); err == nil {
			out[o.String()] = canonical
		}
	}
	return out
}

// Target is where one Machine goes, and why.
type Target struct {
	// Owner is the object that makes the Machine.
	Owner Owner
	// Version is the Talos version it goes to now, canonical: Final, or
	// the hop of a path to Final.
	Version string
	// Final is the version it ends on: the version its owner declares, or
	// the rollout's spec.talosVersion.
	Final string
	// Source says where Version was written.
	Source upgradev1.VersionSource
	// Field names the object and field Version was read from.
	Field string
	// Reason and Blocked say why the Machine does not start: its owner
	// declares a value that is not a Talos version
	// (DesiredVersionInvalidReason; Version is then the rollout's target,
	// which it does not go to), or one it cannot reach
	// (DesiredVersionUnreachableReason). Empty when it may start.
	Reason, Blocked string
	// Waiting says why the Machine does not start yet, although its owner's
	// version is one it can reach: the preflight plans the path to it.
	Waiting string
}

// Held returns why the Machine does not start, "" when it may.
func (t Target) Held() string { return cmp.Or(t.Blocked, t.Waiting) }

// TargetOf returns where m goes: the version its owner declares, or the
// rollout's target (Target). A rollout whose target comes from CAPI, or
// that also moves Kubernetes, takes no declared version (see
// declaredApplies); nil m goes to the rollout's target.
func (r *Rollout) TargetOf(m *clusterv1.Machine) Target {
	policy := Target{Version: r.Target(), Final: r.Upgrade.Spec.TalosVersion, Source: upgradev1.VersionSourcePolicy, Field: r.policyField()}
	if m == nil {
		return policy
	}
	owner := OwnerOf(r.Cluster, m)
	policy.Owner = owner
	declared := r.Declared[owner]
	if owner.Kind == KindMachine {
		declared = DeclaredVersion(m.Annotations)
	}
	if declared == "" {
		return policy
	}
	t := Target{Owner: owner, Source: upgradev1.VersionSourceObject, Field: owner.String() + " " + owner.Field()}
	version, err := talos.CanonicalVersion(declared)
	if err != nil {
		policy.Reason = upgradev1.DesiredVersionInvalidReason
		policy.Blocked = fmt.Sprintf("%s %s is %q, not a Talos version: write one such as v1.13.0", owner, owner.Field(), declared)
		return policy
	}
	t.Version, t.Final = version, version
	if msg := r.declaredApplies(); msg != "" {
		t.Reason, t.Blocked = upgradev1.DesiredVersionUnreachableReason, fmt.Sprintf("%s declares Talos %s (%s), but %s", owner, version, owner.Field(), msg)
		return t
	}
	if p := r.DeclaredPath(owner, version); p != nil && r.Upgrade.Spec.UpgradePath == upgradev1.UpgradePathAuto {
		t = r.onDeclaredPath(t, m, p)
	} else if err := r.reachable(version, plan.MachineTalosVersion(m)); err != nil {
		if errors.Is(err, talos.ErrUnsupportedUpgradePath) && r.Upgrade.Spec.UpgradePath == upgradev1.UpgradePathAuto {
			t.Waiting = fmt.Sprintf("%s declares Talos %s (%s), which Machine %s reaches through an upgrade path: it waits for the preflight to plan it", owner, version, owner.Field(), m.Name)
			return t
		}
		t.Reason, t.Blocked = upgradev1.DesiredVersionUnreachableReason, fmt.Sprintf("%s declares Talos %s (%s), which Machine %s cannot reach: %v", owner, version, owner.Field(), m.Name, err)
		return t
	}
	if u := r.Unavailable(version); u != nil && t.Blocked == "" {
		t.Reason, t.Blocked = upgradev1.DesiredVersionUnreachableReason, fmt.Sprintf("%s declares Talos %s (%s), whose installer image %s was not found: %s", owner, version, owner.Field(), u.Image, u.Message)
	}
	return t
}

// Unavailable returns the record of a declared version whose installer
// image the preflight did not find, nil when there is none.
func (r *Rollout) Unavailable(version string) *upgradev1.UnavailableVersion {
	for i := range r.Upgrade.Status.UnavailableVersions {
		if u := &r.Upgrade.Status.UnavailableVersions[i]; talos.SameVersion(u.TalosVersion, version) {
			return u
		}
	}
	return nil
}

// policyField names where the rollout's target was written.
func (r *Rollout) policyField() string {
	if r.Path() != nil {
		return fmt.Sprintf("TalosUpgrade %s status.path (the hop to %s)", r.Upgrade.Name, r.Target())
	}
	return fmt.Sprintf("TalosUpgrade %s spec.talosVersion", r.Upgrade.Name)
}

// declaredApplies says why the rollout cannot take a declared version, ""
// when it can: with Kubernetes hops its Machines move together, hop by hop.
func (r *Rollout) declaredApplies() string {
	if r.Upgrade.Spec.KubernetesVersion != "" {
		return fmt.Sprintf("the rollout also moves Kubernetes to %s (spec.kubernetesVersion), and then takes its Talos version from the policy alone: declare the version once Kubernetes has moved, or name it in the policy", r.Upgrade.Spec.KubernetesVersion)
	}
	return ""
}

// reachable says why a Machine on from cannot be upgraded to version in one
// install, under the rollout's plan, in a Cluster that runs its Kubernetes
// versions; nil when it can, or when what it runs is not known yet (the
// Machine waits for it to start anyway, see StartBlocker). With
// upgradePath Auto, a version not reached in one install is reached
// through a path (see PathsToPlan).
func (r *Rollout) reachable(version, from string) error {
	p := &r.Upgrade.Spec.UpgradePlan
	if err := talos.CheckKnown(version); err != nil {
		return err
	}
	if !talos.IsStableRelease(version) && !p.AllowPrerelease {
		return fmt.Errorf("%s is not a stable release: set allowPrerelease on the policy to acknowledge it, or declare a release", version)
	}
	if from != "" {
		if err := talos.CheckUpgradeStep(from, version, p.AllowDowngrade); err != nil {
			if errors.Is(err, talos.ErrUnsupportedUpgradePath) && p.UpgradePath != upgradev1.UpgradePathAuto {
				return fmt.Errorf("%w; with upgradePath Direct a declared version is reached in one upgrade: set upgradePath Auto on the policy to go through the minors in between", err)
			}
			return err
		}
	}
	for _, k := range r.kubernetesVersions() {
		if err := talos.CheckKubernetesSupported(version, k); err != nil {
			return fmt.Errorf("the Cluster runs Kubernetes %s: %w", k, err)
		}
	}
	return nil
}

// kubernetesVersions returns the Kubernetes versions the Cluster runs.
func (r *Rollout) kubernetesVersions() []string {
	machines := make([]*clusterv1.Machine, 0, len(r.Machines))
	for _, m := range r.Machines {
		machines = append(machines, m)
	}
	return plan.NewClusterVersions(r.Cluster, machines).Kubernetes
}

// DeclaresVersions reports whether an object of the Cluster declares a
// version.
func (r *Rollout) DeclaresVersions() bool {
	if len(r.Declared) > 0 {
		return true
	}
	for _, m := range r.Machines {
		if OwnerOf(r.Cluster, m).Kind == KindMachine && DeclaredVersion(m.Annotations) != "" {
			return true
		}
	}
	return false
}

// Blocked reports whether st's Machine waits for its owner's declared
// version to be fixed, or for the path to it to be planned: it does not
// start, and does not hold its group.
func (r *Rollout) Blocked(st *upgradev1.MachineUpgradeStatus) bool {
	return st.Phase == upgradev1.MachinePhasePending && r.TargetOf(r.Machines[st.Machine]).Held() != ""
}

// Targets returns status.targets and the DesiredVersions condition: for
// each owner of the Cluster's Machines, where they go, once an object
// declares a version; nil and nil while none does.
func (r *Rollout) Targets() ([]upgradev1.TargetStatus, *metav1.Condition) {
	if r.Upgrade.Spec.CAPIDriven() || !r.DeclaresVersions() {
		return nil, nil
	}
	byOwner := map[Owner]*upgradev1.TargetStatus{}
	blockedOwner := map[Owner]bool{}
	var blocked []string
	reason := ""
	// What each node runs as the rollout verified it, before CAPI copies
	// it into the Machine's status.nodeInfo.
	for _, m := range r.VerifiedMachines() {
		t := r.TargetOf(m)
		ts := byOwner[t.Owner]
		if ts == nil {
			ts = &upgradev1.TargetStatus{Kind: t.Owner.Kind, Name: t.Owner.Name, TalosVersion: t.Final, Source: t.Source, Field: t.Field}
			byOwner[t.Owner] = ts
		}
		if !talos.SameVersion(t.Version, t.Final) {
			ts.Hop = t.Version
		}
		ts.Machines++
		if talos.SameVersion(plan.MachineTalosVersion(m), t.Final) {
			ts.OnTarget++
		}
		if t.Blocked == "" {
			if ts.Message == "" && t.Waiting != "" {
				ts.Message = upgradev1.Truncate(t.Waiting, upgradev1.MaxMessageLength)
			}
			continue
		}
		if t.Reason == upgradev1.DesiredVersionInvalidReason {
			ts.TalosVersion = ""
		}
		if !blockedOwner[t.Owner] {
			blockedOwner[t.Owner] = true
			ts.Message = upgradev1.Truncate(t.Blocked, upgradev1.MaxMessageLength)
			blocked = append(blocked, t.Blocked)
		}
		if reason == "" || t.Reason == upgradev1.DesiredVersionInvalidReason {
			reason = t.Reason
		}
	}
	out := make([]upgradev1.TargetStatus, 0, len(byOwner))
	for _, ts := range byOwner {
		out = append(out, *ts)
	}
	slices.SortFunc(out, func(a, b upgradev1.TargetStatus) int {
		return cmp.Or(cmp.Compare(ownerRank(r.Cluster, a.Kind), ownerRank(r.Cluster, b.Kind)), strings.Compare(a.Name, b.Name))
	})
	if len(blocked) == 0 {
		return out, &metav1.Condition{Type: upgradev1.DesiredVersionsCondition, Status: metav1.ConditionTrue, Reason: upgradev1.DesiredVersionsReachableReason}
	}
	slices.Sort(blocked)
	return out, &metav1.Condition{Type: upgradev1.DesiredVersionsCondition, Status: metav1.ConditionFalse, Reason: reason,
		Message: upgradev1.Truncate("the Machines of these objects do not start, the rest of the Cluster goes on: "+strings.Join(blocked, "; "), upgradev1.MaxMessageLength)}
}

// ownerRank orders owners as a rollout goes through them: the control plane
// first, then MachineDeployments, then single Machines.
func ownerRank(cluster *clusterv1.Cluster, kind string) int {
	switch {
	case cluster != nil && kind == cluster.Spec.ControlPlaneRef.Kind:
		return 0
	case kind == KindMachineDeployment:
		return 1
	}
	return 2
}
