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
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/drain"
)

// disrupt makes sure the Machine is protected from remediation and its node
// cordoned, as recorded in st, both at once: they are requests to two
// clusters that do not wait on each other, and the node reboots only after
// both succeeded. Both are idempotent.
func (r *Reconciler) disrupt(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) error {
	var annotationErr, cordonErr error
	var wg sync.WaitGroup
	if st.SkipRemediationSet && !hasAnnotation(m, clusterv1.MachineSkipRemediationAnnotation) {
		wg.Go(func() { annotationErr = r.patchSkipRemediation(ctx, m, true) })
	}
	if st.Cordoned && st.Node != "" && s.workload != nil {
		wg.Go(func() {
			cs, err := r.clientset(ctx, s)
			if err != nil {
				cordonErr = err
				return
			}
			if err := drain.Cordon(ctx, cs, st.Node); err != nil {
				cordonErr = fmt.Errorf("cordoning node %q: %w", st.Node, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(annotationErr, cordonErr)
}

// release uncordons the node if Tollgate cordoned it and removes the
// skip-remediation annotation if Tollgate added it, both at once: they are
// requests to two clusters that do not wait on each other.
func (r *Reconciler) release(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus) error {
	var uncordonErr, annotationErr error
	var wg sync.WaitGroup
	if st.Cordoned && s.workload != nil && st.Node != "" {
		wg.Go(func() {
			cs, err := r.clientset(ctx, s)
			if err != nil {
				uncordonErr = err
				return
			}
			if err := drain.Uncordon(ctx, cs, st.Node); err != nil && !apierrors.IsNotFound(err) {
				uncordonErr = fmt.Errorf("uncordoning node %q: %w", st.Node, err)
				return
			}
			st.Cordoned = false
		})
	}
	if st.SkipRemediationSet {
		wg.Go(func() {
			// Removed whatever the cache says: it may lag the annotation's
			// last write.
			if m, ok := s.Machines[st.Machine]; ok {
				if err := r.patchSkipRemediation(ctx, m, false); err != nil {
					annotationErr = err
					return
				}
			}
			st.SkipRemediationSet = false
		})
	}
	wg.Wait()
	return errors.Join(uncordonErr, annotationErr)
}

// patchSkipRemediation adds or removes the skip-remediation annotation of a
// Machine.
func (r *Reconciler) patchSkipRemediation(ctx context.Context, m *clusterv1.Machine, add bool) error {
	key := clusterv1.MachineSkipRemediationAnnotation
	// An explicit merge patch, not a diff against m: m comes from the cache,
	// which may not have seen the annotation Tollgate set a moment ago, and a
	// diff would then remove nothing.
	var value any // null removes the key.
	if add {
		value = ""
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, m, client.RawPatch(types.MergePatchType, body)); err != nil && (add || !apierrors.IsNotFound(err)) {
		return fmt.Errorf("patching the %s annotation of Machine %q: %w", key, m.Name, err)
	}
	return nil
}

// persist writes the status now, before a side effect whose intent it
// records. It fails when the TalosUpgrade changed since it was read, and then
// the side effect is not made.
func (r *Reconciler) persist(ctx context.Context, s *scope) error {
	r.updateStatus(s)
	if err := writeUpgrade(ctx, r.Client, s); err != nil {
		return fmt.Errorf("persisting the intent before a side effect: %w", err)
	}
	return nil
}

func hasAnnotation(o metav1.Object, key string) bool {
	_, ok := o.GetAnnotations()[key]
	return ok
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// requeueAfter returns a result that requeues after d, at least a second.
func requeueAfter(d time.Duration) ctrl.Result {
	if d <= 0 {
		d = time.Second
	}
	return ctrl.Result{RequeueAfter: d}
}

// requeueIfSet returns a result that requeues after d, or none when d is 0.
func requeueIfSet(d time.Duration) ctrl.Result {
	if d <= 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: d}
}
