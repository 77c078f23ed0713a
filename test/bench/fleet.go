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
	"errors"
	"fmt"
	"sync"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// FleetOptions size scenario 2.
type FleetOptions struct {
	// Clusters and Machines (per Cluster, ControlPlanes of them control
	// plane) size the fleet.
	Clusters, Machines, ControlPlanes int
	// MaxUnavailable is the workers' budget in each Cluster.
	MaxUnavailable int
	// Settle is how long the converged fleet is left alone before its
	// steady-state memory is read.
	Settle     time.Duration
	Controller ControllerOptions
	// Timeout bounds the rollout of the fleet.
	Timeout time.Duration
	// Converged creates the fleet on the target version already: no
	// rollout, only the footprint, cold start and idle cost are measured.
	Converged bool
}

// FleetResult is the outcome of scenario 2.
type FleetResult struct {
	Clusters int `json:"clusters"`
	Machines int `json:"machines"`
	// Workloads is the number of workload apiservers the Clusters share.
	Workloads int `json:"workloadApiservers"`
	// RolloutSeconds is from the policy's creation to every Cluster Completed.
	RolloutSeconds float64 `json:"rolloutSeconds"`
	// RSS and Go heap (bytes) at steady state (converged, after Settle) and
	// at their peak.
	RSSSteady  float64 `json:"rssSteadyBytes"`
	RSSPeak    float64 `json:"rssPeakBytes"`
	HeapSteady float64 `json:"heapSteadyBytes"`
	HeapPeak   float64 `json:"heapPeakBytes"`
	// Reconcile times of the TalosUpgrade controller during the rollout.
	ReconcileP50 float64 `json:"reconcileP50Seconds"`
	ReconcileP99 float64 `json:"reconcileP99Seconds"`
	Reconciles   float64 `json:"reconciles"`
	// QueueDepthMax is the deepest TalosUpgrade workqueue seen (sampled each second).
	QueueDepthMax float64 `json:"queueDepthMax"`
	// ColdStartSeconds is from a restart of the controller over the
	// converged fleet to every TalosUpgrade reconciled and the queue empty.
	ColdStartSeconds float64 `json:"coldStartSeconds"`
	// ColdStartRequests is the number of requests of that cold start.
	ColdStartRequests int64 `json:"coldStartRequests"`
	// Requests made by the controller during the rollout, per Machine.
	ManagementRequestsPerMachine float64  `json:"managementRequestsPerMachine"`
	WorkloadRequestsPerMachine   float64  `json:"workloadRequestsPerMachine"`
	WritesPerMachine             float64  `json:"writesPerMachine"`
	TopRequests                  []string `json:"topRequests"`
	// ProbesPerSecond are the ClusterCache's health probes (GET / on every
	// workload apiserver every 10s), left out of the per-Machine figures.
	ProbesPerSecond float64 `json:"probesPerSecond"`
	// CPUSeconds is the controller's CPU time during the rollout.
	CPUSeconds float64 `json:"cpuSeconds"`
	Note       string  `json:"note,omitempty"`
}

// Fleet is a converged fleet and its running controller, for scenario 3.
type Fleet struct {
	Result     *FleetResult
	Controller *Controller
}

// RunFleet runs scenario 2. The returned Fleet's controller keeps running;
// the caller stops it.
func RunFleet(ctx context.Context, w *World, o FleetOptions, logf func(string, ...any)) (*Fleet, error) {
	const ns = "fleet"
	if err := w.CreateNamespace(ctx, ns); err != nil {
		return nil, err
	}
	res := &FleetResult{Clusters: o.Clusters, Machines: o.Clusters * o.Machines, Workloads: len(w.Workloads)}
	if o.Converged {
		res.Note = "converged fleet: created on the target version, nothing rolled out; request figures are per Machine reconciled, not upgraded"
	}
	logf("Scenario 2: creating %d Clusters of %d Machines over %d workload apiserver(s)", o.Clusters, o.Machines, len(w.Workloads))
	start := time.Now()
	if err := createClusters(ctx, w, ns, o); err != nil {
		return nil, err
	}
	logf("Scenario 2: fleet created in %s", time.Since(start).Round(time.Second))

	ctrlOpts := o.Controller
	ctrlOpts.Name = "fleet"
	c, err := w.StartController(ctrlOpts)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	if err := waitFor(ctx, time.Minute, func() (bool, error) { _, err := c.Scrape(ctx); return err == nil, nil }); err != nil {
		return nil, fmt.Errorf("waiting for the controller's metrics: %w", err)
	}
	sampler := sample(ctx, c)
	defer sampler.stop()

	before, err := c.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	countsBefore := w.Proxy.Counts()
	created := time.Now()
	if err := w.CreatePolicy(ctx, PolicySpec{Namespace: ns, Name: "to-1-13", MaxUnavailable: o.MaxUnavailable, MaxClustersInProgress: o.Clusters}); err != nil {
		return nil, err
	}
	logf("Scenario 2: rolling out the fleet")
	if err := waitForRollouts(ctx, w, ns, o.Clusters, o.Timeout, func(done int) {
		logf("Scenario 2: %d of %d Clusters Completed after %s", done, o.Clusters, time.Since(created).Round(time.Second))
	}); err != nil {
		return nil, err
	}
	res.RolloutSeconds = time.Since(created).Seconds()
	time.Sleep(time.Second) // Let the last reconciles land in the metrics; not a condition.
	after, err := c.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	counts := w.Proxy.Counts().Sub(countsBefore)
	machines := float64(res.Machines)
	res.ManagementRequestsPerMachine = float64(counts.Total(Management)) / machines
	res.WorkloadRequestsPerMachine = float64(counts.Total(Workload)) / machines
	res.WritesPerMachine = float64(counts.Total(IsWrite)) / machines
	res.TopRequests = counts.Top(10)
	res.ProbesPerSecond = float64(counts.Total(IsProbe)) / res.RolloutSeconds
	res.ReconcileP50 = Quantile(after, before, "controller_runtime_reconcile_time_seconds", 0.5, `controller="talosupgrade"`)
	res.ReconcileP99 = Quantile(after, before, "controller_runtime_reconcile_time_seconds", 0.99, `controller="talosupgrade"`)
	res.Reconciles = after.Sum("controller_runtime_reconcile_total", `controller="talosupgrade"`) - before.Sum("controller_runtime_reconcile_total", `controller="talosupgrade"`)
	res.CPUSeconds = after.Sum("process_cpu_seconds_total") - before.Sum("process_cpu_seconds_total")
	logf("Scenario 2: fleet rolled out in %.1fs; settling for %s", res.RolloutSeconds, o.Settle)

	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.Settle):
	}
	steady, err := c.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	rss, _, err := c.Memory()
	if err != nil {
		return nil, err
	}
	res.RSSSteady, res.HeapSteady = float64(rss), steady.Sum("go_memstats_heap_alloc_bytes")
	ok = true
	return &Fleet{Result: res, Controller: c}, nil
}

