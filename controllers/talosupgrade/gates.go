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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/maintenance"
	"github.com/tollgate-dev/tollgate/internal/metrics"
)

// This file answers "why did this Machine not start": the gates every
// Machine passes before it is disrupted, in the order they are checked.

// etcdRetry is how often etcd health is read again while it is unhealthy.
const etcdRetry = 10 * time.Second

// reconcileHealthCheckObjects reads the ClusterHealthChecks the plan
// references. A missing one is recorded (it closes the gate, see
// evaluateHealthChecks); one that cannot be read ends the reconcile.
func (r *Reconciler) reconcileHealthCheckObjects(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.checks, s.unavailableChecks = nil, nil
	for _, ref := range s.upgrade.Spec.HealthChecks {
		check := upgradev1.ClusterHealthCheck{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.upgrade.Namespace, Name: ref.Name}, &check); err != nil {
			if apierrors.IsNotFound(err) {
				s.unavailableChecks = append(s.unavailableChecks, ref.Name)
				continue
			}
			return ctrl.Result{}, fmt.Errorf("reading ClusterHealthCheck %q: %w", ref.Name, err)
		}
		s.checks = append(s.checks, check)
	}
	return ctrl.Result{}, nil
}

// reconcileHealthChecks evaluates the health checks whenever a Machine may
// be disrupted next: a Machine waits at the pre-drain point, or a new one may
// start. The verdict gates both the start of a Machine and its drain, so that
// no Machine is disrupted while a check runs, fails or is missing.
func (r *Reconciler) reconcileHealthChecks(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.atPreDrain() && (!s.hasPending() || s.startGate().reason != "") {
		return ctrl.Result{}, nil
	}
	res, passed, err := r.evaluateHealthChecks(ctx, s, s.firstDisruption())
	s.checksPassed = passed
	return res, err
}

