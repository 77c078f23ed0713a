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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// SyncRemovals brings status.removals up to date with the Machines: a
// record for every deleting Machine that carries Tollgate's hook (or had a
// record), none for a Machine gone or not deleting. It returns the names of
// the new records.
func (r *Rollout) SyncRemovals() []string {
	u := r.Upgrade
	old := make(map[string]upgradev1.MachineRemovalStatus, len(u.Status.Removals))
	for _, rec := range u.Status.Removals {
		old[rec.Machine] = rec
	}
	var records []upgradev1.MachineRemovalStatus
	var added []string
	for _, name := range SortedNames(r.Machines) {
		m := r.Machines[name]
		if m.DeletionTimestamp.IsZero() {
			continue
		}
		rec, ok := old[name]
		if !ok {
			if !hooks.HasDeletionHook(m) {
				continue // Not held by Tollgate: CAPI goes on.
			}
			rec = upgradev1.MachineRemovalStatus{Machine: name, Phase: upgradev1.RemovalPhaseHeld, StartTime: metav1.NewTime(r.Now)}
			added = append(added, name)
		}
		rec.Node = m.Status.NodeRef.Name
		rec.Group = GroupOf(&u.Spec, m)
		rec.Cause = RemovalCause(r.Cluster, m, rec.Cause)
		if rec.Phase == upgradev1.RemovalPhaseHeld && !hooks.HasDeletionHook(m) {
			// Released by a reconcile that could not record it, or by hand.
			rec.Phase, rec.ReleaseTime, rec.Reason, rec.Message = upgradev1.RemovalPhaseReleased, ptrTime(r.Now), "", "released: Tollgate's deletion hook is gone"
		}
		records = append(records, rec)
	}
	u.Status.Removals = records
	return added
}

// Removal returns the removal record of machine, nil when none.
func (r *Rollout) Removal(machine string) *upgradev1.MachineRemovalStatus {
	for i := range r.Upgrade.Status.Removals {
		if r.Upgrade.Status.Removals[i].Machine == machine {
			return &r.Upgrade.Status.Removals[i]
		}
	}
	return nil
}

// RemovalCause tells why m is deleted: its Cluster is deleted, a
// MachineHealthCheck found it unhealthy (CAPI's HealthCheckSucceeded
// condition False, or its OwnerRemediated condition set), or its owner or a
// user deletes it. A Machine once seen remediated stays so.
func RemovalCause(cluster *clusterv1.Cluster, m *clusterv1.Machine, previous upgradev1.RemovalCause) upgradev1.RemovalCause {
	switch {
	case !cluster.DeletionTimestamp.IsZero():
		return upgradev1.RemovalCauseClusterDeleted
	case previous == upgradev1.RemovalCauseRemediated,
		conditions.IsFalse(m, clusterv1.MachineHealthCheckSucceededCondition),
		conditions.Has(m, clusterv1.MachineOwnerRemediatedCondition):
		return upgradev1.RemovalCauseRemediated
	}
	return upgradev1.RemovalCauseDeleted
}

// KeepsDeletionHooks reports whether Tollgate keeps its deletion hook on
// the Cluster's Machines: the rollout lives, and its Cluster lives and opts
// in to its policy.
func (r *Rollout) KeepsDeletionHooks() bool {
	return r.Upgrade.DeletionTimestamp.IsZero() && r.Cluster != nil && r.Cluster.DeletionTimestamp.IsZero() && !r.Detached()
}

// HoldsRemovals reports whether a removal is held that needs the workload
// cluster: its hooks, checks and budget are read there.
func (r *Rollout) HoldsRemovals() bool {
	if !r.KeepsDeletionHooks() {
		return false
	}
	for _, rec := range r.Upgrade.Status.Removals {
		if rec.Phase == upgradev1.RemovalPhaseHeld && rec.Cause != upgradev1.RemovalCauseClusterDeleted {
			return true
		}
	}
	return false
}

