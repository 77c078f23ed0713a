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

package sampler

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// retryPeriod is how long Watch waits before it opens again a watch the
// apiserver refused.
const retryPeriod = 100 * time.Millisecond

// Watch calls observe with every object of list's kind that c reports, and
// whether it was deleted, until ctx ends: first as the watch's initial
// events, then as they change. A watch that ends is opened again from the
// last resourceVersion observed; one the apiserver refuses (that version
// too old, or the apiserver away) from the current state. observe runs on
// one goroutine, one object at a time. Watch returns once the first watch
// is open (or ctx ended), so that no change made after it returns is
// missed.
func Watch(ctx context.Context, c client.WithWatch, list client.ObjectList, observe func(obj client.Object, deleted bool), opts ...client.ListOption) {
	opened := make(chan struct{})
	go func() {
		defer closeOnce(opened)
		rv := ""
		for ctx.Err() == nil {
			lo := (&client.ListOptions{}).ApplyOptions(opts)
			lo.Raw = &metav1.ListOptions{ResourceVersion: rv}
			w, err := c.Watch(ctx, list, lo)
			if err != nil {
				rv = ""
				time.Sleep(retryPeriod) // Retry period, not a wait for a condition.
				continue
			}
			closeOnce(opened)
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if ev.Type == watch.Error || !ok {
					// An expired resourceVersion, most likely: from the
					// current state.
					rv = ""
					break
				}
				rv = obj.GetResourceVersion()
				if ev.Type != watch.Bookmark {
					observe(obj, ev.Type == watch.Deleted)
				}
			}
			w.Stop()
		}
	}()
	<-opened
}

// closeOnce closes ch unless it is closed.
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// Disruptions is what Nodes records: the most Nodes disrupted at once and
// the order they were first disrupted in. Its methods may be called while
// it records.
type Disruptions struct {
	isControlPlane func(*corev1.Node) bool

	mu sync.Mutex
	// now says, per Node, whether it is disrupted, and controlPlanes which
	// Nodes are control-plane ones.
	now, controlPlanes          map[string]bool
	maxControlPlane, maxWorkers int
	maxTotal                    int
	order                       []string
}

// Nodes watches the Nodes of the workload cluster c until ctx ends, from
// the moment it returns; a Node is a control-plane one where
// isControlPlane says so.
func Nodes(ctx context.Context, c client.WithWatch, isControlPlane func(*corev1.Node) bool) *Disruptions {
	d := &Disruptions{isControlPlane: isControlPlane, now: map[string]bool{}, controlPlanes: map[string]bool{}}
	Watch(ctx, c, &corev1.NodeList{}, func(obj client.Object, deleted bool) {
		if n, ok := obj.(*corev1.Node); ok {
			d.observe(n, deleted)
		}
	})
	return d
}

// Disrupted says whether a Node is cordoned or not Ready.
func Disrupted(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (d *Disruptions) observe(n *corev1.Node, deleted bool) {
	disrupted := !deleted && Disrupted(n)
	d.mu.Lock()
	defer d.mu.Unlock()
	if disrupted && !d.now[n.Name] && !slices.Contains(d.order, n.Name) {
		d.order = append(d.order, n.Name)
	}
	d.now[n.Name] = disrupted
	d.controlPlanes[n.Name] = d.isControlPlane(n)
	cp, workers := 0, 0
	for name, disrupted := range d.now {
		switch {
		case !disrupted:
		case d.controlPlanes[name]:
			cp++
		default:
			workers++
		}
	}
	d.maxControlPlane, d.maxWorkers, d.maxTotal = max(d.maxControlPlane, cp), max(d.maxWorkers, workers), max(d.maxTotal, cp+workers)
}

// Max returns the most control-plane Nodes, workers and Nodes in all
// disrupted at once so far.
func (d *Disruptions) Max() (controlPlane, workers, total int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.maxControlPlane, d.maxWorkers, d.maxTotal
}

// Order returns the Nodes disrupted so far, in the order they were first
// disrupted.
func (d *Disruptions) Order() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.order...)
}
