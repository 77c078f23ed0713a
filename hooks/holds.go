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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// errUnknownHoldPoint is returned for a hold at a point Tollgate does not
// know.
var errUnknownHoldPoint = errors.New("unknown hold point")

// SetHold holds machine at point on behalf of owner, for example a backup
// operator before a node goes down: it sets owner's hold annotation, whose
// value is reason (free text for whoever reads the Machine). It patches that
// one annotation and nothing else, so that owners never overwrite each
// other, and refreshes machine from the answer.
func SetHold(ctx context.Context, c client.Client, machine *clusterv1.Machine, point upgradev1.HoldPoint, owner, reason string) error {
	if err := patchHold(ctx, c, machine, point, owner, &reason); err != nil {
		return fmt.Errorf("holding Machine %s at %s for %q: %w", klog.KObj(machine), point, owner, err)
	}
	return nil
}

// ReleaseHold removes owner's hold of machine at point, and only that one:
// the Machine goes on once no other owner holds it there. Releasing a hold
// that is not there does nothing. It refreshes machine from the answer.
func ReleaseHold(ctx context.Context, c client.Client, machine *clusterv1.Machine, point upgradev1.HoldPoint, owner string) error {
	if err := patchHold(ctx, c, machine, point, owner, nil); err != nil {
		return fmt.Errorf("releasing the hold of %q on Machine %s at %s: %w", owner, klog.KObj(machine), point, err)
	}
	return nil
}

// patchHold sets owner's hold annotation at point to value, or removes it
// when value is nil, with a JSON merge patch of that key alone: a patch
// computed from a copy of the Machine would drop the annotations others
// added since the copy was read.
func patchHold(ctx context.Context, c client.Client, machine *clusterv1.Machine, point upgradev1.HoldPoint, owner string, value *string) error {
	key, err := holdKey(point, owner)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{key: value}}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, machine, client.RawPatch(types.MergePatchType, patch))
}

// holdKey returns the annotation key of owner's hold at point, checked to be
// a valid annotation key.
func holdKey(point upgradev1.HoldPoint, owner string) (string, error) {
	if AnnotationPrefix(point) == "" {
		return "", fmt.Errorf("%w %q: use preDrain, preReboot or postUpgrade", errUnknownHoldPoint, point)
	}
	key := HoldAnnotation(point, owner)
	if msgs := validation.IsQualifiedName(key); owner == "" || len(msgs) > 0 {
		return "", fmt.Errorf("owner %q does not make a valid annotation key %q: %s", owner, key, strings.Join(msgs, "; "))
	}
	return key, nil
}
