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

package sandbox

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// daemonSetRolloutDelay is how long a DaemonSet of a workload takes to roll
// out a new generation on every node.
const daemonSetRolloutDelay = 300 * time.Millisecond

// rollOutDaemonSets stands in for the DaemonSet controller and the kubelets
// of a workload cluster, for the status of its DaemonSets (kube-proxy, which
// a simulated Talos node creates, and a Kubernetes upgrade updates): once a
// DaemonSet's generation has been observed for daemonSetRolloutDelay with a
// RollingUpdate strategy, its status says that every Node runs it, updated
// and available. An OnDelete DaemonSet never rolls out by itself. No Pod is
// made: the workload has no kubelet to run them.
func rollOutDaemonSets(ctx context.Context, c client.Client) {
	seen := map[client.ObjectKey]time.Time{}
	for ctx.Err() == nil {
		sets := &appsv1.DaemonSetList{}
		nodes := &corev1.NodeList{}
		if c.List(ctx, sets) == nil && c.List(ctx, nodes) == nil {
			for i := range sets.Items {
				rollOut(ctx, c, &sets.Items[i], int32(len(nodes.Items)), seen) //nolint:gosec // A handful of test Nodes.
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond): // Polling period, not a wait for a condition.
		}
	}
}

// rollOut rolls ds out on n nodes once its generation is old enough.
func rollOut(ctx context.Context, c client.Client, ds *appsv1.DaemonSet, n int32, seen map[client.ObjectKey]time.Time) {
	key := client.ObjectKeyFromObject(ds)
	st := ds.Status
	if st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled == n && st.UpdatedNumberScheduled == n && st.NumberAvailable == n {
		delete(seen, key)
		return
	}
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType && st.ObservedGeneration > 0 {
		return
	}
	first, ok := seen[key]
	if !ok {
		seen[key] = time.Now()
		return
	}
	if time.Since(first) < daemonSetRolloutDelay {
		return
	}
	before := ds.DeepCopy()
	ds.Status = appsv1.DaemonSetStatus{
		ObservedGeneration: ds.Generation, DesiredNumberScheduled: n, CurrentNumberScheduled: n,
		UpdatedNumberScheduled: n, NumberReady: n, NumberAvailable: n,
	}
	if c.Status().Patch(ctx, ds, client.MergeFrom(before)) == nil {
		delete(seen, key)
	}
}
