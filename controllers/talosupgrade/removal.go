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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/metrics"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// This file answers "what happens when CAPI deletes a Machine": Tollgate
// keeps its CAPI pre-drain deletion hook (hooks.DeletionHookAnnotation) on
// every Machine of a Cluster that opted in, so that CAPI's Machine
// controller waits, before it drains a Machine it deletes, until Tollgate
// removed it. Tollgate removes it once the Machine passed the same gate as
// an upgrade (its preRemoval hooks, the health checks, the disruption
// budget of its group, one ledger with the upgrades), or once its removal
// timeout passed. removalstep.go decides; this file reads the world, keeps
// the records (status.removals) and carries the decisions out.

// reconcileRemovals keeps Tollgate's deletion hook on the Cluster's
// Machines, records the Machines CAPI deletes and releases each once its
// removal may go on. It needs the Machines (reconcileMachines), the
// workload cluster (reconcileWorkload) and the health checks' objects
// (reconcileHealthCheckObjects).
func (r *Reconciler) reconcileRemovals(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.observed() || s.cluster == nil {
		return ctrl.Result{}, nil
	}
	for _, name := range s.syncRemovals() {
		rec := s.removal(name)
		r.event(s, corev1.EventTypeNormal, "RemovalHeld", "Remove", "Holding the removal of Machine %s (cause %s) until it passes the gate, for at most %s", name, rec.Cause, s.removalTimeout())
	}
	r.passRemovalHooks(ctx, s)
	var errs []error
	keep := s.keepsDeletionHooks()
	for _, name := range sortedMachineNames(s.machines) {
		m := s.machines[name]
		switch {
		case keep && m.DeletionTimestamp.IsZero() && !hooks.HasDeletionHook(m):
			errs = append(errs, hooks.SetDeletionHook(ctx, r.Client, m))
		case !keep && m.DeletionTimestamp.IsZero() && hooks.HasDeletionHook(m):
			errs = append(errs, hooks.ReleaseDeletionHook(ctx, r.Client, m))
		}
	}
	if s.holdsRemovals() && !s.connected() {
		ctrl.LoggerFrom(ctx).Info("Connecting to the workload cluster for the removal of a Machine")
		errs = append(errs, r.setConnectionAnnotation(ctx, s, true))
	}
	res, err := r.removalChecks(ctx, s)
	errs = append(errs, err)
	for i := range s.upgrade.Status.Removals {
		rec := &s.upgrade.Status.Removals[i]
		if rec.Phase == upgradev1.RemovalPhaseReleased {
			continue
		}
		recRes, err := r.stepRemoval(ctx, s, rec)
		errs = append(errs, err)
		res = util.LowestNonZeroResult(res, recRes)
	}
	return res, kerrors.NewAggregate(errs)
}

// removalChecks evaluates the health checks for the held removals that
// wait for them, when the upgrade's gate did not in this reconcile.
func (r *Reconciler) removalChecks(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.healthChecks != nil || s.workload == nil {
		return ctrl.Result{}, nil
	}
	needed := false
	for _, rec := range s.upgrade.Status.Removals {
		if rec.Phase == upgradev1.RemovalPhaseHeld && rec.Cause == upgradev1.RemovalCauseDeleted {
			needed = true
		}
	}
	if !needed {
		return ctrl.Result{}, nil
	}
	// What blocks the rollout's next Machine is the upgrade gate's to say.
	blockedBy, waitingReason := s.blockedBy, s.waitingReason
	res, passed, err := r.evaluateHealthChecks(ctx, s, s.firstDisruption())
	s.blockedBy, s.waitingReason = blockedBy, waitingReason
	s.checksPassed = passed
	return res, err
}