// RemovalHeld reports whether Tollgate's deletion hook holds a Machine
// CAPI deletes.
func (r *Rollout) RemovalHeld() bool {
	return slices.ContainsFunc(r.Upgrade.Status.Removals, func(rec upgradev1.MachineRemovalStatus) bool {
		return rec.Phase == upgradev1.RemovalPhaseHeld
	})
}

// RemovalTimeout is the plan's removal.Timeout.
func (r *Rollout) RemovalTimeout() time.Duration {
	if t := r.Upgrade.Spec.Removal.Timeout; t != nil {
		return t.Duration
	}
	return plan.DefaultRemovalTimeout
}

// RemovalAhead names the removal of rec's group that goes before rec: one
// released whose Machine is not gone yet, else the first held one whose
// node is available (its hooks started first, then the oldest, then by
// name); "" when it is rec's turn.
func (r *Rollout) RemovalAhead(rec *upgradev1.MachineRemovalStatus) string {
	var held []*upgradev1.MachineRemovalStatus
	for i := range r.Upgrade.Status.Removals {
		o := &r.Upgrade.Status.Removals[i]
		if o.Group != rec.Group || o.Machine == rec.Machine || o.Cause == upgradev1.RemovalCauseClusterDeleted {
			continue
		}
		if o.Phase == upgradev1.RemovalPhaseReleased {
			return o.Machine
		}
		if o.Node != "" && r.Nodes[o.Node] != NodeNotReady {
			held = append(held, o)
		}
	}
	held = append(held, rec)
	slices.SortStableFunc(held, func(a, b *upgradev1.MachineRemovalStatus) int {
		if started(a) != started(b) {
			if started(a) {
				return -1
			}
			return 1
		}
		if c := a.StartTime.Compare(b.StartTime.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Machine, b.Machine)
	})
	if held[0].Machine == rec.Machine {
		return ""
	}
	return held[0].Machine
}

// started reports whether the preRemoval hooks of a removal started.
func started(rec *upgradev1.MachineRemovalStatus) bool {
	return len(rec.Hooks) > 0
}

// RemovalObservation is what the decision on one removal reads.
type RemovalObservation struct {
	// Now is the time of the reconcile.
	Now time.Time
	// Timeout is the plan's removal.Timeout.
	Timeout time.Duration
	// Detached is true when the Cluster left the policy, or the rollout is
	// deleted: Tollgate keeps no hook on its Machines.
	Detached bool
	// Reachable is true when the workload cluster can be reached: the
	// Hooks run there, and the checks and the budget read it.
	Reachable bool
	// NodeUnavailable is true when the Machine has no Ready node: its
	// removal takes nothing more from the budget, and waits for no turn.
	NodeUnavailable bool
	// NodeGone is true when the Machine's workload Node is gone (the
	// workload cluster answers without it) while the Machine is held: it
	// counts as down. LeftEtcd is true for a control-plane Machine whose
	// node is no etcd member any more (read by the controller). Its
	// control-plane provider took them away before CAPI consulted the
	// deletion hook (the Talos control-plane provider v0.5.x leaves etcd and
	// deletes the Node first): the gate guards neither, it holds what is
	// left.
	NodeGone, LeftEtcd bool
	// Ahead names the removal of the same group that goes first (released
	// and not gone, or chosen before this one), "" when it is this one's
	// turn.
	Ahead string
	// ChecksPassed is the verdict of the health checks (true when they are
	// bypassed), and checksMessage what they wait for.
	ChecksPassed  bool
	ChecksMessage string
	// Busy says what takes the disruption budget of the Machine's group,
	// "" when the ledger admits its removal: its group has room, or its
	// node takes no work already (NotReady, or cordoned: its upgrade cut
	// short by its deletion, say), and its removal takes nothing more.
	Busy string
	// ControlPlane is true for a control-plane Machine: its removal waits
	// for etcd health. etcdHealthy is the verdict (read only for a
	// control-plane removal that may wait for it), and etcdMessage what it
	// waits for.
	ControlPlane bool
	EtcdHealthy  bool
	EtcdMessage  string
	// Hooks is the state of the preRemoval hooks after they were run in
	// this reconcile; nil when they were not.
	Hooks *hooks.RunResult
}