// ColdStart restarts the controller over the converged fleet and measures
// how long it takes to reconcile every TalosUpgrade. It replaces
// f.Controller.
func ColdStart(ctx context.Context, w *World, f *Fleet, o ControllerOptions, logf func(string, ...any)) error {
	s := f.Controller.sampler
	if s != nil {
		s.stop()
		f.Result.HeapPeak, f.Result.QueueDepthMax = s.heapPeak(), s.depthMax()
	}
	_, peak, err := f.Controller.Memory()
	if err == nil {
		f.Result.RSSPeak = float64(peak)
	}
	f.Controller.Stop()
	logf("Cold start: restarting the controller over %d converged Clusters", f.Result.Clusters)
	countsBefore := w.Proxy.Counts()
	o.Name = "coldstart"
	c, err := w.StartController(o)
	if err != nil {
		return err
	}
	f.Controller = c
	if err := waitFor(ctx, 10*time.Minute, func() (bool, error) {
		m, err := c.Scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // Not serving yet.
		}
		reconciled := m.Sum("controller_runtime_reconcile_total", `controller="talosupgrade"`)
		depth := m.Sum("workqueue_depth", `name="talosupgrade"`)
		return reconciled >= float64(f.Result.Clusters) && depth == 0, nil
	}); err != nil {
		return fmt.Errorf("waiting for the cold start: %w", err)
	}
	f.Result.ColdStartSeconds = time.Since(c.Started).Seconds()
	f.Result.ColdStartRequests = w.Proxy.Counts().Sub(countsBefore).Total(nil)
	logf("Cold start: every TalosUpgrade reconciled after %.1fs", f.Result.ColdStartSeconds)
	return nil
}

// waitForRollouts waits until the TalosUpgrades of namespace ns number
// clusters and are all Completed, failing on the first Failed one; progress
// is called with the count Completed every 30s.
func waitForRollouts(ctx context.Context, w *World, ns string, clusters int, timeout time.Duration, progress func(done int)) error {
	lastLog := time.Now()
	return waitFor(ctx, timeout, func() (bool, error) {
		ups, err := w.Upgrades(ctx, ns)
		if err != nil {
			return false, err
		}
		done := 0
		for _, u := range ups {
			switch u.Status.Phase {
			case upgradev1.UpgradePhaseCompleted:
				done++
			case upgradev1.UpgradePhaseFailed:
				return false, fmt.Errorf("the rollout of %s failed: %s", u.Name, u.Status.BlockedBy)
			}
		}
		if time.Since(lastLog) > 30*time.Second {
			progress(done)
			lastLog = time.Now()
		}
		return done == clusters, nil
	})
}

func createClusters(ctx context.Context, w *World, ns string, o FleetOptions) error {
	const parallel = 8
	next := make(chan int)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range parallel {
		wg.Go(func() {
			for i := range next {
				err := w.CreateCluster(ctx, ClusterSpec{
					Namespace: ns, Name: fmt.Sprintf("c%04d", i), ControlPlanes: o.ControlPlanes, Workers: o.Machines - o.ControlPlanes,
					Workload: i % len(w.Workloads), Policy: "to-1-13", Converged: o.Converged,
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range o.Clusters {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// sampler reads the controller's heap and queue depth every second.
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	heap  float64
	depth float64
}

func sample(ctx context.Context, c *Controller) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	c.sampler = s
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if m, err := c.Scrape(ctx); err == nil {
				s.mu.Lock()
				s.heap = max(s.heap, m.Sum("go_memstats_heap_alloc_bytes"))
				s.depth = max(s.depth, m.Sum("workqueue_depth", `name="talosupgrade"`))
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() {
	s.cancel()
	<-s.done
}

func (s *sampler) heapPeak() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heap
}

func (s *sampler) depthMax() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.depth
}
