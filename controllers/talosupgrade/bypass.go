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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// This file answers "what did an administrator override, and who": the
// bypasses of the rollout (spec.bypass) and of its policy. A bypass takes a
// safety gate away, so each is applied visibly: the Bypassed condition says
// what is bypassed, by whom and why, every application is an event, and the
// rollout's own bypass is cleared when the rollout ends.

// passHolds drops from owners those whose holds a bypass passes, with an
// event for each, and returns the owners still holding the Machine.
func (r *Reconciler) passHolds(s *scope, st *upgradev1.MachineUpgradeStatus, point upgradev1.HoldPoint, owners []string) []string {
	holding := owners[:0:0]
	for _, owner := range owners {
		b := s.HoldBypass(owner)
		if b == nil {
			holding = append(holding, owner)
			continue
		}
		r.machineEvent(s, st.Machine, corev1.EventTypeWarning, "HoldBypassed", "Bypass", "Machine %s: the %s hold of %q is passed (not released), bypassed by %s: %s", st.Machine, point, owner, disruption.By(b), b.Reason)
	}
	return holding
}

// reconcileBypasses applies the hook bypasses of the rollout
// (spec.bypass.machines) to the Machines that their hook failed: each starts
// again, through the rollout's gates and budget like any Machine that has
// not started, with its hook to run once more (Retry) or counted as
// succeeded (Skip). A bypass is applied once per generation of the spec.
func (r *Reconciler) reconcileBypasses(ctx context.Context, s *scope) (ctrl.Result, error) {
	b := s.Upgrade.Spec.Bypass
	if b == nil {
		return ctrl.Result{}, nil
	}
	for _, mb := range b.Machines {
		for i := range s.Upgrade.Status.Machines {
			st := &s.Upgrade.Status.Machines[i]
			if st.Machine == mb.Machine && st.Phase == upgradev1.MachinePhaseFailed {
				r.applyHookBypass(ctx, s, st, mb, b)
			}
		}
	}
	return ctrl.Result{}, nil
}

// applyHookBypass starts a Machine that hook mb.Hook failed again.
func (r *Reconciler) applyHookBypass(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, mb upgradev1.MachineBypass, b *upgradev1.BypassSpec) {
	verb, ok := disruption.BypassHook(st.Hooks, mb, s.Upgrade.Generation, s.Now)
	if !ok {
		return // Not failed by this hook, or bypassed already for this spec.
	}
	msg := fmt.Sprintf("hook %q %s, bypassed by %s: %s", mb.Hook, verb, disruption.By(b), b.Reason)
	ctrl.LoggerFrom(ctx).Info("Starting a failed Machine again", "Machine", st.Machine, "hook", mb.Hook, "action", mb.Action, "requestedBy", b.RequestedBy)
	r.machineEvent(s, st.Machine, corev1.EventTypeWarning, "HookBypassed", "Bypass", "Machine %s: %s", st.Machine, msg)
	*st = upgradev1.MachineUpgradeStatus{
		Machine: st.Machine, Role: st.Role, Group: st.Group, Node: st.Node, FromVersion: st.FromVersion,
		TargetVersion: st.TargetVersion, Phase: upgradev1.MachinePhasePending, Message: msg,
		Hooks: st.Hooks, PhaseDurations: st.PhaseDurations, StartTime: st.StartTime,
	}
	// The failure is undone: it no longer counts against the failure policy.
	if s.Upgrade.Status.AcknowledgedFailures > 0 {
		s.Upgrade.Status.AcknowledgedFailures--
	}
}

// passRemovalHooks applies the hook bypasses of the rollout
// (spec.bypass.machines) to the held removals that their preRemoval hook
// failed: the hook is run once more (Retry) or counted as succeeded (Skip),
// and the removal goes on through the rest of its gate (its checks, etcd,
// budget and other hooks). Like the bypass of an upgrade's hook, it is
// applied once per generation of the spec, with a Warning event.
func (r *Reconciler) passRemovalHooks(ctx context.Context, s *scope) {
	b := s.Upgrade.Spec.Bypass
	if b == nil {
		return
	}
	for _, mb := range b.Machines {
		rec := s.Removal(mb.Machine)
		if rec == nil || rec.Phase != upgradev1.RemovalPhaseHeld {
			continue
		}
		verb, ok := disruption.BypassHook(rec.Hooks, mb, s.Upgrade.Generation, s.Now)
		if !ok {
			continue
		}
		msg := fmt.Sprintf("preRemoval hook %q %s, bypassed by %s: %s", mb.Hook, verb, disruption.By(b), b.Reason)
		ctrl.LoggerFrom(ctx).Info("Bypassing the failed preRemoval hook of a Machine", "Machine", klog.KRef(s.Upgrade.Namespace, rec.Machine), "hook", mb.Hook, "action", mb.Action, "requestedBy", b.RequestedBy)
		r.machineEvent(s, rec.Machine, corev1.EventTypeWarning, "HookBypassed", "Bypass", "Removal of Machine %s: %s", rec.Machine, msg)
		rec.Message = msg
	}
}

// clearBypass ends the rollout's own bypass once the rollout is over and no
// removal is held: a bypass is for the rollout, or the removals, it was
// asked for, not for the next ones. A bypass asked for a removal of a
// Cluster whose rollout ended stays until that removal is released. It is
// recorded in status.bypassHistory before it goes, so a bypass that is
// applied and cleared in one reconcile is recorded too.
func (r *Reconciler) clearBypass(s *scope) {
	b := s.Upgrade.Spec.Bypass
	if b == nil || !s.Over() || s.HasPending() || s.RemovalHeld() {
		return
	}
	if b.Any() {
		s.RecordBypasses()
		r.event(s, corev1.EventTypeNormal, "BypassCleared", "Bypass", "The rollout ended: the bypass requested by %s is cleared", disruption.By(b))
	}
	s.Upgrade.Spec.Bypass = nil
}
