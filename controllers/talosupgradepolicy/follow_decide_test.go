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
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cluster-api/util/conditions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// These tests cover every decision of the follow step without an
// apiserver: the facts are built by hand, as reconcileFollow would read
// them. follow_test.go proves the wiring end to end.

// testRepo is the installer repository the facts name.
const testRepo = "registry.example/siderolabs/installer"

// followNow is the time of every decision: 10:00 UTC, outside the
// 02:00-05:00 window of the window tests.
var followNow = time.Date(2026, time.December, 1, 10, 0, 0, 0, time.UTC)

// seenAgo is a release whose tag was first seen age before followNow.
func seenAgo(version string, age time.Duration) upgradev1.SeenRelease {
	return upgradev1.SeenRelease{Version: version, FirstSeen: metav1.Time{Time: followNow.Add(-age)}}
}

// The releases of the decision tests, with a minReleaseAge of a day: the
// target itself, one old enough, one that comes of age at 14:00.
var (
	relBase  = seenAgo("v1.12.0", 72*time.Hour)
	relOld   = seenAgo("v1.12.3", 48*time.Hour)
	relYoung = seenAgo("v1.12.5", 20*time.Hour)
)

// youngNote is the end of a message naming relYoung as too young.
const youngNote = "; v1.12.5 is younger than minReleaseAge 24h0m0s, the first comes of age at 2026-12-01T14:00:00Z"

// followOption changes the facts of a test.
type followOption func(*followFacts)

// followIn returns the facts of a policy following the patches of v1.12
// with a minReleaseAge of a day, on target v1.12.0, the next check an hour
// away, and the releases given; options change the rest.
func followIn(t *testing.T, releases []upgradev1.SeenRelease, opts ...followOption) followFacts {
	t.Helper()
	in := followFacts{
		spec:   &upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch, MinReleaseAge: &metav1.Duration{Duration: 24 * time.Hour}},
		status: &upgradev1.FollowStatus{Current: "v1.12.0", Latest: "v1.12.5", Releases: releases},
		repo:   testRepo, from: "v1.12.0", now: followNow, nextCheck: time.Hour,
	}
	for _, o := range opts {
		o(&in)
	}
	return in
}

// firstTarget makes the policy one with no target yet, following from the
// fleet's baseline.
func firstTarget(baseline string) followOption {
	return func(in *followFacts) { in.status.Current, in.from = "", baseline }
}

// latest sets status.follow.latest.
func latest(v string) followOption {
	return func(in *followFacts) { in.status.Latest = v }
}

// nextCheckIn sets how long until the next check.
func nextCheckIn(d time.Duration) followOption {
	return func(in *followFacts) { in.nextCheck = d }
}

// decide runs the decisions of reconcileFollow after the check and the
// baseline: it holds the target when no newer release is old enough, and
// gates the move otherwise, reporting which it did.
func decide(in followFacts, g followGates) (d followDecision, moves bool) {
	c := chooseRelease(in)
	if !c.moves(in.status.Current) {
		return holdTarget(in, c), false
	}
	return gateMove(in, c, g), true
}

// TestCheckInterval reads the interval and the minimum age from the spec,
// with their defaults.
func TestCheckInterval(t *testing.T) {
	g := NewWithT(t)
	g.Expect(checkInterval(&upgradev1.FollowSpec{})).To(Equal(defaultCheckInterval))
	g.Expect(checkInterval(&upgradev1.FollowSpec{CheckInterval: &metav1.Duration{}})).To(Equal(defaultCheckInterval), "zero is unset")
	g.Expect(checkInterval(&upgradev1.FollowSpec{CheckInterval: &metav1.Duration{Duration: 10 * time.Minute}})).To(Equal(10 * time.Minute))
	g.Expect(minReleaseAge(&upgradev1.FollowSpec{})).To(BeZero())
	g.Expect(minReleaseAge(&upgradev1.FollowSpec{MinReleaseAge: &metav1.Duration{Duration: time.Hour}})).To(Equal(time.Hour))
}

