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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
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

// planPath plans the upgrade path of an Auto rollout for its target, from
// the versions the Machines to upgrade run (Rollout.PathFrom), through the
// releases of the installer repository, and records it; none is planned
// when they all run the target. It returns the reason and message of a
// failed preflight, or an empty reason.
func (r *Reconciler) planPath(ctx context.Context, s *scope, pending []clusterv1.Machine, pullSecret *corev1.Secret) (reason, message string) {
	u := s.Upgrade
	if u.Spec.UpgradePath != upgradev1.UpgradePathAuto || u.Spec.KubernetesVersion != "" || s.Path() != nil {
		return "", ""
	}
	from := s.PathFrom()
	if len(from) == 0 {
		// Every Machine that goes to the target runs it: the installs left
		// are those of objects that declare their version, on their paths.
		return "", ""
	}
	available, repo, reason, message := r.releases(ctx, s, pullSecret)
	if reason != "" {
		return reason, message
	}
	hops, err := plan.PathForCluster(&u.Spec.UpgradePlan, s.Cluster, pending, from, available, repo)
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

// planDeclaredPaths plans, for each object of requests, the upgrade path of
// its Machines to the version it declares, through the releases of the
// installer repository, and records it in status.declaredPaths; a path not
// found is recorded with why, and its object's Machines wait for it
// (disruption.Rollout.TargetOf) while the rest of the Cluster goes on. It
// returns the reason and message of a failed preflight when the releases
// cannot be listed, or an empty reason.
func (r *Reconciler) planDeclaredPaths(ctx context.Context, s *scope, requests []disruption.PathRequest, pullSecret *corev1.Secret) (reason, message string) {
	available, repo, reason, message := r.releases(ctx, s, pullSecret)
	if reason != "" {
		return reason, fmt.Sprintf("planning the upgrade path of %s to Talos %s: %s", requests[0].Owner, requests[0].Version, message)
	}
	kubernetes := plan.NewClusterVersions(s.Cluster, s.VerifiedMachines()).Kubernetes
	for _, req := range requests {
		hops, err := talos.PlanPath(talos.PathInput{From: req.From, Target: req.Version, Kubernetes: kubernetes, Available: available, Repository: repo})
		p := upgradev1.DeclaredPathStatus{Kind: req.Owner.Kind, Name: req.Owner.Name, TalosVersion: req.Version, From: oldest(req.From), Hops: hops, PlanTime: metav1.NewTime(r.Now())}
		if err != nil {
			p.Hops, p.Message = nil, upgradev1.Truncate(err.Error(), upgradev1.MaxMessageLength)
			r.ownerEvent(s, req.Owner, corev1.EventTypeWarning, "UpgradePathNotFound", "Plan", "No upgrade path for %s to Talos %s (%s): %v", req.Owner, req.Version, req.Owner.Field(), err)
		} else {
			ctrl.LoggerFrom(ctx).Info("Planned the upgrade path of an object's Machines", "object", req.Owner.String(), "path", strings.Join(hops, " -> "))
			r.ownerEvent(s, req.Owner, corev1.EventTypeNormal, "UpgradePathPlanned", "Plan", "Upgrade path of %s to Talos %s: %s", req.Owner, req.Version, strings.Join(hops, " → "))
		}
		setDeclaredPath(s, p)
	}
	return "", ""
}

// setDeclaredPath records p in place of the path of its object.
func setDeclaredPath(s *scope, p upgradev1.DeclaredPathStatus) {
	status := &s.Upgrade.Status
	if i := slices.IndexFunc(status.DeclaredPaths, func(q upgradev1.DeclaredPathStatus) bool { return q.Kind == p.Kind && q.Name == p.Name }); i >= 0 {
		status.DeclaredPaths[i] = p
		return
	}
	status.DeclaredPaths = append(status.DeclaredPaths, p)
}

// oldest returns the oldest of versions, which are Talos versions.
func oldest(versions []string) string {
	return slices.MinFunc(versions, func(a, b string) int {
		c, _ := talos.CompareVersions(a, b)
		return c
	})
}

// recheckDeclaredPaths forgets the paths of versions no object declares any
// more, and those not found preflightRetry ago, for the preflight to look
// for them again through the releases pushed since.
func (r *Reconciler) recheckDeclaredPaths(_ context.Context, s *scope) (ctrl.Result, error) {
	paths := s.Upgrade.Status.DeclaredPaths
	if len(paths) == 0 || s.Machines == nil {
		return ctrl.Result{}, nil // Nothing to look at, or the Machines not read: kept as they are.
	}
	declared := map[disruption.Owner]string{}
	for _, m := range s.Machines {
		if t := s.TargetOf(m); t.Source == upgradev1.VersionSourceObject {
			declared[t.Owner] = t.Final
		}
	}
	res := ctrl.Result{}
	kept := paths[:0:0]
	for _, p := range paths {
		if v, ok := declared[disruption.Owner{Kind: p.Kind, Name: p.Name}]; !ok || !talos.SameVersion(v, p.TalosVersion) {
			continue
		}
		if len(p.Hops) == 0 {
			wait := p.PlanTime.Add(preflightRetry).Sub(r.Now())
			if wait <= 0 {
				// Planned again by the preflight, which the Machines of
				// the object now wait for.
				res = util.LowestNonZeroResult(res, requeueAfter(time.Second))
				continue
			}
			res = util.LowestNonZeroResult(res, requeueAfter(wait))
		}
		kept = append(kept, p)
	}
	s.Upgrade.Status.DeclaredPaths = kept
	return res, nil
}

// declaredHopsMoved reports whether an object's Machines completed the hop
// of the path to the version it declares, and go to the next one, and tells
// it with an event per object.
func (r *Reconciler) declaredHopsMoved(ctx context.Context, s *scope) bool {
	if len(s.Upgrade.Status.DeclaredPaths) == 0 {
		return false
	}
	moved := map[disruption.Owner]disruption.Target{}
	retargeted := false
	for _, st := range s.Upgrade.Status.Machines {
		m := s.Machines[st.Machine]
		if m == nil || st.Phase != upgradev1.MachinePhaseCompleted {
			continue
		}
		t := s.TargetOf(m)
		if t.Source != upgradev1.VersionSourceObject || talos.SameVersion(st.TargetVersion, t.Version) || s.DeclaredPath(t.Owner, t.Final) == nil {
			continue
		}
		retargeted = true
		if talos.Newer(t.Version, st.TargetVersion) {
			moved[t.Owner] = t // On to the next hop, rather than back to one a joiner has to reach.
		}
	}
	for _, o := range slices.SortedFunc(maps.Keys(moved), func(a, b disruption.Owner) int { return strings.Compare(a.String(), b.String()) }) {
		t := moved[o]
		ctrl.LoggerFrom(ctx).Info("Upgrade path of an object's Machines: next hop", "object", o.String(), "hop", t.Version, "target", t.Final)
		r.ownerEvent(s, o, corev1.EventTypeNormal, "HopCompleted", "Upgrade", "Every Machine of %s completed its hop; next hop on the way to Talos %s: %s", o, t.Final, t.Version)
	}
	return retargeted
}

// releases lists the stable Talos releases of the rollout's installer
// repository, with pullSecret; it returns the reason and message of a
// failed preflight when they cannot be listed.
func (r *Reconciler) releases(ctx context.Context, s *scope, pullSecret *corev1.Secret) (available []string, repo, reason, message string) {
	repo, err := talos.ReleaseRepository(s.Upgrade.Spec.Installer)
	if err != nil {
		return nil, "", upgradev1.UnsupportedVersionStepReason, err.Error()
	}
	keychain, err := talos.KeychainFromSecret(pullSecret)
	if err != nil {
		return nil, "", upgradev1.InstallerImageNotFoundReason, err.Error()
	}
	available, err = r.releaseLister().List(ctx, repo, keychain)
	if err != nil {
		return nil, "", upgradev1.ReleasesUnavailableReason, fmt.Sprintf("planning the upgrade path: %v", err)
	}
	return available, repo, "", ""
}

// releaseLister returns the Reconciler's release lister, or one of its own.
func (r *Reconciler) releaseLister() *talos.ReleaseLister {
	if r.Releases == nil {
		return &talos.ReleaseLister{}
	}
	return r.Releases
}

// kubeletReleases lists the Kubernetes releases a path through the minors in
// between may go through: the stable releases of the kubelet repository the
// machine configuration of each Machine's node names (machine.kubelet.image,
// so that a user's mirror stays the mirror), with the credentials of
// pullSecret, those that every repository lists
// (plan.CommonKubeletReleases). It returns the reason and message of a
// failed preflight when a node's configuration cannot be read or a
// repository cannot be listed.
func (r *Reconciler) kubeletReleases(ctx context.Context, s *scope, machines []*clusterv1.Machine, pullSecret *corev1.Secret) (releases plan.KubeletReleases, reason, message string) {
	keychain, err := talos.KeychainFromSecret(pullSecret)
	if err != nil {
		return plan.KubeletReleases{}, upgradev1.InstallerImageNotFoundReason, err.Error()
	}
	byRepository := map[string][]string{}
	for _, m := range machines {
		repo, err := r.nodes().KubeletRepository(ctx, s.Cluster, m)
		switch {
		case errors.Is(err, kubernetes.ErrInvalidConfig), errors.Is(err, kubernetes.ErrInvalidImage), errors.Is(err, kubernetes.ErrDigestImage):
			return plan.KubeletReleases{}, upgradev1.UnsupportedVersionStepReason, fmt.Sprintf("Machine %q: planning the Kubernetes minors in between: %v", m.Name, err)
		case err != nil:
			return plan.KubeletReleases{}, talosReason(err), fmt.Sprintf("Machine %q: reading the kubelet repository of its node, to plan the Kubernetes minors in between: %v", m.Name, err)
		}
		if _, ok := byRepository[repo]; ok {
			continue
		}
		if byRepository[repo], err = r.releaseLister().List(ctx, repo, keychain); err != nil {
			return plan.KubeletReleases{}, upgradev1.ReleasesUnavailableReason, fmt.Sprintf("planning the Kubernetes minors in between: %v", err)
		}
	}
	return plan.CommonKubeletReleases(byRepository), "", ""
}

// planVersions plans the path of a rollout with a Kubernetes target, with
// its Talos target (talos.PlanVersions), from what the Cluster's Machines
// run, and records it: through the Talos releases of the installer
// repository with upgradePath Auto, in one Talos hop otherwise, and, with
// Auto, through the newest patch of every Kubernetes minor in between that
// the nodes' kubelet repository lists (kubeletReleases). Each hop that
// changes Kubernetes is two hops, its control plane first (see
// kubernetes.go). It returns the reason and message of a failed preflight,
// or an empty reason.
func (r *Reconciler) planVersions(ctx context.Context, s *scope, pullSecret *corev1.Secret) (reason, message string) {
	u := s.Upgrade
	if u.Spec.KubernetesVersion == "" || s.Path() != nil {
		return "", ""
	}
	machines := s.VerifiedMachines()
	slices.SortFunc(machines, func(a, b *clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	versions := plan.NewClusterVersions(s.Cluster, machines)
	var available []string
	repo := ""
	if running := versions.TalosVersions(); u.Spec.UpgradePath == upgradev1.UpgradePathAuto && (len(running) != 1 || !talos.SameVersion(running[0], u.Spec.TalosVersion)) {
		var reason, message string
		if available, repo, reason, message = r.releases(ctx, s, pullSecret); reason != "" {
			return reason, message
		}
	}
	var kubelets plan.KubeletReleases
	if u.Spec.UpgradePath == upgradev1.UpgradePathAuto && plan.SkipsKubernetesMinors(&u.Spec.UpgradePlan, &versions) {
		var reason, message string
		if kubelets, reason, message = r.kubeletReleases(ctx, s, machines, pullSecret); reason != "" {
			return reason, message
		}
	}
	hops, err := plan.KubernetesPath(&u.Spec.UpgradePlan, &versions, available, repo, kubelets)
	if err != nil {
		return upgradev1.UnsupportedVersionStepReason, fmt.Sprintf("planning Talos %s with Kubernetes %s: %v", u.Spec.TalosVersion, u.Spec.KubernetesVersion, err)
	}
	path := &upgradev1.UpgradePathStatus{Target: u.Spec.TalosVersion, KubernetesTarget: u.Spec.KubernetesVersion, Hops: hops}
	u.Status.Path = path
	described := plan.DescribeHops(path.Hops)
	ctrl.LoggerFrom(ctx).Info("Planned the upgrade path", "path", described)
	r.event(s, corev1.EventTypeNormal, "UpgradePathPlanned", "Plan", "Upgrade path to Talos %s and Kubernetes %s: %s", u.Spec.TalosVersion, u.Spec.KubernetesVersion, described)
	return "", ""
}

// reconcilePath counts the Machines that completed the current hop of the
// path, moves the rollout to the next hop once every Machine completed it, and brings the Machine records to the
// new hop. A failed Machine keeps the rollout on its hop: the failure policy
// decides.
func (r *Reconciler) reconcilePath(ctx context.Context, s *scope) (ctrl.Result, error) {
	if r.declaredHopsMoved(ctx, s) {
		// The records of the objects whose Machines all reached their hop
		// go to the next before the rollout could end.
		return r.reconcileMachines(ctx, s)
	}
	p := s.Path()
	if p == nil || len(s.Upgrade.Status.Machines) == 0 {
		return ctrl.Result{}, nil
	}
	hop := s.Target()
	done := 0
	var errs []error
	for i := range s.Upgrade.Status.Machines {
		st := &s.Upgrade.Status.Machines[i]
		m := s.Machines[st.Machine]
		if m != nil && (s.TargetOf(m).Source == upgradev1.VersionSourceObject || s.Blocked(st)) {
			// Its object declares its version: it takes no hop of the path,
			// and the path does not wait for it.
			done++
			continue
		}
		if st.Phase == upgradev1.MachinePhaseCompleted && talos.SameVersion(st.TargetVersion, hop) && disruption.SameKubernetes(st.Kubernetes, s.KubernetesWant(m)) {
			done++
			if err := r.recordMachineVersion(ctx, s, st); err != nil {
				errs = append(errs, err)
			}
		}
	}
	p.Hops[p.Current].CompletedMachines = int32(done) //nolint:gosec // At most 10000 records.
	if len(errs) > 0 {
		return ctrl.Result{}, errors.Join(errs...)
	}
	if done < len(s.Upgrade.Status.Machines) || !s.HopsLeft() {
		return ctrl.Result{}, nil
	}
	if h := p.Hops[p.Current]; h.Stage == upgradev1.HopStageKubernetesControlPlane {
		// Every apiserver runs the new version: kube-proxy may follow, and
		// the kubelets wait for it.
		msg, err := r.reconcileKubeProxy(ctx, s, h.KubernetesVersion)
		if err != nil {
			return ctrl.Result{}, err
		}
		if msg != "" {
			s.block(upgradev1.WaitingForKubeProxyReason, msg)
			return requeueAfter(kubeProxyPoll), nil
		}
	}
	before := plan.DescribeHops(p.Hops[p.Current : p.Current+1])
	p.Current++
	next := plan.DescribeHops(p.Hops[p.Current : p.Current+1])
	ctrl.LoggerFrom(ctx).Info("Upgrade path: hop completed", "hop", before, "next", next)
	r.event(s, corev1.EventTypeNormal, "HopCompleted", "Upgrade", "Every Machine completed %s; next hop: %s (%d of %d)", before, next, p.Current+1, len(p.Hops))
	return r.reconcileMachines(ctx, s)
}
