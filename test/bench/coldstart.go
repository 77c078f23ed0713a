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

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// ColdStartResult is a restart of the controller over a converged fleet.
type ColdStartResult struct {
	// Seconds is from the new process's start to every TalosUpgrade
	// reconciled and the talosupgrade queue empty.
	Seconds float64 `json:"seconds"`
	// LeaderSeconds is from the start to the Lease held
	// (leader_election_master_status): the old process does not release it
	// when it stops, so the new one waits for it to expire
	// (--leader-elect-lease-duration after its last renewal). 0 without
	// leader election.
	LeaderSeconds float64 `json:"leaderSeconds,omitempty"`
	// AfterLeaderSeconds is Seconds less LeaderSeconds: the controller's
	// own work, from the Lease held to every TalosUpgrade reconciled.
	AfterLeaderSeconds float64 `json:"afterLeaderSeconds"`
	// Requests, by class, from the start until then; Writes leaves out
	// the Lease's.
	Requests    int64    `json:"requests"`
	Writes      int64    `json:"writes"`
	TopRequests []string `json:"topRequests"`
	// CPUSeconds is the new process's CPU time until then.
	CPUSeconds float64 `json:"cpuSeconds"`
	// RSS and Go heap of the new process, Settle after the cold start.
	RSSAfter  float64 `json:"rssAfterBytes"`
	HeapAfter float64 `json:"heapAfterBytes"`
}

// ColdStart restarts the controller over the converged fleet, measures how
// long it takes to reconcile every TalosUpgrade, and, Settle later, its
// memory. It replaces f.Controller.
func (f *Fleet) ColdStart(ctx context.Context, w *World, logf func(string, ...any)) error {
	f.Controller.Stop()
	logf("Cold start: restarting the controller over %d converged Clusters", f.Result.Clusters)
	countsBefore := w.Proxy.Counts()
	o := f.opts.Controller
	o.Name = fmt.Sprintf("coldstart-%d", f.Result.Clusters)
	c, err := w.StartController(o)
	if err != nil {
		return err
	}
	f.Controller = c
	res := &ColdStartResult{}
	f.Result.ColdStart = res
	var leader time.Time
	var last Metrics
	// Scrapes cost the controller CPU (it lists the fleet from its cache
	// for Tollgate's gauges): four a second are enough.
	if err := waitForEvery(ctx, 10*time.Minute, 250*time.Millisecond, func() (bool, error) {
		m, err := c.Scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // Not serving yet.
		}
		if leader.IsZero() && (!c.leaderElection || isLeader(m)) {
			leader = time.Now()
		}
		last = m
		reconciled := m.Sum("controller_runtime_reconcile_total", `controller="talosupgrade"`)
		depth := m.Sum("workqueue_depth", `name="talosupgrade"`)
		return !leader.IsZero() && reconciled >= float64(f.Result.Clusters) && depth == 0, nil
	}); err != nil {
		return fmt.Errorf("waiting for the cold start: %w", err)
	}
	res.Seconds = time.Since(c.Started).Seconds()
	if c.leaderElection {
		res.LeaderSeconds = leader.Sub(c.Started).Seconds()
	}
	res.AfterLeaderSeconds = res.Seconds - res.LeaderSeconds
	counts := w.Proxy.Counts().Sub(countsBefore)
	res.Requests = counts.Total(nil)
	res.Writes = counts.Total(func(k RequestKey) bool { return IsWrite(k) && !IsLease(k) })
	res.TopRequests = counts.Top(8)
	res.CPUSeconds = last.Sum("process_cpu_seconds_total")
	logf("Cold start: every TalosUpgrade reconciled after %.1fs (Lease held after %.1fs, then %.1fs), %d requests; settling for %s",
		res.Seconds, res.LeaderSeconds, res.AfterLeaderSeconds, res.Requests, f.opts.Settle)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(f.opts.Settle):
	}
	m, err := c.Scrape(ctx)
	if err != nil {
		return err
	}
	res.RSSAfter, res.HeapAfter = m.Sum("process_resident_memory_bytes"), m.Sum("go_memstats_heap_alloc_bytes")
	if err := c.Profile(ctx, "heap", filepath.Join(w.OutDir, fmt.Sprintf("heap-coldstart-%d.pb.gz", f.Result.Clusters))); err != nil {
		logf("Cold start: heap profile: %v", err)
	}
	return nil
}