// TestCheckDue decides when the repository is listed.
func TestCheckDue(t *testing.T) {
	checked := func(ago time.Duration) *upgradev1.FollowStatus {
		return &upgradev1.FollowStatus{LastCheckTime: &metav1.Time{Time: followNow.Add(-ago)}}
	}
	tests := []struct {
		name      string
		status    *upgradev1.FollowStatus
		wantDue   bool
		wantAfter time.Duration
	}{
		{name: "never listed", status: &upgradev1.FollowStatus{}, wantDue: true, wantAfter: time.Hour},
		{name: "listed 20 minutes ago", status: checked(20 * time.Minute), wantDue: false, wantAfter: 40 * time.Minute},
		{name: "listed an interval ago", status: checked(time.Hour), wantDue: true, wantAfter: time.Hour},
		{name: "listed long ago", status: checked(5 * time.Hour), wantDue: true, wantAfter: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			due, after := checkDue(tt.status, time.Hour, followNow)
			g.Expect(due).To(Equal(tt.wantDue))
			g.Expect(after).To(Equal(tt.wantAfter))
		})
	}
}

// TestFollowFailures covers the decisions made before a release is chosen:
// no repository, a failed listing, no baseline.
func TestFollowFailures(t *testing.T) {
	g := NewWithT(t)
	g.Expect(releasesUnavailable("no repository", time.Hour)).To(Equal(followDecision{
		status: metav1.ConditionFalse, reason: upgradev1.ReleasesUnavailableReason, message: "no repository", requeueAfter: time.Hour,
	}))
	g.Expect(listFailed(testRepo, errors.New("connection refused"), "v1.12.0", 10*time.Minute)).To(Equal(followDecision{
		status: metav1.ConditionFalse, reason: upgradev1.ReleasesUnavailableReason, requeueAfter: 10 * time.Minute,
		message: "listing the releases of " + testRepo + ": connection refused; the target stays v1.12.0",
	}))
	g.Expect(listFailed(testRepo, errors.New("connection refused"), "", time.Hour).message).To(HaveSuffix("the target stays none yet"))

	d := noBaseline(time.Hour)
	g.Expect(d.target).To(BeNil(), "the record stays as it was")
	g.Expect(d.status).To(Equal(metav1.ConditionFalse))
	g.Expect(d.reason).To(Equal(upgradev1.NoFollowBaselineReason))
	g.Expect(d.message).To(Equal("no Machine of the policy's Clusters reports its Talos version yet: the releases are followed from the lowest version the fleet runs"))
	g.Expect(d.requeueAfter).To(Equal(baselineRetry))
	g.Expect(noBaseline(20*time.Second).requeueAfter).To(Equal(20*time.Second), "the next check when it comes first")
}

// TestChooseRelease sorts the recorded releases into the one chosen and
// those too young.
func TestChooseRelease(t *testing.T) {
	tests := []struct {
		name         string
		in           followFacts
		wantChosen   string
		wantTooYoung []string
		wantMatures  time.Time
	}{
		{
			name: "nothing newer",
			in:   followIn(t, []upgradev1.SeenRelease{relBase}),
		},
		{
			name:       "the newest old enough",
			in:         followIn(t, []upgradev1.SeenRelease{relBase, seenAgo("v1.12.1", 96*time.Hour), relOld}),
			wantChosen: "v1.12.3",
		},
		{
			name:         "one old enough, one too young",
			in:           followIn(t, []upgradev1.SeenRelease{relBase, relOld, relYoung}),
			wantChosen:   "v1.12.3",
			wantTooYoung: []string{"v1.12.5"},
			wantMatures:  followNow.Add(4 * time.Hour),
		},
		{
			name:         "the first to come of age is not the oldest version",
			in:           followIn(t, []upgradev1.SeenRelease{seenAgo("v1.12.3", 2*time.Hour), relYoung}),
			wantTooYoung: []string{"v1.12.3", "v1.12.5"},
			wantMatures:  followNow.Add(4 * time.Hour),
		},
		{
			name: "an image created before its tag was seen counts from its creation",
			in: followIn(t, []upgradev1.SeenRelease{{
				Version: "v1.12.3", FirstSeen: metav1.Time{Time: followNow.Add(-time.Hour)}, Created: &metav1.Time{Time: followNow.Add(-48 * time.Hour)},
			}}),
			wantChosen: "v1.12.3",
		},
		{
			name: "a pre-release and the next minor are not allowed by Patch",
			in:   followIn(t, []upgradev1.SeenRelease{relBase, seenAgo("v1.12.4-beta.0", 48*time.Hour), seenAgo("v1.13.0", 48*time.Hour)}),
		},
		{
			name:       "no minReleaseAge takes a release as soon as it is seen",
			in:         followIn(t, []upgradev1.SeenRelease{seenAgo("v1.12.5", 0)}, func(in *followFacts) { in.spec.MinReleaseAge = nil }),
			wantChosen: "v1.12.5",
		},
		{
			name:       "from the fleet's baseline before the first target",
			in:         followIn(t, []upgradev1.SeenRelease{relOld}, firstTarget("v1.12.1")),
			wantChosen: "v1.12.3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := chooseRelease(tt.in)
			g.Expect(c.chosen).To(Equal(tt.wantChosen))
			g.Expect(c.tooYoung).To(Equal(tt.wantTooYoung))
			g.Expect(c.matures).To(BeTemporally("==", tt.wantMatures))
			g.Expect(c.minAge).To(Equal(minReleaseAge(tt.in.spec)))
		})
	}
}

