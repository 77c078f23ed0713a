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
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// This file answers "what did an administrator override, and who": the
// bypasses of the rollout (spec.bypass) and of its policy. A bypass takes a
// safety gate away, so each is applied visibly: the Bypassed condition says
// what is bypassed, by whom and why, every application is an event, and the
// rollout's own bypass is cleared when the rollout ends.

// bypasses are the bypasses in force: the rollout's, then its policy's.
func (s *scope) bypasses() []*upgradev1.BypassSpec {
	var out []*upgradev1.BypassSpec
	if b := s.upgrade.Spec.Bypass; b.Any() {
		out = append(out, b)
	}
	if s.policy != nil {
		if b := s.policy.Spec.Bypass; b.Any() {
			out = append(out, b)
		}
	}
	return out
}

// healthChecksBypass returns the bypass of the health checks in force, or
// nil.
func (s *scope) healthChecksBypass() *upgradev1.BypassSpec {
	for _, b := range s.bypasses() {
		if b.HealthChecks {
			return b
		}
	}
	return nil
}

// windowsBypass returns the bypass that runs the rollout now, outside its
// maintenance windows, or nil.
func (s *scope) windowsBypass() *upgradev1.BypassSpec {
	for _, b := range s.bypasses() {
		if b.MaintenanceWindows {
			return b
		}
	}
	return nil
}

// holdBypass returns the bypass that passes the holds of owner, or nil.
func (s *scope) holdBypass(owner string) *upgradev1.BypassSpec {
	for _, b := range s.bypasses() {
		if slices.Contains(b.HoldOwners, owner) {
			return b
		}
	}
	return nil
}

// by names who requested a bypass, for messages.
func by(b *upgradev1.BypassSpec) string {
	if b.RequestedBy == "" {
		return "an administrator"
	}
	return b.RequestedBy
}

// passHolds drops from owners those whose holds a bypass passes, with an
// event for each, and returns the owners still holding the Machine.
func (r *Reconciler) passHolds(s *scope, st *upgradev1.MachineUpgradeStatus, point upgradev1.HoldPoint, owners []string) []string {
	holding := owners[:0:0]
	for _, owner := range owners {
		b := s.holdBypass(owner)
		if b == nil {
			holding = append(holding, owner)
			continue
		}
		r.event(s, corev1.EventTypeWarning, "HoldBypassed", "Bypass", "Machine %s: the %s hold of %q is passed (not released), bypassed by %s: %s", st.Machine, point, owner, by(b), b.Reason)
	}
	return holding
}

// reconcileBypasses applies the hook bypasses of the rollout
// (spec.bypass.machines) to the Machines that their hook failed: each starts
// again, through the rollout's gates and budget like any Machine that has
// not started, with its hook to run once more (Retry) or counted as
// succeeded (Skip). A bypass is applied once per generation of the spec.
func (r *Reconciler) reconcileBypasses(ctx context.Context, s *scope) (ctrl.Result, error) {
	b := s.upgrade.Spec.Bypass
	if b == nil {
		return ctrl.Result{}, nil
	}
	for _, mb := range b.Machines {
		for i := range s.upgrade.Status.Machines {
			st := &s.upgrade.Status.Machines[i]
			if st.Machine == mb.Machine && st.Phase == upgradev1.MachinePhaseFailed {
				r.applyHookBypass(ctx, s, st, mb, b)
			}
		}
	}
	return ctrl.Result{}, nil
}

// applyHookBypass starts a Machine that hook mb.Hook failed again.
func (r *Reconciler) applyHookBypass(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, mb upgradev1.MachineBypass, b *upgradev1.BypassSpec) {
	verb, ok := bypassHook(st.Hooks, mb, s.upgrade.Generation, s.now)
	if !ok {
		return // Not failed by this hook, or bypassed already for this spec.
	}
	msg := fmt.Sprintf("hook %q %s, bypassed by %s: %s", mb.Hook, verb, by(b), b.Reason)
	ctrl.LoggerFrom(ctx).Info("Starting a failed Machine again", "Machine", st.Machine, "hook", mb.Hook, "action", mb.Action, "requestedBy", b.RequestedBy)
	r.event(s, corev1.EventTypeWarning, "HookBypassed", "Bypass", "Machine %s: %s", st.Machine, msg)
	*st = upgradev1.MachineUpgradeStatus{
		Machine: st.Machine, Role: st.Role, Group: st.Group, Node: st.Node, FromVersion: st.FromVersion,
		TargetVersion: st.TargetVersion, Phase: upgradev1.MachinePhasePending, Message: msg,
		Hooks: st.Hooks, PhaseDurations: st.PhaseDurations, StartTime: st.StartTime,
	}
	// The failure is undone: it no longer counts against the failure policy.
	if s.upgrade.Status.AcknowledgedFailures > 0 {
		s.upgrade.Status.AcknowledgedFailures--
	}
}

// passRemovalHooks applies the hook bypasses of the rollout
// (spec.bypass.machines) to the held removals that their preRemoval hook
// failed: the hook is run once more (Retry) or counted as succeeded (Skip),
// and the removal goes on through the rest of its gate (its checks, etcd,
// budget and other hooks). Like the bypass of an upgrade's hook, it is
// applied once per generation of the spec, with a Warning event.
func (r *Reconciler) passRemovalHooks(ctx context.Context, s *scope) {
	b := s.upgrade.Spec.Bypass
	if b == nil {
		return
	}
	for _, mb := range b.Machines {
		rec := s.removal(mb.Machine)
		if rec == nil || rec.Phase != upgradev1.RemovalPhaseHeld {
			continue
		}
		verb, ok := bypassHook(rec.Hooks, mb, s.upgrade.Generation, s.now)
		if !ok {
			continue
		}
		msg := fmt.Sprintf("preRemoval hook %q %s, bypassed by %s: %s", mb.Hook, verb, by(b), b.Reason)
		ctrl.LoggerFrom(ctx).Info("Bypassing the failed preRemoval hook of a Machine", "Machine", klog.KRef(s.upgrade.Namespace, rec.Machine), "hook", mb.Hook, "action", mb.Action, "requestedBy", b.RequestedBy)
		r.event(s, corev1.EventTypeWarning, "HookBypassed", "Bypass", "Removal of Machine %s: %s", rec.Machine, msg)
		rec.Message = msg
	}
}