// RemovalIntent is what a decision on a removal asks of the executor.
type RemovalIntent int

const (
	// RemovalWait keeps the hook; the record's message says why.
	RemovalWait RemovalIntent = iota
	// RemovalRunHooks runs the preRemoval hooks, then decides again.
	RemovalRunHooks
	// RemovalRelease removes the hook: CAPI drains and deletes.
	RemovalRelease
)

// RemovalDecision is the decision on one removal.
type RemovalDecision struct {
	Intent RemovalIntent
	// Reason is the record's new reason: what the Machine waits for, one of
	// the Removals condition's reasons; empty when it is released.
	Reason string
	// Message is the record's new message: what the Machine waits for, or
	// why it was released.
	Message string
	// Warn is true when the Machine is released without having passed the
	// gate (its timeout, or the Cluster left the policy).
	Warn bool
	// Gated is set on a release that passed the gate, the budget's room
	// included: the executor asks the ledger again with the Cluster's
	// Machines read live before it releases, as a cache behind a release it
	// made (or another replica's) shows a Machine still held.
	Gated bool
	// Retry is when to decide again while waiting for time alone (the
	// Timeout); zero when an event brings the decision back.
	Retry time.Duration
	// NotGuarded is set when the message first says that the gate did not
	// guard etcd or the Node (UnguardedRemovalNote), which the record's did
	// not: the executor records a Warning event RemovalNotGuarded while the
	// Machine waits.
	NotGuarded bool
}

// DecideRemoval decides what happens to a held removal. In order: a Cluster
// being deleted, or one that left the policy, is not held; a Machine waits
// for its turn in its group (none for a node already unavailable), the
// health checks (none for a remediated Machine), etcd health (a
// control-plane Machine deleted while its node is Ready), room in the
// budget (none for a node already unavailable), then its preRemoval hooks;
// it is released once all passed, or once its timeout passed, whatever it
// waited for.
func DecideRemoval(w RemovalObservation, rec *upgradev1.MachineRemovalStatus) RemovalDecision {
	if rec.Phase == upgradev1.RemovalPhaseReleased {
		return RemovalDecision{Intent: RemovalWait, Message: rec.Message}
	}
	d := decideHeldRemoval(w, rec)
	if note := unguardedNote(w); note != "" && d.Message != "" {
		d.Message = note + d.Message
		d.NotGuarded = !strings.HasPrefix(rec.Message, UnguardedRemovalNote)
	}
	return d
}

// UnguardedRemovalNote starts the message of a removal whose node its
// control-plane provider took out of etcd, or whose Node it deleted, before
// CAPI consulted Tollgate's deletion hook: the gate runs the preRemoval
// hooks and waits for the health checks, the budget and its turn, but it
// guarded neither etcd nor the Node.
const UnguardedRemovalNote = "not guarded by the gate: the control-plane provider took its node out before CAPI's deletion hook"

// unguardedNote says, for a removal whose node left etcd or lost its Node
// before the deletion hook, what the gate no longer guards; "" for another.
func unguardedNote(w RemovalObservation) string {
	switch {
	case w.LeftEtcd && w.NodeGone:
		return UnguardedRemovalNote + " (left etcd and lost its Node): "
	case w.LeftEtcd:
		return UnguardedRemovalNote + " (left etcd): "
	case w.NodeGone && w.ControlPlane:
		return UnguardedRemovalNote + " (lost its Node): "
	}
	return ""
}

