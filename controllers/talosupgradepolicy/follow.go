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
//
// reconcileFollow reads the world (the repository, the fleet's baseline,
// the unfinished rollouts) and applies a decision; the decisions are pure
// functions of what it read (checkDue, chooseRelease, holdTarget, gateMove
// and the failures before them), with no client and no clock of their own,
// so that each branch has a table test without an apiserver.

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

// followFacts is what reconcileFollow read before deciding: the rules, the
// record, and where and when the policy stands.
type followFacts struct {
	// spec is the policy's spec.follow: the rules.
	spec *upgradev1.FollowSpec
	// status is the policy's status.follow as the check left it: the
	// target, the latest release and when each release was first seen. The
	// decisions read it and never write it; applyFollow does.
	status *upgradev1.FollowStatus
	// repo is the installer repository the releases are listed from, named
	// in the messages.
	repo string
	// from is the version followed from: the target, or before the first
	// one the lowest version the fleet runs.
	from string
	// now is the time of the reconcile: the decisions read no clock.
	now time.Time
	// nextCheck is how long until the repository is listed again.
	nextCheck time.Duration
}

// releaseChoice is which of the releases the rules allow from a version
// are old enough to become the target.
type releaseChoice struct {
	// chosen is the newest allowed release that is old enough; "" when none
	// is.
	chosen string
	// tooYoung are the allowed releases younger than minAge, oldest first;
	// nil when there are none, as status.follow.tooYoung records them.
	tooYoung []string
	// matures is when the first of tooYoung comes of age; zero when
	// tooYoung is empty.
	matures time.Time
	// minAge is spec.follow.minReleaseAge, named in the messages.
	minAge time.Duration
}

// followGates is what stands between a policy and a new target, read only
// once a newer release is old enough.
type followGates struct {
	// busy is the number of rollouts of the current target that have not
	// ended; unknown counts as one, and it is not read (zero) before the
	// first target, which has no rollouts to wait for.
	busy int
	// paused is spec.paused.
	paused bool
	// window is the state of the policy's maintenance windows at now.
	window windowState
}

// windowState is the state of a policy's maintenance windows at one
// instant.
type windowState struct {
	// open reports whether a window is open (or none is set).
	open bool
	// opens is when the next window opens while none is; zero when that is
	// not known within the horizon maintenance.Open searches.
	opens time.Time
	// bypassed reports whether the policy's bypass runs outside the
	// windows, so that a closed one does not hold the target.
	bypassed bool
	// describe says when the windows are, for the message.
	describe string
}

// followDecision is what the follow step intends; applyFollow writes it.
type followDecision struct {
	// status, reason and message are the FollowingReleases condition.
	status  metav1.ConditionStatus
	reason  string
	message string
	// requeueAfter is when the policy must be looked at again.
	requeueAfter time.Duration
	// target is what status.follow's target becomes; nil when the step
	// stopped before choosing, which leaves the record as it was.
	target *followTarget
}

// followTarget is the part of status.follow a decision writes, and what
// the move it may be is reported with.
type followTarget struct {
	// current, next and tooYoung are status.follow's fields of those names.
	current  string
	next     string
	tooYoung []string
	// previous is the target before a move, for the log line; "" before
	// the first target.
	previous string
	// event is the message of the TargetChanged event a move records; ""
	// when the target does not move (taking the fleet's version as the
	// first target is no move).
	event string
	// prune reports whether the releases older than current are forgotten
	// once it is written: when the target is held or moved, not while a
	// move waits.
	prune bool
}

