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
	"strings"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "which version do the Machines go to now": the hops of
// an Auto upgrade path. The path is planned once per target, at the
// preflight (planPath), and persisted in status.path, so that a restart
// resumes on its hop and a release pushed meanwhile does not change it.
// Each hop is a complete rollout of the Cluster: its Machine records target
// the hop, with every gate, hold and hook; once every Machine completed it,
// the rollout moves to the next hop (reconcilePath).

// path returns the path of the current target, or nil.
func (s *scope) path() *upgradev1.UpgradePathStatus {
	p := s.upgrade.Status.Path
	if p == nil || s.upgrade.Spec.UpgradePath != upgradev1.UpgradePathAuto || !talos.SameVersion(p.Target, s.upgrade.Spec.TalosVersion) || len(p.Hops) == 0 {
		return nil
	}
	return p
}

// target is the version the Machines are upgraded to now: the current hop
// of the path, or the spec's target.
func (s *scope) target() string {
	if p := s.path(); p != nil && int(p.Current) < len(p.Hops) {
		return p.Hops[p.Current].Version
	}
	return s.upgrade.Spec.TalosVersion
}

// hopsLeft reports whether hops of the path remain after the current one.
func (s *scope) hopsLeft() bool {
	p := s.path()
	return p != nil && int(p.Current) < len(p.Hops)-1
}

// pastHop reports whether a Machine on version is already at or beyond the
// current hop of the path (but not beyond the target): it skips the hop.
func (s *scope) pastHop(version string) bool {
	if s.path() == nil {
		return false
	}
	toHop, err1 := talos.CompareVersions(version, s.target())
	toTarget, err2 := talos.CompareVersions(version, s.upgrade.Spec.TalosVersion)
	return err1 == nil && err2 == nil && toHop >= 0 && toTarget <= 0
}

// planPath plans the upgrade path of an Auto rollout for its target, from
// the versions the Machines to upgrade run, through the releases of the
// installer repository, and records it. It returns the reason and message of
// a failed preflight, or an empty reason.
func (r *Reconciler) planPath(ctx context.Context, s *scope, pending []clusterv1.Machine, pullSecret *corev1.Secret) (reason, message string) {
	u := s.upgrade
	if u.Spec.UpgradePath != upgradev1.UpgradePathAuto || s.path() != nil {
		return "", ""
	}
	repo, err := talos.ReleaseRepository(u.Spec.Installer)
	if err != nil {
		return upgradev1.UnsupportedVersionStepReason, err.Error()
	}
	keychain, err := talos.KeychainFromSecret(pullSecret)
	if err != nil {
		return upgradev1.InstallerImageNotFoundReason, err.Error()
	}
	lister := r.Releases
	if lister == nil {
		lister = &talos.ReleaseLister{}
	}
	available, err := lister.List(ctx, repo, keychain)
	if err != nil {
		return upgradev1.ReleasesUnavailableReason, fmt.Sprintf("planning the upgrade path: %v", err)
	}
	var from []string
	for _, st := range u.Status.Machines {
		if st.Phase == upgradev1.MachinePhasePending && st.FromVersion != "" {
			from = append(from, st.FromVersion)
		}
	}
	hops, err := plan.PathForCluster(&u.Spec.UpgradePlan, s.cluster, pending, from, available, repo)
	if err != nil {
		return upgradev1.UnsupportedVersionStepReason, err.Error()
	}
	path := &upgradev1.UpgradePathStatus{Target: u.Spec.TalosVersion}
	for _, h := range hops {
		path.Hops = append(path.Hops, upgradev1.UpgradeHop{Version: h})
	}
	u.Status.Path = path
	ctrl.LoggerFrom(ctx).Info("Planned the upgrade path", "path", strings.Join(hops, " -> "))
	r.event(s, corev1.EventTypeNormal, "UpgradePathPlanned", "Plan", "Upgrade path to %s: %s", u.Spec.TalosVersion, strings.Join(hops, " → "))
	return "", ""
}

// reconcilePath counts the Machines that completed the current hop of the
// path, moves the rollout to the next hop once every Machine completed it, and brings the Machine records to the
// new hop. A failed Machine keeps the rollout on its hop: the failure policy
// decides.
func (r *Reconciler) reconcilePath(ctx context.Context, s *scope) (ctrl.Result, error) {
	p := s.path()
	if p == nil || len(s.upgrade.Status.Machines) == 0 {
		return ctrl.Result{}, nil
	}
	hop := s.target()
	done := 0
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhaseCompleted && talos.SameVersion(st.TargetVersion, hop) {
			done++
		}
	}
	p.Hops[p.Current].CompletedMachines = int32(done) //nolint:gosec // At most 10000 records.
	if done < len(s.upgrade.Status.Machines) || !s.hopsLeft() {
		return ctrl.Result{}, nil
	}
	p.Current++
	next := p.Hops[p.Current].Version
	ctrl.LoggerFrom(ctx).Info("Upgrade path: hop completed", "hop", hop, "next", next)
	r.event(s, corev1.EventTypeNormal, "HopCompleted", "Upgrade", "Every Machine runs %s; next hop: %s (%d of %d)", hop, next, p.Current+1, len(p.Hops))
	return r.reconcileMachines(ctx, s)
}
