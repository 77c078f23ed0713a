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

	"github.com/Masterminds/semver/v3"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"
)

// ErrUnsupportedKubernetesStep is returned for a Kubernetes version change
// that is not one step: more than one minor up, a minor down, or another
// major version.
var ErrUnsupportedKubernetesStep = errors.New("unsupported Kubernetes step")

// probeMinors bounds the minors kubernetesWindow and talosWindow ask the
// compatibility rules about; it is the search range, not the support matrix.
const probeMinors = 100

// kubernetesMajor is the Kubernetes major version the support windows of
// messages are probed in.
const kubernetesMajor = 1

// knownTalosMajor is the Talos major version the compatibility rules cover,
// whose minors CheckKubernetesKnown asks about.
const knownTalosMajor = 1

// CheckKubernetesStep returns nil when a Cluster running Kubernetes from may
// move to to in one step: the same version, another patch of the same minor
// (an older one only when allowDowngrade is set), or any patch of the next
// minor. Kubernetes skips no minor and never goes back one, so
// allowDowngrade does not allow a minor downgrade. Otherwise it returns an
// error wrapping ErrInvalidVersion, ErrDowngradeNotAllowed or
// ErrUnsupportedKubernetesStep that names the minor to go through.
func CheckKubernetesStep(from, to string, allowDowngrade bool) error {
	vFrom, err := ParseVersion(from)
	if err != nil {
		return err
	}

	vTo, err := ParseVersion(to)
	if err != nil {
		return err
	}

	if vTo.LessThan(vFrom) && !allowDowngrade {
		return fmt.Errorf("%w: Kubernetes %s is older than the running %s; keep %s or choose a newer version", ErrDowngradeNotAllowed, to, from, from)
	}

	switch {
	case vTo.Major() != vFrom.Major():
		return fmt.Errorf("%w from Kubernetes %s to %s: it changes the major version; choose a %d.x version", ErrUnsupportedKubernetesStep, from, to, vFrom.Major())
	case vTo.Minor() == vFrom.Minor():
		return nil
	case vTo.Minor() < vFrom.Minor():
		return fmt.Errorf("%w from Kubernetes %s to %s: Kubernetes does not support going back a minor; choose a %d.%d patch", ErrUnsupportedKubernetesStep, from, to, vFrom.Major(), vFrom.Minor())
	case vTo.Minor() == vFrom.Minor()+1:
		return nil
	default:
		return fmt.Errorf("%w from Kubernetes %s to %s: Kubernetes moves one minor at a time; upgrade to %d.%d first", ErrUnsupportedKubernetesStep, from, to, vFrom.Major(), vFrom.Minor()+1)
	}
}

// kubernetesSteps returns the Kubernetes versions a Cluster goes through
// from from to to, to last, one minor per step: the newest stable patch of
// available of every minor in between. It returns no step when from is to,
// and an error wrapping ErrNoUpgradePath that names a minor in between
// available has no release of, and repository, the repository available
// was listed from, when it is not "". The caller refuses a downgrade first.
func kubernetesSteps(from, to *semver.Version, available []string, repository string) ([]*semver.Version, error) {
	if from.Equal(to) {
		return nil, nil
	}
	if from.Major() != to.Major() {
		return nil, fmt.Errorf("%w from Kubernetes %s to %s: Tollgate plans Kubernetes within one major version", ErrNoUpgradePath, canonical(from), canonical(to))
	}

	latest := latestPatches(available)
	var steps []*semver.Version
	for minor := from.Minor() + 1; minor < to.Minor(); minor++ {
		v, ok := latest[minorKey{to.Major(), minor}]
		switch {
		case !ok && repository != "":
			return nil, fmt.Errorf("%w from Kubernetes %s to %s: it goes through Kubernetes %d.%d, and %s has no stable %d.%d release; push one there (the newest patch is taken), or choose Kubernetes %d.%d as the target",
				ErrNoUpgradePath, canonical(from), canonical(to), to.Major(), minor, repository, to.Major(), minor, from.Major(), from.Minor()+1)
		case !ok:
			return nil, fmt.Errorf("%w from Kubernetes %s to %s: it goes through Kubernetes %d.%d, and no stable %d.%d release is among the Kubernetes versions available; list one (the newest patch is taken)",
				ErrNoUpgradePath, canonical(from), canonical(to), to.Major(), minor, to.Major(), minor)
		}
		steps = append(steps, v)
	}
	steps = append(steps, to)

	prev := from
	for _, step := range steps {
		if err := CheckKubernetesStep(canonical(prev), canonical(step), false); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoUpgradePath, err)
		}
		prev = step
	}
	return steps, nil
}

