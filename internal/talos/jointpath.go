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
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// VersionChange says which versions a VersionHop changes.
type VersionChange string

const (
	// TalosChange is a hop that changes the Talos version and keeps
	// Kubernetes.
	TalosChange VersionChange = "Talos"

	// KubernetesChange is a hop that changes the Kubernetes version and
	// keeps Talos.
	KubernetesChange VersionChange = "Kubernetes"

	// TalosAndKubernetesChange is a hop that changes both versions, so that
	// a node gets one drain and one reboot for the two.
	TalosAndKubernetesChange VersionChange = "TalosAndKubernetes"
)

// VersionsInput is what PlanVersions plans the Talos and Kubernetes versions
// of a Cluster from.
type VersionsInput struct {
	// Talos is the Talos version the Cluster's Machines run, the oldest
	// when they differ.
	Talos string
	// Kubernetes is the Kubernetes version the Cluster's control plane
	// runs.
	Kubernetes string
	// TargetTalos is the Talos version the Cluster must end on; "" or Talos
	// keeps the Talos version.
	TargetTalos string
	// TargetKubernetes is the Kubernetes version the Cluster must end on;
	// "" or Kubernetes keeps the Kubernetes version.
	TargetKubernetes string
	// Available are the stable Talos releases the installer repository
	// offers (StableReleases), as PlanPath takes them.
	Available []string
	// AvailableKubernetes are the Kubernetes versions a hop through an
	// intermediate minor may run: the newest stable patch of the minor is
	// taken.
	AvailableKubernetes []string
	// Repository names the installer repository, for messages.
	Repository string
	// KubernetesRepository names the repository AvailableKubernetes was
	// listed from (the nodes' kubelet repository), for messages; "" when
	// the versions were not listed from one.
	KubernetesRepository string
}

// VersionHop is one step of a plan PlanVersions returns: the Talos and
// Kubernetes versions the Cluster runs once the hop is done.
//
// A hop that changes Kubernetes moves the Kubernetes control plane first, on
// the Talos version before the hop, then the kubelets. A hop that changes
// both moves the control plane first, then gives each node its new Talos
// version and its new kubelet together, with one drain and one reboot; the
// Talos version before the hop supports the new Kubernetes version, and so
// does the Talos version after it. The plan does not vouch for the new Talos
// version with the old Kubernetes version, so the executor never leaves a
// node there: both change in the node's one reboot.
type VersionHop struct {
	// Talos is the Talos version after the hop.
	Talos string
	// Kubernetes is the Kubernetes version after the hop.
	Kubernetes string
	// Change says which of the two versions the hop changes.
	Change VersionChange
}

// String returns the hop as "Talos v1.13.1, Kubernetes v1.35.2 (TalosAndKubernetes)".
func (h VersionHop) String() string {
	return fmt.Sprintf("Talos %s, Kubernetes %s (%s)", h.Talos, h.Kubernetes, h.Change)
}

// PlanVersions returns the hops that bring a Cluster from its Talos and
// Kubernetes versions to the targets, the targets last, or no hop when the
// Cluster runs them already.
//
// The Talos hops are those PlanPath plans; Kubernetes moves one minor per
// hop, through the newest patch of every minor in between that
// AvailableKubernetes lists. Every combination the Cluster runs, from the
// start to the end, is one the machinery compatibility rules accept. Among
// the orders of these hops, PlanVersions takes one with the fewest hops: it
// combines a Talos hop with a Kubernetes step whenever the Talos versions
// before and after the hop both support the new Kubernetes version (see
// VersionHop), and otherwise moves Talos first, which widens the Kubernetes
// versions the next steps may run.
//
// It refuses, with an error wrapping ErrNoUpgradePath, a Kubernetes or Talos
// downgrade (and ErrDowngradeNotAllowed), targets Talos does not support
// together or a Cluster whose current versions Talos does not support
// together (and ErrKubernetesUnsupported), a minor of Talos or Kubernetes in
// between with no release available, and targets no order of hops reaches
// through supported combinations. A Cluster that already runs an unsupported
// combination is refused rather than planned from: no step from it is one
// the compatibility rules vouch for, so it is brought back to a supported
// combination by hand first. A Talos version newer than the rules this build
// knows returns ErrUnknownVersion, and a malformed version ErrInvalidVersion.
func PlanVersions(in VersionsInput) ([]VersionHop, error) {
	ends, err := parseEnds(in)
	if err != nil {
		return nil, err
	}
	if err := ends.check(); err != nil {
		return nil, err
	}

	talosHops, err := PlanPath(PathInput{From: []string{canonical(ends.talos)}, Target: canonical(ends.targetTalos), Available: in.Available, Repository: in.Repository})
	if err != nil {
		return nil, err
	}
	talosStates := []*semver.Version{ends.talos}
	for _, hop := range talosHops {
		v, err := ParseVersion(hop)
		if err != nil {
			return nil, err
		}
		if v.GreaterThan(ends.talos) {
			talosStates = append(talosStates, v)
		}
	}
	k8sSteps, err := kubernetesSteps(ends.kubernetes, ends.targetKubernetes, in.AvailableKubernetes, in.KubernetesRepository)
	if err != nil {
		return nil, err
	}
	k8sStates := append([]*semver.Version{ends.kubernetes}, k8sSteps...)

	hops, stuck, ok := planHops(talosStates, k8sStates, kubernetesSupported)
	if !ok {
		return nil, fmt.Errorf("%w %s: %s", ErrNoUpgradePath, ends, unbridged(talosStates, k8sStates, stuck))
	}
	return hops, nil
}

