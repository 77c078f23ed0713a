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

	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// This file answers "when does Tollgate talk to a workload cluster": only
// while a rollout needs it. The ClusterCache connects to the Clusters that
// carry upgradev1.WorkloadConnectionAnnotation (see WorkloadConnectionFilter)
// and to no other; this controller sets the annotation when a rollout needs
// its workload cluster and removes it once its clean-up there is done, so
// that the connections of a fleet are bounded by its rollouts at work, not
// by its size.
//
// Tollgate touches a workload cluster only through that connection, so a
// Cluster without the annotation has nothing of Tollgate's in its workload
// cluster: no cordon, no Job. The annotation is removed only after the
// clean-up, and it travels with the Cluster through clusterctl move.

// WorkloadConnectionFilter is the ClusterCache's ClusterFilter: it connects
// to the workload clusters of the Clusters whose rollout needs them.
func WorkloadConnectionFilter(cluster *clusterv1.Cluster) bool {
	_, ok := cluster.Annotations[upgradev1.WorkloadConnectionAnnotation]
	return ok
}

// reconcileConnection asks for the workload connection when the rollout
// needs it; the ClusterCache connects on the Cluster's change and sends an
// event when it has.
func (r *Reconciler) reconcileConnection(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.NeedsWorkload() || s.Connected() {
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Connecting to the workload cluster")
	return ctrl.Result{}, r.setConnectionAnnotation(ctx, s, true)
}

// reconcileDisconnect gives the workload connection back once the rollout
// no longer needs it (it ended, or is paused with no Machine in flight):
// every Job of the rollout is deleted first, whatever it was running (a
// health check, a hook), and any cordon left is undone; then the clean-up
// is recorded, the annotation goes and the ClusterCache disconnects. This
// is the one place a rollout's Jobs are cleaned up while it lives (see
// releaseAll). While the workload cluster cannot be reached, the connection
// is kept, so that the clean-up runs once it can.
func (r *Reconciler) reconcileDisconnect(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.NeedsWorkload() || !s.Connected() || s.workload == nil {
		return ctrl.Result{}, nil
	}
	if err := r.releaseAll(ctx, s); err != nil {
		return ctrl.Result{}, fmt.Errorf("cleaning up the workload cluster before disconnecting: %w", err)
	}
	// What the clean-up undid is on record before the connection goes: a
	// record left saying that a node is cordoned (a write that failed, say
	// on the conflict with the policy taking its slot back) would ask for the
	// connection again, to undo it once more.
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, fmt.Errorf("recording the clean-up before disconnecting: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Disconnecting from the workload cluster: the rollout no longer needs it")
	return ctrl.Result{}, r.setConnectionAnnotation(ctx, s, false)
}

// setConnectionAnnotation adds or removes the workload connection
// annotation on the Cluster, with a merge patch that touches no other key.
func (r *Reconciler) setConnectionAnnotation(ctx context.Context, s *scope, connect bool) error {
	before := s.Cluster.DeepCopy()
	if connect {
		if s.Cluster.Annotations == nil {
			s.Cluster.Annotations = map[string]string{}
		}
		s.Cluster.Annotations[upgradev1.WorkloadConnectionAnnotation] = s.Upgrade.Name
	} else {
		delete(s.Cluster.Annotations, upgradev1.WorkloadConnectionAnnotation)
	}
	if err := r.Client.Patch(ctx, s.Cluster, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("setting annotation %s on Cluster %s: %w", upgradev1.WorkloadConnectionAnnotation, klog.KObj(s.Cluster), err)
	}
	return nil
}
