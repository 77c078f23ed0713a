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
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Bypasses are the bypasses in force: the rollout's, then its policy'r.
func (r *Rollout) Bypasses() []*upgradev1.BypassSpec {
	var out []*upgradev1.BypassSpec
	if b := r.Upgrade.Spec.Bypass; b.Any() {
		out = append(out, b)
	}
	if r.Policy != nil {
		if b := r.Policy.Spec.Bypass; b.Any() {
			out = append(out, b)
		}
	}
	return out
}

// HealthChecksBypass returns the bypass of the health checks in force, or
// nil.
func (r *Rollout) HealthChecksBypass() *upgradev1.BypassSpec {
	for _, b := range r.Bypasses() {
		if b.HealthChecks {
			return b
		}
	}
	return nil
}

// WindowsBypass returns the bypass that runs the rollout now, outside its
// maintenance windows, or nil.
func (r *Rollout) WindowsBypass() *upgradev1.BypassSpec {
	for _, b := range r.Bypasses() {
		if b.MaintenanceWindows {
			return b
		}
	}
	return nil
}

// HoldBypass returns the bypass that passes the holds of owner, or nil.
func (r *Rollout) HoldBypass(owner string) *upgradev1.BypassSpec {
	for _, b := range r.Bypasses() {
		if slices.Contains(b.HoldOwners, owner) {
			return b
		}
	}
	return nil
}

// By names who requested a bypass, for messages.
func By(b *upgradev1.BypassSpec) string {
	if b.RequestedBy == "" {
		return "an administrator"
	}
	return b.RequestedBy
}

// BypassHook applies the bypass mb to the hook it names among hooks, when
// that hook failed and no bypass was applied to it for generation gen of
// the spec: a Skip counts it as succeeded, a Retry makes its next attempt
// due at now (the runner deletes the failed Job and starts it). It returns
// what was done ("retried" or "skipped") and whether anything was.
func BypassHook(hooks []upgradev1.HookRunStatus, mb upgradev1.MachineBypass, gen int64, now time.Time) (string, bool) {
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

// HooksLeft reports whether a Machine started again by a hook bypass still
// has a hook to run after its reboot (nodePreReady, nodeReady): such a
// Machine on the target goes through them instead of completing at once.
func HooksLeft(u *upgradev1.TalosUpgrade, st *upgradev1.MachineUpgradeStatus) bool {
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

// Bypassed says what a bypass takes away.
func Bypassed(b *upgradev1.BypassSpec) string {
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

// MaxBypassHistory is the most records status.bypassHistory holds, as the
// schema allows.
const MaxBypassHistory = 32

// RecordBypasses keeps in status.bypassHistory, once, each bypass in force:
// who asked for it, why, what it takes away and when it was first found in
// force. The Bypassed condition goes with the bypass, and the bypass with
// the end of the rollout; the record stays.
func (r *Rollout) RecordBypasses() {
	u := r.Upgrade
	record := func(source upgradev1.BypassSource, b *upgradev1.BypassSpec) {
		if !b.Any() {
			return
		}
		rec := upgradev1.BypassRecord{Source: source, RequestedBy: b.RequestedBy, Reason: b.Reason, Bypassed: upgradev1.Truncate(Bypassed(b), upgradev1.MaxMessageLength)}
		if slices.ContainsFunc(u.Status.BypassHistory, func(o upgradev1.BypassRecord) bool {
			return o.Source == rec.Source && o.RequestedBy == rec.RequestedBy && o.Reason == rec.Reason && o.Bypassed == rec.Bypassed
		}) {
			return
		}
		rec.AppliedTime = metav1.NewTime(r.Now).Rfc3339Copy()
		u.Status.BypassHistory = append(u.Status.BypassHistory, rec)
		if n := len(u.Status.BypassHistory); n > MaxBypassHistory {
			u.Status.BypassHistory = slices.Clone(u.Status.BypassHistory[n-MaxBypassHistory:])
		}
	}
	record(upgradev1.BypassSourceUpgrade, u.Spec.Bypass)
	if r.Policy != nil {
		record(upgradev1.BypassSourcePolicy, r.Policy.Spec.Bypass)
	}
}
