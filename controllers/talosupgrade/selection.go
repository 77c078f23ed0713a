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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/maintenance"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

// etcdRetry is how often etcd health is read again while it is unhealthy.
const etcdRetry = 10 * time.Second

// reconcileHealthChecks evaluates the health checks whenever a Machine may
// be disrupted next: a Machine waits at the pre-drain point, or a new one may
// start. The verdict gates both the start of a Machine and its drain, so that
// no Machine is disrupted while a check runs or fails.
func (r *Reconciler) reconcileHealthChecks(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.atPreDrain() && (!s.hasPending() || s.startGate().reason != "") {
		return ctrl.Result{}, nil
	}
	res, passed, err := r.evaluateHealthChecks(ctx, s, s.firstDisruption())
	s.checksPassed = passed
	return res, err
}

// reconcileNextMachines starts the next Machines when every gate allows it:
// the rollout is admitted and not paused, cancelled or halted, the
// preflight passed, the maintenance window is open, the health checks pass,
// etcd is healthy (control plane) and the disruption budget has room.
func (r *Reconciler) reconcileNextMachines(ctx context.Context, s *scope) (ctrl.Result, error) {
	candidates, quota, group := s.nextCandidates(ctx)
	if len(candidates) == 0 {
		if group != "" && quota <= 0 {
			s.block(upgradev1.MachinesUpgradingReason, fmt.Sprintf("group %q is at its disruption budget", group))
		}
		return ctrl.Result{}, nil
	}
	if g := s.startGate(); g.reason != "" {
		s.block(g.reason, g.message)
		return requeueIfSet(g.retry), nil
	}
	if !s.checksPassed {
		return ctrl.Result{}, nil // Blocked, and requeued, by reconcileHealthChecks.
	}
	if group == "control-plane" {
		if ok, msg := r.etcdHealthy(ctx, s); !ok {
			s.block(upgradev1.WaitingForEtcdReason, msg)
			return requeueAfter(etcdRetry), nil
		}
	}
	if quota > len(candidates) {
		quota = len(candidates)
	}
	res := ctrl.Result{}
	for _, st := range candidates[:quota] {
		ctrl.LoggerFrom(ctx).Info("Starting the upgrade of a Machine", "Machine", klog.KRef(s.upgrade.Namespace, st.Machine), "group", group)
		r.setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreDrain, "")
		if s.upgrade.Status.StartTime == nil {
			s.upgrade.Status.StartTime = ptrTime(s.now)
		}
		stepRes, err := r.advance(ctx, s, st)
		if err != nil {
			return ctrl.Result{}, err
		}
		res = util.LowestNonZeroResult(res, stepRes)
	}
	return res, nil
}

// gate is what keeps the rollout from starting a Machine now.
type gate struct {
	// reason is the Progressing condition's reason; empty when open.
	reason string
	// message says what the rollout waits for.
	message string
	// retry is when to look again, for gates that send no event.
	retry time.Duration
}

// startGate says whether the rollout may start a Machine now; it has no
// side effect.
func (s *scope) startGate() gate {
	u := s.upgrade
	switch {
	case u.Spec.Cancel:
		return gate{reason: upgradev1.RolloutCancelledReason, message: "the rollout was cancelled"}
	case u.Spec.Paused:
		if _, ok := u.Annotations[pausedByFailureAnnotation]; ok {
			return gate{reason: upgradev1.FailurePolicyPausedReason, message: "the rollout is paused"}
		}
		return gate{reason: upgradev1.RolloutPausedReason, message: "the rollout is paused"}
	case s.policy != nil && s.policy.Spec.Paused:
		return gate{reason: upgradev1.RolloutPausedReason, message: fmt.Sprintf("TalosUpgradePolicy %q is paused", s.policy.Name)}
	case s.halted():
		return gate{reason: upgradev1.MachineFailedReason, message: s.failureMessage()}
	case u.Annotations[upgradev1.AdmittedAnnotation] == "":
		return gate{reason: upgradev1.WaitingForClusterSlotReason, message: "waiting for the policy's maxClustersInProgress to admit this Cluster"}
	case s.workload == nil:
		return gate{reason: upgradev1.WorkloadAPINotReadyReason, message: fmt.Sprintf("workload cluster %q is not reachable yet", u.Spec.ClusterName)}
	case !conditions.IsTrue(u, upgradev1.PreflightSucceededCondition) || u.Status.PreflightTarget != preflightTarget(u):
		return gate{reason: upgradev1.WaitingForClusterSlotReason, message: "waiting for the preflight checks"}
	}
	if open, next := maintenance.Open(u.Spec.Maintenance, s.now); !open {
		msg := "waiting for a maintenance window (" + maintenance.Describe(u.Spec.Maintenance) + ")"
		if next.IsZero() {
			return gate{reason: upgradev1.WaitingForMaintenanceWindowReason, message: msg + ": none opens within a year"}
		}
		return gate{reason: upgradev1.WaitingForMaintenanceWindowReason, message: fmt.Sprintf("%s: next opens at %s", msg, next.Format(time.RFC3339)), retry: next.Sub(s.now)}
	}
	if t := u.Status.NextMachineNotBefore; t != nil && s.now.Before(t.Time) {
		return gate{reason: upgradev1.MachinesUpgradingReason, message: fmt.Sprintf("waiting %s between Machines", t.Sub(s.now).Round(time.Second)), retry: t.Sub(s.now)}
	}
	return gate{}
}

