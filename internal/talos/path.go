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

package talos

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// ErrNoUpgradePath is returned when no path of supported steps leads from
// the Machines' versions to the target through the releases available.
var ErrNoUpgradePath = errors.New("no upgrade path")

// PathInput is what PlanPath plans a path from.
type PathInput struct {
	// From are the Talos versions the Machines run.
	From []string
	// Target is the version the Machines must end on.
	Target string
	// Kubernetes are the Kubernetes versions of the Cluster: every hop
	// must support each.
	Kubernetes []string
	// Available are the stable releases the installer repository offers
	// (StableReleases).
	Available []string
	// Repository names the installer repository, for messages.
	Repository string
}

// PlanPath returns the hops that bring every Machine from its version to
// the target, the target last: the latest stable patch of each minor
// between the oldest Machine's minor and the target's, each hop one that
// every Machine still below it may take in one step (the machinery
// compatibility rules), each supporting the Cluster's Kubernetes versions. A
// Machine already at or above a hop skips it, so a Cluster whose Machines
// run different minors is brought to a common version first. Talos does not
// reliably support skipping minors, so a hop is never skipped even where the
// rules would allow it.
//
// When the Machines can go to the target directly the path is the target
// alone. Otherwise the error wraps ErrNoUpgradePath and names the minor
// whose release is missing or the step Talos does not support.
func PlanPath(in PathInput) ([]string, error) {
	target, err := ParseVersion(in.Target)
	if err != nil {
		return nil, err
	}
	from := make([]*semver.Version, 0, len(in.From))
	for _, f := range in.From {
		v, err := ParseVersion(f)
		if err != nil {
			return nil, err
		}
		if v.GreaterThan(target) {
			return nil, fmt.Errorf("%w: a Machine runs %s, newer than the target %s; a path only goes up", ErrNoUpgradePath, f, in.Target)
		}
		from = append(from, v)
	}
	if len(from) == 0 {
		return []string{canonical(target)}, nil
	}
	oldest := from[0]
	for _, v := range from[1:] {
		if v.LessThan(oldest) {
			oldest = v
		}
	}
	if oldest.Major() != target.Major() {
		return nil, fmt.Errorf("%w from %s to %s: Tollgate plans paths within one major version", ErrNoUpgradePath, canonical(oldest), in.Target)
	}
	latest := latestPatches(in.Available)

	// Candidate hops: the latest patch of the oldest Machine's own minor
	// (for a Machine too old a patch for the next minor), then of every minor
	// between it and the target's, then the target.
	var candidates []*semver.Version
	if v, ok := latest[minorKey{oldest.Major(), oldest.Minor()}]; ok && v.GreaterThan(oldest) && v.LessThan(target) {
		candidates = append(candidates, v)
	}
	for minor := oldest.Minor() + 1; minor < target.Minor(); minor++ {
		v, ok := latest[minorKey{target.Major(), minor}]
		if !ok {
			return nil, fmt.Errorf("%w from %s to %s: it goes through Talos %d.%d, and %s has no stable %d.%d release; push the installer of the latest %d.%d patch",
				ErrNoUpgradePath, canonical(oldest), in.Target, target.Major(), minor, repositoryName(in.Repository), target.Major(), minor, target.Major(), minor)
		}
		candidates = append(candidates, v)
	}
	candidates = append(candidates, target)

	var hops []string
	current := from
	for i, hop := range candidates {
		// A hop of a Machine's own minor is only needed when it cannot go
		// on without it.
		if i == 0 && hop.Minor() == oldest.Minor() && len(candidates) > 1 && allStep(current, candidates[1]) == nil {
			continue
		}
		if err := allStep(current, hop); err != nil {
			return nil, fmt.Errorf("%w from %s to %s: %w", ErrNoUpgradePath, canonical(oldest), in.Target, err)
		}
		for _, k := range in.Kubernetes {
			if err := CheckKubernetesSupported(canonical(hop), k); err != nil {
				return nil, fmt.Errorf("%w from %s to %s: the hop to %s: %w", ErrNoUpgradePath, canonical(oldest), in.Target, canonical(hop), err)
			}
		}
		hops = append(hops, canonical(hop))
		current = []*semver.Version{hop}
	}
	return hops, nil
}

// allStep checks that every version of from below hop may move to hop in
// one step.
func allStep(from []*semver.Version, hop *semver.Version) error {
	for _, v := range from {
		if !v.LessThan(hop) {
			continue
		}
		if err := upgradeableFrom(v, hop); err != nil {
			return fmt.Errorf("the step from %s to %s is not one Talos supports: %w", canonical(v), canonical(hop), err)
		}
	}
	return nil
}

// minorKey identifies a minor release line.
type minorKey struct{ major, minor uint64 }

// latestPatches returns the latest stable release of every minor of
// available.
func latestPatches(available []string) map[minorKey]*semver.Version {
	out := map[minorKey]*semver.Version{}
	for _, a := range available {
		v, err := ParseVersion(a)
		if err != nil || !isStable(v) {
			continue
		}
		k := minorKey{v.Major(), v.Minor()}
		if cur, ok := out[k]; !ok || v.GreaterThan(cur) {
			out[k] = v
		}
	}
	return out
}

func canonical(v *semver.Version) string { return "v" + v.String() }

func repositoryName(repo string) string {
	if strings.TrimSpace(repo) == "" {
		return "the installer repository"
	}
	return "the installer repository " + repo
}

// CheckPathPossible reports, without the releases of the installer
// repository, why no upgrade path can exist: a Machine newer than the
// target, a step the compatibility rules refuse, or a minor on the way that
// does not support the Cluster's Kubernetes versions. It takes the first
// release of every minor in between as its hop; nil means a path exists if
// the repository has a release of each of them.
func CheckPathPossible(in PathInput) error {
	target, err := ParseVersion(in.Target)
	if err != nil {
		return err
	}
	available := []string{in.Target}
	for minor := uint64(0); minor < target.Minor(); minor++ {
		available = append(available, fmt.Sprintf("v%d.%d.0", target.Major(), minor))
	}
	in.Available = available
	_, err = PlanPath(in)
	return err
}