// reconcileFollow lists the installer repository when a check is due,
// records the releases it saw, and moves status.follow.current to the newest
// release the rules allow once it is old enough, every rollout of the
// current target ended and a maintenance window is open. A repository that
// cannot be listed is a condition; the target stays. It reads the world in
// that order and leaves every decision to the pure functions below.
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
	interval := checkInterval(f)

	// Check the repository when due.
	repo, err := talos.ReleaseRepository(policy.Spec.Installer)
	if err != nil {
		return r.applyFollow(ctx, policy, releasesUnavailable(err.Error(), interval))
	}
	due, nextCheck := checkDue(st, interval, now)
	if due {
		if err := r.checkReleases(ctx, policy, repo, now); err != nil {
			return r.applyFollow(ctx, policy, listFailed(repo, err, st.Current, interval))
		}
	}

	// The version to follow from: the current target, or the lowest
	// version the fleet runs.
	from := st.Current
	if from == "" {
		from = r.fleetBaseline(ctx, policy, clusters)
		if from == "" {
			return r.applyFollow(ctx, policy, noBaseline(nextCheck))
		}
	}

	// The releases the rules allow, which of them are old enough, and
	// whether anything stands in the way of the newest.
	in := followFacts{spec: f, status: st, repo: repo, from: from, now: now, nextCheck: nextCheck}
	choice := chooseRelease(in)
	if !choice.moves(st.Current) {
		return r.applyFollow(ctx, policy, holdTarget(in, choice))
	}
	return r.applyFollow(ctx, policy, gateMove(in, choice, r.readGates(ctx, policy, now)))
}

// readGates reads what stands between a policy and a new target: the
// rollouts of its current target are counted only when it has one (the
// first target waits for none), then its pause and its windows at now.
func (r *Reconciler) readGates(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, now time.Time) followGates {
	g := followGates{paused: policy.Spec.Paused, window: windowAt(policy, now)}
	if policy.Status.Follow.Current != "" {
		g.busy = r.unfinishedRollouts(ctx, policy)
	}
	return g
}

// applyFollow writes a decision on the policy: status.follow's target, a
// log line and an event for a move, and the FollowingReleases condition. It
// is the only place the follow step changes the target.
func (r *Reconciler) applyFollow(ctx context.Context, policy *upgradev1.TalosUpgradePolicy, d followDecision) followState {
	if t := d.target; t != nil {
		st := policy.Status.Follow
		st.Current, st.Next, st.TooYoung = t.current, t.next, t.tooYoung
		if t.event != "" {
			ctrl.LoggerFrom(ctx).Info("Following releases: new target", "from", t.previous, "to", t.current)
			if r.Recorder != nil {
				r.Recorder.Eventf(policy, nil, corev1.EventTypeNormal, "TargetChanged", "Follow", "%s", t.event)
			}
		}
		if t.prune {
			prune(st)
		}
	}
	r.setFollowing(policy, d.status, d.reason, d.message)
	return followState{requeueAfter: d.requeueAfter}
}

// checkInterval is how often the repository is listed: spec.follow's
// checkInterval, or defaultCheckInterval when it is unset or not positive.
func checkInterval(f *upgradev1.FollowSpec) time.Duration {
	if f.CheckInterval != nil && f.CheckInterval.Duration > 0 {
		return f.CheckInterval.Duration
	}
	return defaultCheckInterval
}

// minReleaseAge is how old a release must be to become the target: zero
// when spec.follow's minReleaseAge is unset.
func minReleaseAge(f *upgradev1.FollowSpec) time.Duration {
	if f.MinReleaseAge != nil {
		return f.MinReleaseAge.Duration
	}
	return 0
}

// checkDue reports whether the repository is listed now, never listed or
// last listed an interval ago or more, and how long until the next check:
// a whole interval when it is listed now, the rest of it otherwise.
func checkDue(st *upgradev1.FollowStatus, interval time.Duration, now time.Time) (due bool, nextCheck time.Duration) {
	if st.LastCheckTime == nil || now.Sub(st.LastCheckTime.Time) >= interval {
		return true, interval
	}
	return false, interval - now.Sub(st.LastCheckTime.Time)
}