// TestReleaseChoiceMoves tells a hold from a move.
func TestReleaseChoiceMoves(t *testing.T) {
	g := NewWithT(t)
	g.Expect(releaseChoice{}.moves("v1.12.0")).To(BeFalse(), "nothing chosen")
	g.Expect(releaseChoice{chosen: "v1.12.3"}.moves("v1.12.0")).To(BeTrue())
	g.Expect(releaseChoice{chosen: "v1.12.3"}.moves("1.12.3")).To(BeFalse(), "the same version without its v")
	g.Expect(releaseChoice{chosen: "v1.12.3"}.moves("")).To(BeTrue(), "the first target")
}

// TestReleaseChoiceRequeue looks again at the next check or when a release
// comes of age, whichever comes first.
func TestReleaseChoiceRequeue(t *testing.T) {
	g := NewWithT(t)
	g.Expect(releaseChoice{}.requeue(time.Hour, followNow)).To(Equal(time.Hour), "nothing too young: the next check")
	g.Expect(releaseChoice{matures: followNow.Add(4 * time.Hour)}.requeue(time.Hour, followNow)).To(Equal(time.Hour), "the next check comes first")
	g.Expect(releaseChoice{matures: followNow.Add(30 * time.Minute)}.requeue(time.Hour, followNow)).To(Equal(30*time.Minute), "coming of age comes first")
	g.Expect(releaseChoice{matures: followNow.Add(300 * time.Millisecond)}.requeue(time.Hour, followNow)).To(Equal(time.Second), "never in less than a second")
}