// bypassHook applies the bypass mb to the hook it names among hooks, when
// that hook failed and no bypass was applied to it for generation gen of
// the spec: a Skip counts it as succeeded, a Retry makes its next attempt
// due at now (the runner deletes the failed Job and starts it). It returns
// what was done ("retried" or "skipped") and whether anything was.
func bypassHook(hooks []upgradev1.HookRunStatus, mb upgradev1.MachineBypass, gen int64, now time.Time) (string, bool) {
	idx := slices.IndexFunc(hooks, func(h upgradev1.HookRunStatus) bool { return h.Name == mb.Hook })
	if idx < 0 || hooks[idx].Phase != upgradev1.HookRunFailed || hooks[idx].BypassedGeneration >= gen {
		return "", false
	}
	h := &hooks[idx]
	h.BypassedGeneration = gen
	if mb.Action == upgradev1.HookBypassSkip {
		h.Phase = upgradev1.HookRunSkipped
		return "skipped", true
	}
	next := metav1.NewTime(now)
	h.Phase, h.NextAttemptTime = upgradev1.HookRunRunning, &next
	return "retried", true
}

// hooksLeft reports whether a Machine started again by a hook bypass still
// has a hook to run after its reboot (nodePreReady, nodeReady): such a
// Machine on the target goes through them instead of completing at once.
func hooksLeft(u *upgradev1.TalosUpgrade, st *upgradev1.MachineUpgradeStatus) bool {
	revived := slices.ContainsFunc(st.Hooks, func(h upgradev1.HookRunStatus) bool { return h.BypassedGeneration > 0 })
	if !revived {
		return false
	}
	for _, h := range u.Spec.Hooks {
		if h.Point != upgradev1.HookPointNodePreReady && h.Point != upgradev1.HookPointNodeReady {
			continue
		}
		i := slices.IndexFunc(st.Hooks, func(r upgradev1.HookRunStatus) bool { return r.Name == h.Name })
		if i < 0 || (st.Hooks[i].Phase != upgradev1.HookRunSucceeded && st.Hooks[i].Phase != upgradev1.HookRunSkipped) {
			return true
		}
	}
	return false
}

// clearBypass ends the rollout's own bypass once the rollout is over and no
// removal is held: a bypass is for the rollout, or the removals, it was
// asked for, not for the next ones. A bypass asked for a removal of a
// Cluster whose rollout ended stays until that removal is released. It is
// recorded in status.bypassHistory before it goes, so a bypass that is
// applied and cleared in one reconcile is recorded too.
func (r *Reconciler) clearBypass(s *scope) {
	b := s.upgrade.Spec.Bypass
	if b == nil || !s.over() || s.hasPending() || s.removalHeld() {
		return
	}
	if b.Any() {
		recordBypasses(s)
		r.event(s, corev1.EventTypeNormal, "BypassCleared", "Bypass", "The rollout ended: the bypass requested by %s is cleared", by(b))
	}
	s.upgrade.Spec.Bypass = nil
}

// bypassed says what a bypass takes away.
func bypassed(b *upgradev1.BypassSpec) string {
	var what []string
	if b.HealthChecks {
		what = append(what, "health checks")
	}
	if b.MaintenanceWindows {
		what = append(what, "maintenance windows (run now)")
	}
	for _, m := range b.Machines {
		what = append(what, fmt.Sprintf("hook %q of Machine %q (%s)", m.Hook, m.Machine, m.Action))
	}
	if len(b.HoldOwners) > 0 {
		what = append(what, "the holds of "+strings.Join(b.HoldOwners, ", "))
	}
	return strings.Join(what, ", ")
}

// maxBypassHistory is the most records status.bypassHistory holds, as the
// schema allows.
const maxBypassHistory = 32

// recordBypasses keeps in status.bypassHistory, once, each bypass in force:
// who asked for it, why, what it takes away and when it was first found in
// force. The Bypassed condition goes with the bypass, and the bypass with
// the end of the rollout; the record stays.
func recordBypasses(s *scope) {
	u := s.upgrade
	record := func(source upgradev1.BypassSource, b *upgradev1.BypassSpec) {
		if !b.Any() {
			return
		}
		rec := upgradev1.BypassRecord{Source: source, RequestedBy: b.RequestedBy, Reason: b.Reason, Bypassed: truncate(bypassed(b), 1024)}
		if slices.ContainsFunc(u.Status.BypassHistory, func(r upgradev1.BypassRecord) bool {
			return r.Source == rec.Source && r.RequestedBy == rec.RequestedBy && r.Reason == rec.Reason && r.Bypassed == rec.Bypassed
		}) {
			return
		}
		rec.AppliedTime = metav1.NewTime(s.now).Rfc3339Copy()
		u.Status.BypassHistory = append(u.Status.BypassHistory, rec)
		if n := len(u.Status.BypassHistory); n > maxBypassHistory {
			u.Status.BypassHistory = slices.Clone(u.Status.BypassHistory[n-maxBypassHistory:])
		}
	}
	record(upgradev1.BypassSourceUpgrade, u.Spec.Bypass)
	if s.policy != nil {
		record(upgradev1.BypassSourcePolicy, s.policy.Spec.Bypass)
	}
}