// atPreDrain reports whether a Machine waits at the pre-drain point.
func (s *scope) atPreDrain() bool {
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseWaitingForHold && st.HoldPoint == upgradev1.HoldPointPreDrain {
			return true
		}
	}
	return false
}

// firstDisruption reports whether no Machine of the rollout has gone past
// the pre-drain point yet: the checks that gate the first Machine only
// still apply.
func (s *scope) firstDisruption() bool {
	for _, st := range s.upgrade.Status.Machines {
		if st.StartTime != nil && (st.Phase != upgradev1.MachinePhaseWaitingForHold || st.HoldPoint != upgradev1.HoldPointPreDrain) {
			return false
		}
	}
	return true
}

// evaluateHealthChecks runs the health checks that gate the next Machine.
func (r *Reconciler) evaluateHealthChecks(ctx context.Context, s *scope, first bool) (ctrl.Result, bool, error) {
	u := s.upgrade
	if bypass := s.bypass(); bypass != nil {
		if !conditions.IsTrue(u, upgradev1.BypassedCondition) {
			r.event(s, corev1.EventTypeWarning, "HealthChecksBypassed", "Bypass", "Health checks bypassed by an administrator: %s", bypass.Reason)
		}
		conditions.Set(u, metav1.Condition{Type: upgradev1.BypassedCondition, Status: metav1.ConditionTrue, Reason: upgradev1.HealthChecksBypassedReason, Message: "health checks are bypassed: " + bypass.Reason})
		conditions.Set(u, metav1.Condition{Type: upgradev1.HealthChecksPassingCondition, Status: metav1.ConditionTrue, Reason: upgradev1.HealthChecksBypassedReason, Message: "health checks are bypassed by an administrator"})
		return ctrl.Result{}, true, nil
	}
	var checks []upgradev1.ClusterHealthCheck
	for _, ref := range u.Spec.HealthChecks {
		if !healthchecks.Gates(ref, first) {
			continue
		}
		for _, c := range s.checks {
			if c.Name == ref.Name {
				checks = append(checks, c)
			}
		}
	}
	ev := healthchecks.Evaluator{Client: s.workload, Now: r.Now}
	res, err := ev.Evaluate(ctx, healthchecks.Input{UpgradeName: u.Name, ClusterName: s.cluster.Name, Checks: checks, Previous: u.Status.HealthChecks})
	u.Status.HealthChecks = res.Statuses
	if err != nil {
		return ctrl.Result{}, false, fmt.Errorf("evaluating the health checks: %w", err)
	}
	if res.Passed {
		if len(checks) > 0 || conditions.Has(u, upgradev1.HealthChecksPassingCondition) {
			conditions.Set(u, metav1.Condition{Type: upgradev1.HealthChecksPassingCondition, Status: metav1.ConditionTrue, Reason: upgradev1.HealthChecksPassedReason})
		}
		return ctrl.Result{}, true, nil
	}
	conditions.Set(u, metav1.Condition{Type: upgradev1.HealthChecksPassingCondition, Status: metav1.ConditionFalse, Reason: res.Reason, Message: res.BlockedBy})
	s.block(upgradev1.WaitingForHealthChecksReason, res.BlockedBy)
	return requeueIfSet(res.RequeueAfter), false, nil
}

// etcdHealthy reads the etcd member health from a control-plane node.
func (r *Reconciler) etcdHealthy(ctx context.Context, s *scope) (bool, string) {
	var lastErr error
	for _, st := range s.upgrade.Status.Machines {
		m, ok := s.machines[st.Machine]
		if !ok || st.Role != upgradev1.MachineRoleControlPlane {
			continue
		}
		tc, err := r.Dialer.Dial(ctx, s.cluster, m)
		if err != nil {
			lastErr = err
			continue
		}
		health, err := tc.EtcdHealth(ctx)
		_ = tc.Close()
		if err != nil {
			lastErr = err
			continue
		}
		for _, member := range health.Members {
			if !member.Healthy {
				return false, fmt.Sprintf("waiting for etcd member %q to be healthy: %s", member.Name, member.Message)
			}
		}
		return true, ""
	}
	return false, fmt.Sprintf("waiting for etcd health: no control-plane node answered: %v", lastErr)
}

