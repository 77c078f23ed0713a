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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// reconcileCluster reads the Cluster and the policy. It stops the reconcile
// while the Cluster is missing or paused: a paused Cluster is never touched,
// not even to move a Machine in flight on.
func (r *Reconciler) reconcileCluster(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.readCluster(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.Cluster == nil {
		s.stop = true
		s.block(upgradev1.ClusterNotFoundReason, fmt.Sprintf("Cluster %q not found", s.Upgrade.Spec.ClusterName))
		return ctrl.Result{}, nil
	}
	if reason, msg := s.Pause(); reason == upgradev1.ClusterPausedReason {
		s.stop = true
		s.block(reason, msg)
		// The reconcile ends here: nothing acts on the Cluster any more, and
		// clusterctl move, which pauses it first, may copy the rollout. The
		// copy of the write-ahead log that move keeps (LogAnnotation, as it
		// drops the status) is written in the same patch that lets it move.
		delete(s.Upgrade.Annotations, clusterctlv1.BlockMoveAnnotation)
		syncLog(s.Upgrade)
		return ctrl.Result{}, nil
	}
	// A reconcile of an unpaused Cluster may be taking a step: clusterctl
	// move waits until the controller has seen the pause (above), so that
	// it never copies a write-ahead log a step is about to extend.
	if _, ok := s.Upgrade.Annotations[clusterctlv1.BlockMoveAnnotation]; !ok {
		if s.Upgrade.Annotations == nil {
			s.Upgrade.Annotations = map[string]string{}
		}
		s.Upgrade.Annotations[clusterctlv1.BlockMoveAnnotation] = "tollgate"
	}
	// The copy of the log made at the last pause goes stale from the first
	// step on: it goes once the status read from the apiserver holds the
	// log (after a move, once the restored records are written).
	if _, ok := s.Upgrade.Annotations[LogAnnotation]; ok && hasLog(&s.base.Status) {
		delete(s.Upgrade.Annotations, LogAnnotation)
	}
	return ctrl.Result{}, nil
}

// readCluster fills s.Cluster (nil when the Cluster does not exist) and
// s.Policy (nil when the policy does not exist).
func (r *Reconciler) readCluster(ctx context.Context, s *scope) error {
	cluster := &clusterv1.Cluster{}
	key := client.ObjectKey{Namespace: s.Upgrade.Namespace, Name: s.Upgrade.Spec.ClusterName}
	if err := r.Client.Get(ctx, key, cluster); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading Cluster %s: %w", key, err)
		}
	} else {
		s.Cluster = cluster
	}
	policy := &upgradev1.TalosUpgradePolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Upgrade.Namespace, Name: s.Upgrade.Spec.PolicyName}, policy); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading TalosUpgradePolicy %q: %w", s.Upgrade.Spec.PolicyName, err)
		}
	} else {
		s.Policy = policy
	}
	return nil
}