// versionEnds are the versions a plan starts from and ends on.
type versionEnds struct {
	talos, kubernetes, targetTalos, targetKubernetes *semver.Version
}

// parseEnds parses the versions of in, a target left empty the version the
// Cluster runs.
func parseEnds(in VersionsInput) (versionEnds, error) {
	parse := func(v, fallback string) (*semver.Version, error) {
		if v == "" {
			v = fallback
		}
		return ParseVersion(v)
	}
	var ends versionEnds
	var err error
	if ends.talos, err = parse(in.Talos, ""); err != nil {
		return versionEnds{}, err
	}
	if ends.kubernetes, err = parse(in.Kubernetes, ""); err != nil {
		return versionEnds{}, err
	}
	if ends.targetTalos, err = parse(in.TargetTalos, in.Talos); err != nil {
		return versionEnds{}, err
	}
	if ends.targetKubernetes, err = parse(in.TargetKubernetes, in.Kubernetes); err != nil {
		return versionEnds{}, err
	}
	return ends, nil
}

// check refuses ends no plan may join: a version Talos's rules do not know,
// a downgrade, or a start or end Talos does not support.
func (e versionEnds) check() error {
	for _, v := range []*semver.Version{e.talos, e.targetTalos} {
		if err := CheckKnown(canonical(v)); err != nil {
			return err
		}
	}
	switch {
	case e.targetKubernetes.LessThan(e.kubernetes):
		return fmt.Errorf("%w %s: %w: the Cluster runs Kubernetes %s; Tollgate never downgrades Kubernetes, keep %s or choose a newer version",
			ErrNoUpgradePath, e, ErrDowngradeNotAllowed, canonical(e.kubernetes), canonical(e.kubernetes))
	case e.targetTalos.LessThan(e.talos):
		return fmt.Errorf("%w %s: %w: the Cluster runs Talos %s; keep %s or choose a newer version",
			ErrNoUpgradePath, e, ErrDowngradeNotAllowed, canonical(e.talos), canonical(e.talos))
	case !kubernetesSupported(e.talos, e.kubernetes):
		return fmt.Errorf("%w %s: %w: the Cluster runs Kubernetes %s on Talos %s, which supports %s; Tollgate plans only through combinations Talos supports, so bring the Cluster to one of them first",
			ErrNoUpgradePath, e, ErrKubernetesUnsupported, canonical(e.kubernetes), canonical(e.talos), kubernetesWindow(e.talos))
	case !kubernetesSupported(e.targetTalos, e.targetKubernetes):
		return fmt.Errorf("%w %s: %w: Talos %s supports %s, not %s; %s",
			ErrNoUpgradePath, e, ErrKubernetesUnsupported, canonical(e.targetTalos), kubernetesWindow(e.targetTalos), canonical(e.targetKubernetes),
			unsupportedTargetAdvice(e.targetTalos, e.targetKubernetes))
	}
	return nil
}

// String names the route, for messages.
func (e versionEnds) String() string {
	return fmt.Sprintf("from Talos %s with Kubernetes %s to Talos %s with Kubernetes %s",
		canonical(e.talos), canonical(e.kubernetes), canonical(e.targetTalos), canonical(e.targetKubernetes))
}

// unsupportedTargetAdvice says what to choose instead of Kubernetes k8s on
// Talos talos.
func unsupportedTargetAdvice(talos, k8s *semver.Version) string {
	if runsOn := talosWindow(talos.Major(), k8s); runsOn != "" {
		return fmt.Sprintf("choose a Kubernetes version Talos %s supports, or a Talos version that supports Kubernetes %s (%s)", canonical(talos), canonical(k8s), runsOn)
	}
	return fmt.Sprintf("no Talos version this Tollgate build knows supports Kubernetes %s; choose a Kubernetes version Talos %s supports", canonical(k8s), canonical(talos))
}

// gridPoint is a state of a plan: the index of the Talos version and of the
// Kubernetes version the Cluster runs.
type gridPoint struct{ talos, kubernetes int }

