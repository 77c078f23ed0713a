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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// NextRecord returns the Pending record of a Machine for a new target (a
// new hop of the path, or a new spec). It keeps the cordon and the
// skip-remediation annotation Tollgate has yet to undo. On an Auto path, a Machine that
// completed the previous target runs it (or the newer version it ran
// already, past that hop), as its node said, even while the Machine's
// status.nodeInfo has not caught up.
func (r *Rollout) NextRecord(prev upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, target string) upgradev1.MachineUpgradeStatus {
	st := NewRecord(m, r.Upgrade, target)
	st.Cordoned, st.SkipRemediationSet = prev.Cordoned, prev.SkipRemediationSet
	if prev.Phase == upgradev1.MachinePhaseCompleted {
		st = r.KeepVerified(st, verifiedVersion(prev))
	}
	return st
}

// KeepVerified keeps, on an Auto path or one with a Kubernetes target, a
// version of the Machine's node newer than the one its Machine reports:
// Tollgate read it from the node, and the Machine's status.nodeInfo lags it.
func (r *Rollout) KeepVerified(st upgradev1.MachineUpgradeStatus, verified string) upgradev1.MachineUpgradeStatus {
	if (r.Upgrade.Spec.UpgradePath != upgradev1.UpgradePathAuto && r.Upgrade.Spec.KubernetesVersion == "") || verified == "" {
		return st
	}
	if cmp, err := talos.CompareVersions(verified, st.FromVersion); st.FromVersion == "" || (err == nil && cmp > 0) {
		st.FromVersion = verified
	}
	return st
}

// NewRecord returns the Pending record of a Machine.
func NewRecord(m *clusterv1.Machine, u *upgradev1.TalosUpgrade, target string) upgradev1.MachineUpgradeStatus {
	return RefreshRecord(upgradev1.MachineUpgradeStatus{
		Machine:       m.Name,
		TargetVersion: target,
		Phase:         upgradev1.MachinePhasePending,
	}, m, u)
}

// RefreshRecord reads again from its Machine what a record that has not
// started knows of it: its node, role, group and Talos version.
func RefreshRecord(st upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, u *upgradev1.TalosUpgrade) upgradev1.MachineUpgradeStatus {
	st.Role, st.Group = upgradev1.MachineRoleWorker, GroupOf(&u.Spec, m)
	if IsControlPlane(m) {
		st.Role = upgradev1.MachineRoleControlPlane
	}
	if st.Node != m.Status.NodeRef.Name {
		st.BootTime = nil // Another node'r.
	}
	st.Node = m.Status.NodeRef.Name
	st.FromVersion = plan.MachineTalosVersion(m)
	return st
}

// StartBlocker says why a Pending Machine cannot start yet, or "" when it
// can: it must have a node, an address to reach its Talos API and a known
// Talos version (its role is known from its labels).
func StartBlocker(st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) string {
	switch {
	case m == nil:
		return "waiting for the Machine"
	case st.Node == "":
		return "waiting for the Machine's node (no status.nodeRef yet)"
	case st.FromVersion == "":
		return fmt.Sprintf("waiting for the Talos version of node %q (the Machine's status.nodeInfo)", st.Node)
	}
	if _, err := talos.MachineAddress(m); err != nil {
		return fmt.Sprintf("waiting for the Machine's addresses: %v", err)
	}
	return ""
}

// MachineGoneNote ends the record of a failed Machine that has since been
// deleted (remediated, scaled down, replaced by CAPI).
const MachineGoneNote = "; the Machine has since been deleted"

// ConfigTargetOf returns the target of m's node: its control plane's for a
// control-plane Machine, its MachineDeployment's for a worker; nil when
// there is none (a worker of no MachineDeployment, or of one that rolls out
// by replacing its Machines) or it has no patches. A worker of an old
// MachineSet gets its MachineDeployment's current template's: the one a
// Machine made now would boot with.
func (r *Rollout) ConfigTargetOf(m *clusterv1.Machine) *ConfigTarget {
	if m == nil || r.ConfigTargets == nil {
		return nil
	}
	key := ControlPlaneConfigSource
	if !IsControlPlane(m) {
		key = m.Labels[clusterv1.MachineDeploymentNameLabel]
	}
	t := r.ConfigTargets[key]
	if t == nil || (t.Err == nil && t.Hash == "") {
		return nil
	}
	return t
}

// ConfigRecord returns the config part of a record that has not started,
// for target: kept while the target's patches are those it was made for,
// made anew (their state unknown until the node is read) when they changed,
// nil when there is no target. A target whose patches cannot be read
// changes nothing: the MachineConfigs condition says why.
func ConfigRecord(cur *upgradev1.MachineConfigStatus, t *ConfigTarget) *upgradev1.MachineConfigStatus {
	switch {
	case t == nil:
		return nil
	case t.Err != nil:
		return cur
	case cur != nil && cur.Hash == t.Hash:
		return cur
	}
	return &upgradev1.MachineConfigStatus{Source: t.Source, Hash: t.Hash, State: upgradev1.MachineConfigUnknown}
}

// NewerConfig reports whether the patches of an ended record's Machine
// changed since the record: its node is looked at again.
func NewerConfig(st *upgradev1.MachineUpgradeStatus, t *ConfigTarget) bool {
	return t != nil && t.Err == nil && (st.Config == nil || st.Config.Hash != t.Hash)
}

// MachineConfigsCondition is the MachineConfigs condition of a rollout
// whose Cluster's templates are targets, with the records' verdicts; false
// when no template has patches.
func MachineConfigsCondition(targets map[string]*ConfigTarget, records []upgradev1.MachineUpgradeStatus) (metav1.Condition, bool) {
	c := metav1.Condition{Type: upgradev1.MachineConfigsCondition, Status: metav1.ConditionTrue, Reason: upgradev1.MachineConfigsApplicableReason}
	var invalid, unknown, refused []string
	targeted := false
	for _, key := range slices.Sorted(maps.Keys(targets)) {
		t := targets[key]
		switch {
		case errors.Is(t.Err, machineconfig.ErrMalformedPatches):
			invalid = append(invalid, fmt.Sprintf("%s: %v", t.Source, t.Err))
		case t.Err != nil:
			unknown = append(unknown, fmt.Sprintf("%s: %v", t.Source, t.Err))
		case t.Hash != "":
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

// RebootAskedOf reads the reboots asked for m's node (see RebootAsked). A
// rollout whose target comes from CAPI updates only the Machines CAPI hands
// over, and asks for no reboot.
func (r *Rollout) RebootAskedOf(m *clusterv1.Machine) RebootRequest {
	if m == nil || r.Upgrade.Spec.CAPIDriven() {
		return RebootRequest{}
	}
	return RebootAsked(r.Upgrade, m, r.Now)
}
