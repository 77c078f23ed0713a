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
	"math"
	"sort"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Stats summarises durations, in seconds.
type Stats struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// NewStats summarises samples (seconds), nearest-rank percentiles.
func NewStats(samples []float64) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Stats{N: len(s), P50: rank(0.5), P99: rank(0.99), Max: s[len(s)-1], Mean: sum / float64(len(s))}
}

// OverheadOptions size scenario 1.
type OverheadOptions struct {
	ControlPlanes, Workers int
	// Reboot is how long a node is down.
	Reboot time.Duration
	// MaxUnavailable are the worker budgets to run, one rollout each.
	MaxUnavailable []int
	// HealthCheckInterval is the interval of the one health check.
	HealthCheckInterval time.Duration
	Controller          ControllerOptions
	// Timeout bounds one rollout.
	Timeout time.Duration
}

// MachineTiming is what happened to one Machine, in seconds from the
// rollout's first upgrade call.
type MachineTiming struct {
	Machine string `json:"machine"`
	// Call is the upgrade call, Ready the Node Ready on the target,
	// Completed the Machine seen Completed.
	Call      float64 `json:"call"`
	Ready     float64 `json:"ready"`
	Completed float64 `json:"completed"`
	// StartGap is from the last Machine seen Completed before the call to
	// the call; VerifyGap from Ready to Completed.
	StartGap  float64 `json:"startGap"`
	VerifyGap float64 `json:"verifyGap"`
}

// OverheadResult is the outcome of one rollout of scenario 1.
type OverheadResult struct {
	MaxUnavailable int     `json:"maxUnavailable"`
	Machines       int     `json:"machines"`
	RebootSeconds  float64 `json:"rebootSeconds"`
	// StartGap, VerifyGap and PerMachine (their sum) are the controller's
	// own time per Machine.
	StartGap   Stats `json:"startGap"`
	VerifyGap  Stats `json:"verifyGap"`
	PerMachine Stats `json:"perMachine"`
	// TotalSeconds is from the first upgrade call to the last Machine
	// Completed; IdealSeconds the reboots that must happen one after the
	// other (measured call-to-Ready of each node).
	TotalSeconds float64 `json:"totalSeconds"`
	IdealSeconds float64 `json:"idealSeconds"`
	OverIdeal    float64 `json:"overIdealPercent"`
	// FirstCallSeconds is from the policy's creation to the first upgrade
	// call: admission, preflight and the first health check.
	FirstCallSeconds float64 `json:"firstCallSeconds"`
	// Requests made by the controller during the rollout, per Machine;
	// the ClusterCache's health probes are left out.
	ManagementRequestsPerMachine float64         `json:"managementRequestsPerMachine"`
	WorkloadRequestsPerMachine   float64         `json:"workloadRequestsPerMachine"`
	WritesPerMachine             float64         `json:"writesPerMachine"`
	TopRequests                  []string        `json:"topRequests"`
	ReconcileP50                 float64         `json:"reconcileP50Seconds"`
	ReconcileP99                 float64         `json:"reconcileP99Seconds"`
	Reconciles                   float64         `json:"reconciles"`
	Timings                      []MachineTiming `json:"timings"`
}

// RunOverhead runs scenario 1: one Cluster, rolled once per budget.
func RunOverhead(ctx context.Context, w *World, o OverheadOptions, logf func(string, ...any)) ([]OverheadResult, error) {
	driverCtx, stopDriver := context.WithCancel(ctx)
	defer stopDriver()
	w.Workloads[0].Driver.Start(driverCtx)
	var results []OverheadResult
	for _, mu := range o.MaxUnavailable {
		res, err := runOverheadOnce(ctx, w, o, mu, logf)
		if err != nil {
			return results, fmt.Errorf("rollout with maxUnavailable %d: %w", mu, err)
		}
		results = append(results, *res)
	}
	return results, nil
}

