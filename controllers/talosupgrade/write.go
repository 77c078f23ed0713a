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

package talosupgrade

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// writeUpgrade writes what changed in u since s.base: metadata and spec,
// then status, each as a merge patch fenced by resourceVersion.
//
// The status of a TalosUpgrade is the write-ahead log of its Machines' state
// machines, so every write is fenced: a reconcile that started from a stale
// copy (a lagging cache, or a replica that lost its leadership) fails with a
// conflict instead of rewinding the log, and in particular before it makes
// the side effect whose intent it was about to record. CAPI's patch.Helper
// does not fence status patches, hence this helper.
//
// The patches are made with copies, so that u, and the pointers the caller
// holds into its status, are left as they are but for the new
// resourceVersion.
func writeUpgrade(ctx context.Context, c client.Client, s *scope) error {
	u := s.Upgrade
	base := s.base
	if !apiequality.Semantic.DeepEqual(base.ObjectMeta, u.ObjectMeta) || !apiequality.Semantic.DeepEqual(base.Spec, u.Spec) {
		patched := u.DeepCopy()
		if err := c.Patch(ctx, patched, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching TalosUpgrade %s: %w", client.ObjectKeyFromObject(u), err)
		}
		u.ResourceVersion, u.Generation = patched.ResourceVersion, patched.Generation
		base = base.DeepCopy()
		base.ObjectMeta, base.Spec = *u.ObjectMeta.DeepCopy(), *u.Spec.DeepCopy()
	}
	if !apiequality.Semantic.DeepEqual(base.Status, u.Status) && u.DeletionTimestamp.IsZero() {
		patched := u.DeepCopy()
		if err := c.Status().Patch(ctx, patched, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching the status of TalosUpgrade %s: %w", client.ObjectKeyFromObject(u), err)
		}
		u.ResourceVersion = patched.ResourceVersion
	}
	s.base = u.DeepCopy()
	return nil
}

// newBase records the state of u as read, for writeUpgrade.
func newBase(u *upgradev1.TalosUpgrade) *upgradev1.TalosUpgrade { return u.DeepCopy() }
