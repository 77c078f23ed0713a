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
	"fmt"
	"strings"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// This file decides the removal of one Machine CAPI deletes (see
// removal.go, which reads the world and carries the decision out): a pure
// function of what the world said and the Machine's removal record.

// removalWorld is what the decision on one removal reads.
type removalWorld struct {
	// now is the time of the reconcile.
	now time.Time
	// timeout is the plan's removal.timeout.
	timeout time.Duration
	// detached is true when the Cluster left the policy, or the rollout is
	// deleted: Tollgate keeps no hook on its Machines.
	detached bool
	// reachable is true when the workload cluster can be reached: the
	// hooks run there, and the checks and the budget read it.
	reachable bool
	// nodeUnavailable is true when the Machine has no Ready node: its
	// removal takes nothing more from the budget, and waits for no turn.
	nodeUnavailable bool
	// ahead names the removal of the same group that goes first (released
	// and not gone, or chosen before this one), "" when it is this one's
	// turn.
	ahead string
	// checksPassed is the verdict of the health checks (true when they are
	// bypassed), and checksMessage what they wait for.
	checksPassed  bool
	checksMessage string
	// busy says what takes the disruption budget of the Machine's group,
	// "" when the ledger admits its removal: its group has room, or its
	// node takes no work already (NotReady, or cordoned: its upgrade cut
	// short by its deletion, say), and its removal takes nothing more.
	busy string
	// controlPlane is true for a control-plane Machine: its removal waits
	// for etcd health. etcdHealthy is the verdict (read only for a
	// control-plane removal that may wait for it), and etcdMessage what it
	// waits for.
	controlPlane bool
	etcdHealthy  bool
	etcdMessage  string
	// hooks is the state of the preRemoval hooks after they were run in
	// this reconcile; nil when they were not.
	hooks *hooks.RunResult
}

// removalIntent is what a decision on a removal asks of the executor.
type removalIntent int

const (
	// removalWait keeps the hook; the record's message says why.
	removalWait removalIntent = iota
	// removalRunHooks runs the preRemoval hooks, then decides again.
	removalRunHooks
	// removalRelease removes the hook: CAPI drains and deletes.
	removalRelease
)

// removalDecision is the decision on one removal.
type removalDecision struct {
	intent removalIntent
	// reason is the record's new reason: what the Machine waits for, one of
	// the Removals condition's reasons; empty when it is released.
	reason string
	// message is the record's new message: what the Machine waits for, or
	// why it was released.
	message string
	// warn is true when the Machine is released without having passed the
	// gate (its timeout, or the Cluster left the policy).
	warn bool
	// retry is when to decide again while waiting for time alone (the
	// timeout); zero when an event brings the decision back.
	retry time.Duration
}

// decideRemoval decides what happens to a held removal. In order: a Cluster
// being deleted, or one that left the policy, is not held; a Machine waits
// for its turn in its group (none for a node already unavailable), the
// health checks (none for a remediated Machine), etcd health (a
// control-plane Machine deleted while its node is Ready), room in the
// budget (none for a node already unavailable), then its preRemoval hooks;
// it is released once all passed, or once its timeout passed, whatever it
// waited for.
func decideRemoval(w removalWorld, rec *upgradev1.MachineRemovalStatus) removalDecision {
	if rec.Phase == upgradev1.RemovalPhaseReleased {
		return removalDecision{intent: removalWait, message: rec.Message}
	}
	switch {
	case rec.Cause == upgradev1.RemovalCauseClusterDeleted:
		return removalDecision{intent: removalRelease, message: "released at once: the Cluster is being deleted"}
	case w.detached:
		return removalDecision{intent: removalRelease, warn: true, message: "released without the gate: the Cluster left the policy"}
	}
	deadline := rec.StartTime.Add(w.timeout)
	var why, reason string
	var retry time.Duration
	switch {
	case !w.reachable:
		reason, why = upgradev1.RemovalWorkloadUnreachableReason, "the workload cluster cannot be reached: its preRemoval hooks, health checks and budget cannot be read"
	case w.ahead != "" && !w.nodeUnavailable:
		reason, why = upgradev1.RemovalWaitingForBudgetReason, fmt.Sprintf("waiting for the removal of Machine %q first (one at a time per group)", w.ahead)
	case rec.Cause != upgradev1.RemovalCauseRemediated && !w.checksPassed:
		reason, why = upgradev1.RemovalWaitingForHealthChecksReason, "waiting for the health checks: "+w.checksMessage
	case waitsForEtcd(w, rec) && !w.etcdHealthy:
		// Nothing sends an event when etcd heals: read it again.
		reason, why, retry = upgradev1.RemovalWaitingForEtcdReason, w.etcdMessage, etcdRetry
	case w.busy != "":
		reason, why = upgradev1.RemovalWaitingForBudgetReason, "waiting for room in the disruption budget: "+w.busy
	case w.hooks == nil && w.now.Before(deadline):
		return removalDecision{intent: removalRunHooks, reason: upgradev1.RemovalWaitingForHooksReason}
	case w.hooks == nil:
		// Past the timeout no hook is run, nor read: the record says how
		// far they got.
		reason, why = upgradev1.RemovalWaitingForHooksReason, unfinishedHooks(rec.Hooks)
	case w.hooks.Failed:
		reason, why = upgradev1.RemovalHookFailedReason, "preRemoval "+w.hooks.Message
	case !w.hooks.Done:
		reason, why = upgradev1.RemovalWaitingForHooksReason, "waiting for its preRemoval hooks: "+w.hooks.Message
	default:
		return removalDecision{intent: removalRelease, message: releaseMessage(rec.Cause)}
	}
	if !w.now.Before(deadline) {
		return removalDecision{intent: removalRelease, warn: true,
			message: fmt.Sprintf("released after the removal timeout (%s) while %s", w.timeout, why)}
	}
	if left := deadline.Sub(w.now); retry == 0 || left < retry {
		retry = left
	}
	msg := fmt.Sprintf("%s; released at %s at the latest", why, deadline.UTC().Format(time.RFC3339))
	if reason == upgradev1.RemovalHookFailedReason {
		msg += "; to let it through before, retry or skip the hook with spec.bypass.machines (kubectl tollgate bypass CLUSTER --retry or --skip MACHINE/HOOK)"
	}
	return removalDecision{intent: removalWait, reason: reason, retry: retry, message: msg}
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

// waitsForEtcd reports whether a removal waits for etcd to be healthy: a
// control-plane Machine deleted (not remediated) whose node is available.
// A remediated Machine's own etcd member may be the unhealthy one, and a
// node already down takes nothing more from etcd; the control-plane
// provider guards etcd's quorum when it removes the member.
func waitsForEtcd(w removalWorld, rec *upgradev1.MachineRemovalStatus) bool {
	return w.controlPlane && !w.nodeUnavailable && rec.Cause == upgradev1.RemovalCauseDeleted
}

// releaseMessage says why a Machine that passed the gate was released.
func releaseMessage(cause upgradev1.RemovalCause) string {
	if cause == upgradev1.RemovalCauseRemediated {
		return "released: remediated Machine, its preRemoval hooks ran (the health checks do not hold a remediation)"
	}
	return "released: its preRemoval hooks ran, the health checks pass and the disruption budget has room"
}