// TestHoldTarget covers the decisions where no newer release is old enough.
func TestHoldTarget(t *testing.T) {
	tests := []struct {
		name string
		in   followFacts
		want followDecision
	}{
		{
			name: "nothing newer",
			in:   followIn(t, []upgradev1.SeenRelease{relBase}, latest("v1.12.0")),
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.UpToDateReason, requeueAfter: time.Hour,
				message: "the target is v1.12.0, the newest release allow: Patch permits (latest in " + testRepo + ": v1.12.0)",
				target:  &followTarget{current: "v1.12.0", prune: true},
			},
		},
		{
			name: "only a too-young release: it is next, waited for by age",
			in:   followIn(t, []upgradev1.SeenRelease{relBase, relYoung}),
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.WaitingForReleaseAgeReason, requeueAfter: time.Hour,
				message: "the target is v1.12.0" + youngNote,
				target:  &followTarget{current: "v1.12.0", next: "v1.12.5", tooYoung: []string{"v1.12.5"}, prune: true},
			},
		},
		{
			name: "a too-young release coming of age before the next check",
			in:   followIn(t, []upgradev1.SeenRelease{relYoung}, nextCheckIn(6*time.Hour)),
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.WaitingForReleaseAgeReason, requeueAfter: 4 * time.Hour,
				message: "the target is v1.12.0" + youngNote,
				target:  &followTarget{current: "v1.12.0", next: "v1.12.5", tooYoung: []string{"v1.12.5"}, prune: true},
			},
		},
		{
			name: "several too young: the oldest version is next, the first to come of age is named",
			in:   followIn(t, []upgradev1.SeenRelease{seenAgo("v1.12.3", 2*time.Hour), relYoung}),
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.WaitingForReleaseAgeReason, requeueAfter: time.Hour,
				message: "the target is v1.12.0; v1.12.3, v1.12.5 are younger than minReleaseAge 24h0m0s, the first comes of age at 2026-12-01T14:00:00Z",
				target:  &followTarget{current: "v1.12.0", next: "v1.12.3", tooYoung: []string{"v1.12.3", "v1.12.5"}, prune: true},
			},
		},
		{
			name: "first target, nothing newer: the fleet's version",
			in:   followIn(t, []upgradev1.SeenRelease{relBase}, firstTarget("v1.12.0"), latest("")),
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.UpToDateReason, requeueAfter: time.Hour,
				message: "the target is v1.12.0, the newest release allow: Patch permits (latest in " + testRepo + ": none yet)",
				target:  &followTarget{current: "v1.12.0", prune: true},
			},
		},
		{
			name: "first target, only a too-young release: the fleet's version, the release next",
			in:   followIn(t, []upgradev1.SeenRelease{relBase, relYoung}, firstTarget("v1.12.0")),
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.WaitingForReleaseAgeReason, requeueAfter: time.Hour,
				message: "the target is v1.12.0" + youngNote,
				target:  &followTarget{current: "v1.12.0", next: "v1.12.5", tooYoung: []string{"v1.12.5"}, prune: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// Gates that would block a move: a hold never reads them.
			d, moves := decide(tt.in, followGates{busy: 1, paused: true})
			g.Expect(moves).To(BeFalse())
			g.Expect(d).To(Equal(tt.want))
		})
	}
}

