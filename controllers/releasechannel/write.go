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

package releasechannel

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// write writes the status of ch, changed since base, as a merge patch
// fenced by resourceVersion, then the copy of its record in LogAnnotation
// when it differs from the record written.
//
// The status of a channel is the durable record of its promotions, so its
// writes are fenced: a reconcile that started from a stale copy (a lagging
// cache, a replica that lost its leadership) fails with a conflict rather
// than writing the same transition again with a later timestamp (a gate
// opened twice, a soak restarted, a measurement counted twice). The events
// of a plan are recorded only once its write succeeded. CAPI's
// patch.Helper does not fence status patches, hence this helper.
func (r *Reconciler) write(ctx context.Context, base, ch *upgradev1.ReleaseChannel) error {
	if !apiequality.Semantic.DeepEqual(base.Status, ch.Status) {
		patched := ch.DeepCopy()
		if err := r.Client.Status().Patch(ctx, patched, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching the status of ReleaseChannel %s: %w", ch.Name, err)
		}
		ch.ResourceVersion = patched.ResourceVersion
	}
	log := promotionLog(ch)
	if ch.Annotations[LogAnnotation] == log || (log == "null" && ch.Annotations[LogAnnotation] == "") {
		return nil
	}
	before := ch.DeepCopy()
	writeLog(ch, log)
	patched := ch.DeepCopy()
	if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("writing the %s annotation of ReleaseChannel %s: %w", LogAnnotation, ch.Name, err)
	}
	ch.ResourceVersion = patched.ResourceVersion
	return nil
}
