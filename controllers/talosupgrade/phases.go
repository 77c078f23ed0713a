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
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// reconcileCluster reads the Cluster and stops the reconcile while it is
// missing or paused: a paused Cluster is never touched.
func (r *Reconciler) reconcileCluster(ctx context.Context, s *scope) (ctrl.Result, error) {
	cluster := &clusterv1.Cluster{}
	key := client.ObjectKey{Namespace: s.upgrade.Namespace, Name: s.upgrade.Spec.ClusterName}
	if err := r.Client.Get(ctx, key, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			s.stop = true
			s.block(upgradev1.ClusterNotFoundReason, fmt.Sprintf("Cluster %q not found", key.Name))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading Cluster %s: %w", key, err)
	}
	s.cluster = cluster
	policy := &upgradev1.TalosUpgradePolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.upgrade.Namespace, Name: s.upgrade.Spec.PolicyName}, policy); err == nil {
		s.policy = policy
	} else if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading TalosUpgradePolicy %q: %w", s.upgrade.Spec.PolicyName, err)
	}
	if annotations.IsPaused(cluster, cluster) {
		s.stop = true
		s.block(upgradev1.ClusterPausedReason, fmt.Sprintf("Cluster %q is paused", cluster.Name))
		conditions.Set(s.upgrade, metav1.Condition{
			Type: upgradev1.PausedCondition, Status: metav1.ConditionTrue, Reason: upgradev1.ClusterPausedReason,
			Message: fmt.Sprintf("Cluster %q is paused (spec.paused or the %s annotation); Tollgate does not touch it", cluster.Name, clusterv1.PausedAnnotation),
		})
	}
	return ctrl.Result{}, nil
}

// reconcileMachines lists the Cluster's Machines and brings the per-Machine
// records up to date: new Machines become Pending (or Completed when they
// already run the target), Machines being deleted are skipped, and records
// of a previous target start again.
func (r *Reconciler) reconcileMachines(ctx context.Context, s *scope) (ctrl.Result, error) {
	list := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: s.cluster.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the Machines of Cluster %s: %w", klogRef(s.cluster), err)
	}
	s.machines = make(map[string]*clusterv1.Machine, len(list.Items))
	for i := range list.Items {
		s.machines[list.Items[i].Name] = &list.Items[i]
	}

	target := s.upgrade.Spec.TalosVersion
	records := s.upgrade.Status.Machines[:0:0]
	seen := map[string]bool{}
	for _, st := range s.upgrade.Status.Machines {
		m, ok := s.machines[st.Machine]
		seen[st.Machine] = true
		switch {
		case !ok && !inFlight(st.Phase):
			continue // Gone: nothing to record.
		case ok && !m.DeletionTimestamp.IsZero() && st.Phase == upgradev1.MachinePhasePending:
			continue // Being deleted: skipped.
		case st.TargetVersion != target && !inFlight(st.Phase) && ok:
			st = newRecord(m, s.upgrade, target)
		}
		records = append(records, st)
	}
	for _, m := range list.Items {
		if seen[m.Name] || !m.DeletionTimestamp.IsZero() {
			continue
		}
		records = append(records, newRecord(&m, s.upgrade, target))
	}
	sortRecords(s.upgrade, records)
	for i := range records {
		st := &records[i]
		if st.Phase == upgradev1.MachinePhasePending && sameVersion(st.FromVersion, target) {
			st.Phase = upgradev1.MachinePhaseCompleted
			st.Message = fmt.Sprintf("already runs %s", target)
			st.CompletionTime = ptrTime(s.now)
		}
	}
	s.upgrade.Status.Machines = records
	return ctrl.Result{}, nil
}

// newRecord returns the Pending record of a Machine.
func newRecord(m *clusterv1.Machine, u *upgradev1.TalosUpgrade, target string) upgradev1.MachineUpgradeStatus {
	role, group := upgradev1.MachineRoleWorker, groupOf(u, m)
	if isControlPlane(m) {
		role, group = upgradev1.MachineRoleControlPlane, "control-plane"
	}
	return upgradev1.MachineUpgradeStatus{
		Machine:       m.Name,
		Node:          m.Status.NodeRef.Name,
		Role:          role,
		Group:         group,
		FromVersion:   plan.MachineTalosVersion(m),
		TargetVersion: target,
		Phase:         upgradev1.MachinePhasePending,
	}
}

