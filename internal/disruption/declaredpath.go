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

package disruption

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "how do the Machines of an object get to the version it
// declares, when they cannot in one upgrade": through an upgrade path of
// their own (upgradev1.DeclaredPathStatus), planned by the preflight as the
// rollout's own path is, from the releases of the installer repository. The
// object's Machines go through its hops together, as a Cluster goes through
// the hops of the rollout's path: the hop they go to now is the first that
// one of them has not reached, so that every one runs a hop before any goes
// to the next, and a Machine ahead of the others waits for them.
//
// Nothing here is kept but the planned hops: which hop an object is on is
// read again, at every reconcile, from what its Machines run.

// PathRequest asks the preflight to plan the path of an object's Machines
// to the version it declares.
type PathRequest struct {
	// Owner is the object that declares Version.
	Owner Owner
	// Version is the version it declares, canonical.
	Version string
	// From are the versions its Machines run, those known.
	From []string
}

// DeclaredPath returns the path planned for o's Machines to version, nil
// when none was.
func (r *Rollout) DeclaredPath(o Owner, version string) *upgradev1.DeclaredPathStatus {
	for i := range r.Upgrade.Status.DeclaredPaths {
		p := &r.Upgrade.Status.DeclaredPaths[i]
		if p.Kind == o.Kind && p.Name == o.Name && talos.SameVersion(p.TalosVersion, version) {
			return p
		}
	}
	return nil
}

// onDeclaredPath returns t, the target of m whose owner declares t.Final,
// on the path p planned to it: the hop its owner's Machines go to now, or
// why m does not start.
func (r *Rollout) onDeclaredPath(t Target, m *clusterv1.Machine, p *upgradev1.DeclaredPathStatus) Target {
	if len(p.Hops) == 0 {
		t.Reason, t.Blocked = upgradev1.DesiredVersionUnreachableReason, fmt.Sprintf("%s declares Talos %s (%s), which its Machines cannot reach: %s", t.Owner, t.Final, t.Owner.Field(), p.Message)
		return t
	}
	running := r.runningVersions(t.Owner)
	t.Version = ownerHop(p.Hops, running)
	from := running[m.Name]
	if from == "" {
		return t // Not known yet: the Machine waits for it to start anyway (see StartBlocker).
	}
	if c, err := talos.CompareVersions(from, t.Version); err != nil || c >= 0 {
		return t // On the hop, or past it: it waits for the others (see Past).
	}
	err := r.reachable(t.Version, from)
	switch {
	case err == nil:
	case errors.Is(err, talos.ErrUnsupportedUpgradePath) && talos.Newer(p.From, from):
		// It joined on a version older than the path was planned from.
		t.Waiting = fmt.Sprintf("runs Talos %s, older than the %s the path of %s to %s was planned from: it waits for the preflight to plan the path again", from, p.From, t.Owner, t.Final)
	default:
		t.Reason, t.Blocked = upgradev1.DesiredVersionUnreachableReason, fmt.Sprintf("%s declares Talos %s (%s), and Machine %s cannot reach the hop to %s on the way: %v", t.Owner, t.Final, t.Owner.Field(), m.Name, t.Version, err)
	}
	return t
}

// ownerHop returns the hop the Machines that run the versions running go
// to now: the first of hops one of them runs an older version than, the
// last when none does.
func ownerHop(hops []string, running map[string]string) string {
	for _, h := range hops[:len(hops)-1] {
		for _, v := range running {
			if v != "" && talos.Newer(h, v) {
				return h
			}
		}
	}
	return hops[len(hops)-1]
}

// runningVersions returns the Talos version each Machine of o runs, by
// name, "" when it is not known: as the rollout last verified it on its
// node, which the Machine's status.nodeInfo follows later, or as the
// Machine reports it, the newer (verifiedVersion: a Pending record keeps
// From from the hop before, a started one read it from its node): a
// Machine on its way through a hop is never taken for one on the version
// its Machine reported before the path began, which would send the others
// back to the first hop. A Machine being deleted is left out: it goes
// nowhere.
func (r *Rollout) runningVersions(o Owner) map[string]string {
	verified := map[string]string{}
	for _, st := range r.Upgrade.Status.Machines {
		verified[st.Machine] = verifiedVersion(st)
	}
	running := map[string]string{}
	for name, m := range r.Machines {
		if !m.DeletionTimestamp.IsZero() || OwnerOf(r.Cluster, m) != o {
			continue
		}
		running[name] = newest(verified[name], plan.MachineTalosVersion(m))
	}
	return running
}

