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
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/drain"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

// reconcileWorkload gets the clients of the workload cluster and watches its
// Nodes and Jobs, when the rollout holds the workload connection (see
// connection.go). While it cannot be reached, no new Machine starts and the
// Machines in flight wait; the ClusterCache sends an event when it connects.
func (r *Reconciler) reconcileWorkload(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.Connected() {
		return ctrl.Result{}, nil // The start gate says why no Machine starts.
	}
	key := client.ObjectKeyFromObject(s.Cluster)
	c, err := r.ClusterCache.GetClient(ctx, key)
	if err != nil {
		if errors.Is(err, clustercache.ErrClusterNotConnected) {
			s.block(upgradev1.WorkloadAPINotReadyReason, fmt.Sprintf("workload cluster %q is not reachable yet", s.Cluster.Name))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("connecting to the workload cluster of %s: %w", klog.KObj(s.Cluster), err)
	}
	if err := r.watchWorkload(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the Nodes of the workload cluster of %s: %w", klog.KObj(s.Cluster), err)
	}
	s.workload, s.Reachable = c, true
	s.Nodes = make(map[string]disruption.NodeState, len(nodes.Items))
	for i := range nodes.Items {
		s.Nodes[nodes.Items[i].Name] = nodeState(&nodes.Items[i])
	}
	return ctrl.Result{}, nil
}

// nodeState says where a workload Node stands: NotReady, cordoned (by
// Tollgate, CAPI's drain or anyone), or Ready.
func nodeState(n *corev1.Node) disruption.NodeState {
	switch {
	case !disruption.NodeReady(n):
		return disruption.NodeNotReady
	case n.Spec.Unschedulable:
		return disruption.NodeCordoned
	}
	return disruption.NodeUp
}

// watchWorkload makes sure the controller watches the workload Nodes and
// Tollgate's Jobs of the Cluster.
func (r *Reconciler) watchWorkload(ctx context.Context, s *scope) error {
	if r.controller == nil {
		return nil
	}
	key := client.ObjectKeyFromObject(s.Cluster)
	toUpgrade := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(s.Upgrade)}}
	})
	for _, w := range []clustercache.WatcherOptions{
		{Name: "talosupgrade-watch-nodes", Watcher: r.controller, Kind: &corev1.Node{}, EventHandler: toUpgrade, Predicates: []predicate.Predicate{nodeChanged}},
		{Name: "talosupgrade-watch-jobs", Watcher: r.controller, Kind: &batchv1.Job{}, EventHandler: toUpgrade, Predicates: []predicate.Predicate{jobsOf(s.Cluster.Name)}},
	} {
		if err := r.ClusterCache.Watch(ctx, key, clustercache.NewWatcher(w)); err != nil {
			return fmt.Errorf("watching %T in the workload cluster: %w", w.Kind, err)
		}
	}
	return nil
}

// clientset returns a clientset of the workload cluster for the drain,
// created once per reconcile and only when a Machine is disrupted.
func (r *Reconciler) clientset(ctx context.Context, s *scope) (kubernetes.Interface, error) {
	s.clientsetMu.Lock()
	defer s.clientsetMu.Unlock()
	if s.clientset != nil {
		return s.clientset, nil
	}
	cfg, err := r.ClusterCache.GetRESTConfig(ctx, client.ObjectKeyFromObject(s.Cluster))
	if err != nil {
		return nil, fmt.Errorf("getting the REST config of the workload cluster: %w", err)
	}
	if s.clientset, err = drain.NewClientset(cfg); err != nil {
		return nil, err
	}
	return s.clientset, nil
}

// nodeChanged passes the Node events a rollout acts on: a Node added or
// removed, its readiness, schedulability, OS image or kubelet version
// changed. Heartbeats and other status updates are dropped, so an idle fleet
// costs no reconcile.
var nodeChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldNode, okOld := e.ObjectOld.(*corev1.Node)
		newNode, okNew := e.ObjectNew.(*corev1.Node)
		if !okOld || !okNew {
			return true
		}
		return disruption.NodeReady(oldNode) != disruption.NodeReady(newNode) ||
			oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable ||
			oldNode.Status.NodeInfo.OSImage != newNode.Status.NodeInfo.OSImage ||
			oldNode.Status.NodeInfo.KubeletVersion != newNode.Status.NodeInfo.KubeletVersion
	},
}

// jobsOf passes the events of the Jobs Tollgate runs for the Cluster
// clusterName (health checks and hooks, by their labels): the other Jobs of
// the workload cluster (its users' Jobs and CronJobs) are none of a
// rollout's business, and would otherwise reconcile it at their every change.
func jobsOf(clusterName string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		l := o.GetLabels()
		return l[workloadjob.ManagedByLabel] == workloadjob.ManagedByValue && l[workloadjob.ClusterLabel] == workloadjob.LabelValue(clusterName)
	})
}
