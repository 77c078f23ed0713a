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
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// preflightRetry is how often a failed preflight runs again: registries,
// Talos APIs and Secrets send no event.
const preflightRetry = 30 * time.Second

// reconcilePreflight checks, once per target, once the rollout is admitted
// and before any Machine is touched, that the rollout can succeed; it is
// retried until it passes.
func (r *Reconciler) reconcilePreflight(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.PreflightPassed() || !s.HasPending() {
		return ctrl.Result{}, nil // Checked, or nothing left to start: nothing to check.
	}
	if s.Upgrade.Annotations[upgradev1.AdmittedAnnotation] == "" {
		// The preflight runs once the rollout is admitted, with its workload
		// connection: a fleet waiting for its slots opens no connection.
		return ctrl.Result{}, nil
	}
	if paused, _ := s.Pause(); paused != "" {
		// A paused rollout holds no workload connection (see needsWorkload):
		// its preflight runs once it is resumed.
		return ctrl.Result{}, nil
	}
	reason, msg := r.preflight(ctx, s)
	if reason != "" {
		s.Preflight = &metav1.Condition{Type: upgradev1.PreflightSucceededCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
		s.block(reason, "preflight: "+msg)
		return requeueAfter(preflightRetry), nil
	}
	s.Preflight = &metav1.Condition{Type: upgradev1.PreflightSucceededCondition, Status: metav1.ConditionTrue, Reason: upgradev1.PreflightPassedReason}
	s.Upgrade.Status.PreflightTarget = s.PreflightKey()
	if s.Path() != nil || len(s.Upgrade.Status.DeclaredPaths) > 0 {
		// The records target the current hop of their path before any
		// starts.
		return r.reconcileMachines(ctx, s)
	}
	return ctrl.Result{}, nil
}

// preflight returns the reason and message of the first failed check, or
// an empty reason.
func (r *Reconciler) preflight(ctx context.Context, s *scope) (reason, message string) {
	if s.workload == nil {
		return upgradev1.WorkloadAPINotReadyReason, fmt.Sprintf("workload cluster %q is not reachable", s.Cluster.Name)
	}
	nodes := &corev1.NodeList{}
	if err := s.workload.List(ctx, nodes); err != nil {
		return upgradev1.WorkloadAPINotReadyReason, fmt.Sprintf("listing the Nodes of workload cluster %q: %v", s.Cluster.Name, err)
	}
	if other, err := r.conflictingUpgrade(ctx, s); err != nil {
		return upgradev1.ConflictingUpgradeReason, err.Error()
	} else if other != "" {
		return upgradev1.ConflictingUpgradeReason, fmt.Sprintf("TalosUpgrade %q also covers Cluster %q; delete or finish it first", other, s.Cluster.Name)
	}
	if len(s.unavailableChecks) > 0 {
		return upgradev1.HealthCheckNotFoundReason, fmt.Sprintf("ClusterHealthCheck %s not found in namespace %q; create it or remove it from the policy", disruption.QuoteAll(s.unavailableChecks), s.Upgrade.Namespace)
	}
	var pullSecret *corev1.Secret
	readPullSecret := func() (err error) {
		if pullSecret == nil {
			pullSecret, err = r.pullSecret(ctx, s)
		}
		return err
	}
	if requests := s.PathsToPlan(); len(requests) > 0 {
		if err := readPullSecret(); err != nil {
			return upgradev1.InstallerImageNotFoundReason, err.Error()
		}
		if reason, msg := r.planDeclaredPaths(ctx, s, requests, pullSecret); reason != "" {
			return reason, msg
		}
	}
	// pending go to the policy's target; declared to the version their
	// object declares (disruption.Rollout.TargetOf, which judged it),
	// through the hops of its path.
	var pending []clusterv1.Machine
	declared := map[string]disruption.Target{}
	installs := false
	for _, st := range s.Upgrade.Status.Machines {
		m, ok := s.Machines[st.Machine]
		if !ok || st.Phase != upgradev1.MachinePhasePending || disruption.StartBlocker(&st, m) != "" || s.Blocked(&st) {
			continue
		}
		t := s.TargetOf(m)
		installs = installs || !talos.SameVersion(plan.MachineTalosVersion(m), t.Version)
		if t.Source == upgradev1.VersionSourceObject {
			declared[m.Name] = t
			continue
		}
		pending = append(pending, *m)
	}
	if errs := plan.ValidateForCluster(&s.Upgrade.Spec.UpgradePlan, s.Cluster, pending, field.NewPath("spec")); len(errs) > 0 {
		return upgradev1.UnsupportedVersionStepReason, errs.ToAggregate().Error()
	}
	if installs || (s.Upgrade.Spec.UpgradePath == upgradev1.UpgradePathAuto && s.Upgrade.Spec.KubernetesVersion != "") {
		if err := readPullSecret(); err != nil {
			return upgradev1.InstallerImageNotFoundReason, err.Error()
		}
	}
	if reason, msg := r.planVersions(ctx, s, pullSecret); reason != "" {
		return reason, msg
	}
	if !installs {
		// Only reboots, configuration and Kubernetes changes are left: no
		// installer image is needed.
		return "", ""
	}
	if reason, msg := r.planPath(ctx, s, pending, pullSecret); reason != "" {
		return reason, msg
	}
	versions := []string{s.Upgrade.Spec.TalosVersion}
	if p := s.Path(); p != nil {
		versions = versions[:0]
		for _, h := range p.Hops[p.Current:] {
			if h.Stage == upgradev1.HopStageKubernetesControlPlane {
				continue // Installs nothing: the Talos the nodes run.
			}
			versions = append(versions, h.Version)
		}
	}

	// Every node answers over the Talos API, and the installer image of
	// every hop, and of every declared version, exists.
	images := map[string]bool{}
	checked := slices.Clone(pending)
	for _, st := range s.Upgrade.Status.Machines {
		if _, ok := declared[st.Machine]; ok {
			checked = append(checked, *s.Machines[st.Machine])
		}
	}
	// onlyDeclared are the images only Machines of a declared version
	// need, by image: one not found stops those Machines alone.
	onlyDeclared := map[string]string{}
	for _, m := range checked {
		targets := versions
		t, isDeclared := declared[m.Name]
		v := t.Final
		if isDeclared {
			targets = s.Hops(t)
		}
		refs, err := r.nodes().InstallerImages(ctx, s.Cluster, &m, s.Upgrade.Spec.Installer, targets)
		if err != nil {
			return talosReason(err), fmt.Sprintf("Machine %q: %v", m.Name, err)
		}
		for _, ref := range refs {
			_, seen := images[ref]
			switch {
			case isDeclared && !seen:
				onlyDeclared[ref] = v
			case !isDeclared:
				delete(onlyDeclared, ref)
			}
			images[ref] = true
		}
	}
	refs := make([]string, 0, len(images))
	for ref := range images {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	found := refs[:0:0]
	for _, ref := range refs {
		err := r.CheckImage(ctx, ref, pullSecret)
		switch version, ok := onlyDeclared[ref]; {
		case err == nil:
			found = append(found, ref)
		case ok:
			// The Machines of that version wait (see
			// disruption.Rollout.Unavailable); the others go on.
			setUnavailable(s, version, ref, err, r.Now())
		default:
			return upgradev1.InstallerImageNotFoundReason, err.Error()
		}
	}
	s.Upgrade.Status.InstallerImages = found
	return "", ""
}

// setUnavailable records that the installer image ref of a declared
// version was not found, at now.
func setUnavailable(s *scope, version, ref string, err error, now time.Time) {
	u := upgradev1.UnavailableVersion{TalosVersion: version, Image: ref, Message: upgradev1.Truncate(err.Error(), upgradev1.MaxMessageLength), LastCheckTime: metav1.NewTime(now)}
	if existing := s.Unavailable(version); existing != nil {
		*existing = u
		return
	}
	s.Upgrade.Status.UnavailableVersions = append(s.Upgrade.Status.UnavailableVersions, u)
}

// recheckUnavailable looks again, preflightRetry after the last look, for
// the installer images of declared versions the preflight did not find, and
// forgets the versions no object declares any more: a version found lets
// its Machines start (its objects' version joins the preflight's key, and
// the preflight runs again).
func (r *Reconciler) recheckUnavailable(ctx context.Context, s *scope) (ctrl.Result, error) {
	list := s.Upgrade.Status.UnavailableVersions
	if len(list) == 0 || s.Machines == nil {
		return ctrl.Result{}, nil // Nothing to look for, or the Machines not read: kept as they are.
	}
	declared := map[string]bool{}
	for _, m := range s.Machines {
		if t := s.TargetOf(m); t.Source == upgradev1.VersionSourceObject {
			declared[t.Final] = true
		}
	}
	var pullSecret *corev1.Secret
	kept := list[:0:0]
	res := ctrl.Result{}
	for _, u := range list {
		if !declared[u.TalosVersion] {
			continue
		}
		if wait := u.LastCheckTime.Add(preflightRetry).Sub(r.Now()); wait > 0 {
			kept = append(kept, u)
			res = util.LowestNonZeroResult(res, requeueAfter(wait))
			continue
		}
		if pullSecret == nil && s.Upgrade.Spec.Installer.PullSecretRef != nil {
			var err error
			if pullSecret, err = r.pullSecret(ctx, s); err != nil {
				return ctrl.Result{}, err
			}
		}
		err := r.CheckImage(ctx, u.Image, pullSecret)
		if err == nil {
			ctrl.LoggerFrom(ctx).Info("Installer image of a declared Talos version found", "version", u.TalosVersion, "image", u.Image)
			continue
		}
		u.Message, u.LastCheckTime = upgradev1.Truncate(err.Error(), upgradev1.MaxMessageLength), metav1.NewTime(r.Now())
		kept = append(kept, u)
		res = util.LowestNonZeroResult(res, requeueAfter(preflightRetry))
	}
	s.Upgrade.Status.UnavailableVersions = kept
	return res, nil
}

// pullSecret reads the installer's pull Secret, live, when the plan names one.
func (r *Reconciler) pullSecret(ctx context.Context, s *scope) (*corev1.Secret, error) {
	ref := s.Upgrade.Spec.Installer.PullSecretRef
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.Upgrade.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("reading the installer pull Secret %q: %w", ref.Name, err)
	}
	return secret, nil
}

// conflictingUpgrade returns the name of another unfinished TalosUpgrade
// covering the same Cluster.
func (r *Reconciler) conflictingUpgrade(ctx context.Context, s *scope) (string, error) {
	list := &upgradev1.TalosUpgradeList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.Upgrade.Namespace), client.MatchingFields{index.UpgradeClusterNameField: s.Upgrade.Spec.ClusterName}); err != nil {
		return "", fmt.Errorf("listing TalosUpgrades: %w", err)
	}
	for i := range list.Items {
		u := &list.Items[i]
		if u.Name == s.Upgrade.Name {
			continue
		}
		if !u.Finished() {
			return u.Name, nil
		}
	}
	return "", nil
}

// talosReason maps a Talos API error to a condition reason.
func talosReason(err error) string {
	switch {
	case errors.Is(err, talos.ErrTalosConfigNotFound), errors.Is(err, talos.ErrTalosConfigInvalid), errors.Is(err, talos.ErrTLS):
		return upgradev1.TalosConfigInvalidReason
	default:
		return upgradev1.NodeUnreachableReason
	}
}
