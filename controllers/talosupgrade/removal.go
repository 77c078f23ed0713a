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

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	if !s.Observed() || s.Cluster == nil {
		return ctrl.Result{}, nil
	}
	for _, name := range s.SyncRemovals() {
		rec := s.Removal(name)
		r.machineEvent(s, name, corev1.EventTypeNormal, "RemovalHeld", "Remove", "Holding the removal of Machine %s (cause %s) until it passes the disruption.Gate, for at most %s", name, rec.Cause, s.RemovalTimeout())
	}
	r.passRemovalHooks(ctx, s)
	var errs []error
	keep := s.KeepsDeletionHooks()
	for _, name := range sortedMachineNames(s.Machines) {
		m := s.Machines[name]
		switch {
		case keep && m.DeletionTimestamp.IsZero() && !hooks.HasDeletionHook(m):
			errs = append(errs, hooks.SetDeletionHook(ctx, r.Client, m))
		case !keep && m.DeletionTimestamp.IsZero() && hooks.HasDeletionHook(m):
			errs = append(errs, hooks.ReleaseDeletionHook(ctx, r.Client, m))
		}
	}
	if s.HoldsRemovals() && !s.Connected() {
		ctrl.LoggerFrom(ctx).Info("Connecting to the workload cluster for the removal of a Machine")
		errs = append(errs, r.setConnectionAnnotation(ctx, s, true))
	}
	res, err := r.removalChecks(ctx, s)
	errs = append(errs, err)
	for i := range s.Upgrade.Status.Removals {
		rec := &s.Upgrade.Status.Removals[i]
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
	for _, rec := range s.Upgrade.Status.Removals {
		if rec.Phase == upgradev1.RemovalPhaseHeld && rec.Cause == upgradev1.RemovalCauseDeleted {
			needed = true
		}
	}
	if !needed {
		return ctrl.Result{}, nil
	}
	// What blocks the rollout's next Machine is the upgrade gate's to say.
	blockedBy, waitingReason := s.blockedBy, s.waitingReason
	res, passed, err := r.evaluateHealthChecks(ctx, s, s.FirstDisruption())
	s.blockedBy, s.waitingReason = blockedBy, waitingReason
	s.checksPassed = passed
	return res, err
}

// stepRemoval decides on one held removal and carries the decision out.
func (r *Reconciler) stepRemoval(ctx context.Context, s *scope, rec *upgradev1.MachineRemovalStatus) (ctrl.Result, error) {
	m := s.Machines[rec.Machine]
	checksMessage := ""
	if s.healthChecks != nil {
		checksMessage = s.healthChecks.Message
	}
	w := s.ObserveRemoval(rec, s.checksPassed, checksMessage)
	if disruption.ReadsEtcd(w, rec) {
		// As before a control-plane upgrade: read from the Talos API of
		// the other control-plane nodes (the Machine's own record is gone
		// from status.machines once it is deleting); a node no member
		// lists left etcd before the deletion hook.
		healthy, msg, members := r.nodes().EtcdHealthy(ctx, s.Cluster, s.Machines)
		disruption.ObserveEtcd(&w, rec, healthy, msg, members)
	}
	res := ctrl.Result{}
	askedLive := false
	for {
		d := disruption.DecideRemoval(w, rec)
		switch d.Intent {
		case disruption.RemovalRunHooks:
			runner := hooks.Runner{Client: s.workload, Now: r.Now, Ended: metrics.JobRunEnded(s.Upgrade.Namespace, s.Cluster.Name)}
			run, err := runner.Run(ctx, hooks.RunInput{
				UpgradeName: s.Upgrade.Name, ClusterName: s.Cluster.Name, Machine: rec.Machine, Node: rec.Node,
				FromVersion: plan.MachineTalosVersion(m), Point: upgradev1.HookPointPreRemoval,
				Hooks: s.Upgrade.Spec.Hooks, Previous: rec.Hooks,
			})
			rec.Hooks = run.Statuses
			if err != nil {
				rec.Reason, rec.Message = d.Reason, upgradev1.Truncate("running its preRemoval hooks: "+err.Error(), upgradev1.MaxMessageLength)
				return res, fmt.Errorf("running the preRemoval hooks of Machine %q: %w", rec.Machine, err)
			}
			res = util.LowestNonZeroResult(res, requeueIfSet(run.RequeueAfter))
			w.Hooks = &run
			continue
		case disruption.RemovalRelease:
			if d.Gated && !askedLive {
				askedLive = true
				v, err := r.admitLive(ctx, s, rec.Machine)
				if err != nil {
					return res, err
				}
				if !v.Admitted {
					w.Busy = v.Budget.Message()
					continue
				}
			}
			if err := hooks.ReleaseDeletionHook(ctx, r.Client, m); err != nil {
				return res, err
			}
			rec.Phase, rec.ReleaseTime, rec.Reason, rec.Message = upgradev1.RemovalPhaseReleased, ptrTime(s.Now), "", upgradev1.Truncate(d.Message, upgradev1.MaxMessageLength)
			eventType := corev1.EventTypeNormal
			if d.Warn {
				eventType = corev1.EventTypeWarning
			}
			ctrl.LoggerFrom(ctx).Info("Releasing the removal of a Machine", "Machine", klog.KRef(s.Upgrade.Namespace, rec.Machine), "cause", rec.Cause, "reason", d.Message)
			r.machineEvent(s, rec.Machine, eventType, "RemovalReleased", "Remove", "Released the removal of Machine %s (cause %s): %s", rec.Machine, rec.Cause, d.Message)
			return res, nil
		default:
			rec.Reason, rec.Message = d.Reason, upgradev1.Truncate(d.Message, upgradev1.MaxMessageLength)
			if d.NotGuarded {
				r.machineEvent(s, rec.Machine, corev1.EventTypeWarning, "RemovalNotGuarded", "Remove",
					"Machine %s was taken out of etcd or lost its Node before CAPI's deletion hook: its control-plane provider does that first (the Talos control-plane provider v0.5.x); Tollgate holds what is left (its preRemoval hooks, the health checks, the budget) but did not guard etcd or the Node", rec.Machine)
			}
			return util.LowestNonZeroResult(res, requeueIfSet(d.Retry)), nil
		}
	}
}

// admitLive asks the ledger about the Machine name again with the
// Cluster's Machines read live, not from the cache, before its removal is
// released: a removal released moments ago (by this reconciler, whose
// record of it may not have been written, or by another replica) shows in
// the cache as held until the cache catches up, and two removals of a group
// with room for one would go at once.
func (r *Reconciler) admitLive(ctx context.Context, s *scope, name string) (disruption.Verdict, error) {
	list := &clusterv1.MachineList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(s.Cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: s.Cluster.Name}); err != nil {
		return disruption.Verdict{}, fmt.Errorf("reading the Machines of Cluster %s before releasing the removal of Machine %s: %w", klog.KObj(s.Cluster), name, err)
	}
	machines := make([]*clusterv1.Machine, 0, len(list.Items))
	for i := range list.Items {
		machines = append(machines, &list.Items[i])
	}
	return disruption.NewLedger(&s.Upgrade.Spec, machines, s.Nodes, &s.Upgrade.Status).Admit(name), nil
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
	for _, name := range sortedMachineNames(s.Machines) {
		if m := s.Machines[name]; hooks.HasDeletionHook(m) {
			errs = append(errs, hooks.ReleaseDeletionHook(ctx, r.Client, m))
		}
	}
	return kerrors.NewAggregate(errs)
}