// releasesUnavailable decides for a policy whose releases cannot be known:
// the condition says why, the target stays, and the policy is looked at
// again at the next check, not in a hot loop.
func releasesUnavailable(message string, interval time.Duration) followDecision {
	return followDecision{status: metav1.ConditionFalse, reason: upgradev1.ReleasesUnavailableReason, message: message, requeueAfter: interval}
}

// listFailed decides for a policy whose repository could not be listed: it
// names the repository, the error and the target that stays.
func listFailed(repo string, err error, current string, interval time.Duration) followDecision {
	return releasesUnavailable(fmt.Sprintf("listing the releases of %s: %v; the target stays %s", repo, err, orNone(current)), interval)
}

// noBaseline decides for a policy with no target whose fleet reports no
// Talos version yet: nothing to follow from, so it looks again soon (a
// Machine reports its version within a minute of booting), or at the next
// check when that comes first.
func noBaseline(nextCheck time.Duration) followDecision {
	return followDecision{
		status: metav1.ConditionFalse, reason: upgradev1.NoFollowBaselineReason,
		message:      "no Machine of the policy's Clusters reports its Talos version yet: the releases are followed from the lowest version the fleet runs",
		requeueAfter: min(baselineRetry, nextCheck),
	}
}

// chooseRelease sorts the recorded releases the rules allow from in.from
// into the newest one old enough and the ones too young, the latter with
// when the first of them comes of age. A release's age counts from
// releaseTime, so that a restart does not reset it.
func chooseRelease(in followFacts) releaseChoice {
	c := releaseChoice{minAge: minReleaseAge(in.spec)}
	seen := make(map[string]upgradev1.SeenRelease, len(in.status.Releases))
	versions := make([]string, 0, len(in.status.Releases))
	for _, rel := range in.status.Releases {
		seen[rel.Version] = rel
		versions = append(versions, rel.Version)
	}
	for _, v := range talos.FollowCandidates(in.spec.Allow, in.from, talos.StableReleases(versions)) {
		born := releaseTime(seen[v])
		if in.now.Sub(born) >= c.minAge {
			c.chosen = v
			continue
		}
		c.tooYoung = append(c.tooYoung, v)
		if at := born.Add(c.minAge); c.matures.IsZero() || at.Before(c.matures) {
			c.matures = at
		}
	}
	return c
}

// moves reports whether the choice would move the target away from
// current: a release is old enough and it is not current itself.
func (c releaseChoice) moves(current string) bool {
	return c.chosen != "" && !talos.SameVersion(c.chosen, current)
}

// requeue is when to look again: at the next check, or sooner when a
// too-young release comes of age first (never in less than a second).
func (c releaseChoice) requeue(nextCheck time.Duration, now time.Time) time.Duration {
	if c.matures.IsZero() {
		return nextCheck
	}
	return min(nextCheck, max(c.matures.Sub(now), time.Second))
}

// youngNote ends a message with the releases too young to be chosen and
// when the first comes of age; "" when there are none.
func (c releaseChoice) youngNote() string {
	if len(c.tooYoung) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s younger than minReleaseAge %s, the first comes of age at %s",
		joinVersions(c.tooYoung), c.minAge, c.matures.UTC().Format(time.RFC3339))
}

// holdTarget decides for a policy whose target stays, no newer release
// being old enough: before the first target the fleet's version becomes it;
// the next one is the first too-young release, waited for by age.
func holdTarget(in followFacts, c releaseChoice) followDecision {
	t := &followTarget{current: in.status.Current, tooYoung: c.tooYoung, prune: true}
	if t.current == "" && c.chosen == "" {
		// Nothing newer: the fleet follows from where it is.
		t.current = in.from
	}
	d := followDecision{status: metav1.ConditionTrue, requeueAfter: c.requeue(in.nextCheck, in.now), target: t}
	if len(c.tooYoung) > 0 {
		t.next = c.tooYoung[0]
		d.reason, d.message = upgradev1.WaitingForReleaseAgeReason, fmt.Sprintf("the target is %s%s", t.current, c.youngNote())
		return d
	}
	d.reason = upgradev1.UpToDateReason
	d.message = fmt.Sprintf("the target is %s, the newest release allow: %s permits (latest in %s: %s)",
		t.current, in.spec.Allow, in.repo, orNone(in.status.Latest))
	return d
}

