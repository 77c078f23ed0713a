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

package hooks

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/annotations"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const (
	// PreDrainHookAnnotationPrefix is the prefix of the annotations that hold
	// a Machine before its node is cordoned.
	PreDrainHookAnnotationPrefix = "pre-drain.upgrade.hook.tollgate.dev"

	// PreRebootHookAnnotationPrefix is the prefix of the annotations that
	// hold a Machine once its new image is installed and its node drained,
	// before the reboot.
	PreRebootHookAnnotationPrefix = "pre-reboot.upgrade.hook.tollgate.dev"

	// PostUpgradeHookAnnotationPrefix is the prefix of the annotations that
	// hold a Machine once its node is back Ready on the target version,
	// before the Machine counts as upgraded.
	PostUpgradeHookAnnotationPrefix = "post-upgrade.upgrade.hook.tollgate.dev"
)

// AnnotationPrefix returns the annotation prefix of a hold point, or "" for
// a point Tollgate does not know.
func AnnotationPrefix(point upgradev1.HoldPoint) string {
	switch point {
	case upgradev1.HoldPointPreDrain:
		return PreDrainHookAnnotationPrefix
	case upgradev1.HoldPointPreReboot:
		return PreRebootHookAnnotationPrefix
	case upgradev1.HoldPointPostUpgrade:
		return PostUpgradeHookAnnotationPrefix
	default:
		return ""
	}
}

// HoldAnnotation returns the key of owner's hold at point, for example
// "pre-drain.upgrade.hook.tollgate.dev/backup-operator".
func HoldAnnotation(point upgradev1.HoldPoint, owner string) string {
	return AnnotationPrefix(point) + "/" + owner
}

// Holds returns the owners, sorted, of the holds on obj (a CAPI Machine) at
// point: the name part of every annotation key <prefix>/<owner>. It returns
// nil when nothing holds the point.
func Holds(obj metav1.Object, point upgradev1.HoldPoint) []string {
	prefix := AnnotationPrefix(point)
	if prefix == "" {
		return nil
	}
	prefix += "/"
	if !annotations.HasWithPrefix(prefix, obj.GetAnnotations()) {
		return nil
	}
	var owners []string
	for key := range obj.GetAnnotations() {
		if owner, ok := strings.CutPrefix(key, prefix); ok && owner != "" {
			owners = append(owners, owner)
		}
	}
	slices.Sort(owners)
	return owners
}

// HeldMessage says, in the words of TalosUpgrade.status.blockedBy, that
// machine waits at point for owners, for example
// `machine "cp-0" held at preDrain by "backup-operator"`.
func HeldMessage(machine string, point upgradev1.HoldPoint, owners []string) string {
	quoted := make([]string, 0, len(owners))
	for _, o := range owners {
		quoted = append(quoted, fmt.Sprintf("%q", o))
	}
	return fmt.Sprintf("machine %q held at %s by %s", machine, point, strings.Join(quoted, ", "))
}