// evaluateHealthChecks runs the health checks that gate the next Machine.
func (r *Reconciler) evaluateHealthChecks(ctx context.Context, s *scope, first bool) (ctrl.Result, bool, error) {
	u := s.upgrade
	if bypass := s.healthChecksBypass(); bypass != nil {
		if conditions.GetReason(u, upgradev1.HealthChecksPassingCondition) != upgradev1.HealthChecksBypassedReason {
			r.event(s, corev1.EventTypeWarning, "HealthChecksBypassed", "Bypass", "Health checks bypassed by %s: %s", by(bypass), bypass.Reason)
		}
		s.healthChecks = &metav1.Condition{Type: upgradev1.HealthChecksPassingCondition, Status: metav1.ConditionTrue, Reason: upgradev1.HealthChecksBypassedReason,
			Message: fmt.Sprintf("health checks are bypassed by %s: %s", by(bypass), bypass.Reason)}
		return ctrl.Result{}, true, nil
	}
	var checks []upgradev1.ClusterHealthCheck
	var unavailable []string
	for _, ref := range u.Spec.HealthChecks {
		if !healthchecks.Gates(ref, first) {
			continue
		}
		found := false
		for _, c := range s.checks {
			if c.Name == ref.Name {
				checks, found = append(checks, c), true
			}
		}
		if !found {
			unavailable = append(unavailable, ref.Name)
		}
	}
	if len(unavailable) > 0 {
		// A check that is not there cannot pass: deleted mid-rollout, or not
		// created yet. It closes the gate; its watch reopens it.
		msg := fmt.Sprintf("ClusterHealthCheck %s not found in namespace %q; create it or remove it from the policy", disruption.QuoteAll(unavailable), u.Namespace)
		s.healthChecks = &metav1.Condition{Type: upgradev1.HealthChecksPassingCondition, Status: metav1.ConditionFalse, Reason: upgradev1.HealthCheckUnavailableReason, Message: msg}
		s.block(upgradev1.WaitingForHealthChecksReason, msg)
		return ctrl.Result{}, false, nil
	}
	if s.workload == nil {
		s.block(upgradev1.WorkloadAPINotReadyReason, fmt.Sprintf("workload cluster %q is not reachable yet", u.Spec.ClusterName))
		return ctrl.Result{}, false, nil
	}
	ev := healthchecks.Evaluator{Client: s.workload, Now: r.Now, Ended: metrics.JobRunEnded(u.Namespace, s.cluster.Name)}
	res, err := ev.Evaluate(ctx, healthchecks.Input{UpgradeName: u.Name, ClusterName: s.cluster.Name, Checks: checks, Previous: u.Status.HealthChecks})
	u.Status.HealthChecks = res.Statuses
	if err != nil {
		return ctrl.Result{}, false, fmt.Errorf("evaluating the health checks: %w", err)
	}
	if res.Passed {
		if len(checks) > 0 || conditions.Has(u, upgradev1.HealthChecksPassingCondition) {
			s.healthChecks = &metav1.Condition{Type: upgradev1.HealthChecksPassingCondition, Status: metav1.ConditionTrue, Reason: upgradev1.HealthChecksPassedReason}
		}
		return ctrl.Result{}, true, nil
	}
	s.healthChecks = &metav1.Condition{Type: upgradev1.HealthChecksPassingCondition, Status: metav1.ConditionFalse, Reason: res.Reason, Message: res.BlockedBy}
	s.block(upgradev1.WaitingForHealthChecksReason, res.BlockedBy)
	return requeueIfSet(res.RequeueAfter), false, nil
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

// reconcileNextMachines starts the next Machines when every gate allows it:
// the rollout is admitted and not paused, cancelled, halted or detached, the
// preflight passed, the maintenance window is open, the health checks pass,
// etcd is healthy (control plane) and the disruption budget has room.
func (r *Reconciler) reconcileNextMachines(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.detached() && s.hasPending() {
		// Said first, while the Machines in flight finish.
		g := s.startGate()
		s.block(g.reason, g.message)
	}
	starting, b := s.nextCandidates(ctx)
	group := b.Group
	if len(starting) == 0 {
		switch {
		case group != "" && b.Room() <= 0:
			s.block(upgradev1.MachinesUpgradingReason, b.Message())
		case group != "":
			if waiting := s.waitingMachines(group); waiting != "" {
				s.block(upgradev1.WaitingForMachinesReason, waiting)
			}
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
	if group == disruption.ControlPlaneGroup {
		if ok, msg := r.etcdHealthy(ctx, s); !ok {
			s.block(upgradev1.WaitingForEtcdReason, msg)
			return requeueAfter(etcdRetry), nil
		}
	}
	runNow := s.windowsBypass()
	if open, _ := maintenance.Open(s.upgrade.Spec.Maintenance, s.now); open {
		runNow = nil
	}
	for _, st := range starting {
		ctrl.LoggerFrom(ctx).Info("Starting the "+disruption.KindOf(st.Action).Words().Noun+" of a Machine", "Machine", klog.KRef(s.upgrade.Namespace, st.Machine), "group", group)
		if runNow != nil {
			r.event(s, corev1.EventTypeWarning, "MaintenanceWindowsBypassed", "Bypass", "Machine %s starts outside the maintenance windows, run now by %s: %s", st.Machine, by(runNow), runNow.Reason)
		}
		setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreDrain, "")
		if s.upgrade.Status.StartTime == nil {
			s.upgrade.Status.StartTime = ptrTime(s.now)
		}
	}
	// The Machines of a batch start together (see rounds.go).
	return r.advanceAll(ctx, s, starting)
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
	if reason, msg := s.pause(); reason != "" {
		return gate{reason: reason, message: msg}
	}
	switch {
	case u.Spec.Cancel:
		return gate{reason: upgradev1.RolloutCancelledReason, message: "the rollout was cancelled"}
	case s.detached():
		return gate{reason: upgradev1.ClusterLeftPolicyReason, message: fmt.Sprintf("Cluster %q no longer carries the label %s=%s: no Machine starts", u.Spec.ClusterName, upgradev1.PolicyLabel, u.Spec.PolicyName)}
	case s.halted():
		return gate{reason: upgradev1.MachineFailedReason, message: s.failureMessage()}
	case u.Annotations[upgradev1.AdmittedAnnotation] == "":
		return s.admissionGate()
	case s.workload == nil:
		return gate{reason: upgradev1.WorkloadAPINotReadyReason, message: fmt.Sprintf("workload cluster %q is not reachable yet", u.Spec.ClusterName)}
	case !s.preflightPassed():
		return gate{reason: upgradev1.WaitingForPreflightReason, message: "waiting for the preflight checks"}
	}
	if g := s.kubernetesVersionsGate(); g.reason != "" {
		return g
	}
	if open, next := maintenance.Open(u.Spec.Maintenance, s.now); !open && s.windowsBypass() == nil {
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

// admissionGate says what a rollout its policy has not admitted waits for:
// the policy's admission gate when it is closed to the Cluster (the fleet's
// failure budget is spent, or the canaries go first), as the policy's
// Admitting condition says, else a slot of maxClustersInProgress. The
// controller watches that condition (see admittingChanged).
func (s *scope) admissionGate() gate {
	slot := gate{reason: upgradev1.WaitingForClusterSlotReason, message: "waiting for the policy's maxClustersInProgress to admit this Cluster"}
	if s.policy == nil {
		return slot
	}
	c := conditions.Get(s.policy, upgradev1.PolicyAdmittingCondition)
	if c == nil || c.Status != metav1.ConditionFalse {
		return slot
	}
	switch c.Reason {
	case upgradev1.FailureBudgetExhaustedReason:
		return gate{reason: upgradev1.WaitingForFailureBudgetReason, message: fmt.Sprintf("TalosUpgradePolicy %q admits no new Cluster: %s", s.policy.Name, c.Message)}
	case upgradev1.CanaryFailedReason:
		return gate{reason: upgradev1.WaitingForCanariesReason, message: fmt.Sprintf("TalosUpgradePolicy %q admits no new Cluster: %s", s.policy.Name, c.Message)}
	case upgradev1.WaitingForCanariesReason:
		if !slices.Contains(s.policy.Status.Canaries, s.upgrade.Spec.ClusterName) {
			return gate{reason: upgradev1.WaitingForCanariesReason, message: fmt.Sprintf("TalosUpgradePolicy %q admits its canaries first: %s", s.policy.Name, c.Message)}
		}
	}
	return slot
}

// etcdHealthy reads the etcd member health from a control-plane node: the
// first of the Cluster's control-plane Machines with a node that answers,
// those not being deleted first. Every one is asked, whether the rollout
// has a record of it or not (a rollout whose target comes from CAPI has
// records of the Machines CAPI handed over only).
func (r *Reconciler) etcdHealthy(ctx context.Context, s *scope) (bool, string) {
	var controlPlane []*clusterv1.Machine
	for _, m := range s.machines {
		if disruption.IsControlPlane(m) && m.Status.NodeRef.IsDefined() {
			controlPlane = append(controlPlane, m)
		}
	}
	if len(controlPlane) == 0 {
		return false, "waiting for etcd health: no control-plane Machine has a node to ask"
	}
	slices.SortFunc(controlPlane, func(a, b *clusterv1.Machine) int {
		if da, db := !a.DeletionTimestamp.IsZero(), !b.DeletionTimestamp.IsZero(); da != db {
			if da {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Name, b.Name)
	})
	var lastErr error
	for _, m := range controlPlane {
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

// nextCandidates returns the Pending Machines of the group under way that
// start now, as the ledger admits them one after the other, and the group's
// budget as counted without them (its group empty when every Machine is
// done). Only Machines whose node, version and role are known are
// candidates (see startBlocker), and none whose node is down already: it
// counts against the budget instead.
func (s *scope) nextCandidates(ctx context.Context) ([]*upgradev1.MachineUpgradeStatus, disruption.Budget) {
	records := s.upgrade.Status.Machines
	// The group under way is the first with a Machine not done: control
	// plane first, then the worker groups in order.
	group := ""
	for _, st := range records {
		if !st.Phase.Ended() {
			group = st.Group
			break
		}
	}
	if group == "" {
		return nil, disruption.Budget{}
	}
	l := s.ledger(ctx)
	b := l.Budget(group, "")
	var starting []*upgradev1.MachineUpgradeStatus
	for i := range records {
		st := &records[i]
		if st.Group != group || st.Phase != upgradev1.MachinePhasePending || st.Message != "" || s.nodeState(ctx, st.Node) != disruption.NodeUp {
			continue
		}
		if !l.Admit(st.Machine).Admitted {
			break
		}
		l.Disrupt(st.Machine, st.Action)
		starting = append(starting, st)
	}
	return starting, b
}

// waitingMachines says which Pending Machines of group cannot start yet, and
// why, or "" when none.
func (s *scope) waitingMachines(group string) string {
	for _, st := range s.upgrade.Status.Machines {
		if st.Group == group && st.Phase == upgradev1.MachinePhasePending && st.Message != "" {
			return fmt.Sprintf("Machine %q: %s", st.Machine, st.Message)
		}
	}
	return ""
}

// ledger counts the Cluster's disruption budgets (see disruption.Ledger):
// its Machines, their workload Nodes as the workload cache has them, and the
// rollout's records and removals.
func (s *scope) ledger(ctx context.Context) disruption.Ledger {
	machines := make([]*clusterv1.Machine, 0, len(s.machines))
	nodes := map[string]disruption.NodeState{}
	for _, name := range sortedMachineNames(s.machines) {
		m := s.machines[name]
		machines = append(machines, m)
		if node := m.Status.NodeRef.Name; node != "" {
			nodes[node] = s.nodeState(ctx, node)
		}
	}
	return disruption.NewLedger(&s.upgrade.Spec, machines, nodes, &s.upgrade.Status)
}

// nodeState says where the workload Node name stands, as the workload cache
// has it: NotReady, cordoned (by Tollgate, CAPI's drain or anyone), Ready,
// or unknown when it cannot be read.
func (s *scope) nodeState(ctx context.Context, name string) disruption.NodeState {
	n := s.workloadNode(ctx, name)
	switch {
	case n == nil:
		return disruption.NodeUnknown
	case !disruption.NodeReady(n):
		return disruption.NodeNotReady
	case n.Spec.Unschedulable:
		return disruption.NodeCordoned
	}
	return disruption.NodeUp
}

// workloadNode is the workload Node name as the workload cache has it; nil
// when it cannot be read.
func (s *scope) workloadNode(ctx context.Context, name string) *corev1.Node {
	if s.workload == nil || name == "" {
		return nil
	}
	n := &corev1.Node{}
	if err := s.workload.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return nil
	}
	return n
}

// nodeUnavailable reports whether a workload Node is NotReady.
func (s *scope) nodeUnavailable(ctx context.Context, name string) bool {
	n := s.workloadNode(ctx, name)
	return n != nil && !disruption.NodeReady(n)
}
