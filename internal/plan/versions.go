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

package plan

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

// The version rules themselves (upgrade step, downgrade, Kubernetes support,
// pre-release) live in package talos, over the machinery compatibility
// package; the helpers below only add what the plan rules need on top.

// osImagePattern extracts the version from a Talos node's osImage, for
// example "Talos (v1.12.4)".
var osImagePattern = regexp.MustCompile(`^Talos \((v?[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*)\)$`)

// talosVersionFromOSImage returns the Talos version in a node's osImage, or
// "" when the image is not Talos or carries no version.
func talosVersionFromOSImage(osImage string) string {
	m := osImagePattern.FindStringSubmatch(strings.TrimSpace(osImage))
	if m == nil {
		return ""
	}
	return m[1]
}

// knownTarget reports whether the compatibility package knows the minor
// version of target, a valid version: it cannot vouch for a Talos release
// newer than itself, whose upgrade rules it does not know.
func knownTarget(target string) bool {
	canonical, err := talos.CanonicalVersion(target)
	if err != nil {
		return false
	}
	t, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: canonical})
	return err == nil && t.UpgradeableFrom(t) == nil
}

// errUnknownTarget says that target is newer than the compatibility data.
func errUnknownTarget(target string) error {
	return fmt.Errorf("the compatibility rules this Tollgate build knows do not cover Talos %s, so the upgrade cannot be vouched for: upgrade Tollgate, or pick an earlier Talos version", target)
}
