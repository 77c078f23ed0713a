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
	"regexp"
	"slices"
	"sync"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Invariant 10: a rollout at rest is not reconciled again and again. A
// rollout is at rest, as the observer sees it, once it is over for its
// current target (Completed, Failed or Paused, no Machine in flight, its
// generation observed); from then on only a change of the world (a Machine,
// its Cluster, its policy), a restart of the controller or the resync
// (--sync-period=1m) reconciles it. The reconciles are counted from the
// controllers' own logs: at -v=10 controller-runtime logs "Reconciling"
// with the object's key at the start of every reconcile. The rollouts of the
// rounds before stay at rest, and are judged through the later rounds too.
// The first restSettle at rest are not judged: coming to rest is itself a
// burst of changes (the rollout's Jobs deleted, its Machines uncordoned and
// their annotations removed, the policy freeing its slot), each an event of
// the rollout; a rollout that does not come to rest goes on after it.
//
// A rollout is at rest only while its world is: while CAPI works on its
// Cluster (a Machine being deleted or without its Node yet, a worker not yet
// judged healthy by its MachineHealthCheck), every change CAPI writes to a
// Machine or the Cluster is an event of the rollout, and it comes to rest
// again restSettle after CAPI is done. The reconciles made while the
// controllers could not reach the management apiserver (its gate cut, which
// fails every reconcile and retries it with controller-runtime's backoff,
// from 5ms up) are not counted.

const (
	// restWindow is the window over which the reconciles of a rollout at
	// rest are counted.
	restWindow = 20 * time.Second
	// restSettle is how long after coming to rest a rollout's reconciles
	// start to be counted.
	restSettle = 10 * time.Second
	// maxRestReconciles is the most reconciles of a rollout at rest in
	// restWindow: a resync, a restart and a few changes of the world, far
	// below the several a second of a rollout that does not come to rest.
	maxRestReconciles = 10
	// reconcileMemory is how long the reconciles seen are kept.
	reconcileMemory = 2 * (restSettle + restWindow)
)

// reconcileLine matches the line controller-runtime logs (klog text) at the
// start of a reconcile of a TalosUpgrade, and captures its key.
var reconcileLine = regexp.MustCompile(`"Reconciling".*controller="talosupgrade".*TalosUpgrade="([^"]+)"`)

// reconciles records when each TalosUpgrade was reconciled, from the lines
// of every replica.
type reconciles struct {
	mu    sync.Mutex
	times map[string][]time.Time // namespace/name
}

func newReconciles() *reconciles {
	return &reconciles{times: map[string][]time.Time{}}
}

// line records the reconcile a controller's log line starts, if it does.
func (r *reconciles) line(l string, now time.Time) {
	m := reconcileLine.FindStringSubmatch(l)
	if m == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.times[m[1]]
	for len(ts) > 0 && now.Sub(ts[0]) > reconcileMemory {
		ts = ts[1:]
	}
	r.times[m[1]] = append(ts, now)
}

// since counts the reconciles of key at or after from, but for those in
// the intervals skipped.
func (r *reconciles) since(key string, from time.Time, skipped []interval) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.times[key] {
		if !t.Before(from) && overlap(skipped, t, t.Add(time.Nanosecond)) == 0 {
			n++
		}
	}
	return n
}

// restTrack is what the soak knows of a rollout at rest.
type restTrack struct {
	// since is when the observer first saw it at rest, this time.
	since time.Time
	// judged and reported say whether a full window was judged, and a
	// violation reported, once.
	judged, reported bool
}

// atRest reports whether the observer sees u at rest: over for the target
// the soak set, with its generation observed.
func atRest(c *soakCluster, u *upgradev1.TalosUpgrade) bool {
	return u != nil && over(u) && u.Spec.TalosVersion == c.target() && u.Status.ObservedGeneration == u.Generation
}

// observeRest records whether the rollout of c is at rest, as just read,
// and its world with it (capiBusy: CAPI works on its Cluster).
func (s *soak) observeRest(c *soakCluster, u *upgradev1.TalosUpgrade, capiBusy bool, now time.Time) {
	key := c.ns + "/" + c.name
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resting == nil {
		s.resting = map[string]*restTrack{}
	}
	if !atRest(c, u) || capiBusy {
		delete(s.resting, key)
		return
	}
	if _, ok := s.resting[key]; !ok {
		s.resting[key] = &restTrack{since: now}
	}
}

// judgeRest checks invariant 10 on every rollout at rest for a full window,
// those of the rounds before included.
func (s *soak) judgeRest(now time.Time) {
	s.mu.Lock()
	var due []string
	froms := map[string]time.Time{}
	managementCut := slices.Clone(s.managementCuts)
	for key, tr := range s.resting {
		if now.Sub(tr.since) < restSettle+restWindow || tr.reported {
			continue
		}
		due = append(due, key)
		froms[key] = now.Add(-restWindow)
		if !tr.judged {
			tr.judged = true
			s.report.Checks[10]++
		}
	}
	s.mu.Unlock()
	for _, key := range due {
		n := s.reconciles.since(key, froms[key], managementCut)
		if n <= maxRestReconciles {
			continue
		}
		s.mu.Lock()
		tr, ok := s.resting[key]
		report := ok && !tr.reported
		if report {
			tr.reported = true
		}
		s.mu.Unlock()
		if report {
			s.violation(10, "TalosUpgrade %s: at rest since %s, reconciled %d times in the last %s (at most %d expected)",
				key, tr.since.Format(timeMillis), n, restWindow, maxRestReconciles)
		}
	}
}
