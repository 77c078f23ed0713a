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
	// Requests, by class, from the start until then (of this process
	// alone in a sharded fleet); Writes leaves out the Lease's.
	Requests    int64    `json:"requests"`
	Writes      int64    `json:"writes"`
	TopRequests []string `json:"topRequests"`
	// CPUSeconds is the new process's CPU time until then.
	CPUSeconds float64 `json:"cpuSeconds"`
	// RSS and Go heap of the new process, Settle after the cold start.
	RSSAfter  float64 `json:"rssAfterBytes"`
	HeapAfter float64 `json:"heapAfterBytes"`
	// Upgrades are the TalosUpgrades the process serves (its shard's), and
	// Reconciles its TalosUpgrade controller's reconciles from its start
	// to Settle after the cold start.
	Upgrades   int     `json:"upgrades"`
	Reconciles float64 `json:"reconciles"`
}

// ColdStart restarts the controller over the converged fleet, measures how
// long it takes to reconcile every TalosUpgrade, and, Settle later, its
// memory. A sharded fleet restarts its shards' controllers one after the
// other, each timed until every TalosUpgrade of its shard is reconciled,
// and fails when one reconciles the other shards' too.
func (f *Fleet) ColdStart(ctx context.Context, w *World, logf func(string, ...any)) error {
	for k := range f.shards {
		res, err := f.coldStart(ctx, w, k, logf)
		if f.sharded() {
			f.Result.Shards[k].ColdStart = res
		} else {
			f.Result.ColdStart = res
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// coldStart restarts shard k's controller (the only one without sharding),
// replacing it in f.shards.
func (f *Fleet) coldStart(ctx context.Context, w *World, k int, logf func(string, ...any)) (*ColdStartResult, error) {
	sh := f.shards[k]
	own := shardClusters(f.Result.Clusters, len(f.shards), k)
	sh.controller.Stop()
	logf("Cold start: restarting the controller%s over %d converged Clusters, %d of them its own", suffix(sh.value), f.Result.Clusters, own)
	// Without sharding the controller is the only client of the proxy;
	// with it, its own route leaves out the other shards' requests.
	counts := w.Proxy.Counts
	if f.sharded() {
		route := sh.controller.route
		counts = func() Counts { return w.Proxy.RouteCounts(route) }
	}
	countsBefore := counts()
	c, err := w.StartController(f.controllerOptions(k, fmt.Sprintf("coldstart-%d", f.Result.Clusters)))
	if err != nil {
		return nil, err
	}
	sh.controller = c
	res := &ColdStartResult{Upgrades: own}
	var leader time.Time
	var last Metrics
	// Scrapes cost the controller CPU (it lists the fleet from its cache
	// for Tollgate's gauges): four a second are enough.
	if err := waitForEvery(ctx, 10*time.Minute, 250*time.Millisecond, func() (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		m, err := c.Scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // Not serving yet.
		}
		if leader.IsZero() && (!c.leaderElection || isLeader(m, c.lease)) {
			leader = time.Now()
		}
		last = m
		depth := m.Sum("workqueue_depth", `name="talosupgrade"`)
		return !leader.IsZero() && upgradeReconciles(m) >= float64(own) && depth == 0, nil
	}); err != nil {
		return res, fmt.Errorf("waiting for the cold start%s: %w", suffix(sh.value), err)
	}
	res.Seconds = time.Since(c.Started).Seconds()
	if c.leaderElection {
		res.LeaderSeconds = leader.Sub(c.Started).Seconds()
	}
	res.AfterLeaderSeconds = res.Seconds - res.LeaderSeconds
	delta := counts().Sub(countsBefore)
	res.Requests = delta.Total(nil)
	res.Writes = delta.Total(func(k RequestKey) bool { return IsWrite(k) && !IsLease(k) })
	res.TopRequests = delta.Top(8)
	res.CPUSeconds = last.Sum("process_cpu_seconds_total")
	logf("Cold start%s: every TalosUpgrade reconciled after %.1fs (Lease held after %.1fs, then %.1fs), %d requests; settling for %s",
		suffix(sh.value), res.Seconds, res.LeaderSeconds, res.AfterLeaderSeconds, res.Requests, f.opts.Settle)
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(f.opts.Settle):
	}
	m, err := c.Scrape(ctx)
	if err != nil {
		return res, err
	}
	res.RSSAfter, res.HeapAfter = m.Sum("process_resident_memory_bytes"), m.Sum("go_memstats_heap_alloc_bytes")
	res.Reconciles = upgradeReconciles(m)
	logf("Cold start%s: %.0f TalosUpgrade reconciles for its %d", suffix(sh.value), res.Reconciles, own)
	if err := c.Profile(ctx, "heap", filepath.Join(w.OutDir, fmt.Sprintf("heap-coldstart-%d%s.pb.gz", f.Result.Clusters, suffix(sh.value)))); err != nil {
		logf("Cold start: heap profile: %v", err)
	}
	if f.sharded() {
		if err := checkColdStartReconciles(sh.value, res.Reconciles, own, f.Result.Clusters); err != nil {
			return res, err
		}
		if err := f.checkShardWrites(ctx, w); err != nil {
			return res, err
		}
	}
	return res, nil
}
