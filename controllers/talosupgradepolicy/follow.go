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
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/maintenance"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file chooses the target of a policy that follows the releases of its
// installer repository (spec.follow). The target is status.follow.current;
// everything the choice depends on is in status.follow, so that a restart
// (or another replica taking the lease) continues where it was: the time a
// release was first seen is recorded there, never re-derived.

const (
	// defaultCheckInterval is how often a repository is listed when
	// checkInterval is unset.
	defaultCheckInterval = time.Hour

	// baselineRetry is how soon a policy with no baseline looks again.
	baselineRetry = time.Minute
)

// followState is what one reconcile learned about a following policy.
type followState struct {
	// requeueAfter is when the policy must be looked at again: the next
	// check, a release coming of age or a window opening.
	requeueAfter time.Duration
}

// reconcileFollow lists the installer repository when a check is due,
// records the releases it saw, and moves status.follow.current to the newest
// release the rules allow once it is old enough, every rollout of the
// current target ended and a maintenance window is open. A repository that
// cannot be listed is a condition; the target stays.
func (r *Reconciler) reconcileFollow(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, clusters []clusterv1.Cluster) followState {
	f := policy.Spec.Follow
	if f == nil {
		policy.Status.Follow = nil
		conditions.Delete(policy, upgradev1.PolicyFollowingReleasesCondition)
		return followState{}
	}
	if policy.Status.Follow == nil {
		policy.Status.Follow = &upgradev1.FollowStatus{}
	}
	st := policy.Status.Follow
	now := r.now()
	interval := defaultCheckInterval
	if f.CheckInterval != nil && f.CheckInterval.Duration > 0 {
		interval = f.CheckInterval.Duration
	}
	var minAge time.Duration
	if f.MinReleaseAge != nil {
		minAge = f.MinReleaseAge.Duration
	}

	// Check the repository when due.
	repo, err := talos.ReleaseRepository(policy.Spec.Installer)
	if err != nil {
		r.setFollowing(policy, metav1.ConditionFalse, upgradev1.ReleasesUnavailableReason, err.Error())
		return followState{requeueAfter: interval}
	}
	nextCheck := interval
	if st.LastCheckTime == nil || now.Sub(st.LastCheckTime.Time) >= interval {
		if err := r.checkReleases(ctx, policy, repo, now); err != nil {
			r.setFollowing(policy, metav1.ConditionFalse, upgradev1.ReleasesUnavailableReason,
				fmt.Sprintf("listing the releases of %s: %v; the target stays %s", repo, err, orNone(st.Current)))
			return followState{requeueAfter: interval}
		}
	} else {
		nextCheck = interval - now.Sub(st.LastCheckTime.Time)
	}

	// The version to follow from: the current target, or the lowest
	// version the fleet runs.
	from := st.Current
	if from == "" {
		from = r.fleetBaseline(ctx, policy, clusters)
		if from == "" {
			r.setFollowing(policy, metav1.ConditionFalse, upgradev1.NoFollowBaselineReason,
				"no Machine of the policy's Clusters reports its Talos version yet: the releases are followed from the lowest version the fleet runs")
			return followState{requeueAfter: min(baselineRetry, nextCheck)}
		}
	}

	// The releases the rules allow, and which of them are old enough.
	seen := map[string]upgradev1.SeenRelease{}
	versions := make([]string, 0, len(st.Releases))
	for _, rel := range st.Releases {
		seen[rel.Version] = rel
		versions = append(versions, rel.Version)
	}
	versions = talos.StableReleases(versions)
	candidates := talos.FollowCandidates(f.Allow, from, versions)
	chosen := ""
	st.TooYoung = nil
	var matures time.Time
	for _, v := range candidates {
		born := releaseTime(seen[v])
		if now.Sub(born) >= minAge {
			chosen = v
			continue
		}
		st.TooYoung = append(st.TooYoung, v)
		if at := born.Add(minAge); matures.IsZero() || at.Before(matures) {
			matures = at
		}
	}
	youngNote := ""
	if len(st.TooYoung) > 0 {
		youngNote = fmt.Sprintf("; %s younger than minReleaseAge %s, the first comes of age at %s",
			joinVersions(st.TooYoung), minAge, matures.UTC().Format(time.RFC3339))
	}
	requeue := nextCheck
	if !matures.IsZero() {
		requeue = min(requeue, max(matures.Sub(now), time.Second))
	}

	if st.Current == "" && chosen == "" {
		// Nothing newer: the fleet follows from where it is.
		st.Current = from
	}
	st.Next = ""
	if chosen == "" || talos.SameVersion(chosen, st.Current) {
		if len(st.TooYoung) > 0 {
			st.Next = st.TooYoung[0]
			r.setFollowing(policy, metav1.ConditionTrue, upgradev1.WaitingForReleaseAgeReason,
				fmt.Sprintf("the target is %s%s", st.Current, youngNote))
		} else {
			r.setFollowing(policy, metav1.ConditionTrue, upgradev1.UpToDateReason,
				fmt.Sprintf("the target is %s, the newest release allow: %s permits (latest in %s: %s)", st.Current, f.Allow, repo, orNone(st.Latest)))
		}
		prune(st)
		return followState{requeueAfter: requeue}
	}

	// A newer release is old enough: it becomes the target when nothing
	// stands in the way.
	st.Next = chosen
	if st.Current != "" {
		if busy := r.unfinishedRollouts(ctx, policy); busy > 0 {
			r.setFollowing(policy, metav1.ConditionTrue, upgradev1.WaitingForRolloutsReason,
				fmt.Sprintf("the target is %s; %s is next, once the %d rollouts of %s ended%s", st.Current, chosen, busy, st.Current, youngNote))
			return followState{requeueAfter: requeue}
		}
	}
	if policy.Spec.Paused {
		r.setFollowing(policy, metav1.ConditionTrue, upgradev1.PolicyPausedReason,
			fmt.Sprintf("the target is %s; %s is next, once the policy is unpaused", orNone(st.Current), chosen))
		return followState{requeueAfter: requeue}
	}
	if open, at := maintenance.Open(policy.Spec.Maintenance, now); !open && !bypassesWindows(policy) {
		msg := fmt.Sprintf("the target is %s; %s is next, in the next maintenance window (%s)", orNone(st.Current), chosen, maintenance.Describe(policy.Spec.Maintenance))
		if !at.IsZero() {
			msg += ", which opens at " + at.UTC().Format(time.RFC3339)
			requeue = min(requeue, max(at.Sub(now), time.Second))
		}
		r.setFollowing(policy, metav1.ConditionTrue, upgradev1.WaitingForMaintenanceWindowReason, msg+youngNote)
		return followState{requeueAfter: requeue}
	}
	previous := st.Current
	st.Current, st.Next = chosen, ""
	if len(st.TooYoung) > 0 {
		st.Next = st.TooYoung[0]
	}
	ctrl.LoggerFrom(ctx).Info("Following releases: new target", "from", previous, "to", chosen)
	if r.Recorder != nil {
		r.Recorder.Eventf(policy, nil, corev1.EventTypeNormal, "TargetChanged", "Follow",
			"Following the releases of %s (allow: %s): the target moves from %s to %s", repo, f.Allow, orNone(previous), chosen)
	}
	r.setFollowing(policy, metav1.ConditionTrue, upgradev1.UpToDateReason,
		fmt.Sprintf("the target is %s (latest in %s: %s)%s", chosen, repo, orNone(st.Latest), youngNote))
	prune(st)
	return followState{requeueAfter: requeue}
}