// CheckTargets returns nil when Talos talosVersion supports Kubernetes
// k8sVersion: the versions a plan that names both targets ends on, whatever
// its Cluster runs and whatever path it takes. Otherwise it returns an error
// wrapping ErrInvalidVersion or ErrKubernetesUnsupported that says which
// Kubernetes versions the Talos target supports and which Talos versions
// support the Kubernetes target.
func CheckTargets(talosVersion, k8sVersion string) error {
	t, err := ParseVersion(talosVersion)
	if err != nil {
		return err
	}
	k, err := ParseVersion(k8sVersion)
	if err != nil {
		return err
	}
	if kubernetesSupported(t, k) {
		return nil
	}
	return fmt.Errorf("%w: Talos %s supports %s, not Kubernetes %s; %s",
		ErrKubernetesUnsupported, canonical(t), kubernetesWindow(t), canonical(k), unsupportedTargetAdvice(t, k))
}

// CheckKubernetesKnown returns nil when a Talos version the compatibility
// rules of this build know supports Kubernetes k8sVersion: a Kubernetes
// target no Talos runs can be refused before any Cluster is seen. Otherwise
// it returns an error wrapping ErrInvalidVersion or ErrKubernetesUnsupported
// that names the Kubernetes versions they support.
func CheckKubernetesKnown(k8sVersion string) error {
	k, err := ParseVersion(k8sVersion)
	if err != nil {
		return err
	}
	if talosWindow(knownTalosMajor, k) != "" {
		return nil
	}
	return fmt.Errorf("%w: no Talos version this Tollgate build knows supports Kubernetes %s: Talos supports %s; choose one of those (a Kubernetes release newer than them needs a newer Tollgate)",
		ErrKubernetesUnsupported, canonical(k), knownKubernetesWindow())
}

// knownKubernetesWindow describes the Kubernetes minors some Talos version
// of the compatibility rules supports, for messages: "Kubernetes 1.23 to
// 1.36".
func knownKubernetesWindow() string {
	first, last, ok := supportedRange(func(minor uint64) bool {
		return talosWindow(knownTalosMajor, semver.New(kubernetesMajor, minor, 0, "", "")) != ""
	})
	if !ok {
		return "no Kubernetes version this Tollgate build knows"
	}
	return fmt.Sprintf("Kubernetes %d.%d to %d.%d", kubernetesMajor, first, kubernetesMajor, last)
}

// kubernetesSupported reports whether the machinery compatibility rules
// accept Kubernetes k8s on Talos talos.
func kubernetesSupported(talos, k8s *semver.Version) bool {
	t, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: canonical(talos)})
	if err != nil {
		return false
	}
	k, err := compatibility.ParseKubernetesVersion(k8s.String())
	if err != nil {
		return false
	}
	return k.SupportedWith(t) == nil
}

// kubernetesWindow describes the Kubernetes minors Talos talos supports, for
// messages: "Kubernetes 1.31 to 1.36".
func kubernetesWindow(talos *semver.Version) string {
	first, last, ok := supportedRange(func(minor uint64) bool {
		return kubernetesSupported(talos, semver.New(kubernetesMajor, minor, 0, "", ""))
	})
	if !ok {
		return "no Kubernetes version this Tollgate build knows"
	}
	return fmt.Sprintf("Kubernetes %d.%d to %d.%d", kubernetesMajor, first, kubernetesMajor, last)
}

// talosWindow describes the minors of Talos major talosMajor that support
// Kubernetes k8s, for messages: "Talos 1.12 to 1.13", or "" when none does.
func talosWindow(talosMajor uint64, k8s *semver.Version) string {
	first, last, ok := supportedRange(func(minor uint64) bool {
		return kubernetesSupported(semver.New(talosMajor, minor, 0, "", ""), k8s)
	})
	if !ok {
		return ""
	}
	if first == last {
		return fmt.Sprintf("Talos %d.%d", talosMajor, first)
	}
	return fmt.Sprintf("Talos %d.%d to %d.%d", talosMajor, first, talosMajor, last)
}

// supportedRange returns the first and last minor below probeMinors that
// supported accepts.
func supportedRange(supported func(minor uint64) bool) (first, last uint64, ok bool) {
	for minor := uint64(0); minor < probeMinors; minor++ {
		if !supported(minor) {
			continue
		}
		if !ok {
			first, ok = minor, true
		}
		last = minor
	}
	return first, last, ok
}
