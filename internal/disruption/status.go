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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// MachineCounts counts the Machine records by where they are.
type MachineCounts struct {
	Total, Completed, Failed, Running int32
}

// CountMachines counts records: how many there are, completed, failed and in
// flight.
func CountMachines(records []upgradev1.MachineUpgradeStatus) MachineCounts {
	c := MachineCounts{Total: int32(len(records))}
	for _, m := range records {
		switch {
		case m.Phase == upgradev1.MachinePhaseCompleted:
			c.Completed++
		case m.Phase == upgradev1.MachinePhaseFailed:
			c.Failed++
		case m.Phase.InFlight():
			c.Running++
		}
	}
	return c
}

// Ending is why a rollout that is over did not complete.
type Ending struct {
	// Phase is Failed or Detached; empty while the rollout is not over or
	// when it completed.
	Phase   upgradev1.UpgradePhase
	Reason  string
	Message string
}

// End says how the rollout ended, if it is over without completing.
func (r *Rollout) End(counts MachineCounts) Ending {
	u := r.Upgrade
	if !r.Over() || (counts.Total > 0 && counts.Completed == counts.Total) {
		return Ending{}
	}
	switch {
	case r.Detached():
		return Ending{Phase: upgradev1.UpgradePhaseDetached, Reason: upgradev1.ClusterLeftPolicyReason,
			Message: fmt.Sprintf("Cluster %q left TalosUpgradePolicy %q (label %s): %d of %d Machines run %s; no other Machine starts", u.Spec.ClusterName, u.Spec.PolicyName, upgradev1.PolicyLabel, counts.Completed, counts.Total, u.Spec.TalosVersion)}
	case u.Spec.Cancel:
		return Ending{Phase: upgradev1.UpgradePhaseFailed, Reason: upgradev1.RolloutCancelledReason, Message: "the rollout was cancelled"}
	case counts.Failed > 0 && !u.Spec.Paused:
		return Ending{Phase: upgradev1.UpgradePhaseFailed, Reason: upgradev1.MachineFailedReason, Message: r.FailureMessage()}
	}
	return Ending{}
}

// Phase is the phase of the rollout, from its counts, how it ended (End)
// and the reason of what it waits for.
func (r *Rollout) Phase(counts MachineCounts, end Ending, reason string) upgradev1.UpgradePhase {
	u := r.Upgrade
	pauseReason, _ := r.Pause()
	switch {
	case counts.Total > 0 && counts.Completed == counts.Total && !r.HopsLeft():
		return upgradev1.UpgradePhaseCompleted
	case end.Phase != "":
		return end.Phase
	case pauseReason != "":
		return upgradev1.UpgradePhasePaused
	case counts.Running > 0:
		return upgradev1.UpgradePhaseInProgress
	case !r.PreflightPassed() && counts.Completed+counts.Failed < counts.Total:
		return upgradev1.UpgradePhasePreflight
	case reason == upgradev1.WaitingForHealthChecksReason:
		return upgradev1.UpgradePhaseWaitingForHealthChecks
	case u.Status.StartTime == nil:
		return upgradev1.UpgradePhasePending
	}
	return upgradev1.UpgradePhaseInProgress
}

// ProgressingCondition is Progressing: True while Machines are in flight,
// else False with what the rollout waits for (message, reason) or how it
// ended.
func ProgressingCondition(phase upgradev1.UpgradePhase, counts MachineCounts, message, reason string) metav1.Condition {
	c := metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message}
	switch {
	case phase == upgradev1.UpgradePhaseCompleted:
		c.Reason, c.Message = upgradev1.UpgradeCompletedReason, ""
	case phase == upgradev1.UpgradePhaseFailed, phase == upgradev1.UpgradePhaseDetached, phase == upgradev1.UpgradePhasePaused:
	case counts.Running > 0:
		c.Status = metav1.ConditionTrue
		c.Message = fmt.Sprintf("%d Machines upgrading", counts.Running)
		if message != "" {
			c.Message += "; " + message
		}
		if reason != upgradev1.WaitingForHoldReason {
			c.Reason = upgradev1.MachinesUpgradingReason
		}
	case reason == "" && phase == upgradev1.UpgradePhasePreflight:
		c.Reason = upgradev1.WaitingForPreflightReason
	case reason == "":
		c.Reason = upgradev1.MachinesUpgradingReason
	}
	return c
}