func runOverheadOnce(ctx context.Context, w *World, o OverheadOptions, mu int, logf func(string, ...any)) (*OverheadResult, error) {
	ns := fmt.Sprintf("overhead-mu%d", mu)
	name := fmt.Sprintf("ovh%d", mu)
	logf("Scenario 1 (maxUnavailable %d): creating Cluster %s/%s with %d+%d Machines", mu, ns, name, o.ControlPlanes, o.Workers)
	if err := w.CreateNamespace(ctx, ns); err != nil {
		return nil, err
	}
	if err := w.CreateCluster(ctx, ClusterSpec{Namespace: ns, Name: name, ControlPlanes: o.ControlPlanes, Workers: o.Workers, Policy: "to-1-13"}); err != nil {
		return nil, err
	}
	ctrlOpts := o.Controller
	ctrlOpts.Name = fmt.Sprintf("overhead-mu%d", mu)
	c, err := w.StartController(ctrlOpts)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	obs, err := watchPhases(watchCtx, w, ns)
	if err != nil {
		return nil, err
	}
	// Let the controller start its caches and take its Lease before the
	// clock starts.
	if err := waitForMetrics(ctx, c); err != nil {
		return nil, err
	}
	if err := waitForLeader(ctx, c); err != nil {
		return nil, err
	}
	before, _ := c.Scrape(ctx)
	countsBefore := w.Proxy.Counts()
	w.Sim.ResetCallLog()

	created := time.Now()
	if err := w.CreatePolicy(ctx, PolicySpec{Namespace: ns, Name: "to-1-13", MaxUnavailable: mu, MaxClustersInProgress: 1, HealthCheck: "passes", HealthCheckInterval: o.HealthCheckInterval}); err != nil {
		return nil, err
	}
	logf("Scenario 1 (maxUnavailable %d): rolling out", mu)
	if err := waitFor(ctx, o.Timeout, func() (bool, error) {
		ups, err := w.Upgrades(ctx, ns)
		if err != nil || len(ups) == 0 {
			return false, err
		}
		switch ups[0].Status.Phase {
		case upgradev1.UpgradePhaseCompleted:
			return true, nil
		case upgradev1.UpgradePhaseFailed:
			return false, fmt.Errorf("the rollout failed: %s", ups[0].Status.BlockedBy)
		}
		return false, nil
	}); err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond) // Let the last watch events and metrics land; not a condition.
	after, err := c.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	counts := w.Proxy.Counts().Sub(countsBefore)

	machines := o.ControlPlanes + o.Workers
	res := &OverheadResult{MaxUnavailable: mu, Machines: machines, RebootSeconds: o.Reboot.Seconds()}
	calls := map[string]time.Time{}
	for _, call := range w.Sim.CallLog() {
		if call.RPC != talossim.RPCLegacyUpgrade && call.RPC != talossim.RPCUpgrade {
			continue
		}
		if _, ok := calls[call.Node]; !ok {
			calls[call.Node] = call.Time
		}
	}
	completed := obs.completedTimes()
	type rec struct {
		machine               string
		call, ready, complete time.Time
	}
	var recs []rec
	for node, call := range calls {
		ready, _ := w.Nodes.Ready(node)
		recs = append(recs, rec{machine: node, call: call, ready: ready, complete: completed[node]})
	}
	if len(recs) != machines {
		return nil, fmt.Errorf("saw %d upgrade calls for %d Machines", len(recs), machines)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].call.Before(recs[j].call) })
	t0 := recs[0].call
	res.FirstCallSeconds = t0.Sub(created).Seconds()
	var starts, verifies, per, cpReboots, workerReboots []float64
	var last time.Time
	for i, r := range recs {
		if r.complete.IsZero() || r.ready.IsZero() {
			return nil, fmt.Errorf("machine %s: no Ready or Completed time recorded", r.machine)
		}
		t := MachineTiming{Machine: r.machine, Call: r.call.Sub(t0).Seconds(), Ready: r.ready.Sub(t0).Seconds(), Completed: r.complete.Sub(t0).Seconds()}
		t.VerifyGap = r.complete.Sub(r.ready).Seconds()
		if i > 0 {
			var prev time.Time
			for _, other := range recs {
				if !other.complete.After(r.call) && other.complete.After(prev) {
					prev = other.complete
				}
			}
			if !prev.IsZero() {
				t.StartGap = r.call.Sub(prev).Seconds()
				starts = append(starts, t.StartGap)
			}
		}
		verifies = append(verifies, t.VerifyGap)
		per = append(per, t.StartGap+t.VerifyGap)
		reboot := r.ready.Sub(r.call).Seconds()
		if i < o.ControlPlanes {
			cpReboots = append(cpReboots, reboot)
		} else {
			workerReboots = append(workerReboots, reboot)
		}
		if r.complete.After(last) {
			last = r.complete
		}
		res.Timings = append(res.Timings, t)
	}
	res.StartGap, res.VerifyGap, res.PerMachine = NewStats(starts), NewStats(verifies), NewStats(per)
	res.TotalSeconds = last.Sub(t0).Seconds()
	waves := (o.Workers + mu - 1) / mu
	for _, r := range cpReboots {
		res.IdealSeconds += r
	}
	res.IdealSeconds += float64(waves) * NewStats(workerReboots).P50
	res.OverIdeal = 100 * (res.TotalSeconds - res.IdealSeconds) / res.IdealSeconds

	res.ManagementRequestsPerMachine = float64(counts.Total(Management)) / float64(machines)
	res.WorkloadRequestsPerMachine = float64(counts.Total(Workload)) / float64(machines)
	res.WritesPerMachine = float64(counts.Total(IsWrite)) / float64(machines)
	res.TopRequests = counts.Top(8)
	res.ReconcileP50 = Quantile(after, before, "controller_runtime_reconcile_time_seconds", 0.5, `controller="talosupgrade"`)
	res.ReconcileP99 = Quantile(after, before, "controller_runtime_reconcile_time_seconds", 0.99, `controller="talosupgrade"`)
	res.Reconciles = after.Sum("controller_runtime_reconcile_total", `controller="talosupgrade"`) - before.Sum("controller_runtime_reconcile_total", `controller="talosupgrade"`)
	logf("Scenario 1 (maxUnavailable %d): done in %.1fs (ideal %.1fs), overhead per Machine p50 %.3fs p99 %.3fs",
		mu, res.TotalSeconds, res.IdealSeconds, res.PerMachine.P50, res.PerMachine.P99)
	return res, nil
}