// groupOf returns the rollout group of a worker: the first group of
// rollout.order whose selector matches, else its MachineDeployment.
func groupOf(u *upgradev1.TalosUpgrade, m *clusterv1.Machine) string {
	for _, g := range u.Spec.Rollout.Order {
		sel, err := metav1.LabelSelectorAsSelector(&g.Selector)
		if err == nil && sel.Matches(labelSet(m.Labels)) {
			return g.Name
		}
	}
	if md := m.Labels[clusterv1.MachineDeploymentNameLabel]; md != "" {
		return "md/" + md
	}
	return "workers"
}

// groupRank orders groups: control plane, then rollout.order, then the rest
// by name.
func groupRank(u *upgradev1.TalosUpgrade, group string) int {
	if group == "control-plane" {
		return 0
	}
	for i, g := range u.Spec.Rollout.Order {
		if g.Name == group {
			return 1 + i
		}
	}
	return 1 + len(u.Spec.Rollout.Order)
}

// sortRecords orders Machine records the way they are upgraded.
func sortRecords(u *upgradev1.TalosUpgrade, records []upgradev1.MachineUpgradeStatus) {
	sort.SliceStable(records, func(i, j int) bool { return recordLess(u, records[i], records[j]) })
}

func recordLess(u *upgradev1.TalosUpgrade, a, b upgradev1.MachineUpgradeStatus) bool {
	ra, rb := groupRank(u, a.Group), groupRank(u, b.Group)
	if ra != rb {
		return ra < rb
	}
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	return a.Machine < b.Machine
}

