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

package talosupgradepolicy

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// This file answers "which Cluster's rollout may start now": admission
// within maxClustersInProgress, stopped by the fleet's failure budget
// (maxFailedClusters) and held for the canaries.

// admit lets rollouts start within maxClustersInProgress. A rollout holds
// its slot from admission until it is finished (Completed, Failed or
// Detached), and then gives it back: a rollout that goes back to work (a
// Machine joined that does not run the target, or the Cluster opted in
// again) waits for a slot like any other. A rollout whose target comes from
// CAPI keeps its slot while it keeps its workload connection after it
// finished: CAPI is still rolling out the Cluster and hands its Machines
// over one after the other (see disruption.Rollout.NeedsWorkload), and the
// Cluster is at work until CAPI is done. Paused Clusters are not admitted,
// nor any Cluster while the admission gate (admissionGate) is closed; the
// canaries are admitted first.
func (r *Reconciler) admit(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, clusters []clusterv1.Cluster, upgrades []*upgradev1.TalosUpgrade, invalid field.ErrorList) error {
	limit := int(plan.DefaultMaxClusters)
	if m := policy.Spec.Rollout.MaxClustersInProgress; m != nil && *m > 0 {
		limit = int(*m)
	}
	paused, connected := map[string]bool{}, map[string]bool{}
	for i := range clusters {
		paused[clusters[i].Name] = annotations.IsPaused(&clusters[i], &clusters[i])
		_, connected[clusters[i].Name] = clusters[i].Annotations[upgradev1.WorkloadConnectionAnnotation]
	}
	// Every rollout of the policy holds or gives back its slot, those of
	// Clusters that left the policy (and may still finish a Machine) too.
	owned := &upgradev1.TalosUpgradeList{}
	if err := r.Client.List(ctx, owned, client.InNamespace(policy.Namespace), client.MatchingFields{index.UpgradePolicyNameField: policy.Name}); err != nil {
		return fmt.Errorf("listing the TalosUpgrades of TalosUpgradePolicy %s: %w", klog.KObj(policy), err)
	}
	var errs []error
	active := 0
	for i := range owned.Items {
		u := &owned.Items[i]
		admitted := u.Annotations[upgradev1.AdmittedAnnotation] != ""
		// CAPI still rolls the Cluster out (see above).
		capiAtWork := u.Spec.CAPIDriven() && connected[u.Spec.ClusterName]
		switch {
		case admitted && u.Finished() && !capiAtWork:
			if err := r.setAdmitted(ctx, u, false); err != nil {
				errs = append(errs, err)
			}
		case admitted:
			active++
		}
	}
	chooseCanaries(policy, clusters, paused)
	gate := admissionGate(policy, upgrades, invalid)
	for _, u := range upgrades {
		if active >= limit {
			break
		}
		if u.Annotations[upgradev1.AdmittedAnnotation] != "" || u.Finished() || paused[u.Spec.ClusterName] || policy.Spec.Paused {
			continue
		}
		if !gate.admits(u.Spec.ClusterName) {
			continue
		}
		if err := r.setAdmitted(ctx, u, true); err != nil {
			errs = append(errs, err)
			continue
		}
		active++
	}
	return kerrors.NewAggregate(errs)
}

// gate is what the policy admits now.
type gate struct {
	// reason and message are those of the Admitting condition.
	reason, message string
	// only, when not nil, are the only Clusters that may be admitted (the
	// canaries); closed admits none.
	only   map[string]bool
	closed bool
}

// admits reports whether the rollout of cluster may be admitted.
func (g gate) admits(cluster string) bool {
	return !g.closed && (g.only == nil || g.only[cluster])
}

