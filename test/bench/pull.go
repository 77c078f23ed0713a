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
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/test/talossim"
)

// reconcileTimeMetric is controller-runtime's histogram of reconcile
// durations, labelled by controller.
const reconcileTimeMetric = "controller_runtime_reconcile_time_seconds"

// PullOptions size scenario 4: a rollout whose every installer pull is slow.
type PullOptions struct {
	// Clusters, each with ControlPlanes and Workers Machines, roll out at
	// once.
	Clusters, ControlPlanes, Workers int
	// MaxUnavailable is the workers' budget in each Cluster.
	MaxUnavailable int
	// PullDelay is how long every node takes to pull the installer image
	// (Talos pulls it before it acknowledges the upgrade call).
	PullDelay  time.Duration
	Controller ControllerOptions
	// Timeout bounds the rollout.
	Timeout time.Duration
}

// ReconcileTimes summarise one controller's reconcile durations over a
// scenario, from controller-runtime's histogram.
type ReconcileTimes struct {
	Controller string  `json:"controller"`
	Reconciles float64 `json:"reconciles"`
	P50        float64 `json:"p50Seconds"`
	P99        float64 `json:"p99Seconds"`
	Mean       float64 `json:"meanSeconds"`
	// OverOneSecond counts the reconciles longer than 1s.
	OverOneSecond float64 `json:"overOneSecond"`
	// P99Unbounded is true when the p99 falls past the histogram's last
	// bucket: P99 is then that bucket's bound, a lower bound.
	P99Unbounded bool `json:"p99Unbounded,omitempty"`
}

// PullResult is the outcome of scenario 4.
type PullResult struct {
	Clusters    int     `json:"clusters"`
	Machines    int     `json:"machines"`
	PullSeconds float64 `json:"pullSeconds"`
	// RolloutSeconds is from the policy's creation to every Cluster
	// Completed.
	RolloutSeconds float64 `json:"rolloutSeconds"`
	// Reconcile holds every controller that reconciled during the rollout.
	Reconcile []ReconcileTimes `json:"reconcile"`
}

// RunPull runs scenario 4: Clusters whose nodes take PullDelay to pull the
// installer, rolled out at once. It measures how long reconciles take,
// per controller, while the pulls are under way: a reconcile that waits for
// a pull holds one of the controller's workers for all that time.
func RunPull(ctx context.Context, w *World, o PullOptions, logf func(string, ...any)) (*PullResult, error) {
	const ns = "pull"
	if err := w.CreateNamespace(ctx, ns); err != nil {
		return nil, err
	}
	res := &PullResult{Clusters: o.Clusters, Machines: o.Clusters * (o.ControlPlanes + o.Workers), PullSeconds: o.PullDelay.Seconds()}
	logf("Scenario 4: creating %d Clusters of %d+%d Machines whose installer pulls take %s", o.Clusters, o.ControlPlanes, o.Workers, o.PullDelay)
	for i := range o.Clusters {
		name := fmt.Sprintf("pull%d", i)
		if err := w.CreateCluster(ctx, ClusterSpec{
			Namespace: ns, Name: name, ControlPlanes: o.ControlPlanes, Workers: o.Workers,
			Workload: i % len(w.Workloads), Policy: "to-1-13",
		}); err != nil {
			return nil, err
		}
		for _, n := range w.Sim.Nodes() {
			if strings.HasPrefix(n.Name(), name+"-") {
				n.InjectFault(talossim.Faults{PullDelay: o.PullDelay})
			}
		}
	}

	ctrlOpts := o.Controller
	ctrlOpts.Name = "pull"
	c, err := w.StartController(ctrlOpts)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	obs, err := observe(ctx, w.Mgmt.Config, ns)
	if err != nil {
		return nil, err
	}
	defer obs.stop()
	if err := waitForMetrics(ctx, c); err != nil {
		return nil, err
	}
	if err := waitForLeader(ctx, c); err != nil {
		return nil, err
	}
	before, err := c.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	created := time.Now()
	if err := w.CreatePolicy(ctx, PolicySpec{Namespace: ns, Name: "to-1-13", MaxUnavailable: o.MaxUnavailable, MaxClustersInProgress: o.Clusters}); err != nil {
		return nil, err
	}
	logf("Scenario 4: rolling out")
	if err := obs.waitForRollouts(ctx, o.Clusters, o.Timeout, c.Exited, func(n rolloutCounts) {
		logf("Scenario 4: %d of %d Clusters Completed after %s", n.Completed, o.Clusters, time.Since(created).Round(time.Second))
	}); err != nil {
		return nil, err
	}
	res.RolloutSeconds = time.Since(created).Seconds()
	time.Sleep(time.Second) // Let the last reconciles land in the metrics; not a condition.
	after, err := c.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	res.Reconcile = ReconcileTimesByController(after, before)
	for _, r := range res.Reconcile {
		logf("Scenario 4: controller %s: %.0f reconciles, p50 %.3fs, p99 %s, %.0f over 1s", r.Controller, r.Reconciles, r.P50, r.P99String(), r.OverOneSecond)
	}
	return res, nil
}

// ReconcileTimesByController reads the reconcile durations of every
// controller that reconciled between two scrapes, sorted by controller.
func ReconcileTimesByController(after, before Metrics) []ReconcileTimes {
	var out []ReconcileTimes
	for _, name := range after.LabelValues(reconcileTimeMetric+"_count", "controller") {
		label := fmt.Sprintf("controller=%q", name)
		n := after.Sum(reconcileTimeMetric+"_count", label) - before.Sum(reconcileTimeMetric+"_count", label)
		if n <= 0 {
			continue
		}
		h := histogramOf(after, before, reconcileTimeMetric, label)
		r := ReconcileTimes{
			Controller:    name,
			Reconciles:    n,
			P50:           h.quantile(0.5),
			P99:           h.quantile(0.99),
			Mean:          (after.Sum(reconcileTimeMetric+"_sum", label) - before.Sum(reconcileTimeMetric+"_sum", label)) / n,
			OverOneSecond: n - h.countAtMost(1),
		}
		r.P99Unbounded = h.countAtMost(h.lastBound()) < 0.99*n
		out = append(out, r)
	}
	return out
}

// P99String prints the p99, with a ">" when it is past the last bucket.
func (r ReconcileTimes) P99String() string {
	if r.P99Unbounded {
		return fmt.Sprintf(">%.0fs", r.P99)
	}
	return fmt.Sprintf("%.3fs", r.P99)
}