// stepRemoval decides on one held removal and carries the decision out.
func (r *Reconciler) stepRemoval(ctx context.Context, s *scope, rec *upgradev1.MachineRemovalStatus) (ctrl.Result, error) {
	m := s.machines[rec.Machine]
	w := removalWorld{
		now:             s.now,
		timeout:         s.removalTimeout(),
		detached:        !s.keepsDeletionHooks() && s.cluster.DeletionTimestamp.IsZero(),
		reachable:       s.workload != nil,
		nodeUnavailable: rec.Node == "" || s.nodeUnavailable(ctx, rec.Node),
		ahead:           s.removalAhead(ctx, rec),
		checksPassed:    s.checksPassed,
	}
	if v := s.ledger(ctx).Admit(rec.Machine); !v.Admitted {
		w.busy = v.Budget.Message()
	}
	if s.healthChecks != nil {
		w.checksMessage = s.healthChecks.Message
	}
	if w.checksMessage == "" {
		w.checksMessage = "they have not passed yet"
	}
	if rec.Group == disruption.ControlPlaneGroup {
		w.controlPlane = true
		if waitsForEtcd(w, rec) && w.reachable && !w.detached {
			// As before a control-plane upgrade: read from the Talos API of
			// the other control-plane nodes (the Machine's own record is
			// gone from status.machines once it is deleting).
			w.etcdHealthy, w.etcdMessage = r.etcdHealthy(ctx, s)
		}
	}
	res := ctrl.Result{}
	for {
		d := decideRemoval(w, rec)
		switch d.intent {
		case removalRunHooks:
			runner := hooks.Runner{Client: s.workload, Now: r.Now, Ended: metrics.JobRunEnded(s.upgrade.Namespace, s.cluster.Name)}
			run, err := runner.Run(ctx, hooks.RunInput{
				UpgradeName: s.upgrade.Name, ClusterName: s.cluster.Name, Machine: rec.Machine, Node: rec.Node,
				FromVersion: plan.MachineTalosVersion(m), Point: upgradev1.HookPointPreRemoval,
				Hooks: s.upgrade.Spec.Hooks, Previous: rec.Hooks,
			})
			rec.Hooks = run.Statuses
			if err != nil {
				rec.Reason, rec.Message = d.reason, truncate("running its preRemoval hooks: "+err.Error(), 1024)
				return res, fmt.Errorf("running the preRemoval hooks of Machine %q: %w", rec.Machine, err)
			}
			res = util.LowestNonZeroResult(res, requeueIfSet(run.RequeueAfter))
			w.hooks = &run
			continue
		case removalRelease:
			if err := hooks.ReleaseDeletionHook(ctx, r.Client, m); err != nil {
				return res, err
			}
			rec.Phase, rec.ReleaseTime, rec.Reason, rec.Message = upgradev1.RemovalPhaseReleased, ptrTime(s.now), "", truncate(d.message, 1024)
			eventType := corev1.EventTypeNormal
			if d.warn {
				eventType = corev1.EventTypeWarning
			}
			ctrl.LoggerFrom(ctx).Info("Releasing the removal of a Machine", "Machine", klog.KRef(s.upgrade.Namespace, rec.Machine), "cause", rec.Cause, "reason", d.message)
			r.event(s, eventType, "RemovalReleased", "Remove", "Released the removal of Machine %s (cause %s): %s", rec.Machine, rec.Cause, d.message)
			return res, nil
		default:
			rec.Reason, rec.Message = d.reason, truncate(d.message, 1024)
			return util.LowestNonZeroResult(res, requeueIfSet(d.retry)), nil
		}
	}
}

// syncRemovals brings status.removals up to date with the Machines: a
// record for every deleting Machine that carries Tollgate's hook (or had a
// record), none for a Machine gone or not deleting. It returns the names of
// the new records.
func (s *scope) syncRemovals() []string {
	u := s.upgrade
	old := make(map[string]upgradev1.MachineRemovalStatus, len(u.Status.Removals))
	for _, rec := range u.Status.Removals {
		old[rec.Machine] = rec
	}
	var records []upgradev1.MachineRemovalStatus
	var added []string
	for _, name := range sortedMachineNames(s.machines) {
		m := s.machines[name]
		if m.DeletionTimestamp.IsZero() {
			continue
		}
		rec, ok := old[name]
		if !ok {
			if !hooks.HasDeletionHook(m) {
				continue // Not held by Tollgate: CAPI goes on.
			}
			rec = upgradev1.MachineRemovalStatus{Machine: name, Phase: upgradev1.RemovalPhaseHeld, StartTime: metav1.NewTime(s.now)}
			added = append(added, name)
		}
		rec.Node = m.Status.NodeRef.Name
		rec.Group = disruption.GroupOf(&u.Spec, m)
		rec.Cause = removalCause(s.cluster, m, rec.Cause)
		if rec.Phase == upgradev1.RemovalPhaseHeld && !hooks.HasDeletionHook(m) {
			// Released by a reconcile that could not record it, or by hand.
			rec.Phase, rec.ReleaseTime, rec.Reason, rec.Message = upgradev1.RemovalPhaseReleased, ptrTime(s.now), "", "released: Tollgate's deletion hook is gone"
		}
		records = append(records, rec)
	}
	u.Status.Removals = records
	return added
}