// reconcileWorkload gets the clients of the workload cluster and watches its
// Nodes and Jobs. While it cannot be reached, no new Machine starts; the
// ClusterCache sends an event when it connects.
func (r *Reconciler) reconcileWorkload(ctx context.Context, s *scope) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(s.cluster)
	c, err := r.ClusterCache.GetClient(ctx, key)
	if err != nil {
		if errors.Is(err, clustercache.ErrClusterNotConnected) {
			s.block(upgradev1.WorkloadAPINotReadyReason, fmt.Sprintf("workload cluster %q is not reachable yet", s.cluster.Name))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("connecting to the workload cluster of %s: %w", klogRef(s.cluster), err)
	}
	s.workload = c
	if err := r.watchWorkload(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// preflightTarget identifies what a preflight checked.
func preflightTarget(u *upgradev1.TalosUpgrade) string {
	in := u.Spec.Installer
	return fmt.Sprintf("%s source=%s platform=%s schematic=%s secureBoot=%t repository=%s", u.Spec.TalosVersion,
		in.Source, in.Platform, in.SchematicID, in.SecureBoot != nil && *in.SecureBoot, in.Repository)
}

// reconcilePreflight checks, once per target and before any Machine is
// touched, that the rollout can succeed; it is retried until it passes.
func (r *Reconciler) reconcilePreflight(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.readHealthChecks(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	target := preflightTarget(s.upgrade)
	if s.upgrade.Status.PreflightTarget == target && conditions.IsTrue(s.upgrade, upgradev1.PreflightSucceededCondition) {
		return ctrl.Result{}, nil
	}
	if !s.hasPending() {
		return ctrl.Result{}, nil // Nothing left to start: nothing to check.
	}
	reason, msg := r.preflight(ctx, s)
	if reason != "" {
		conditions.Set(s.upgrade, metav1.Condition{Type: upgradev1.PreflightSucceededCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
		s.block(reason, "preflight: "+msg)
		// Registries, Talos APIs and Secrets send no event: retry.
		return requeueAfter(preflightRetry), nil
	}
	conditions.Set(s.upgrade, metav1.Condition{Type: upgradev1.PreflightSucceededCondition, Status: metav1.ConditionTrue, Reason: upgradev1.PreflightPassedReason})
	s.upgrade.Status.PreflightTarget = target
	return ctrl.Result{}, nil
}

// preflight returns the reason and message of the first failed check, or
// an empty reason.
func (r *Reconciler) preflight(ctx context.Context, s *scope) (reason, message string) {
	if s.workload == nil {
		return upgradev1.WorkloadAPINotReadyReason, fmt.Sprintf("workload cluster %q is not reachable", s.cluster.Name)
	}
	nodes := &corev1.NodeList{}
	if err := s.workload.List(ctx, nodes); err != nil {
		return upgradev1.WorkloadAPINotReadyReason, fmt.Sprintf("listing the Nodes of workload cluster %q: %v", s.cluster.Name, err)
	}
	if other, err := r.conflictingUpgrade(ctx, s); err != nil {
		return upgradev1.ConflictingUpgradeReason, err.Error()
	} else if other != "" {
		return upgradev1.ConflictingUpgradeReason, fmt.Sprintf("TalosUpgrade %q also covers Cluster %q; delete or finish it first", other, s.cluster.Name)
	}
	if len(s.missingChecks) > 0 {
		return upgradev1.HealthCheckNotFoundReason, fmt.Sprintf("ClusterHealthCheck %s not found in namespace %q; create it or remove it from the policy", quoteAll(s.missingChecks), s.upgrade.Namespace)
	}
	var pending []clusterv1.Machine
	for _, st := range s.upgrade.Status.Machines {
		if m, ok := s.machines[st.Machine]; ok && st.Phase == upgradev1.MachinePhasePending {
			pending = append(pending, *m)
		}
	}
	if errs := plan.ValidateForCluster(&s.upgrade.Spec.UpgradePlan, s.cluster, pending, field.NewPath("spec")); len(errs) > 0 {
		return upgradev1.UnsupportedVersionStepReason, errs.ToAggregate().Error()
	}

	// Every node answers over the Talos API, and every installer image exists.
	images := map[string]bool{}
	for _, m := range pending {
		image, err := r.installerImage(ctx, s, &m)
		if err != nil {
			return talosReason(err), fmt.Sprintf("Machine %q: %v", m.Name, err)
		}
		images[image] = true
	}
	pullSecret, err := r.pullSecret(ctx, s)
	if err != nil {
		return upgradev1.InstallerImageNotFoundReason, err.Error()
	}
	refs := sortedKeys(images)
	for _, ref := range refs {
		if err := r.CheckImage(ctx, ref, pullSecret); err != nil {
			return upgradev1.InstallerImageNotFoundReason, err.Error()
		}
	}
	s.upgrade.Status.InstallerImages = refs
	return "", ""
}

// installerImage dials the Machine's node and resolves its installer image.
func (r *Reconciler) installerImage(ctx context.Context, s *scope, m *clusterv1.Machine) (string, error) {
	tc, err := r.Dialer.Dial(ctx, s.cluster, m)
	if err != nil {
		return "", err
	}
	defer tc.Close() //nolint:errcheck // Closing a client whose calls succeeded cannot lose data.
	if _, err := tc.Version(ctx); err != nil {
		return "", err
	}
	schematic := ""
	if talos.NeedsRunningSchematic(s.upgrade.Spec.Installer) {
		if schematic, err = tc.Schematic(ctx); err != nil {
			return "", err
		}
	}
	return talos.InstallerImage(s.upgrade.Spec.Installer, s.upgrade.Spec.TalosVersion, schematic)
}

// pullSecret reads the installer's pull Secret, live, when the plan names one.
func (r *Reconciler) pullSecret(ctx context.Context, s *scope) (*corev1.Secret, error) {
	ref := s.upgrade.Spec.Installer.PullSecretRef
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.upgrade.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("reading the installer pull Secret %q: %w", ref.Name, err)
	}
	return secret, nil
}

// conflictingUpgrade returns the name of another unfinished TalosUpgrade
// covering the same Cluster.
func (r *Reconciler) conflictingUpgrade(ctx context.Context, s *scope) (string, error) {
	list := &upgradev1.TalosUpgradeList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.upgrade.Namespace)); err != nil {
		return "", fmt.Errorf("listing TalosUpgrades: %w", err)
	}
	for _, u := range list.Items {
		if u.Name == s.upgrade.Name || u.Spec.ClusterName != s.upgrade.Spec.ClusterName {
			continue
		}
		if u.Status.Phase != upgradev1.UpgradePhaseCompleted && u.Status.Phase != upgradev1.UpgradePhaseFailed {
			return u.Name, nil
		}
	}
	return "", nil
}

// readHealthChecks reads the ClusterHealthChecks the plan references.
func (r *Reconciler) readHealthChecks(ctx context.Context, s *scope) error {
	s.checks, s.missingChecks = nil, nil
	for _, ref := range s.upgrade.Spec.HealthChecks {
		check := upgradev1.ClusterHealthCheck{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.upgrade.Namespace, Name: ref.Name}, &check); err != nil {
			if apierrors.IsNotFound(err) {
				s.missingChecks = append(s.missingChecks, ref.Name)
				continue
			}
			return fmt.Errorf("reading ClusterHealthCheck %q: %w", ref.Name, err)
		}
		s.checks = append(s.checks, check)
	}
	return nil
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

// hasPending reports whether a Machine has yet to start.
func (s *scope) hasPending() bool {
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhasePending {
			return true
		}
	}
	return false
}

// block records what keeps the next Machine from starting; the first
// blocker wins.
func (s *scope) block(reason, message string) {
	if s.blockedBy == "" {
		s.blockedBy, s.waitingReason = message, reason
	}
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