// CompletedCondition is Completed: True when every Machine runs target,
// else False with how many do or why the rollout ended.
func CompletedCondition(target string, phase upgradev1.UpgradePhase, counts MachineCounts, end Ending) metav1.Condition {
	c := metav1.Condition{Type: upgradev1.CompletedCondition, Status: metav1.ConditionFalse, Reason: upgradev1.MachinesUpgradingReason,
		Message: fmt.Sprintf("%d of %d Machines run %s", counts.Completed, counts.Total, target)}
	switch {
	case phase == upgradev1.UpgradePhaseCompleted:
		c.Status, c.Reason = metav1.ConditionTrue, upgradev1.UpgradeCompletedReason
		c.Message = fmt.Sprintf("all %d Machines run %s", counts.Completed, target)
	case end.Reason == upgradev1.MachineFailedReason:
		c.Reason = end.Reason
		c.Message = fmt.Sprintf("%d of %d Machines failed; first: %s", counts.Failed, counts.Total, end.Message)
	case end.Reason != "":
		c.Reason, c.Message = end.Reason, end.Message
	}
	return c
}

// PausedCondition is Paused while the rollout, its policy or its Cluster is
// paused (phase Paused); false when the condition goes.
func PausedCondition(phase upgradev1.UpgradePhase, message, reason string) (metav1.Condition, bool) {
	c := metav1.Condition{Type: upgradev1.PausedCondition, Status: metav1.ConditionTrue, Reason: reason, Message: message}
	return c, phase == upgradev1.UpgradePhasePaused
}

// BypassedCondition says what is bypassed, by whom and why, while anything
// is; false when nothing is, and the condition goes.
func BypassedCondition(bypasses []*upgradev1.BypassSpec) (metav1.Condition, bool) {
	c := metav1.Condition{Type: upgradev1.BypassedCondition, Status: metav1.ConditionTrue, Reason: upgradev1.BypassRequestedReason}
	if len(bypasses) == 0 {
		return c, false
	}
	parts := make([]string, 0, len(bypasses))
	for _, b := range bypasses {
		parts = append(parts, fmt.Sprintf("%s bypassed by %s: %s", Bypassed(b), By(b), b.Reason))
	}
	c.Message = strings.Join(parts, "; ")
	return c, true
}

// MaxRemovalsMessageLength bounds the Removals message, which names every
// held Machine and what it waits for.
const MaxRemovalsMessageLength = 4096

// removalReasons are the reasons of held removals, the one that most needs
// a look first: the Removals condition takes the first one any held
// removal has.
var removalReasons = []string{
	upgradev1.RemovalHookFailedReason,
	upgradev1.RemovalWorkloadUnreachableReason,
	upgradev1.RemovalWaitingForEtcdReason,
	upgradev1.RemovalWaitingForHealthChecksReason,
	upgradev1.RemovalWaitingForBudgetReason,
	upgradev1.RemovalWaitingForHooksReason,
	upgradev1.RemovalHeldReason,
}

// RemovalsCondition is the Removals condition of records: True when none
// is held (its message names the Machines released that CAPI still drains
// and deletes), else False with the reason of the held removal that most
// needs a look and a message naming every held Machine, its cause and what
// it waits for, in that order.
func RemovalsCondition(records []upgradev1.MachineRemovalStatus) metav1.Condition {
	var held, released []*upgradev1.MachineRemovalStatus
	for i := range records {
		if records[i].Phase == upgradev1.RemovalPhaseHeld {
			held = append(held, &records[i])
		} else {
			released = append(released, &records[i])
		}
	}
	if len(held) == 0 {
		c := metav1.Condition{Type: upgradev1.RemovalsCondition, Status: metav1.ConditionTrue, Reason: upgradev1.RemovalsNotHeldReason}
		if len(released) > 0 {
			names := make([]string, 0, len(released))
			for _, rec := range released {
				names = append(names, rec.Machine)
			}
			c.Message = fmt.Sprintf("released, CAPI drains and deletes: %s", QuoteAll(names))
		}
		return c
	}
	rank := func(rec *upgradev1.MachineRemovalStatus) int {
		if i := slices.Index(removalReasons, rec.Reason); i >= 0 {
			return i
		}
		return len(removalReasons) - 1 // No reason yet: RemovalHeld.
	}
	slices.SortStableFunc(held, func(a, b *upgradev1.MachineRemovalStatus) int { return rank(a) - rank(b) })
	parts := make([]string, 0, len(held))
	for _, rec := range held {
		parts = append(parts, fmt.Sprintf("Machine %q (%s): %s", rec.Machine, rec.Cause, rec.Message))
	}
	return metav1.Condition{Type: upgradev1.RemovalsCondition, Status: metav1.ConditionFalse, Reason: removalReasons[rank(held[0])],
		Message: fmt.Sprintf("%d removal(s) held: %s", len(held), strings.Join(parts, "; "))}
}
