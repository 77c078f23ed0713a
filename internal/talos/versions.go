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
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"
)

// Version rule errors, to be tested with errors.Is. The wrapped message says
// what is wrong and what to do instead.
var (
	// ErrInvalidVersion is returned for a string that is not a semantic
	// version such as "v1.13.0".
	ErrInvalidVersion = errors.New("invalid version")
	// ErrDowngradeNotAllowed is returned for a downgrade that was not
	// explicitly allowed.
	ErrDowngradeNotAllowed = errors.New("downgrade not allowed")
	// ErrUnsupportedUpgradePath is returned when Talos does not support the
	// step between two versions (too many minors apart, denied version).
	ErrUnsupportedUpgradePath = errors.New("unsupported Talos upgrade path")
	// ErrKubernetesUnsupported is returned when a Kubernetes version is not
	// supported by a Talos version.
	ErrKubernetesUnsupported = errors.New("unsupported Kubernetes version for the Talos version")
	// ErrUnknownVersion is returned for a Talos version newer than the
	// compatibility rules this build knows, whose upgrade rules are unknown.
	ErrUnknownVersion = errors.New("the compatibility rules this Tollgate build knows do not cover")
)

// osImagePattern extracts the version from a Talos node's osImage, for
// example "Talos (v1.12.4)".
var osImagePattern = regexp.MustCompile(`^Talos \((v?[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*)\)$`)

// lifecycleAPIMinVersion is the first Talos version that installs upgrades
// through LifecycleService.Upgrade and no longer reboots by itself.
var lifecycleAPIMinVersion = semver.MustParse("1.13.0-0")

// ParseVersion parses a Talos or Kubernetes version: MAJOR.MINOR.PATCH with
// an optional "v" prefix, pre-release and build metadata, for example
// "v1.13.0" or "1.13.0-beta.1".
func ParseVersion(v string) (*semver.Version, error) {
	parsed, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w; use MAJOR.MINOR.PATCH such as \"v1.13.0\"", ErrInvalidVersion, v, err)
	}

	return parsed, nil
}

// CanonicalVersion returns v with exactly one "v" prefix, as Talos reports
// and tags versions: "1.13.0" becomes "v1.13.0".
func CanonicalVersion(v string) (string, error) {
	parsed, err := ParseVersion(v)
	if err != nil {
		return "", err
	}

	return "v" + parsed.String(), nil
}

// CompareVersions returns -1, 0 or +1 as a is older than, the same as or
// newer than b, by semantic version precedence.
func CompareVersions(a, b string) (int, error) {
	va, err := ParseVersion(a)
	if err != nil {
		return 0, err
	}

	vb, err := ParseVersion(b)
	if err != nil {
		return 0, err
	}

	return va.Compare(vb), nil
}

// IsStableRelease reports whether v is a stable release: a valid version
// with neither a pre-release part (alpha, beta, rc) nor build metadata, as
// Sidero Labs tags its releases. It is false for an invalid version. The
// one definition of "stable" for targets, upgrade paths and followed
// releases alike.
func IsStableRelease(v string) bool {
	parsed, err := ParseVersion(v)

	return err == nil && isStable(parsed)
}

func isStable(v *semver.Version) bool { return v.Prerelease() == "" && v.Metadata() == "" }

// VersionFromOSImage returns the Talos version in a node's osImage
// (status.nodeInfo.osImage), for example "v1.12.4" for "Talos (v1.12.4)", or
// "" when the image is not Talos or carries no version.
func VersionFromOSImage(osImage string) string {
	m := osImagePattern.FindStringSubmatch(strings.TrimSpace(osImage))
	if m == nil {
		return ""
	}

	return m[1]
}

// CheckKnown returns nil when the machinery compatibility rules this build
// was compiled with cover Talos v, or an error wrapping ErrInvalidVersion or
// ErrUnknownVersion: they cannot vouch for a Talos release newer than
// themselves, whose upgrade rules they do not know.
func CheckKnown(v string) error {
	parsed, err := ParseVersion(v)
	if err != nil {
		return err
	}

	if upgradeableFrom(parsed, parsed) != nil {
		return fmt.Errorf("%w Talos %s, so the upgrade cannot be vouched for: upgrade Tollgate, or pick an earlier Talos version", ErrUnknownVersion, v)
	}

	return nil
}

// UsesLifecycleAPI reports whether a node running version v installs upgrades
// through ImageService.Pull and LifecycleService.Upgrade (Talos 1.13 and
// later, pre-releases included) rather than the legacy MachineService.Upgrade.
func UsesLifecycleAPI(v string) (bool, error) {
	parsed, err := ParseVersion(v)
	if err != nil {
		return false, err
	}

	return !parsed.LessThan(lifecycleAPIMinVersion), nil
}