// checkReleases lists the repository and records the stable releases newer
// than the current target that it saw for the first time, with the creation
// time of their image when the registry gives one.
func (r *Reconciler) checkReleases(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, repo string, now time.Time) error {
	st := policy.Status.Follow
	keychain, err := r.keychain(ctx, policy)
	if err != nil {
		return err
	}
	releases, err := r.Releases.List(ctx, repo, keychain)
	if err != nil {
		return err
	}
	st.LastCheckTime = &metav1.Time{Time: now}
	if len(releases) > 0 {
		st.Latest = releases[len(releases)-1]
	}
	known := map[string]bool{}
	for _, rel := range st.Releases {
		known[rel.Version] = true
	}
	for _, v := range releases {
		if known[v] || (st.Current != "" && !newer(v, st.Current)) || len(st.Releases) >= maxSeenReleases {
			continue
		}
		rel := upgradev1.SeenRelease{Version: v, FirstSeen: metav1.Time{Time: now}}
		if created, err := talos.ReleaseCreated(ctx, repo, v, keychain, now); err == nil && !created.IsZero() {
			rel.Created = &metav1.Time{Time: created}
		}
		st.Releases = append(st.Releases, rel)
	}
	return nil
}

// maxSeenReleases bounds status.follow.releases (its CRD limit).
const maxSeenReleases = 256

