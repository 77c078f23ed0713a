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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// maxTemplatesMessageLength bounds the TemplatesOnTarget message, which
// names every template of a Cluster that boots another version: longer than
// upgradev1.MaxMessageLength, within metav1.Condition's limit.
const maxTemplatesMessageLength = 4096

// updateStatus computes the summary of the rollout from the Machine records
// and what this reconcile found: counts, phase, blockedBy and conditions,
// each condition by its own function.
func (r *Reconciler) updateStatus(s *scope) {
	u := s.Upgrade
	previous := u.Status.Phase
	counts := disruption.CountMachines(u.Status.Machines)
	u.Status.TotalMachines, u.Status.CompletedMachines, u.Status.FailedMachines = counts.Total, counts.Completed, counts.Failed
	u.Status.Progress = fmt.Sprintf("%d/%d", counts.Completed, counts.Total)

	setHealthChecksCondition(u, s)
	setPreflightCondition(u, s)
	message, reason := s.blocker()
	if !s.Observed() {
		// The reconcile ended before the records were checked against the
		// world: say what stopped it, and judge the rollout next time.
		if reason == upgradev1.ClusterPausedReason || reason == upgradev1.ClusterNotFoundReason {
			if reason == upgradev1.ClusterPausedReason {
				u.Status.Phase = upgradev1.UpgradePhasePaused
			}
			setProgressingCondition(u, u.Status.Phase, counts, message, reason)
			setPausedCondition(u, u.Status.Phase, message, reason)
			u.Status.BlockedBy = upgradev1.Truncate(message, upgradev1.MaxMessageLength)
		}
		return
	}

	end := s.End(counts)
	u.Status.Phase = rolloutPhase(s, counts, end, reason)
	switch u.Status.Phase {
	case upgradev1.UpgradePhaseCompleted:
		message = ""
	case upgradev1.UpgradePhaseFailed, upgradev1.UpgradePhaseDetached:
		message, reason = end.Message, end.Reason
	}
	setProgressingCondition(u, u.Status.Phase, counts, message, reason)
	setCompletedCondition(u, u.Status.Phase, counts, end)
	setPausedCondition(u, u.Status.Phase, message, reason)
	setBypassedCondition(u, s.Bypasses())
	setTemplatesCondition(u, s)
	setInPlaceCondition(u, s)
	setMachineConfigsCondition(u, s)
	setKubernetesVersionsCondition(u, s)
	setRemovalsCondition(u, s)
	s.RecordBypasses()
	setCompletionTime(u, s)
	u.Status.BlockedBy = upgradev1.Truncate(message, upgradev1.MaxMessageLength)
	r.phaseEvents(s, previous, counts)
}

// blocker says what the rollout waits for, and the reason: a pause first,
// then a Machine held by a hook, then what keeps the next Machine from
// starting.
func (s *scope) blocker() (message, reason string) {
	if reason, msg := s.Pause(); reason != "" {
		return msg, reason
	}
	for _, m := range s.Upgrade.Status.Machines {
		if m.Phase == upgradev1.MachinePhaseWaitingForHold && len(m.HeldBy) > 0 {
			return fmt.Sprintf("machine %q held at %s by %s", m.Machine, m.HoldPoint, disruption.QuoteAll(m.HeldBy)), upgradev1.WaitingForHoldReason
		}
	}
	return s.blockedBy, s.waitingReason
}

// rolloutPhase is the phase of the rollout.
func rolloutPhase(s *scope, counts disruption.MachineCounts, end disruption.Ending, reason string) upgradev1.UpgradePhase {
	u := s.Upgrade
	pauseReason, _ := s.Pause()
	switch {
	case counts.Total > 0 && counts.Completed == counts.Total && !s.HopsLeft():
		return upgradev1.UpgradePhaseCompleted
	case end.Phase != "":
		return end.Phase
	case pauseReason != "":
		return upgradev1.UpgradePhasePaused
	case counts.Running > 0:
		return upgradev1.UpgradePhaseInProgress
	case !s.PreflightPassed() && counts.Completed+counts.Failed < counts.Total:
		return upgradev1.UpgradePhasePreflight
	case reason == upgradev1.WaitingForHealthChecksReason:
		return upgradev1.UpgradePhaseWaitingForHealthChecks
	case u.Status.StartTime == nil:
		return upgradev1.UpgradePhasePending
	}
	return upgradev1.UpgradePhaseInProgress
}