// verifiedVersion returns the Talos version st says its node runs, as read
// from the node: a Completed record's target, or the newer version it ran
// already (past the hop); any other record's From.
func verifiedVersion(st upgradev1.MachineUpgradeStatus) string {
	if st.Phase == upgradev1.MachinePhaseCompleted {
		return newest(st.TargetVersion, st.FromVersion)
	}
	return st.FromVersion
}

// newest returns the newer of two versions, the one that is a version when
// the other is not.
func newest(a, b string) string {
	if _, err := talos.ParseVersion(a); err != nil {
		return b
	}
	if talos.Newer(b, a) {
		return b
	}
	return a
}

// PathsToPlan returns what the preflight plans: for each object that
// declares a version its Machines cannot all reach in one upgrade, with
// upgradePath Auto, its version and what its Machines run, when no path was
// planned to it, or a Machine runs an older version than the one it was
// planned from.
func (r *Rollout) PathsToPlan() []PathRequest {
	if r.Upgrade.Spec.UpgradePath != upgradev1.UpgradePathAuto {
		return nil
	}
	byOwner := map[Owner]*PathRequest{}
	for _, name := range SortedNames(r.Machines) {
		m := r.Machines[name]
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		t := r.TargetOf(m)
		if t.Source != upgradev1.VersionSourceObject || t.Reason == upgradev1.DesiredVersionInvalidReason || r.declaredApplies() != "" {
			continue
		}
		req := byOwner[t.Owner]
		if req == nil {
			req = &PathRequest{Owner: t.Owner, Version: t.Final}
			byOwner[t.Owner] = req
		}
		if v := plan.MachineTalosVersion(m); v != "" {
			req.From = append(req.From, v)
		}
	}
	var out []PathRequest
	for _, req := range byOwner {
		if r.needsPath(req) {
			slices.Sort(req.From)
			req.From = slices.Compact(req.From)
			out = append(out, *req)
		}
	}
	slices.SortFunc(out, func(a, b PathRequest) int {
		return cmp.Or(strings.Compare(a.Owner.Kind, b.Owner.Kind), strings.Compare(a.Owner.Name, b.Owner.Name))
	})
	return out
}

// needsPath reports whether the Machines of req need a path planned: no path
// covers a Machine that cannot reach the declared version in one upgrade.
func (r *Rollout) needsPath(req *PathRequest) bool {
	p := r.DeclaredPath(req.Owner, req.Version)
	for _, from := range req.From {
		switch {
		case p != nil && talos.Newer(p.From, from):
			return true
		case p == nil && errors.Is(talos.CheckUpgradeStep(from, req.Version, false), talos.ErrUnsupportedUpgradePath):
			return true
		}
	}
	return false
}

// Past reports whether a Machine that runs version, on the way to t.Final
// through a path, is at or past the hop t.Version and not past t.Final: it
// waits there for the other Machines of its object.
func (t Target) Past(version string) bool {
	if t.Source != upgradev1.VersionSourceObject || talos.SameVersion(t.Version, t.Final) {
		return false
	}
	return !talos.Newer(t.Version, version) && !talos.Newer(version, t.Final) && version != ""
}

// Hops returns the versions a Machine going to t installs from its hop on,
// its final version last.
func (r *Rollout) Hops(t Target) []string {
	if t.Source == upgradev1.VersionSourceObject {
		if p := r.DeclaredPath(t.Owner, t.Final); p != nil {
			if i := slices.IndexFunc(p.Hops, func(h string) bool { return talos.SameVersion(h, t.Version) }); i >= 0 {
				return p.Hops[i:]
			}
		}
	}
	return []string{t.Version}
}