// TestGateMove covers the decisions where a newer release is old enough:
// what holds it back, in order, and the move itself.
func TestGateMove(t *testing.T) {
	closedUntil := func(opens time.Time) windowState {
		return windowState{opens: opens, describe: "02:00-05:00 UTC"}
	}
	tomorrow2am := time.Date(2026, time.December, 2, 2, 0, 0, 0, time.UTC)
	waiting := func(reason, message string, tooYoung ...string) followDecision {
		return followDecision{
			status: metav1.ConditionTrue, reason: reason, message: message, requeueAfter: time.Hour,
			target: &followTarget{current: "v1.12.0", next: "v1.12.3", tooYoung: tooYoung},
		}
	}
	moved := followDecision{
		status: metav1.ConditionTrue, reason: upgradev1.UpToDateReason, requeueAfter: time.Hour,
		message: "the target is v1.12.3 (latest in " + testRepo + ": v1.12.5)",
		target: &followTarget{
			current: "v1.12.3", previous: "v1.12.0", prune: true,
			event: "Following the releases of " + testRepo + " (allow: Patch): the target moves from v1.12.0 to v1.12.3",
		},
	}
	tests := []struct {
		name  string
		in    followFacts
		gates followGates
		want  followDecision
	}{
		{
			name:  "blocked by unfinished rollouts",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld}),
			gates: followGates{busy: 2, window: windowState{open: true}},
			want:  waiting(upgradev1.WaitingForRolloutsReason, "the target is v1.12.0; v1.12.3 is next, once the 2 rollouts of v1.12.0 ended"),
		},
		{
			name:  "unfinished rollouts come before pause and a closed window",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld, relYoung}),
			gates: followGates{busy: 1, paused: true, window: closedUntil(tomorrow2am)},
			want:  waiting(upgradev1.WaitingForRolloutsReason, "the target is v1.12.0; v1.12.3 is next, once the 1 rollouts of v1.12.0 ended"+youngNote, "v1.12.5"),
		},
		{
			name:  "blocked by pause, which comes before a closed window",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld, relYoung}),
			gates: followGates{paused: true, window: closedUntil(tomorrow2am)},
			want:  waiting(upgradev1.PolicyPausedReason, "the target is v1.12.0; v1.12.3 is next, once the policy is unpaused", "v1.12.5"),
		},
		{
			name:  "blocked by a closed window with a known opening time",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld}),
			gates: followGates{window: closedUntil(tomorrow2am)},
			want: waiting(upgradev1.WaitingForMaintenanceWindowReason,
				"the target is v1.12.0; v1.12.3 is next, in the next maintenance window (02:00-05:00 UTC), which opens at 2026-12-02T02:00:00Z"),
		},
		{
			name:  "a closed window opening before the next check",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld, relYoung}),
			gates: followGates{window: closedUntil(followNow.Add(10 * time.Minute))},
			want: func() followDecision {
				d := waiting(upgradev1.WaitingForMaintenanceWindowReason,
					"the target is v1.12.0; v1.12.3 is next, in the next maintenance window (02:00-05:00 UTC), which opens at 2026-12-01T10:10:00Z"+youngNote, "v1.12.5")
				d.requeueAfter = 10 * time.Minute
				return d
			}(),
		},
		{
			name:  "blocked by a closed window with no known opening time",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld, relYoung}),
			gates: followGates{window: windowState{describe: "never: unknown time zone"}},
			want: waiting(upgradev1.WaitingForMaintenanceWindowReason,
				"the target is v1.12.0; v1.12.3 is next, in the next maintenance window (never: unknown time zone)"+youngNote, "v1.12.5"),
		},
		{
			name:  "a closed window the bypass skips: the move",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld}),
			gates: followGates{window: windowState{bypassed: true, opens: tomorrow2am, describe: "02:00-05:00 UTC"}},
			want:  moved,
		},
		{
			name:  "the move",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld}),
			gates: followGates{window: windowState{open: true}},
			want:  moved,
		},
		{
			name:  "the move, the first too-young release next",
			in:    followIn(t, []upgradev1.SeenRelease{relBase, relOld, relYoung}, nextCheckIn(6*time.Hour)),
			gates: followGates{window: windowState{open: true}},
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.UpToDateReason, requeueAfter: 4 * time.Hour,
				message: "the target is v1.12.3 (latest in " + testRepo + ": v1.12.5)" + youngNote,
				target: &followTarget{
					current: "v1.12.3", next: "v1.12.5", tooYoung: []string{"v1.12.5"}, previous: "v1.12.0", prune: true,
					event: "Following the releases of " + testRepo + " (allow: Patch): the target moves from v1.12.0 to v1.12.3",
				},
			},
		},
		{
			name:  "the first target is a newer release: no rollouts to wait for",
			in:    followIn(t, []upgradev1.SeenRelease{relOld}, firstTarget("v1.12.0"), latest("")),
			gates: followGates{busy: 1, window: windowState{open: true}},
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.UpToDateReason, requeueAfter: time.Hour,
				message: "the target is v1.12.3 (latest in " + testRepo + ": none yet)",
				target: &followTarget{
					current: "v1.12.3", prune: true,
					event: "Following the releases of " + testRepo + " (allow: Patch): the target moves from none yet to v1.12.3",
				},
			},
		},
		{
			name:  "the first target waits for pause",
			in:    followIn(t, []upgradev1.SeenRelease{relOld}, firstTarget("v1.12.0")),
			gates: followGates{busy: 1, paused: true},
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.PolicyPausedReason, requeueAfter: time.Hour,
				message: "the target is none yet; v1.12.3 is next, once the policy is unpaused",
				target:  &followTarget{next: "v1.12.3"},
			},
		},
		{
			name:  "the first target waits for a window",
			in:    followIn(t, []upgradev1.SeenRelease{relOld}, firstTarget("v1.12.0")),
			gates: followGates{window: closedUntil(tomorrow2am)},
			want: followDecision{
				status: metav1.ConditionTrue, reason: upgradev1.WaitingForMaintenanceWindowReason, requeueAfter: time.Hour,
				message: "the target is none yet; v1.12.3 is next, in the next maintenance window (02:00-05:00 UTC), which opens at 2026-12-02T02:00:00Z",
				target:  &followTarget{next: "v1.12.3"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d, moves := decide(tt.in, tt.gates)
			g.Expect(moves).To(BeTrue())
			g.Expect(d).To(Equal(tt.want))
		})
	}
}

