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

package demo

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/sandbox"
)

// span is a stretch of time a Machine or the rollout spent in one phase,
// as the demo saw it.
type span struct {
	phase string
	start time.Time
}

// timeline records the phases the demo saw, at the time of the watch
// events: every phase change is a status write of the controller, so the
// timeline is precise to a few milliseconds, where status.phaseDurations
// counts whole seconds.
type timeline struct {
	rollout  []span
	machines map[string][]span
	end      time.Time
}

func newTimeline() *timeline {
	return &timeline{machines: map[string][]span{}}
}

func (t *timeline) observe(u *upgradev1.TalosUpgrade, now time.Time) {
	t.rollout = appendSpan(t.rollout, string(u.Status.Phase), now)
	for _, m := range u.Status.Machines {
		t.machines[m.Machine] = appendSpan(t.machines[m.Machine], string(m.Phase), now)
	}
}

func appendSpan(spans []span, phase string, now time.Time) []span {
	if phase == "" || len(spans) > 0 && spans[len(spans)-1].phase == phase {
		return spans
	}
	return append(spans, span{phase: phase, start: now})
}

// durations returns the time spent in each phase, ending at end for the
// last one unless it is terminal.
func durations(spans []span, end time.Time) map[string]time.Duration {
	d := map[string]time.Duration{}
	for i, s := range spans {
		next := end
		if i+1 < len(spans) {
			next = spans[i+1].start
		} else if terminal(s.phase) {
			continue
		}
		d[s.phase] += next.Sub(s.start)
	}
	return d
}

// started returns when a Machine left Pending and when it ended (zero while
// it runs).
func (t *timeline) started(machine string) (start, end time.Time) {
	for _, s := range t.machines[machine] {
		if start.IsZero() && s.phase != string(upgradev1.MachinePhasePending) {
			start = s.start
		}
		if terminal(s.phase) {
			end = s.start
		}
	}
	return start, end
}

func terminal(phase string) bool {
	switch phase {
	case string(upgradev1.MachinePhaseCompleted), string(upgradev1.MachinePhaseFailed):
		return true
	}
	return false
}

// followRollout follows the Cluster's TalosUpgrade until it ends or timeout, and
// renders it: on every change, and every tick for the clocks.
func followRollout(ctx context.Context, sb *sandbox.Sandbox, timeout time.Duration, r *renderer) (*upgradev1.TalosUpgrade, *timeline, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.NewWithWatch(sb.Management.Config, client.Options{Scheme: sb.Management.Client.Scheme()})
	if err != nil {
		return nil, nil, fmt.Errorf("creating a watching client: %w", err)
	}
	tl := newTimeline()
	var latest *upgradev1.TalosUpgrade
	tick := time.NewTicker(r.period())
	defer tick.Stop()
	for {
		w, err := c.Watch(ctx, &upgradev1.TalosUpgradeList{}, client.InNamespace(namespace),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", clusterName)})
		if err != nil {
			return nil, nil, fmt.Errorf("watching TalosUpgrade %s/%s: %w", namespace, clusterName, err)
		}
		done, err := follow(ctx, w, tick.C, tl, r, &latest)
		w.Stop()
		if done || err != nil {
			return latest, tl, err
		}
	}
}

// follow handles the events of one watch until the rollout ends (true), the
// watch closes (false) or ctx is done.
func follow(ctx context.Context, w watch.Interface, tick <-chan time.Time, tl *timeline, r *renderer, latest **upgradev1.TalosUpgrade) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			last := "no TalosUpgrade was created"
			if *latest != nil {
				last = fmt.Sprintf("phase %s, %s Machines, blocked by %q", (*latest).Status.Phase, (*latest).Status.Progress, (*latest).Status.BlockedBy)
			}
			return false, fmt.Errorf("the rollout did not end in time (%s): %w", last, ctx.Err())
		case now := <-tick:
			r.render(*latest, tl, now)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			u, isUpgrade := ev.Object.(*upgradev1.TalosUpgrade)
			if !isUpgrade || ev.Type == watch.Deleted {
				continue
			}
			now := time.Now()
			*latest = u
			tl.observe(u, now)
			r.render(u, tl, now)
			if phase := u.Status.Phase; phase == upgradev1.UpgradePhaseCompleted || phase == upgradev1.UpgradePhaseFailed {
				tl.end = now
				r.finish()
				return true, nil
			}
		}
	}
}