// nextCandidates returns the Pending Machines of the group that may start
// next, how many may start now, and the group's name.
func (s *scope) nextCandidates(ctx context.Context) ([]*upgradev1.MachineUpgradeStatus, int, string) {
	records := s.upgrade.Status.Machines
	// The group under way is the first with a Machine not done: control
	// plane first, then the worker groups in order.
	group := ""
	for _, st := range records {
		if !done(st.Phase) {
			group = st.Group
			break
		}
	}
	if group == "" {
		return nil, 0, ""
	}
	var pending []*upgradev1.MachineUpgradeStatus
	size, busy := 0, 0
	for i := range records {
		st := &records[i]
		if st.Group != group {
			if inFlight(st.Phase) {
				busy++ // A Machine of another group still in flight.
			}
			continue
		}
		size++
		switch {
		case inFlight(st.Phase):
			busy++
		case st.Phase == upgradev1.MachinePhasePending:
			if s.nodeUnavailable(ctx, st.Node) {
				busy++ // Already NotReady: it counts against the budget.
			} else {
				pending = append(pending, st)
			}
		}
	}
	quota := s.maxUnavailable(group, size) - busy
	if quota <= 0 {
		return nil, quota, group
	}
	return pending, quota, group
}

// maxUnavailable resolves the disruption budget of a group of size Machines.
func (s *scope) maxUnavailable(group string, size int) int {
	if group == "control-plane" {
		return 1 // Always one at a time: etcd quorum.
	}
	value := s.upgrade.Spec.Rollout.Workers.MaxUnavailable
	for _, g := range s.upgrade.Spec.Rollout.Order {
		if g.Name == group && g.MaxUnavailable != nil {
			value = g.MaxUnavailable
		}
	}
	if value == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(value, size, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// nodeUnavailable reports whether a workload Node is NotReady.
func (s *scope) nodeUnavailable(ctx context.Context, name string) bool {
	if s.workload == nil || name == "" {
		return false
	}
	n := &corev1.Node{}
	if err := s.workload.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return false
	}
	return !nodeReady(n)
}

// failures counts the failed Machines not acknowledged by a resume.
func (s *scope) failures() int32 {
	n := int32(0)
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseFailed {
			n++
		}
	}
	return n - s.upgrade.Status.AcknowledgedFailures
}

// maxFailures is the failure policy's threshold.
func (s *scope) maxFailures() int32 {
	if m := s.upgrade.Spec.FailurePolicy.MaxFailures; m != nil && *m > 0 {
		return *m
	}
	return 1
}

// halted reports whether the failure policy stops new Machines.
func (s *scope) halted() bool {
	return s.failures() >= s.maxFailures()
}

func (s *scope) failureMessage() string {
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseFailed {
			return fmt.Sprintf("Machine %q failed: %s", st.Machine, st.Message)
		}
	}
	return ""
}

// reconcileEnd applies the failure policy and, when the rollout is over,
// deletes Tollgate's Jobs from the workload cluster.
func (r *Reconciler) reconcileEnd(ctx context.Context, s *scope) (ctrl.Result, error) {
	u := s.upgrade
	if s.halted() && u.Spec.FailurePolicy.Action == upgradev1.FailureActionPause && !u.Spec.Paused {
		// Pausing is a spec change a user undoes to resume; the failures
		// seen so far are then acknowledged.
		u.Spec.Paused = true
		u.Annotations = setAnnotation(u.Annotations, pausedByFailureAnnotation, fmt.Sprint(s.failures()+u.Status.AcknowledgedFailures))
		r.event(s, corev1.EventTypeWarning, "RolloutPaused", "Pause", "Failure policy paused the rollout: %s", s.failureMessage())
	}
	if !u.Spec.Paused {
		if n, ok := u.Annotations[pausedByFailureAnnotation]; ok {
			var acknowledged int32
			_, _ = fmt.Sscan(n, &acknowledged)
			u.Status.AcknowledgedFailures = acknowledged
			delete(u.Annotations, pausedByFailureAnnotation)
		}
	}
	if s.over() && s.workload != nil {
		if err := workloadjob.Cleanup(ctx, s.workload, u.Name, s.cluster.Name); err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting Tollgate's Jobs after the rollout: %w", err)
		}
	}
	return ctrl.Result{}, nil
}

// pausedByFailureAnnotation records, on a TalosUpgrade the failure policy
// paused, how many failures a resume acknowledges.
const pausedByFailureAnnotation = "upgrade.tollgate.dev/paused-by-failure-policy"

// over reports whether no Machine is in flight and none will start.
func (s *scope) over() bool {
	pending := false
	for _, st := range s.upgrade.Status.Machines {
		if inFlight(st.Phase) {
			return false
		}
		if st.Phase == upgradev1.MachinePhasePending {
			pending = true
		}
	}
	return !pending || s.upgrade.Spec.Cancel || (s.halted() && s.upgrade.Spec.FailurePolicy.Action != upgradev1.FailureActionPause)
}

func setAnnotation(a map[string]string, k, v string) map[string]string {
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	return a
}

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }

// bypass returns the health-check bypass of the rollout or of its policy.
func (s *scope) bypass() *upgradev1.BypassSpec {
	if b := s.upgrade.Spec.Bypass; b != nil && b.HealthChecks {
		return b
	}
	if s.policy != nil {
		if b := s.policy.Spec.Bypass; b != nil && b.HealthChecks {
			return b
		}
	}
	return nil
}