// admissionGate decides, from the rollouts of the selected Clusters, what
// the policy admits: nothing while it is not valid (invalid, as
// plan.ValidatePolicy says) or paused, nothing once maxFailedClusters
// rollouts to the current target failed, only the canaries until every one
// of them Completed, and nothing while a canary failed.
func admissionGate(policy *upgradev1.TalosUpgradePolicy, upgrades []*upgradev1.TalosUpgrade, invalid field.ErrorList) gate {
	target := policy.TargetName()
	if len(invalid) > 0 {
		return gate{reason: upgradev1.PolicyInvalidReason, message: "the policy cannot be carried out as written (see its Ready condition): no Cluster is admitted until it is fixed; rollouts at work go on", closed: true}
	}
	if policy.Spec.Paused {
		return gate{reason: upgradev1.PolicyPausedReason, message: "the policy is paused: no Cluster is admitted", closed: true}
	}
	var failed []string
	for _, u := range upgrades {
		if onTarget(policy, u) && u.Finished() && u.Status.Phase == upgradev1.UpgradePhaseFailed {
			failed = append(failed, u.Spec.ClusterName)
		}
	}
	if m := policy.Spec.Rollout.MaxFailedClusters; m != nil && len(failed) >= int(*m) {
		return gate{reason: upgradev1.FailureBudgetExhaustedReason, closed: true, message: fmt.Sprintf(
			"%d Clusters failed their rollout to %s (%s), maxFailedClusters is %d: no new Cluster is admitted; rollouts at work go on. Retry the failed rollouts (delete their TalosUpgrades, or bypass their failed Machines) or raise maxFailedClusters to resume",
			len(failed), target, quoteAll(failed), *m)}
	}
	if len(policy.Status.Canaries) == 0 {
		return gate{reason: upgradev1.AdmittingReason}
	}
	canaries := map[string]bool{}
	var running, failedCanaries []string
	for _, name := range policy.Status.Canaries {
		canaries[name] = true
	}
	for _, u := range upgrades {
		if !canaries[u.Spec.ClusterName] {
			continue
		}
		switch {
		case !onTarget(policy, u) || !u.Finished():
			running = append(running, u.Spec.ClusterName)
		case u.Status.Phase == upgradev1.UpgradePhaseFailed:
			failedCanaries = append(failedCanaries, u.Spec.ClusterName)
		}
	}
	switch {
	case len(failedCanaries) > 0:
		return gate{reason: upgradev1.CanaryFailedReason, closed: true, message: fmt.Sprintf(
			"canary %s failed its rollout to %s: no other Cluster is admitted; retry it (delete its TalosUpgrade, or bypass its failed Machines) or remove it from rollout.canaries",
			quoteAll(failedCanaries), target)}
	case len(running) > 0:
		return gate{reason: upgradev1.WaitingForCanariesReason, only: canaries, message: fmt.Sprintf(
			"waiting for the canaries %s to complete their rollout to %s before any other Cluster is admitted", quoteAll(running), target)}
	}
	return gate{reason: upgradev1.AdmittingReason}
}

// chooseCanaries records in the policy's status the canaries of the current
// target, once per target: the named Clusters that select the policy, and
// the first rollout.canaries.count others (by name) that are not paused.
func chooseCanaries(policy *upgradev1.TalosUpgradePolicy, clusters []clusterv1.Cluster, paused map[string]bool) {
	spec := policy.Spec.Rollout.Canaries
	if spec == nil {
		policy.Status.Canaries, policy.Status.CanaryTarget = nil, ""
		return
	}
	if policy.Status.CanaryTarget == canaryTarget(policy) && len(policy.Status.Canaries) > 0 {
		return
	}
	names := make([]string, 0, len(clusters))
	for i := range clusters {
		names = append(names, clusters[i].Name)
	}
	sort.Strings(names)
	var chosen []string
	for _, n := range names {
		if slices.Contains(spec.ClusterNames, n) {
			chosen = append(chosen, n)
		}
	}
	if spec.Count != nil {
		extra := int(*spec.Count)
		for _, n := range names {
			if extra == 0 {
				break
			}
			if !slices.Contains(chosen, n) && !paused[n] {
				chosen = append(chosen, n)
				extra--
			}
		}
	}
	policy.Status.Canaries, policy.Status.CanaryTarget = chosen, canaryTarget(policy)
}

// canaryTarget is what the canaries are chosen for (status.canaryTarget):
// the Talos target, or "Kubernetes <version>" for a policy that keeps each
// Cluster's Talos.
func canaryTarget(policy *upgradev1.TalosUpgradePolicy) string {
	if policy.KeepsTalos() {
		return policy.TargetName()
	}
	return policy.Target()
}

// setAdmittingCondition records the admission gate on the policy.
func setAdmittingCondition(policy *upgradev1.TalosUpgradePolicy, g gate) {
	c := metav1.Condition{Type: upgradev1.PolicyAdmittingCondition, Status: metav1.ConditionTrue, Reason: g.reason, Message: g.message}
	if g.closed || g.only != nil {
		c.Status = metav1.ConditionFalse
	}
	conditions.Set(policy, c)
}

// setAdmitted admits a rollout, or takes its slot back once it is finished.
func (r *Reconciler) setAdmitted(ctx context.Context, u *upgradev1.TalosUpgrade, admitted bool) error {
	helper, err := patch.NewHelper(u, r.Client)
	if err != nil {
		return err
	}
	if admitted {
		if u.Annotations == nil {
			u.Annotations = map[string]string{}
		}
		u.Annotations[upgradev1.AdmittedAnnotation] = "true"
	} else {
		delete(u.Annotations, upgradev1.AdmittedAnnotation)
	}
	if err := helper.Patch(ctx, u); err != nil {
		return fmt.Errorf("setting the admission of TalosUpgrade %s: %w", klog.KObj(u), err)
	}
	if admitted {
		ctrl.LoggerFrom(ctx).Info("Admitted rollout", "TalosUpgrade", klog.KObj(u))
	} else {
		ctrl.LoggerFrom(ctx).Info("Rollout finished, its slot is free", "TalosUpgrade", klog.KObj(u), "phase", u.Status.Phase)
	}
	return nil
}

// quoteAll quotes names for messages.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
