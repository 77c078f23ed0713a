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
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/inplace"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// reconcileMachines lists the Cluster's Machines and brings the per-Machine
// records up to date with them. The Machines of a Cluster come and go at any
// moment (scale-up, scale-down, MachineHealthCheck replacements), so every
// record that has not started is read again from its Machine: a Machine that
// joined before its node, addresses or Talos version were known is refreshed
// until they are, and starts only then (see startBlocker).
//
// A Machine deleted, or being deleted, before it is done leaves the rollout:
// its record is dropped with an event and it no longer counts against the
// disruption budget. A Machine that failed keeps its record when it is
// deleted: the failure policy counts it. Records of a previous target start
// again.
func (r *Reconciler) reconcileMachines(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.readMachines(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	u := s.Upgrade
	target := s.Target()
	// A rollout whose target comes from CAPI upgrades only the Machines CAPI
	// handed over for that target; the others are none of its business
	// (CAPI may never update them, or replace them instead).
	handedOver := func(name string) bool {
		if !u.Spec.CAPIDriven() {
			return true
		}
		h := s.Handovers[name]
		return h != nil && talos.SameVersion(h.Version, target)
	}
	records := u.Status.Machines[:0:0]
	seen := map[string]bool{}
	for _, st := range u.Status.Machines {
		seen[st.Machine] = true
		m, ok := s.Machines[st.Machine]
		leaving := !ok || !m.DeletionTimestamp.IsZero()
		target := target
		if ok {
			target = s.TargetOf(m).Version // The version its object declares wins.
		}
		switch {
		case leaving && st.Phase.InFlight():
			// The Machine is replaced or scaled down under the rollout: CAPI
			// owns it now (and drains it if it still exists). Its cordon and
			// skip-remediation go with it.
			ctrl.LoggerFrom(ctx).Info("Machine left the Cluster during its upgrade", "Machine", klog.KRef(u.Namespace, st.Machine), "phase", st.Phase)
			r.machineEvent(s, st.Machine, corev1.EventTypeWarning, "MachineLeft", "Upgrade", "Machine %s was deleted during its upgrade (phase %s); it leaves the rollout", st.Machine, st.Phase)
			continue
		case leaving && st.Phase == upgradev1.MachinePhaseFailed && st.TargetVersion == target:
			// A failure is the rollout's history, whatever becomes of its
			// Machine: a MachineHealthCheck remediating the Machine Tollgate
			// failed and let go of must not take the failure out of the
			// count its failure policy stopped on, nor its reason out of
			// the pause. Nothing is left to undo on a Machine that is gone.
			if !ok {
				st.Cordoned, st.SkipRemediationSet = false, false
				if !strings.HasSuffix(st.Message, disruption.MachineGoneNote) {
					st.Message += disruption.MachineGoneNote
				}
			}
		case leaving && (!ok || st.Phase == upgradev1.MachinePhasePending):
			continue // Gone, or going before it started: nothing to record.
		case ok && (st.TargetVersion != target || s.KubernetesChanged(&st, m)) && !st.Phase.InFlight():
			// What Tollgate did to the Machine for the previous target and
			// could not undo yet is undone before its record starts again;
			// what still cannot be (no workload connection now) is carried
			// over, so that the new record undoes it in turn.
			if st.Phase.Ended() && (st.Cordoned || st.SkipRemediationSet) {
				if err := r.release(ctx, s, &st); err != nil {
					return ctrl.Result{}, err
				}
			}
			if !handedOver(st.Machine) {
				if st.Cordoned || st.SkipRemediationSet {
					records = append(records, st) // Released by a later reconcile.
				}
				continue
			}
			st = s.NextRecord(st, m, target)
		case ok && st.Phase == upgradev1.MachinePhaseCompleted && (disruption.NewerReboot(&st, s.RebootAskedOf(m).Due) || disruption.NewerConfig(&st, s.ConfigTargetOf(m))):
			// A reboot was asked for after the one the record answered, or
			// the patches of the Machine's template changed: the Machine's
			// node is looked at again (see reconcileNodeReads).
			st = s.NextRecord(st, m, target)
		case ok && st.Phase == upgradev1.MachinePhasePending:
			if !handedOver(st.Machine) {
				continue // CAPI took it back before it started.
			}
			st = s.KeepVerified(disruption.RefreshRecord(st, m, u), st.FromVersion)
		}
		records = append(records, st)
	}
	for name, m := range s.Machines {
		if seen[name] || !m.DeletionTimestamp.IsZero() || !handedOver(name) {
			continue
		}
		records = append(records, disruption.NewRecord(m, u, s.TargetOf(m).Version))
	}
	disruption.SortRecords(&u.Spec, records)
	res := ctrl.Result{}
	behind := map[string]string{}
	for i := range records {
		st := &records[i]
		if st.Phase != upgradev1.MachinePhasePending {
			continue
		}
		t := s.TargetOf(s.Machines[st.Machine])
		if held := t.Held(); held != "" {
			// Its object declares a version it cannot go to, or one it
			// goes to through a path not planned yet: it waits for the
			// object to be fixed, or the preflight, and holds no group
			// (see Blocked).
			st.Message = held
			continue
		}
		target := t.Version
		asked := s.RebootAskedOf(s.Machines[st.Machine])
		if asked.Invalid != "" {
			r.event(s, corev1.EventTypeWarning, "InvalidRebootRequest", "Reboot", "%s", asked.Invalid)
		}
		if !asked.Next.IsZero() {
			res = util.LowestNonZeroResult(res, requeueAfter(asked.Next.Sub(s.Now)+time.Second))
		}
		st.RebootAfter, st.Action = asked.Due, upgradev1.MachineActionUpgrade
		st.Config = disruption.ConfigRecord(st.Config, s.ConfigTargetOf(s.Machines[st.Machine]))
		if u.Spec.KubernetesVersion != "" && s.Path() == nil {
			// What the node's Kubernetes is to become is known once the
			// preflight planned the path.
			st.Message = "waiting for the preflight to plan the Talos and Kubernetes versions"
			continue
		}
		st.Kubernetes = disruption.KubernetesRecord(st.Kubernetes, s.KubernetesWant(s.Machines[st.Machine]))
		if s.ControlPlaneStage() && st.Role != upgradev1.MachineRoleControlPlane {
			// Its kubelet moves in the next hop, once every apiserver runs
			// the new version.
			st.Phase = upgradev1.MachinePhaseCompleted
			st.Message = fmt.Sprintf("waits for the next hop: the Kubernetes control plane moves to %s first", s.Hop().KubernetesVersion)
			st.CompletionTime = ptrTime(s.Now)
			continue
		}
		if talos.SameVersion(st.FromVersion, target) && !disruption.HooksLeft(u, st) {
			if disruption.SettleOnTarget(s.Now, st, target) && st.Phase == upgradev1.MachinePhaseCompleted {
				continue
			}
			if st.Message != "" {
				continue // Waiting for what the node says (see reconcileNodeReads).
			}
		}
		if (t.Source == upgradev1.VersionSourcePolicy && s.PastHop(st.FromVersion)) || t.Past(st.FromVersion) {
			st.Phase = upgradev1.MachinePhaseCompleted
			st.Message = fmt.Sprintf("runs %s, past the hop to %s", st.FromVersion, target)
			if t.Source == upgradev1.VersionSourceObject {
				st.Message += fmt.Sprintf(": it waits for the other Machines of %s", t.Owner)
			}
			st.CompletionTime = ptrTime(s.Now)
			continue
		}
		if st.Message = disruption.StartBlocker(st, s.Machines[st.Machine]); st.Message != "" {
			continue
		}
		if st.Message = r.controlPlaneAhead(ctx, s, st, behind); st.Message != "" {
			res = util.LowestNonZeroResult(res, requeueAfter(controlPlaneRecheck))
			continue
		}
		if err := talos.CheckUpgradeStep(st.FromVersion, target, u.Spec.AllowDowngrade); err != nil && s.PreflightPassed() {
			// A Machine that joined after the preflight checked the others,
			// on a version the target cannot be reached from. It is not
			// touched; the failure policy decides what the rollout does.
			r.failNow(ctx, s, st, fmt.Sprintf("joined on %s, which cannot be upgraded to %s: %v", st.FromVersion, target, err))
		}
	}
	u.Status.Machines = records
	return res, nil
}

// readMachines fills s.Machines with the Cluster's Machines.
func (r *Reconciler) readMachines(ctx context.Context, s *scope) error {
	list := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.Cluster.Namespace), client.MatchingFields{index.MachineClusterNameField: s.Cluster.Name}); err != nil {
		return fmt.Errorf("listing the Machines of Cluster %s: %w", klog.KObj(s.Cluster), err)
	}
	s.Machines = make(map[string]*clusterv1.Machine, len(list.Items))
	for i := range list.Items {
		s.Machines[list.Items[i].Name] = &list.Items[i]
	}
	if !s.Upgrade.Spec.CAPIDriven() {
		return nil
	}
	s.Handovers = map[string]*disruption.Handover{}
	for name, m := range s.Machines {
		h, err := r.Claims.ReadHandover(ctx, r.Client, m, s.Upgrade.Spec.Installer)
		if err != nil {
			// Not one Tollgate can update (its UpdateMachine answer says
			// why), or not readable now: not handed over, read again at
			// the next reconcile.
			ctrl.LoggerFrom(ctx).V(2).Info("Machine marked for an in-place update is not handed over", "Machine", klog.KObj(m), "reason", err.Error())
			continue
		}
		if h != nil {
			s.Handovers[name] = &disruption.Handover{Version: h.Version, KubernetesVersion: h.KubernetesVersion}
		}
	}
	rollingOut, err := r.capiRollingOut(ctx, s)
	if err != nil {
		return err
	}
	s.CAPIRollingOut = rollingOut
	return nil
}

