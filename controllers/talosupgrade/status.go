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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// updateStatus computes the summary of the rollout from the Machine records
// and what this reconcile found: counts, phase, blockedBy and conditions.
func (r *Reconciler) updateStatus(s *scope) {
	u := s.upgrade
	st := &u.Status
	var completed, failed, running int32
	for _, m := range st.Machines {
		switch {
		case m.Phase == upgradev1.MachinePhaseCompleted:
			completed++
		case m.Phase == upgradev1.MachinePhaseFailed:
			failed++
		case inFlight(m.Phase):
			running++
		}
	}
	st.TotalMachines, st.CompletedMachines, st.FailedMachines = int32(len(st.Machines)), completed, failed
	st.Progress = fmt.Sprintf("%d/%d", completed, len(st.Machines))

	// What blocks the rollout: a Machine's hold or message first, then what
	// keeps the next Machine from starting.
	blockedBy, reason := s.blockedBy, s.waitingReason
	for _, m := range st.Machines {
		if m.Phase == upgradev1.MachinePhaseWaitingForHold && len(m.HeldBy) > 0 {
			blockedBy, reason = fmt.Sprintf("machine %q held at %s by %s", m.Machine, m.HoldPoint, quoteAll(m.HeldBy)), upgradev1.WaitingForHoldReason
			break
		}
	}

	over := s.cluster != nil && s.over()
	switch {
	case s.cluster != nil && len(st.Machines) > 0 && completed == int32(len(st.Machines)):
		st.Phase = upgradev1.UpgradePhaseCompleted
		blockedBy = ""
		conditions.Set(u, metav1.Condition{Type: upgradev1.CompletedCondition, Status: metav1.ConditionTrue, Reason: upgradev1.UpgradeCompletedReason,
			Message: fmt.Sprintf("all %d Machines run %s", completed, u.Spec.TalosVersion)})
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: upgradev1.UpgradeCompletedReason})
	case over && u.Spec.Cancel:
		st.Phase = upgradev1.UpgradePhaseFailed
		blockedBy = "the rollout was cancelled"
		conditions.Set(u, metav1.Condition{Type: upgradev1.CompletedCondition, Status: metav1.ConditionFalse, Reason: upgradev1.RolloutCancelledReason, Message: blockedBy})
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: upgradev1.RolloutCancelledReason, Message: blockedBy})
	case over && failed > 0 && !u.Spec.Paused:
		st.Phase = upgradev1.UpgradePhaseFailed
		blockedBy = s.failureMessage()
		conditions.Set(u, metav1.Condition{Type: upgradev1.CompletedCondition, Status: metav1.ConditionFalse, Reason: upgradev1.MachineFailedReason,
			Message: fmt.Sprintf("%d of %d Machines failed; first: %s", failed, len(st.Machines), blockedBy)})
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: upgradev1.MachineFailedReason, Message: blockedBy})
	case u.Spec.Paused || (s.policy != nil && s.policy.Spec.Paused) || reason == upgradev1.ClusterPausedReason:
		st.Phase = upgradev1.UpgradePhasePaused
		pausedReason := upgradev1.RolloutPausedReason
		if reason == upgradev1.ClusterPausedReason || reason == upgradev1.FailurePolicyPausedReason {
			pausedReason = reason
		}
		conditions.Set(u, metav1.Condition{Type: upgradev1.PausedCondition, Status: metav1.ConditionTrue, Reason: pausedReason, Message: blockedBy})
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: pausedReason, Message: blockedBy})
	case running > 0:
		st.Phase = upgradev1.UpgradePhaseInProgress
		msg := fmt.Sprintf("%d Machines upgrading", running)
		if blockedBy != "" {
			msg += "; " + blockedBy
		}
		progressReason := upgradev1.MachinesUpgradingReason
		if reason == upgradev1.WaitingForHoldReason {
			progressReason = reason
		}
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionTrue, Reason: progressReason, Message: msg})
	case !conditions.IsTrue(u, upgradev1.PreflightSucceededCondition) && completed+failed < int32(len(st.Machines)):
		st.Phase = upgradev1.UpgradePhasePreflight
		if reason == "" {
			reason = upgradev1.WaitingForClusterSlotReason
		}
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: reason, Message: blockedBy})
	case reason == upgradev1.WaitingForHealthChecksReason:
		st.Phase = upgradev1.UpgradePhaseWaitingForHealthChecks
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: reason, Message: blockedBy})
	case st.StartTime == nil:
		st.Phase = upgradev1.UpgradePhasePending
		if reason == "" {
			reason = upgradev1.WaitingForClusterSlotReason
		}
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: reason, Message: blockedBy})
	default:
		st.Phase = upgradev1.UpgradePhaseInProgress
		if reason == "" {
			reason = upgradev1.MachinesUpgradingReason
		}
		conditions.Set(u, metav1.Condition{Type: upgradev1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: reason, Message: blockedBy})
	}
	if st.Phase != upgradev1.UpgradePhasePaused {
		conditions.Delete(u, upgradev1.PausedCondition)
	}
	if st.Phase == upgradev1.UpgradePhaseCompleted || st.Phase == upgradev1.UpgradePhaseFailed {
		if st.CompletionTime == nil {
			st.CompletionTime = ptrTime(s.now)
		}
	} else {
		st.CompletionTime = nil
		if st.Phase != upgradev1.UpgradePhaseCompleted {
			conditions.Set(u, metav1.Condition{Type: upgradev1.CompletedCondition, Status: metav1.ConditionFalse, Reason: upgradev1.MachinesUpgradingReason,
				Message: fmt.Sprintf("%d of %d Machines run %s", completed, len(st.Machines), u.Spec.TalosVersion)})
		}
	}
	if s.bypass() == nil {
		conditions.Delete(u, upgradev1.BypassedCondition)
	}
	st.BlockedBy = truncate(blockedBy, 1024)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func klogRef(o client.Object) klog.ObjectRef { return klog.KObj(o) }

func klogRefNS(namespace, name string) klog.ObjectRef { return klog.KRef(namespace, name) }
