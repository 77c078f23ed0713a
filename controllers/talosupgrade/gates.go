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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
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

// reconcileHealthCheckObjects reads the ClusterHealthChecks the plan
// references. A missing one is recorded (it closes the gate, see
// evaluateHealthChecks); one that cannot be read ends the reconcile.
func (r *Reconciler) reconcileHealthCheckObjects(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.checks, s.unavailableChecks = nil, nil
	for _, ref := range s.Upgrade.Spec.HealthChecks {
		check := upgradev1.ClusterHealthCheck{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Upgrade.Namespace, Name: ref.Name}, &check); err != nil {
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
	if !s.AtPreDrain() && (!s.HasPending() || s.StartGate().Reason != "") {
		return ctrl.Result{}, nil
	}
	res, passed, err := r.evaluateHealthChecks(ctx, s, s.FirstDisruption())
	s.checksPassed = passed
	return res, err
}

// evaluateHealthChecks runs the health checks that gate the next Machine.
func (r *Reconciler) evaluateHealthChecks(ctx context.Context, s *scope, first bool) (ctrl.Result, bool, error) {
	u := s.Upgrade
	if bypass := s.HealthChecksBypass(); bypass != nil {
		if conditions.GetReason(u, upgradev1.HealthChecksPassingCondition) != upgradev1.HealthChecksBypassedReason {
			r.event(s, corev1.EventTypeWarning, "HealthChecksBypassed", "Bypass", "Health checks bypassed by %s: %s", disruption.By(bypass), bypass.Reason)
		}
		s.healthChecks = &metav1.Condition{Type: upgradev1.HealthChecksPassingCondition, Status: metav1.ConditionTrue, Reason: upgradev1.HealthChecksBypassedReason,
			Message: fmt.Sprintf("health checks are bypassed by %s: %s", disruption.By(bypass), bypass.Reason)}
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
	ev := healthchecks.Evaluator{Client: s.workload, Now: r.Now, Ended: metrics.JobRunEnded(u.Namespace, s.Cluster.Name)}
	res, err := ev.Evaluate(ctx, healthchecks.Input{UpgradeName: u.Name, ClusterName: s.Cluster.Name, Checks: checks, Previous: u.Status.HealthChecks})
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

// reconcileNextMachines starts the next Machines when every gate allows it:
// the rollout is admitted and not paused, cancelled, halted or detached, the
// preflight passed, the maintenance window is open, the health checks pass,
// etcd is healthy (control plane) and the disruption budget has room.
func (r *Reconciler) reconcileNextMachines(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.Detached() && s.HasPending() {
		// Said first, while the Machines in flight finish.
		g := s.StartGate()
		s.block(g.Reason, g.Message)
	}
	starting, b := s.NextCandidates()
	group := b.Group
	if len(starting) == 0 {
		switch {
		case group != "" && b.Room() <= 0:
			s.block(upgradev1.MachinesUpgradingReason, b.Message())
		case group != "":
			if waiting := s.WaitingMachines(group); waiting != "" {
				s.block(upgradev1.WaitingForMachinesReason, waiting)
			}
		}
		return ctrl.Result{}, nil
	}
	if g := s.StartGate(); g.Reason != "" {
		s.block(g.Reason, g.Message)
		return requeueIfSet(g.Retry), nil
	}
	if !s.checksPassed {
		return ctrl.Result{}, nil // Blocked, and requeued, by reconcileHealthChecks.
	}
	if group == disruption.ControlPlaneGroup {
		if ok, msg, _ := r.nodes().EtcdHealthy(ctx, s.Cluster, s.Machines); !ok {
			s.block(upgradev1.WaitingForEtcdReason, msg)
			return requeueAfter(disruption.EtcdRetry), nil
		}
	}
	runNow := s.WindowsBypass()
	if open, _ := maintenance.Open(s.Upgrade.Spec.Maintenance, s.Now); open {
		runNow = nil
	}
	for _, st := range starting {
		ctrl.LoggerFrom(ctx).Info("Starting the "+disruption.KindOf(st.Action).Words().Noun+" of a Machine", "Machine", klog.KRef(s.Upgrade.Namespace, st.Machine), "group", group)
		if runNow != nil {
			r.machineEvent(s, st.Machine, corev1.EventTypeWarning, "MaintenanceWindowsBypassed", "Bypass", "Machine %s starts outside the maintenance windows, run now by %s: %s", st.Machine, disruption.By(runNow), runNow.Reason)
		}
		setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreDrain, "")
		if s.Upgrade.Status.StartTime == nil {
			s.Upgrade.Status.StartTime = ptrTime(s.Now)
		}
	}
	// The Machines of a batch start together (see rounds.go).
	return r.advanceAll(ctx, s, starting)
}