// prune forgets the releases older than the current target: they can never
// be chosen again.
func prune(st *upgradev1.FollowStatus) {
	st.Releases = slices.DeleteFunc(st.Releases, func(rel upgradev1.SeenRelease) bool {
		return st.Current != "" && newer(st.Current, rel.Version)
	})
}

// releaseTime is when a release counts as published: its image's creation
// time, or when Tollgate first saw its tag.
func releaseTime(rel upgradev1.SeenRelease) time.Time {
	if rel.Created != nil && rel.Created.Before(&rel.FirstSeen) {
		return rel.Created.Time
	}
	return rel.FirstSeen.Time
}

// fleetBaseline returns the lowest Talos version the Machines of the
// policy's Clusters report, or "" when none reports one.
func (r *Reconciler) fleetBaseline(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, clusters []clusterv1.Cluster) string {
	lowest := ""
	for i := range clusters {
		machines := &clusterv1.MachineList{}
		if err := r.Client.List(ctx, machines, client.InNamespace(policy.Namespace), client.MatchingFields{index.MachineClusterNameField: clusters[i].Name}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the Machines of a Cluster for the release baseline", "Cluster", clusters[i].Name)
			return ""
		}
		for _, v := range plan.MachineVersions(machines.Items) {
			if lowest == "" || newer(lowest, v) {
				lowest = v
			}
		}
	}
	if lowest == "" {
		return ""
	}
	canonical, err := talos.CanonicalVersion(lowest)
	if err != nil {
		return ""
	}
	return canonical
}

// unfinishedRollouts counts the policy's rollouts that have not ended.
func (r *Reconciler) unfinishedRollouts(ctx context.Context, policy *upgradev1.TalosUpgradePolicy) int {
	list := &upgradev1.TalosUpgradeList{}
	if err := r.Client.List(ctx, list, client.InNamespace(policy.Namespace), client.MatchingFields{index.UpgradePolicyNameField: policy.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the rollouts of the policy")
		return 1 // Unknown is busy: the target does not move on a guess.
	}
	n := 0
	for i := range list.Items {
		if !list.Items[i].Finished() {
			n++
		}
	}
	return n
}

// keychain returns the credentials of the installer's pull Secret, read
// live, or nil for anonymous access.
func (r *Reconciler) keychain(ctx context.Context, policy *upgradev1.TalosUpgradePolicy) (authn.Keychain, error) {
	ref := policy.Spec.Installer.PullSecretRef
	if ref == nil || ref.Name == "" || r.APIReader == nil {
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: policy.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("reading the installer pull Secret %q: %w", ref.Name, err)
	}
	return talos.KeychainFromSecret(secret)
}

// setFollowing sets the FollowingReleases condition.
func (r *Reconciler) setFollowing(policy *upgradev1.TalosUpgradePolicy, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(policy, metav1.Condition{Type: upgradev1.PolicyFollowingReleasesCondition, Status: status, Reason: reason, Message: message})
}

// bypassesWindows reports whether the policy's bypass runs outside the
// maintenance windows.
func bypassesWindows(policy *upgradev1.TalosUpgradePolicy) bool {
	return policy.Spec.Bypass != nil && policy.Spec.Bypass.MaintenanceWindows
}

// newer reports whether a is a later version than b.
func newer(a, b string) bool {
	c, err := talos.CompareVersions(a, b)
	return err == nil && c > 0
}

func orNone(v string) string {
	if v == "" {
		return "none yet"
	}
	return v
}

func joinVersions(vs []string) string {
	if len(vs) == 1 {
		return vs[0] + " is"
	}
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out + " are"
}