// setProgressingCondition sets Progressing: True while Machines are in
// flight, else False with what the rollout waits for or how it ended.
func setProgressingCondition(u *upgradev1.TalosUpgrade, phase upgradev1.UpgradePhase, counts disruption.MachineCounts, message, reason string) {
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
	conditions.Set(u, c)
}

// setCompletedCondition sets Completed: True when every Machine runs the
// target, else False with how many do or why the rollout ended.
func setCompletedCondition(u *upgradev1.TalosUpgrade, phase upgradev1.UpgradePhase, counts disruption.MachineCounts, end disruption.Ending) {
	c := metav1.Condition{Type: upgradev1.CompletedCondition, Status: metav1.ConditionFalse, Reason: upgradev1.MachinesUpgradingReason,
		Message: fmt.Sprintf("%d of %d Machines run %s", counts.Completed, counts.Total, u.Spec.TalosVersion)}
	switch {
	case phase == upgradev1.UpgradePhaseCompleted:
		c.Status, c.Reason = metav1.ConditionTrue, upgradev1.UpgradeCompletedReason
		c.Message = fmt.Sprintf("all %d Machines run %s", counts.Completed, u.Spec.TalosVersion)
	case end.Reason == upgradev1.MachineFailedReason:
		c.Reason = end.Reason
		c.Message = fmt.Sprintf("%d of %d Machines failed; first: %s", counts.Failed, counts.Total, end.Message)
	case end.Reason != "":
		c.Reason, c.Message = end.Reason, end.Message
	}
	conditions.Set(u, c)
}

// setPausedCondition sets Paused while the rollout, its policy or its
// Cluster is paused, and removes it otherwise.
func setPausedCondition(u *upgradev1.TalosUpgrade, phase upgradev1.UpgradePhase, message, reason string) {
	if phase != upgradev1.UpgradePhasePaused {
		conditions.Delete(u, upgradev1.PausedCondition)
		return
	}
	conditions.Set(u, metav1.Condition{Type: upgradev1.PausedCondition, Status: metav1.ConditionTrue, Reason: reason, Message: message})
}

// setHealthChecksCondition sets the HealthChecksPassing condition, when the
// health checks were evaluated (see evaluateHealthChecks).
func setHealthChecksCondition(u *upgradev1.TalosUpgrade, s *scope) {
	if s.healthChecks != nil {
		conditions.Set(u, *s.healthChecks)
	}
}

// setPreflightCondition sets the PreflightSucceeded condition, when the
// preflight ran (see reconcilePreflight).
func setPreflightCondition(u *upgradev1.TalosUpgrade, s *scope) {
	if s.Preflight != nil {
		conditions.Set(u, *s.Preflight)
	}
}

// setBypassedCondition says what is bypassed, by whom and why, while
// anything is; the condition goes once nothing is.
func setBypassedCondition(u *upgradev1.TalosUpgrade, bypasses []*upgradev1.BypassSpec) {
	if len(bypasses) == 0 {
		conditions.Delete(u, upgradev1.BypassedCondition)
		return
	}
	parts := make([]string, 0, len(bypasses))
	for _, b := range bypasses {
		parts = append(parts, fmt.Sprintf("%s bypassed by %s: %s", disruption.Bypassed(b), disruption.By(b), b.Reason))
	}
	conditions.Set(u, metav1.Condition{Type: upgradev1.BypassedCondition, Status: metav1.ConditionTrue, Reason: upgradev1.BypassRequestedReason, Message: strings.Join(parts, "; ")})
}