// TestWindowAt reads the window state the gates see from a policy.
func TestWindowAt(t *testing.T) {
	g := NewWithT(t)
	p := &upgradev1.TalosUpgradePolicy{}
	g.Expect(windowAt(p, followNow)).To(Equal(windowState{open: true, describe: "any time outside the excluded dates"}), "no windows: always open")

	p.Spec.Maintenance = &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "02:00", End: "05:00"}}}
	w := windowAt(p, followNow)
	g.Expect(w.open).To(BeFalse())
	g.Expect(w.bypassed).To(BeFalse())
	g.Expect(w.opens).To(BeTemporally("==", time.Date(2026, time.December, 2, 2, 0, 0, 0, time.UTC)))
	g.Expect(w.describe).To(Equal("02:00-05:00 UTC"))
	g.Expect(windowAt(p, time.Date(2026, time.December, 2, 3, 0, 0, 0, time.UTC)).open).To(BeTrue())

	p.Spec.Bypass = &upgradev1.BypassSpec{MaintenanceWindows: true}
	g.Expect(windowAt(p, followNow).bypassed).To(BeTrue())
}

// TestApplyFollow writes decisions on a policy in memory: the target, the
// pruning, the condition and the event of a move.
func TestApplyFollow(t *testing.T) {
	policy := func() *upgradev1.TalosUpgradePolicy {
		p := &upgradev1.TalosUpgradePolicy{}
		p.Status.Follow = &upgradev1.FollowStatus{Current: "v1.12.0", TooYoung: []string{"v1.12.5"}, Releases: []upgradev1.SeenRelease{seenAgo("v1.11.9", 96*time.Hour), relBase, relOld, relYoung}}
		return p
	}
	versions := func(p *upgradev1.TalosUpgradePolicy) []string {
		var out []string
		for _, rel := range p.Status.Follow.Releases {
			out = append(out, rel.Version)
		}
		return out
	}

	t.Run("a failure leaves the record", func(t *testing.T) {
		g := NewWithT(t)
		p := policy()
		st := (&Reconciler{}).applyFollow(context.Background(), p, noBaseline(time.Hour))
		g.Expect(st.requeueAfter).To(Equal(baselineRetry))
		g.Expect(p.Status.Follow.TooYoung).To(Equal([]string{"v1.12.5"}))
		g.Expect(versions(p)).To(HaveLen(4))
		c := conditions.Get(p, upgradev1.PolicyFollowingReleasesCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(upgradev1.NoFollowBaselineReason))
	})
	t.Run("a wait writes next and does not prune", func(t *testing.T) {
		g := NewWithT(t)
		p := policy()
		d := gateMove(followIn(t, p.Status.Follow.Releases), chooseRelease(followIn(t, p.Status.Follow.Releases)), followGates{paused: true})
		(&Reconciler{}).applyFollow(context.Background(), p, d)
		g.Expect(p.Status.Follow.Current).To(Equal("v1.12.0"))
		g.Expect(p.Status.Follow.Next).To(Equal("v1.12.3"))
		g.Expect(versions(p)).To(HaveLen(4))
		g.Expect(conditions.Get(p, upgradev1.PolicyFollowingReleasesCondition).Reason).To(Equal(upgradev1.PolicyPausedReason))
	})
	t.Run("a move writes the target, prunes and records an event", func(t *testing.T) {
		g := NewWithT(t)
		p := policy()
		in := followIn(t, p.Status.Follow.Releases)
		d := gateMove(in, chooseRelease(in), followGates{window: windowState{open: true}})
		recorder := events.NewFakeRecorder(1)
		st := (&Reconciler{Recorder: recorder}).applyFollow(context.Background(), p, d)
		g.Expect(st.requeueAfter).To(Equal(time.Hour))
		g.Expect(p.Status.Follow.Current).To(Equal("v1.12.3"))
		g.Expect(p.Status.Follow.Next).To(Equal("v1.12.5"))
		g.Expect(p.Status.Follow.TooYoung).To(Equal([]string{"v1.12.5"}))
		g.Expect(versions(p)).To(Equal([]string{"v1.12.3", "v1.12.5"}), "the releases older than the target are forgotten")
		g.Expect(recorder.Events).To(Receive(Equal("Normal TargetChanged Following the releases of " + testRepo + " (allow: Patch): the target moves from v1.12.0 to v1.12.3")))
		c := conditions.Get(p, upgradev1.PolicyFollowingReleasesCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(upgradev1.UpToDateReason))
	})
}