// Newer reports whether version a is later than b; false when either is not
// a version.
func Newer(a, b string) bool {
	cmp, err := CompareVersions(a, b)
	return err == nil && cmp > 0
}

// CheckUpgradeStep returns nil when a node running from may move to to in one
// step: the same version, an upgrade Talos supports, or a downgrade Talos
// supports when allowDowngrade is set. Otherwise it returns an error wrapping
// ErrInvalidVersion, ErrDowngradeNotAllowed or ErrUnsupportedUpgradePath
// whose message names an intermediate version when one exists.
func CheckUpgradeStep(from, to string, allowDowngrade bool) error {
	vFrom, err := ParseVersion(from)
	if err != nil {
		return err
	}

	vTo, err := ParseVersion(to)
	if err != nil {
		return err
	}

	switch cmp := vTo.Compare(vFrom); {
	case cmp == 0:
		return nil
	case cmp < 0 && !allowDowngrade:
		return fmt.Errorf("%w: %s is older than the running %s; set allowDowngrade to downgrade", ErrDowngradeNotAllowed, to, from)
	}

	if err := upgradeableFrom(vFrom, vTo); err != nil {
		msg := err.Error()
		if step := SuggestIntermediate(from, to); step != "" {
			msg += "; upgrade to " + step + " first"
		}

		return fmt.Errorf("%w from %s to %s: %s", ErrUnsupportedUpgradePath, from, to, msg)
	}

	return nil
}

// SuggestIntermediate returns the newest Talos minor release, as "vX.Y",
// that a node running from can be upgraded to directly on the way to to, or
// "" when from can go to to directly or no release lies between them.
// Upgrading to the latest patch of that minor is the first step of the path.
func SuggestIntermediate(from, to string) string {
	vFrom, err := ParseVersion(from)
	if err != nil {
		return ""
	}

	vTo, err := ParseVersion(to)
	if err != nil || !vFrom.LessThan(vTo) || upgradeableFrom(vFrom, vTo) == nil {
		return ""
	}

	if vTo.Major() != vFrom.Major() {
		return ""
	}

	for minor := vTo.Minor() - 1; minor > vFrom.Minor(); minor-- {
		step := semver.New(vTo.Major(), minor, 0, "", "")
		if upgradeableFrom(vFrom, step) == nil {
			return fmt.Sprintf("v%d.%d", step.Major(), step.Minor())
		}
	}

	return ""
}

// CheckKubernetesSupported returns nil when Talos talosVersion supports
// Kubernetes k8sVersion, or an error wrapping ErrInvalidVersion or
// ErrKubernetesUnsupported.
func CheckKubernetesSupported(talosVersion, k8sVersion string) error {
	vTalos, err := ParseVersion(talosVersion)
	if err != nil {
		return err
	}

	vK8s, err := ParseVersion(k8sVersion)
	if err != nil {
		return err
	}

	target, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: "v" + vTalos.String()})
	if err != nil {
		return fmt.Errorf("%w %q: %w", ErrInvalidVersion, talosVersion, err)
	}

	k8s, err := compatibility.ParseKubernetesVersion(vK8s.String())
	if err != nil {
		return fmt.Errorf("%w %q: %w", ErrInvalidVersion, k8sVersion, err)
	}

	if err := k8s.SupportedWith(target); err != nil {
		return fmt.Errorf("%w: %w; upgrade Kubernetes first or choose another Talos version", ErrKubernetesUnsupported, err)
	}

	return nil
}

// upgradeableFrom asks the machinery compatibility rules whether a node on
// host can move to target.
func upgradeableFrom(host, target *semver.Version) error {
	h, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: "v" + host.String()})
	if err != nil {
		return err
	}

	t, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: "v" + target.String()})
	if err != nil {
		return err
	}

	return t.UpgradeableFrom(h)
}

// SameVersion reports whether a and b name the same version, with or without
// their "v" prefix: "v1.13.0" and "1.13.0" do, and so do "v1.36.0+k3s1" and
// "v1.36.0" (build metadata is not a version's precedence); a pre-release is
// not its release. Versions that do not parse are the same only when their
// text is, and "" is never the same as anything: an unknown version is not
// the target. It is the one "same version" of Tollgate, for Talos and
// Kubernetes versions alike: a caller for which two unset versions are the
// same target says so itself.
func SameVersion(a, b string) bool {
	cmp, err := CompareVersions(a, b)
	if err != nil {
		return a != "" && a == b
	}

	return cmp == 0
}
