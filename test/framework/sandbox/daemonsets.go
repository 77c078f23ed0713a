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
	"k8s.io/apimachinery/pkg/watch"
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
// made: the workload has no kubelet to run them. As the DaemonSet controller,
// it acts when a DaemonSet or a Node changes (c's watches, when c can watch)
// and when a rollout's delay ends, and lists nothing in between; with a
// client that cannot watch, it polls.
func rollOutDaemonSets(ctx context.Context, c client.Client) {
	wc, _ := c.(client.WithWatch)
	var sets, nodes watch.Interface
	defer func() {
		for _, w := range []watch.Interface{sets, nodes} {
			if w != nil {
				w.Stop()
			}
		}
	}()
	seen := map[client.ObjectKey]time.Time{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for ctx.Err() == nil {
		if wc != nil && sets == nil {
			if w, err := wc.Watch(ctx, &appsv1.DaemonSetList{}); err == nil {
				sets = w
			}
		}
		if wc != nil && nodes == nil {
			if w, err := wc.Watch(ctx, &corev1.NodeList{}); err == nil {
				nodes = w
			}
		}
		wake := daemonSetPollInterval
		list := &appsv1.DaemonSetList{}
		nodeList := &corev1.NodeList{}
		if c.List(ctx, list) == nil && c.List(ctx, nodeList) == nil && sets != nil && nodes != nil {
			wake = -1
			for i := range list.Items {
				if w := rollOut(ctx, c, &list.Items[i], int32(len(nodeList.Items)), seen); w >= 0 && (wake < 0 || w < wake) { //nolint:gosec // A handful of test Nodes.
					wake = w
				}
			}
		}
		if wake >= 0 {
			timer.Reset(wake)
		}
		var setEvents, nodeEvents <-chan watch.Event
		if sets != nil {
			setEvents = sets.ResultChan()
		}
		if nodes != nil {
			nodeEvents = nodes.ResultChan()
		}
		select {
		case <-ctx.Done():
		case <-timer.C:
		case _, open := <-setEvents:
			if !open {
				sets = nil
			}
		case _, open := <-nodeEvents:
			if !open {
				nodes = nil
			}
		}
		timer.Stop()
	}
}

// daemonSetPollInterval is how often rollOutDaemonSets lists when it cannot
// watch.
const daemonSetPollInterval = 100 * time.Millisecond

// rollOut rolls ds out on n nodes once its generation is old enough. It
// returns how long until it should look at ds again without a change of
// ds or of the Nodes: -1 when ds is rolled out or waits for no delay.
func rollOut(ctx context.Context, c client.Client, ds *appsv1.DaemonSet, n int32, seen map[client.ObjectKey]time.Time) time.Duration {
	key := client.ObjectKeyFromObject(ds)
	st := ds.Status
	if st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled == n && st.UpdatedNumberScheduled == n && st.NumberAvailable == n {
		delete(seen, key)
		return -1
	}
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType && st.ObservedGeneration > 0 {
		return -1
	}
	first, ok := seen[key]
	if !ok {
		seen[key] = time.Now()
		return daemonSetRolloutDelay
	}
	if wait := daemonSetRolloutDelay - time.Since(first); wait > 0 {
		return wait
	}
	before := ds.DeepCopy()
	ds.Status = appsv1.DaemonSetStatus{
		ObservedGeneration: ds.Generation, DesiredNumberScheduled: n, CurrentNumberScheduled: n,
		UpdatedNumberScheduled: n, NumberReady: n, NumberAvailable: n,
	}
	if err := c.Status().Patch(ctx, ds, client.MergeFrom(before)); err != nil {
		return daemonSetPollInterval // Retried.
	}
	delete(seen, key)
	return -1
}