// decideHeldRemoval decides on a held removal.
func decideHeldRemoval(w RemovalObservation, rec *upgradev1.MachineRemovalStatus) RemovalDecision {
	if w.NodeGone {
		// A node that is gone takes nothing more from the budget and waits
		// for no turn, as one NotReady.
		w.NodeUnavailable, w.Busy = true, ""
	}
	switch {
	case rec.Cause == upgradev1.RemovalCauseClusterDeleted:
		return RemovalDecision{Intent: RemovalRelease, Message: "released at once: the Cluster is being deleted"}
	case w.Detached:
		return RemovalDecision{Intent: RemovalRelease, Warn: true, Message: "released without the gate: the Cluster left the policy"}
	}
	deadline := rec.StartTime.Add(w.Timeout)
	var why, reason string
	var retry time.Duration
	switch {
	case !w.Reachable:
		reason, why = upgradev1.RemovalWorkloadUnreachableReason, "the workload cluster cannot be reached: its preRemoval hooks, health checks and budget cannot be read"
	case w.Ahead != "" && !w.NodeUnavailable:
		reason, why = upgradev1.RemovalWaitingForBudgetReason, fmt.Sprintf("waiting for the removal of Machine %q first (one at a time per group)", w.Ahead)
	case rec.Cause != upgradev1.RemovalCauseRemediated && !w.ChecksPassed:
		reason, why = upgradev1.RemovalWaitingForHealthChecksReason, "waiting for the health checks: "+w.ChecksMessage
	case WaitsForEtcd(w, rec) && !w.EtcdHealthy:
		// Nothing sends an event when etcd heals: read it again.
		reason, why, retry = upgradev1.RemovalWaitingForEtcdReason, w.EtcdMessage, EtcdRetry
	case w.Busy != "":
		reason, why = upgradev1.RemovalWaitingForBudgetReason, "waiting for room in the disruption budget: "+w.Busy
	case w.Hooks == nil && w.Now.Before(deadline):
		return RemovalDecision{Intent: RemovalRunHooks, Reason: upgradev1.RemovalWaitingForHooksReason}
	case w.Hooks == nil:
		// Past the timeout no hook is run, nor read: the record says how
		// far they got.
		reason, why = upgradev1.RemovalWaitingForHooksReason, unfinishedHooks(rec.Hooks)
	case w.Hooks.Failed:
		reason, why = upgradev1.RemovalHookFailedReason, "preRemoval "+w.Hooks.Message
	case !w.Hooks.Done:
		reason, why = upgradev1.RemovalWaitingForHooksReason, "waiting for its preRemoval hooks: "+w.Hooks.Message
	default:
		return RemovalDecision{Intent: RemovalRelease, Gated: true, Message: releaseMessage(rec.Cause)}
	}
	if !w.Now.Before(deadline) {
		return RemovalDecision{Intent: RemovalRelease, Warn: true,
			Message: fmt.Sprintf("released after the removal timeout (%s) while %s", w.Timeout, why)}
	}
	if left := deadline.Sub(w.Now); retry == 0 || left < retry {
		retry = left
	}
	msg := fmt.Sprintf("%s; released at %s at the latest", why, deadline.UTC().Format(time.RFC3339))
	if reason == upgradev1.RemovalHookFailedReason {
		msg += "; to let it through before, retry or skip the hook with spec.bypass.machines (kubectl tollgate bypass CLUSTER --retry or --skip MACHINE/HOOK)"
	}
	return RemovalDecision{Intent: RemovalWait, Reason: reason, Retry: retry, Message: msg}
}

// unfinishedHooks says, from the record of a removal, how far its
// preRemoval hooks got: not started, or which of them had not completed and
// where each stood.
func unfinishedHooks(recorded []upgradev1.HookRunStatus) string {
	if len(recorded) == 0 {
		return "its preRemoval hooks had not started"
	}
	var where []string
	for _, h := range recorded {
		switch {
		case h.Phase == upgradev1.HookRunFailed:
			where = append(where, fmt.Sprintf("hook %q had failed", h.Name))
		case h.Phase == upgradev1.HookRunRunning && h.NextAttemptTime != nil:
			where = append(where, fmt.Sprintf("hook %q had failed attempt %d and was to be retried", h.Name, h.Attempts))
		case h.Phase == upgradev1.HookRunRunning && h.JobName != "":
			where = append(where, fmt.Sprintf("hook %q was still running (Job %s)", h.Name, h.JobName))
		case h.Phase != upgradev1.HookRunSucceeded && h.Phase != upgradev1.HookRunSkipped:
			where = append(where, fmt.Sprintf("hook %q had not started", h.Name))
		}
	}
	if len(where) == 0 {
		return "its preRemoval hooks had not completed"
	}
	return "its preRemoval hooks had not completed: " + strings.Join(where, ", ")
}