// phaseObserver records when each Machine was first seen Completed.
type phaseObserver struct {
	mu        sync.Mutex
	completed map[string]time.Time
}

func (o *phaseObserver) completedTimes() map[string]time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]time.Time, len(o.completed))
	for k, v := range o.completed {
		out[k] = v
	}
	return out
}

// watchPhases watches the TalosUpgrades of a namespace until ctx ends.
func watchPhases(ctx context.Context, w *World, ns string) (*phaseObserver, error) {
	wc, err := client.NewWithWatch(w.Mgmt.Config, client.Options{Scheme: envtest.NewScheme()})
	if err != nil {
		return nil, err
	}
	obs := &phaseObserver{completed: map[string]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			wi, err := wc.Watch(ctx, &upgradev1.TalosUpgradeList{}, client.InNamespace(ns))
			if err != nil {
				time.Sleep(100 * time.Millisecond) // Retry period of a failed watch.
				continue
			}
			for ev := range wi.ResultChan() {
				now := time.Now()
				u, ok := ev.Object.(*upgradev1.TalosUpgrade)
				if !ok {
					continue
				}
				obs.mu.Lock()
				for _, m := range u.Status.Machines {
					if _, seen := obs.completed[m.Machine]; !seen && m.Phase == upgradev1.MachinePhaseCompleted && m.StartTime != nil {
						obs.completed[m.Machine] = now
					}
				}
				obs.mu.Unlock()
			}
			wi.Stop()
		}
	}()
	return obs, nil
}

// waitFor polls cond every 100ms until it holds, fails, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	return waitForEvery(ctx, timeout, 100*time.Millisecond, cond)
}

// waitForEvery polls cond every period until it holds, fails, or timeout
// passes.
func waitForEvery(parent context.Context, timeout, period time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return err // Interrupted, not late.
			}
			return fmt.Errorf("not done within %s", timeout)
		case <-t.C:
		}
	}
}
