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
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeletionHookAnnotation is Tollgate's CAPI pre-drain deletion hook: kept on
// every Machine of a Cluster that opted in to a policy, it makes CAPI's
// Machine controller wait, when it deletes the Machine, until Tollgate
// removes it (once the Machine's preRemoval hooks ran, the health checks
// pass and the disruption budget has room, or its removal timeout passed).
// Its value says so to whoever reads the Machine.
const DeletionHookAnnotation = clusterv1.PreDrainDeleteHookAnnotationPrefix + "/tollgate"

// deletionHookValue is the value of DeletionHookAnnotation.
const deletionHookValue = "Tollgate gates the removal of this Machine (see the TalosUpgrade of its Cluster)"

// HasDeletionHook reports whether m carries Tollgate's deletion hook.
func HasDeletionHook(m *clusterv1.Machine) bool {
	_, ok := m.Annotations[DeletionHookAnnotation]
	return ok
}

// SetDeletionHook adds Tollgate's deletion hook to m, with a merge patch of
// that one key, and refreshes m from the answer.
func SetDeletionHook(ctx context.Context, c client.Client, m *clusterv1.Machine) error {
	v := deletionHookValue
	if err := patchAnnotation(ctx, c, m, DeletionHookAnnotation, &v); err != nil {
		return fmt.Errorf("adding the deletion hook %s to Machine %s: %w", DeletionHookAnnotation, klog.KObj(m), err)
	}
	return nil
}

// ReleaseDeletionHook removes Tollgate's deletion hook from m, and only it:
// CAPI drains and deletes a deleting Machine once no other owner's hook is
// left. It refreshes m from the answer.
func ReleaseDeletionHook(ctx context.Context, c client.Client, m *clusterv1.Machine) error {
	if err := patchAnnotation(ctx, c, m, DeletionHookAnnotation, nil); err != nil {
		return fmt.Errorf("removing the deletion hook %s from Machine %s: %w", DeletionHookAnnotation, klog.KObj(m), err)
	}
	return nil
}

// patchAnnotation sets key to value on m, or removes it when value is nil,
// with a JSON merge patch of that key alone.
func patchAnnotation(ctx context.Context, c client.Client, m *clusterv1.Machine, key string, value *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{key: value}}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, m, client.RawPatch(types.MergePatchType, patch))
}