// WaitsForEtcd reports whether a removal waits for etcd to be healthy: a
// control-plane Machine deleted (not remediated) whose node is available
// and still an etcd member. A remediated Machine's own etcd member may be the unhealthy one, and a
// node already down takes nothing more from etcd; the control-plane
// provider guards etcd's quorum when it removes the member.
func WaitsForEtcd(w RemovalObservation, rec *upgradev1.MachineRemovalStatus) bool {
	return w.ControlPlane && !w.NodeUnavailable && !w.NodeGone && !w.LeftEtcd && rec.Cause == upgradev1.RemovalCauseDeleted
}

// ReadsEtcd reports whether the controller reads etcd for a removal: a
// control-plane Machine deleted (not remediated) while the workload cluster
// can be reached and the Cluster keeps the gate, whatever its node: the
// members it reads also say whether the node left etcd (LeftEtcd).
func ReadsEtcd(w RemovalObservation, rec *upgradev1.MachineRemovalStatus) bool {
	return w.ControlPlane && rec.Cause == upgradev1.RemovalCauseDeleted && w.Reachable && !w.Detached
}

// ObserveEtcd records the etcd health the controller read for a removal
// (ReadsEtcd): its verdict, what it waits for, and the members' names, nil
// when no node answered. A node no member lists left etcd before the
// deletion hook.
func ObserveEtcd(w *RemovalObservation, rec *upgradev1.MachineRemovalStatus, healthy bool, message string, members []string) {
	w.EtcdHealthy, w.EtcdMessage = healthy, message
	w.LeftEtcd = members != nil && rec.Node != "" && !slices.Contains(members, rec.Node)
}

// releaseMessage says why a Machine that passed the gate was released.
func releaseMessage(cause upgradev1.RemovalCause) string {
	if cause == upgradev1.RemovalCauseRemediated {
		return "released: remediated Machine, its preRemoval hooks ran (the health checks do not hold a remediation)"
	}
	return "released: its preRemoval hooks ran, the health checks pass and the disruption budget has room"
}

// ObserveRemoval is what the decision on the held removal rec reads, from
// the rollout and the verdict of the health checks (checksPassed, and what
// they wait for); a control-plane removal whose etcd the controller reads
// (ReadsEtcd) has it recorded by ObserveEtcd.
func (r *Rollout) ObserveRemoval(rec *upgradev1.MachineRemovalStatus, checksPassed bool, checksMessage string) RemovalObservation {
	w := RemovalObservation{
		Now:             r.Now,
		Timeout:         r.RemovalTimeout(),
		Detached:        !r.KeepsDeletionHooks() && r.Cluster.DeletionTimestamp.IsZero(),
		Reachable:       r.Reachable,
		NodeUnavailable: rec.Node == "" || r.Nodes[rec.Node] == NodeNotReady,
		NodeGone:        rec.Node != "" && r.NodeGone(rec.Node),
		Ahead:           r.RemovalAhead(rec),
		ChecksPassed:    checksPassed,
		ChecksMessage:   checksMessage,
		ControlPlane:    rec.Group == ControlPlaneGroup,
	}
	if w.ChecksMessage == "" {
		w.ChecksMessage = "they have not passed yet"
	}
	if v := r.Ledger().Admit(rec.Machine); !v.Admitted {
		w.Busy = v.Budget.Message()
	}
	return w
}
