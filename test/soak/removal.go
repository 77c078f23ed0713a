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

package soak

import (
	"slices"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// Invariant 14: removals pass the gate. Tollgate keeps its CAPI pre-drain
// deletion hook (hooks.DeletionHookAnnotation) on every Machine of an
// opted-in Cluster, and removes it from a Machine CAPI deletes (a
// scale-down, a MachineDeployment rollout, a MachineHealthCheck
// remediation) only once the Machine passed the gate: the policy's
// preRemoval hook (removalHookName) ran once and succeeded, the health
// checks passed (not for a remediation) and the budget had room (judged by
// invariant 1, which counts a released removal until its Machine is gone).
// The observer sees each release, in the first sample that shows the
// Machine deleting without the hook, or gone:
//
//   - a Machine released before a run of its preRemoval hook was seen to
//     succeed (the Job driver's record of when the Job ended), or whose
//     hook ran more than once by the end of the round, is a violation;
//   - a Machine CAPI deletes on which the observer never saw the hook
//     since its Cluster last opted in, although it was in the opted-in
//     Cluster for hookGrace (and the time the controllers could not act)
//     before its deletion, is a violation.
//
// A hook seen before the Cluster left its policy does not count: Tollgate
// takes its hooks off when the Cluster leaves, and puts them back only
// after it re-joins. Seed 20261207 (make soak at 66c4bc6): soak-r1-c7 left
// at 04:21:33 (its hooks taken off), re-joined at 04:21:38.9, and the
// management apiserver was cut at 04:21:39.2 for 4.6s; the leader lost its
// lease in the cut, every replica was killed at 04:21:46, and the next
// leader took the lease at 04:21:54. CAPI deleted two workers at 04:21:44
// and 04:21:53, unhooked: judged as hooked (the hook seen at 04:21:28),
// they were released before their preRemoval hook ran, with no allowance.
//
// A Machine deleted while its Cluster was out of its policy, or that left
// it before its release, is not judged: Tollgate keeps no hook there; nor
// is a Machine without a Node, which CAPI deletes without waiting for its
// pre-drain hooks (there is nothing to drain).

// hookGrace is how long a Machine of an opted-in Cluster may be without
// Tollgate's deletion hook (a Machine CAPI just made, a Cluster that just
// opted in or re-joined), beyond the time the controllers could not act.
// It is the time of a first reconcile on a loaded machine, not a promise
// of speed: seed 20261207 (make soak --control-planes=3 at 910516d, load
// average 15 on 2 cores, beside a CI run) had a MachineHealthCheck delete
// a worker 11s after its Cluster was created and opted in, before the
// manager's first reconcile of the Cluster put its hooks on; 10s was too
// short there. The window is the order-free one the book describes: a
// Machine deleted before Tollgate first sees its Cluster is not held.
const hookGrace = 60 * time.Second

// removalTrack is what the observer saw of one Machine's deletion hook and
// removal.
type removalTrack struct {
	// firstSeen is when the observer first saw the Machine.
	firstSeen time.Time
	// hookSeen is the last sample that showed Tollgate's deletion hook on
	// it; zero when none did.
	hookSeen time.Time
	// deleting is the Machine's deletionTimestamp, once seen.
	deleting time.Time
	// released is the sample in which the Machine was first seen deleting
	// without the hook (or gone); zero before. held is the last sample
	// before it, in which the Machine was not released.
	released, held time.Time
	// node is the Machine's node, once it has one.
	node string
	// remediated says whether the Machine was seen marked by its
	// MachineHealthCheck (its removal does not wait for the health checks).
	remediated bool
	// judged says invariant 14 judged its release, hooked that it judged
	// it as a Machine the hook held (seen since its Cluster last opted
	// in); exempt why it was not judged (its Cluster out of its policy).
	judged, hooked bool
	exempt         string
}

// trackRemoval returns the removal track of a Machine, made at now when
// new. The caller holds c.mu.
func (c *soakCluster) trackRemoval(machine string, now time.Time) *removalTrack {
	if c.removals == nil {
		c.removals = map[string]*removalTrack{}
	}
	tr := c.removals[machine]
	if tr == nil {
		tr = &removalTrack{firstSeen: now}
		c.removals[machine] = tr
	}
	return tr
}

// detachedDuring reports whether the Cluster was out of its policy at any
// instant of [from, to].
func (c *soakCluster) detachedDuring(from, to time.Time) bool {
	for _, iv := range c.detached {
		if !iv.from.After(to) && (iv.to.IsZero() || !iv.to.Before(from)) {
			return true
		}
	}
	return false
}

// lastAttached returns when the Cluster last opted in to its policy.
func (c *soakCluster) lastAttached() time.Time {
	at := c.optedIn
	for _, iv := range c.detached {
		if !iv.to.IsZero() && iv.to.After(at) {
			at = iv.to
		}
	}
	return at
}

// released reports whether a Machine is deleting and Tollgate's deletion
// hook no longer holds it: CAPI drains and deletes it.
func released(m *clusterv1.Machine) bool {
	return !m.DeletionTimestamp.IsZero() && !hooks.HasDeletionHook(m)
}

// checkRemovals tracks the deletion hook of the Cluster's Machines, as
// listed at t, and checks invariant 14 on each release seen.
func (o *observer) checkRemovals(c *soakCluster, machines *clusterv1.MachineList, t time.Time) {
	present := map[string]bool{}
	for i := range machines.Items {
		m := &machines.Items[i]
		present[m.Name] = true
		c.mu.Lock()
		tr := c.trackRemoval(m.Name, t)
		if hooks.HasDeletionHook(m) {
			tr.hookSeen = t
		}
		if !m.DeletionTimestamp.IsZero() && tr.deleting.IsZero() {
			tr.deleting = m.DeletionTimestamp.Time
		}
		if m.Status.NodeRef.Name != "" {
			tr.node = m.Status.NodeRef.Name
		}
		if conditions.IsFalse(m, clusterv1.MachineHealthCheckSucceededCondition) || conditions.Has(m, clusterv1.MachineOwnerRemediatedCondition) {
			tr.remediated = true
		}
		judge := released(m) && tr.released.IsZero()
		switch {
		case judge:
			tr.released = t
		case !released(m):
			tr.held = t
		}
		c.mu.Unlock()
		if judge {
			o.judgeRelease(c, m.Name, t)
		}
	}
	// A Machine released and gone between two samples.
	c.mu.Lock()
	var gone []string
	for name, tr := range c.removals {
		if !present[name] && tr.released.IsZero() {
			tr.released = t
			gone = append(gone, name)
		}
	}
	c.mu.Unlock()
	slices.Sort(gone)
	for _, name := range gone {
		o.judgeRelease(c, name, t)
	}
}

// judgeRelease checks invariant 14 on a Machine first seen released at t.
func (o *observer) judgeRelease(c *soakCluster, machine string, t time.Time) {
	s := o.s
	c.mu.Lock()
	tr := *c.removals[machine]
	deleting := tr.deleting
	if deleting.IsZero() {
		deleting = t // Gone before it was seen deleting.
	}
	detached := c.detachedDuring(deleting.Add(-leaveGrace), t)
	attachedSince := maxTime(tr.firstSeen, c.lastAttached())
	c.mu.Unlock()
	if detached {
		c.mu.Lock()
		c.removals[machine].exempt = "its Cluster was out of its policy"
		c.mu.Unlock()
		return
	}
	if tr.node == "" {
		// CAPI honours pre-drain hooks only when it may delete the
		// Machine's Node (isDeleteNodeAllowed): a Machine without one (a
		// scale-up's Machine deleted before its Node joined) is deleted at
		// once, and nothing is drained. Seed 424242 (--clusters=8
		// --workers=4 --rounds=2): a scale-up then a scale-down, and CAPI
		// deleted the new Machine while Tollgate held it.
		return
	}
	if tr.hookSeen.Before(attachedSince) {
		s.mu.Lock()
		blackouts := slices.Clone(s.blackouts)
		s.mu.Unlock()
		if s.connects != nil {
			blackouts = append(blackouts, s.connects.of(c.ns+"/"+c.name)...)
		}
		if without := deleting.Sub(attachedSince); without > hookGrace+overlap(blackouts, attachedSince, deleting) {
			s.check(14)
			s.violation(14, "Machine %s/%s: deleted by CAPI at %s without Tollgate's deletion hook, which the observer never saw on it since its Cluster opted in to its policy %s before (%s of it the controllers could not act)",
				c.ns, machine, deleting.Format(timeMillis), without.Round(time.Second), overlap(blackouts, attachedSince, deleting).Round(100*time.Millisecond))
		}
		c.mu.Lock()
		c.removals[machine].judged = true
		c.mu.Unlock()
		return
	}
	s.check(14)
	c.mu.Lock()
	c.removals[machine].judged, c.removals[machine].hooked = true, true
	c.mu.Unlock()
	if _, killed := c.killedAt(tr.node); !tr.remediated && !killed && !tr.held.IsZero() {
		// Invariant 2: a removal CAPI's owner asked for (not a
		// remediation) starts CAPI's drain only while the checks pass.
		o.pending = append(o.pending, judgement{c: c, machine: machine, preIntent: tr.held, intentSeen: t, what: "removal released to CAPI's drain"})
	}
	runs := removalHookRuns(c, machine)
	succeeded := 0
	for _, j := range runs {
		if j.Finished && !j.Failed && !j.FinishedAt.After(t) {
			succeeded++
		}
	}
	if succeeded == 0 {
		s.violation(14, "Machine %s/%s: its removal was released (seen at %s; deleting since %s) before its preRemoval hook %q succeeded (%d run(s) seen)",
			c.ns, machine, t.Format(timeMillis), deleting.Format(timeMillis), removalHookName, len(runs))
	}
}

// removalHookRuns returns the Jobs of the preRemoval hook of a Machine the
// Job controller ran.
func removalHookRuns(c *soakCluster, machine string) []jobdriver.SeenJob {
	return c.wl.Jobs.SeenMatching(jobdriver.HasLabels(map[string]string{
		workloadjob.ClusterLabel: workloadjob.LabelValue(c.name), workloadjob.HookLabel: removalHookName,
		workloadjob.MachineLabel: workloadjob.LabelValue(machine),
	}))
}

// judgeRemovalHooks checks, at the end of a round, that the preRemoval
// hook of every Machine whose release invariant 14 judged ran once.
func (s *soak) judgeRemovalHooks(clusters []*soakCluster) {
	for _, c := range clusters {
		c.mu.Lock()
		var judged []string
		for name, tr := range c.removals {
			if tr.judged && tr.hooked {
				judged = append(judged, name)
			}
		}
		c.mu.Unlock()
		slices.Sort(judged)
		for _, name := range judged {
			if runs := removalHookRuns(c, name); len(runs) > 1 {
				s.violation(14, "Machine %s/%s: its preRemoval hook %q ran %d times, not once", c.ns, name, removalHookName, len(runs))
			}
		}
	}
}