// setTemplatesCondition sets TemplatesOnTarget from the templates this
// reconcile read, and removes it from a rollout whose target comes from
// CAPI.
func setTemplatesCondition(u *upgradev1.TalosUpgrade, s *scope) {
	switch {
	case u.Spec.CAPIDriven():
		conditions.Delete(u, upgradev1.TemplatesOnTargetCondition)
	case s.templates != nil:
		c := templatesCondition(u.Spec.TalosVersion, s.templates)
		c.Message = upgradev1.Truncate(c.Message, maxTemplatesMessageLength)
		c.ObservedGeneration = u.Generation
		conditions.Set(u, c)
	}
}

// setInPlaceCondition sets InPlaceUpdatesReady from what this reconcile
// read, and removes it from a rollout whose target comes from its policy.
func setInPlaceCondition(u *upgradev1.TalosUpgrade, s *scope) {
	switch {
	case !u.Spec.CAPIDriven():
		conditions.Delete(u, upgradev1.InPlaceUpdatesReadyCondition)
	case s.inPlace != nil:
		c := *s.inPlace
		c.Message = upgradev1.Truncate(c.Message, maxTemplatesMessageLength)
		c.ObservedGeneration = u.Generation
		conditions.Set(u, c)
	}
}

// setMachineConfigsCondition sets MachineConfigs from the templates this
// reconcile read and the records, and removes it from a rollout whose
// target comes from CAPI, or whose Cluster's templates have no patches.
func setMachineConfigsCondition(u *upgradev1.TalosUpgrade, s *scope) {
	switch {
	case u.Spec.CAPIDriven():
		conditions.Delete(u, upgradev1.MachineConfigsCondition)
	case s.ConfigTargets != nil:
		c, ok := disruption.MachineConfigsCondition(s.ConfigTargets, u.Status.Machines)
		if !ok {
			conditions.Delete(u, upgradev1.MachineConfigsCondition)
			return
		}
		c.Message = upgradev1.Truncate(c.Message, maxTemplatesMessageLength)
		c.ObservedGeneration = u.Generation
		conditions.Set(u, c)
	}
}

// setRemovalsCondition sets Removals from the removal records, once the
// Cluster was read (see reconcileRemovals).
func setRemovalsCondition(u *upgradev1.TalosUpgrade, s *scope) {
	if s.Cluster == nil {
		return
	}
	c := disruption.RemovalsCondition(u.Status.Removals)
	c.Message = upgradev1.Truncate(c.Message, disruption.MaxRemovalsMessageLength)
	conditions.Set(u, c)
}

// setCompletionTime records when the rollout ended, and clears it when the
// rollout goes back to work (a Machine joined, the Cluster opted in again).
func setCompletionTime(u *upgradev1.TalosUpgrade, s *scope) {
	switch {
	case !u.Status.Phase.Ended():
		u.Status.CompletionTime = nil
	case u.Status.CompletionTime == nil:
		u.Status.CompletionTime = ptrTime(s.Now)
	}
}

// phaseEvents records the rollout's ends and returns to work.
func (r *Reconciler) phaseEvents(s *scope, previous upgradev1.UpgradePhase, counts disruption.MachineCounts) {
	u := s.Upgrade
	switch {
	case previous == u.Status.Phase || previous == "":
	case u.Status.Phase == upgradev1.UpgradePhaseDetached:
		r.event(s, corev1.EventTypeNormal, upgradev1.ClusterLeftPolicyReason, "Detach", "%s", u.Status.BlockedBy)
	case previous.Ended() && !u.Status.Phase.Ended():
		r.event(s, corev1.EventTypeNormal, "RolloutResumed", "Resume", "%d of %d Machines do not run %s: the rollout goes back to work", counts.Total-counts.Completed, counts.Total, u.Spec.TalosVersion)
	}
}