// removal returns the removal record of machine, nil when none.
func (s *scope) removal(machine string) *upgradev1.MachineRemovalStatus {
	for i := range s.upgrade.Status.Removals {
		if s.upgrade.Status.Removals[i].Machine == machine {
			return &s.upgrade.Status.Removals[i]
		}
	}
	return nil
}

// removalCause tells why m is deleted: its Cluster is deleted, a
// MachineHealthCheck found it unhealthy (CAPI's HealthCheckSucceeded
// condition False, or its OwnerRemediated condition set), or its owner or a
// user deletes it. A Machine once seen remediated stays so.
func removalCause(cluster *clusterv1.Cluster, m *clusterv1.Machine, previous upgradev1.RemovalCause) upgradev1.RemovalCause {
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

// keepsDeletionHooks reports whether Tollgate keeps its deletion hook on
// the Cluster's Machines: the rollout lives, and its Cluster lives and opts
// in to its policy.
func (s *scope) keepsDeletionHooks() bool {
	return s.upgrade.DeletionTimestamp.IsZero() && s.cluster != nil && s.cluster.DeletionTimestamp.IsZero() && !s.detached()
}

// holdsRemovals reports whether a removal is held that needs the workload
// cluster: its hooks, checks and budget are read there.
func (s *scope) holdsRemovals() bool {
	if !s.keepsDeletionHooks() {
		return false
	}
	for _, rec := range s.upgrade.Status.Removals {
		if rec.Phase == upgradev1.RemovalPhaseHeld && rec.Cause != upgradev1.RemovalCauseClusterDeleted {
			return true
		}
	}
	return false
}

// removalHeld reports whether Tollgate's deletion hook holds a Machine
// CAPI deletes.
func (s *scope) removalHeld() bool {
	return slices.ContainsFunc(s.upgrade.Status.Removals, func(rec upgradev1.MachineRemovalStatus) bool {
		return rec.Phase == upgradev1.RemovalPhaseHeld
	})
}

// removalTimeout is the plan's removal.timeout.
func (s *scope) removalTimeout() time.Duration {
	if t := s.upgrade.Spec.Removal.Timeout; t != nil {
		return t.Duration
	}
	return plan.DefaultRemovalTimeout
}

// removalAhead names the removal of rec's group that goes before rec: one
// released whose Machine is not gone yet, else the first held one whose
// node is available (its hooks started first, then the oldest, then by
// name); "" when it is rec's turn.
func (s *scope) removalAhead(ctx context.Context, rec *upgradev1.MachineRemovalStatus) string {
	var held []*upgradev1.MachineRemovalStatus
	for i := range s.upgrade.Status.Removals {
		o := &s.upgrade.Status.Removals[i]
		if o.Group != rec.Group || o.Machine == rec.Machine || o.Cause == upgradev1.RemovalCauseClusterDeleted {
			continue
		}
		if o.Phase == upgradev1.RemovalPhaseReleased {
			return o.Machine
		}
		if o.Node != "" && !s.nodeUnavailable(ctx, o.Node) {
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

// sortedMachineNames returns the names of machines, sorted.
func sortedMachineNames(machines map[string]*clusterv1.Machine) []string {
	names := make([]string, 0, len(machines))
	for name := range machines {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// releaseDeletionHooks removes Tollgate's deletion hook from every Machine
// of the Cluster: the rollout is deleted, and nothing of Tollgate's may hold
// a deletion it can no longer act on.
func (r *Reconciler) releaseDeletionHooks(ctx context.Context, s *scope) error {
	var errs []error
	for _, name := range sortedMachineNames(s.machines) {
		if m := s.machines[name]; hooks.HasDeletionHook(m) {
			errs = append(errs, hooks.ReleaseDeletionHook(ctx, r.Client, m))
		}
	}
	return kerrors.NewAggregate(errs)
}
