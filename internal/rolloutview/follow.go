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

package rolloutview

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// rewatchDelay is how long Follow waits before it opens a watch again that
// the apiserver closed, so that a watch closed at once does not spin.
const rewatchDelay = 200 * time.Millisecond

// FollowOptions says what Follow watches.
type FollowOptions struct {
	// Namespace and Cluster name the CAPI Cluster.
	Namespace, Cluster string

	// Upgrade is the name of the Cluster's TalosUpgrade; the Cluster's name
	// when empty (the policy controller names it after the Cluster).
	Upgrade string

	// Machines also watches the Cluster's Machines (their metadata only),
	// to show the holds present on them before the rollout reaches them.
	Machines bool
}

// Follow watches a Cluster's TalosUpgrade (and its Machines with
// o.Machines) and renders it to live on every change and every
// live.Period(), until the rollout is finished for its current spec
// (TalosUpgrade.Finished) or ctx is done. A rollout whose target comes
// from CAPI is finished between two Machines CAPI hands over: it is
// followed until CAPI's rollout of the Cluster's MachineDeployments is over
// too (capiRollingOut). It returns the last state seen, the timeline of
// what it saw, and ctx's error when ctx ended first.
func Follow(ctx context.Context, c client.WithWatch, o FollowOptions, live *Live) (*Rollout, *Timeline, error) {
	if o.Upgrade == "" {
		o.Upgrade = o.Cluster
	}
	f := &follower{c: c, o: o, live: live, tl: NewTimeline(), r: &Rollout{Namespace: o.Namespace, Cluster: o.Cluster}}
	if o.Machines {
		f.r.Holds = map[string][]Hold{}
	}
	err := f.run(ctx)
	return f.r, f.tl, err
}

// follower is the state of one Follow.
type follower struct {
	c    client.WithWatch
	o    FollowOptions
	live *Live
	tl   *Timeline
	// r is the latest state seen.
	r *Rollout
}

func (f *follower) run(ctx context.Context) error {
	tick := time.NewTicker(f.live.Period())
	defer tick.Stop()
	var upgrades, machines watch.Interface
	defer func() {
		for _, w := range []watch.Interface{upgrades, machines} {
			if w != nil {
				w.Stop()
			}
		}
	}()
	for {
		var err error
		if upgrades == nil {
			if upgrades, err = f.watchUpgrade(ctx); err != nil {
				return err
			}
		}
		if machines == nil && f.o.Machines {
			if machines, err = f.watchMachines(ctx); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			f.live.Render(f.r, f.tl, now)
			if f.r.Upgrade != nil && f.r.Upgrade.Finished() && f.over(ctx, f.r.Upgrade, now) {
				return nil
			}
		case ev, ok := <-upgrades.ResultChan():
			if !ok {
				upgrades.Stop()
				upgrades = nil
				if err := pause(ctx); err != nil {
					return err
				}
				continue
			}
			if f.onUpgrade(ev) && f.over(ctx, f.r.Upgrade, time.Now()) {
				return nil
			}
		case ev, ok := <-resultChan(machines):
			if !ok {
				machines.Stop()
				machines = nil
				if err := pause(ctx); err != nil {
					return err
				}
				continue
			}
			f.onMachine(ev)
		}
	}
}

// onUpgrade takes in an event of the TalosUpgrade; it reports whether the
// rollout is finished.
func (f *follower) onUpgrade(ev watch.Event) bool {
	if ev.Type == watch.Error {
		return false
	}
	u, ok := ev.Object.(*upgradev1.TalosUpgrade)
	if !ok {
		return false
	}
	now := time.Now()
	if ev.Type == watch.Deleted {
		f.r.Upgrade = nil
		f.live.Render(f.r, f.tl, now)
		return false
	}
	f.r.Upgrade = u
	f.tl.Observe(u, now)
	f.live.Render(f.r, f.tl, now)
	return u.Finished()
}

// over reports whether the following ends with u, which is finished, and
// ends it: always, but for a rollout whose target comes from CAPI while
// CAPI still rolls out the Cluster's MachineDeployments (or cannot be
// asked, which is said on the next tick).
func (f *follower) over(ctx context.Context, u *upgradev1.TalosUpgrade, now time.Time) bool {
	if u.Spec.CAPIDriven() {
		if rolling, err := f.capiRollingOut(ctx); err != nil || rolling {
			return false
		}
	}
	f.tl.End(now)
	f.live.Finish()
	return true
}

// capiRollingOut reports whether CAPI still rolls out the Cluster's
// MachineDeployments: one of its Machines is marked for an in-place update,
// or a MachineDeployment has not made all its Machines up to date with its
// latest spec.
func (f *follower) capiRollingOut(ctx context.Context) (bool, error) {
	machines := &metav1.PartialObjectMetadataList{}
	machines.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("MachineList"))
	inCluster := []client.ListOption{client.InNamespace(f.o.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: f.o.Cluster}}
	if err := f.c.List(ctx, machines, inCluster...); err != nil {
		return false, fmt.Errorf("listing the Machines of Cluster %s/%s: %w", f.o.Namespace, f.o.Cluster, err)
	}
	for i := range machines.Items {
		if _, marked := machines.Items[i].Annotations[clusterv1.UpdateInProgressAnnotation]; marked {
			return true, nil
		}
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := f.c.List(ctx, mds, inCluster...); err != nil {
		return false, fmt.Errorf("listing the MachineDeployments of Cluster %s/%s: %w", f.o.Namespace, f.o.Cluster, err)
	}
	for i := range mds.Items {
		md := &mds.Items[i]
		if md.Status.ObservedGeneration < md.Generation || ptr.Deref(md.Status.UpToDateReplicas, 0) < ptr.Deref(md.Spec.Replicas, 0) {
			return true, nil
		}
	}
	return false, nil
}

// onMachine takes in an event of one of the Cluster's Machines.
func (f *follower) onMachine(ev watch.Event) {
	m, ok := ev.Object.(*metav1.PartialObjectMetadata)
	if !ok || ev.Type == watch.Error {
		return
	}
	if ev.Type == watch.Deleted {
		delete(f.r.Holds, m.Name)
	} else {
		f.r.Holds[m.Name] = HoldsOf(m)
	}
	f.live.Render(f.r, f.tl, time.Now())
}

func (f *follower) watchUpgrade(ctx context.Context) (watch.Interface, error) {
	w, err := f.c.Watch(ctx, &upgradev1.TalosUpgradeList{}, client.InNamespace(f.o.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", f.o.Upgrade)})
	if err != nil {
		return nil, fmt.Errorf("watching TalosUpgrade %s/%s: %w", f.o.Namespace, f.o.Upgrade, err)
	}
	return w, nil
}

func (f *follower) watchMachines(ctx context.Context) (watch.Interface, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("MachineList"))
	w, err := f.c.Watch(ctx, list, client.InNamespace(f.o.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: f.o.Cluster})
	if err != nil {
		return nil, fmt.Errorf("watching the Machines of Cluster %s/%s: %w", f.o.Namespace, f.o.Cluster, err)
	}
	return w, nil
}

// resultChan is w's channel, or nil (never ready) without w.
func resultChan(w watch.Interface) <-chan watch.Event {
	if w == nil {
		return nil
	}
	return w.ResultChan()
}

// pause waits rewatchDelay, or until ctx is done.
func pause(ctx context.Context) error {
	t := time.NewTimer(rewatchDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