// gateMove decides for a policy a newer release is old enough for: it
// becomes the target unless, in this order, rollouts of the current target
// have not ended, the policy is paused, or no maintenance window is open
// and the bypass does not skip them. While it waits it is status.follow.next.
func gateMove(in followFacts, c releaseChoice, g followGates) followDecision {
	current := in.status.Current
	waiting := followDecision{
		status: metav1.ConditionTrue, requeueAfter: c.requeue(in.nextCheck, in.now),
		target: &followTarget{current: current, next: c.chosen, tooYoung: c.tooYoung},
	}
	switch {
	case current != "" && g.busy > 0:
		waiting.reason = upgradev1.WaitingForRolloutsReason
		waiting.message = fmt.Sprintf("the target is %s; %s is next, once the %d rollouts of %s ended%s", current, c.chosen, g.busy, current, c.youngNote())
		return waiting
	case g.paused:
		waiting.reason = upgradev1.PolicyPausedReason
		waiting.message = fmt.Sprintf("the target is %s; %s is next, once the policy is unpaused", orNone(current), c.chosen)
		return waiting
	case !g.window.open && !g.window.bypassed:
		return waitForWindow(waiting, in, c, g.window)
	}
	return moveTarget(in, c)
}

// waitForWindow completes the decision of a move held by a closed
// maintenance window: the message names the windows and, when known, when
// the next one opens, which is also when to look again if it comes first.
func waitForWindow(d followDecision, in followFacts, c releaseChoice, w windowState) followDecision {
	d.reason = upgradev1.WaitingForMaintenanceWindowReason
	msg := fmt.Sprintf("the target is %s; %s is next, in the next maintenance window (%s)", orNone(in.status.Current), c.chosen, w.describe)
	if !w.opens.IsZero() {
		msg += ", which opens at " + w.opens.UTC().Format(time.RFC3339)
		d.requeueAfter = min(d.requeueAfter, max(w.opens.Sub(in.now), time.Second))
	}
	d.message = msg + c.youngNote()
	return d
}

// moveTarget decides the move itself: the chosen release becomes the
// target, the first too-young one (if any) is next, and the move is logged
// and recorded as an event.
func moveTarget(in followFacts, c releaseChoice) followDecision {
	t := &followTarget{
		current: c.chosen, tooYoung: c.tooYoung, previous: in.status.Current, prune: true,
		event: fmt.Sprintf("Following the releases of %s (allow: %s): the target moves from %s to %s",
			in.repo, in.spec.Allow, orNone(in.status.Current), c.chosen),
	}
	if len(c.tooYoung) > 0 {
		t.next = c.tooYoung[0]
	}
	return followDecision{
		status: metav1.ConditionTrue, reason: upgradev1.UpToDateReason,
		message:      fmt.Sprintf("the target is %s (latest in %s: %s)%s", c.chosen, in.repo, orNone(in.status.Latest), c.youngNote()),
		requeueAfter: c.requeue(in.nextCheck, in.now),
		target:       t,
	}
}

// windowAt is the state of the policy's maintenance windows at now.
func windowAt(policy *upgradev1.TalosUpgradePolicy, now time.Time) windowState {
	open, opens := maintenance.Open(policy.Spec.Maintenance, now)
	return windowState{open: open, opens: opens, bypassed: bypassesWindows(policy), describe: maintenance.Describe(policy.Spec.Maintenance)}
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
		if known[v] || (st.Current != "" && !talos.Newer(v, st.Current)) || len(st.Releases) >= maxSeenReleases {
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
		return st.Current != "" && talos.Newer(st.Current, rel.Version)
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
			if lowest == "" || talos.Newer(lowest, v) {
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