// move is a hop between two states.
type move struct {
	talos, kubernetes int
	change            VersionChange
}

// moves are the hops planHops tries, in the order it prefers them among
// plans of as few hops.
var moves = []move{{1, 1, TalosAndKubernetesChange}, {1, 0, TalosChange}, {0, 1, KubernetesChange}}

// planHops returns the fewest hops from the first Talos and Kubernetes
// versions to the last of each, every state one supported accepts, or false
// and the state with the most progress that no hop leaves. Talos moves one
// version of talos per hop, Kubernetes one of kubernetes, or both at once
// when the Talos version before the hop also supports the new Kubernetes
// version (the control plane moves first).
func planHops(talos, kubernetes []*semver.Version, supported func(talos, kubernetes *semver.Version) bool) ([]VersionHop, gridPoint, bool) {
	end := gridPoint{len(talos) - 1, len(kubernetes) - 1}
	valid := func(p gridPoint) bool {
		return p.talos <= end.talos && p.kubernetes <= end.kubernetes && supported(talos[p.talos], kubernetes[p.kubernetes])
	}
	allowed := func(p gridPoint, m move) (gridPoint, bool) {
		next := gridPoint{p.talos + m.talos, p.kubernetes + m.kubernetes}
		if !valid(p) || !valid(next) {
			return next, false
		}
		return next, m.kubernetes == 0 || valid(gridPoint{p.talos, next.kubernetes})
	}

	// hopsLeft[t][k] is the fewest hops from state (t, k) to the end, -1
	// when the end cannot be reached from it.
	hopsLeft := make([][]int, end.talos+1)
	for t := end.talos; t >= 0; t-- {
		hopsLeft[t] = make([]int, end.kubernetes+1)
		for k := end.kubernetes; k >= 0; k-- {
			p := gridPoint{t, k}
			hopsLeft[t][k] = -1
			switch {
			case !valid(p):
			case p == end:
				hopsLeft[t][k] = 0
			default:
				for _, m := range moves {
					if next, ok := allowed(p, m); ok && hopsLeft[next.talos][next.kubernetes] >= 0 &&
						(hopsLeft[t][k] < 0 || hopsLeft[next.talos][next.kubernetes]+1 < hopsLeft[t][k]) {
						hopsLeft[t][k] = hopsLeft[next.talos][next.kubernetes] + 1
					}
				}
			}
		}
	}
	if hopsLeft[0][0] < 0 {
		return nil, furthest(gridPoint{}, allowed), false
	}

	var hops []VersionHop
	for p := (gridPoint{}); p != end; {
		for _, m := range moves {
			if next, ok := allowed(p, m); ok && hopsLeft[next.talos][next.kubernetes] == hopsLeft[p.talos][p.kubernetes]-1 {
				hops = append(hops, VersionHop{Talos: canonical(talos[next.talos]), Kubernetes: canonical(kubernetes[next.kubernetes]), Change: m.change})
				p = next
				break
			}
		}
	}
	return hops, gridPoint{}, true
}

// furthest returns the state reachable from start by allowed hops with the
// most progress, the most Talos hops among equals: no hop leaves it.
func furthest(start gridPoint, allowed func(gridPoint, move) (gridPoint, bool)) gridPoint {
	best, queue, seen := start, []gridPoint{start}, map[gridPoint]bool{start: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if progress, bestProgress := p.talos+p.kubernetes, best.talos+best.kubernetes; progress > bestProgress || progress == bestProgress && p.talos > best.talos {
			best = p
		}
		for _, m := range moves {
			if next, ok := allowed(p, m); ok && !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	return best
}

// unbridged says why no hop leaves the state stuck.
func unbridged(talos, kubernetes []*semver.Version, stuck gridPoint) string {
	t, k := talos[stuck.talos], kubernetes[stuck.kubernetes]
	if !kubernetesSupported(t, k) {
		return fmt.Sprintf("Talos %s does not support Kubernetes %s (it supports %s)", canonical(t), canonical(k), kubernetesWindow(t))
	}
	var why []string
	if stuck.talos+1 < len(talos) {
		next := talos[stuck.talos+1]
		why = append(why, fmt.Sprintf("the next Talos hop %s does not support Kubernetes %s (it supports %s)", canonical(next), canonical(k), kubernetesWindow(next)))
	}
	if stuck.kubernetes+1 < len(kubernetes) {
		next := kubernetes[stuck.kubernetes+1]
		why = append(why, fmt.Sprintf("Talos %s does not support the next Kubernetes step %s (it supports %s)", canonical(t), canonical(next), kubernetesWindow(t)))
	}
	return fmt.Sprintf("at Talos %s with Kubernetes %s, %s; no order of the hops keeps every combination supported; choose other targets",
		canonical(t), canonical(k), strings.Join(why, ", and "))
}
