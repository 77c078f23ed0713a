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
			conditions.Set(u, disruption.ProgressingCondition(u.Status.Phase, counts, message, reason))
			c, paused := disruption.PausedCondition(u.Status.Phase, message, reason)
			setOrDelete(u, upgradev1.PausedCondition, c, paused)
			u.Status.BlockedBy = upgradev1.Truncate(message, upgradev1.MaxMessageLength)
		}
		return
	}

	end := s.End(counts)
	u.Status.Phase = s.Phase(counts, end, reason)
	switch u.Status.Phase {
	case upgradev1.UpgradePhaseCompleted:
		message = ""
	case upgradev1.UpgradePhaseFailed, upgradev1.UpgradePhaseDetached:
		message, reason = end.Message, end.Reason
	}
	conditions.Set(u, disruption.ProgressingCondition(u.Status.Phase, counts, message, reason))
	conditions.Set(u, disruption.CompletedCondition(u.Spec.TalosVersion, u.Status.Phase, counts, end))
	c, paused := disruption.PausedCondition(u.Status.Phase, message, reason)
	setOrDelete(u, upgradev1.PausedCondition, c, paused)
	c, bypassed := disruption.BypassedCondition(s.Bypasses())
	setOrDelete(u, upgradev1.BypassedCondition, c, bypassed)
	setTemplatesCondition(u, s)
	r.setDesiredVersions(u, s)
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

// setOrDelete sets c, of type t, on u when it holds, and removes the
// condition of type t otherwise.
func setOrDelete(u *upgradev1.TalosUpgrade, t string, c metav1.Condition, holds bool) {
	if !holds {
		conditions.Delete(u, t)
		return
	}
	conditions.Set(u, c)
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

// setTemplatesCondition sets TemplatesOnTarget from the templates this
// reconcile read, and removes it from a rollout whose target comes from
// CAPI.
func setTemplatesCondition(u *upgradev1.TalosUpgrade, s *scope) {
	switch {
	case u.Spec.CAPIDriven():
		conditions.Delete(u, upgradev1.TemplatesOnTargetCondition)
	case s.templates != nil:
		c := disruption.TemplatesCondition(u.Spec.TalosVersion, s.Declared.Versions(), s.templates)
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