// capiRollingOut says what CAPI is still rolling out in the Cluster and may
// hand over next: a Machine marked for an in-place update, or a
// MachineDeployment that rolls out its Machines one after the other
// (RollingUpdate, RollingOut, not paused); "" when nothing. A
// MachineDeployment rolling out OnDelete is not counted: CAPI waits for its
// user there, for as long as they like.
func (r *Reconciler) capiRollingOut(ctx context.Context, s *scope) (string, error) {
	for _, name := range slices.Sorted(maps.Keys(s.Machines)) {
		if inplace.Marked(s.Machines[name]) {
			return fmt.Sprintf("Machine %s is being updated in place", name), nil
		}
	}
	if annotations.IsPaused(s.Cluster, s.Cluster) {
		return "", nil
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Client.List(ctx, mds, client.InNamespace(s.Cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: s.Cluster.Name}); err != nil {
		return "", fmt.Errorf("listing the MachineDeployments of Cluster %s: %w", klog.KObj(s.Cluster), err)
	}
	for i := range mds.Items {
		md := &mds.Items[i]
		if md.Spec.Rollout.Strategy.Type == clusterv1.OnDeleteMachineDeploymentStrategyType || annotations.HasPaused(md) {
			continue
		}
		if conditions.IsTrue(md, clusterv1.MachineDeploymentRollingOutCondition) {
			return fmt.Sprintf("MachineDeployment %s is rolling out", md.Name), nil
		}
	}
	return "", nil
}
