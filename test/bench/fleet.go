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
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FleetOptions size scenario 2.
type FleetOptions struct {
	// Clusters and Machines (per Cluster, ControlPlanes of them control
	// plane) size the fleet.
	Clusters, Machines, ControlPlanes int
	// MaxUnavailable is the workers' budget in each Cluster.
	MaxUnavailable int
	// MaxClustersInProgress is the policy's maxClustersInProgress; 0
	// admits every Cluster at once (Clusters of them: set it to the largest
	// size for a fleet that Grows).
	MaxClustersInProgress int
	// Settle is how long the converged fleet is left alone before its
	// steady-state memory is read.
	Settle     time.Duration
	Controller ControllerOptions
	// Timeout bounds the rollout of the fleet.
	Timeout time.Duration
	// Converged creates the fleet on the target version already: no
	// rollout, only the footprint, cold start and idle cost are measured.
	Converged bool
	// Shards splits the fleet into that many shards (shards.go), one
	// controller process each; 0 or 1 runs one unsharded controller.
	Shards int
}

// FleetResult is the outcome of scenario 2 at one fleet size.
type FleetResult struct {
	Clusters int `json:"clusters"`
	Machines int `json:"machines"`
	// Converged is true for a fleet created on the target version.
	Converged bool `json:"converged"`
	// Workloads is the number of workload apiservers the Clusters share.
	Workloads int `json:"workloadApiservers"`
	// MaxClustersInProgress is the policy's.
	MaxClustersInProgress int `json:"maxClustersInProgress"`
	// Controller are the flags the controller ran with.
	Controller []string `json:"controllerArgs"`
	// RolloutSeconds is from the policy's creation (or, for a grown
	// fleet, the first new Cluster) to every Cluster Completed.
	RolloutSeconds float64 `json:"rolloutSeconds"`
	// MachinesUpgraded counts the Talos upgrade calls that succeeded
	// (tollgate_upgrade_calls_total).
	MachinesUpgraded float64 `json:"machinesUpgraded"`
	// RSS (process_resident_memory_bytes) and Go heap
	// (go_memstats_heap_alloc_bytes) at steady state (converged, after
	// Settle), and their peaks (VmHWM, and the largest heap sampled).
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
	// ConnectionsMax is the largest tollgate_workload_connections sampled
	// (each second), AdmittedMax the most rollouts admitted and not
	// finished at once, and ConnectionsOverAdmittedMax the largest excess
	// of the first over the second in one sample.
	ConnectionsMax             float64 `json:"workloadConnectionsMax"`
	AdmittedMax                int     `json:"admittedMax"`
	ConnectionsOverAdmittedMax float64 `json:"workloadConnectionsOverAdmittedMax"`
	// ConnectionsSteady is tollgate_workload_connections once converged.
	ConnectionsSteady float64 `json:"workloadConnectionsSteady"`
	// RestSeconds is from the last rollout Completed to the fleet at rest
	// (waitForRest): no Cluster asking for a workload connection, none
	// open, every controller quiet; the steady state and scenarios 3 and 5
	// are measured after.
	RestSeconds float64 `json:"restSeconds"`
	// Requests made by the controller during the rollout, per Machine.
	ManagementRequestsPerMachine float64  `json:"managementRequestsPerMachine"`
	WorkloadRequestsPerMachine   float64  `json:"workloadRequestsPerMachine"`
	WritesPerMachine             float64  `json:"writesPerMachine"`
	TopRequests                  []string `json:"topRequests"`
	// ProbesPerSecond are the ClusterCache's health probes (GET / on every
	// connected workload apiserver every 10s), left out of the per-Machine
	// figures.
	ProbesPerSecond float64 `json:"probesPerSecond"`
	// CPUSeconds is the controller's CPU time during the rollout
	// (process_cpu_seconds_total), and CPUSecondsPerMachine that over
	// MachinesUpgraded.
	CPUSeconds           float64 `json:"cpuSeconds"`
	CPUSecondsPerMachine float64 `json:"cpuSecondsPerMachineUpgraded,omitempty"`
	// Scrapes counts the bench's scrapes of the controller's metrics during
	// the rollout, and ScrapeCPUSeconds is the controller's CPU time per
	// scrape, measured on the converged fleet: their product is the bench's
	// share of CPUSeconds.
	Scrapes          int     `json:"scrapes"`
	ScrapeCPUSeconds float64 `json:"scrapeCpuSeconds"`
	// ColdStart is a restart of the controller over the converged fleet;
	// a sharded fleet has one per shard instead, in Shards.
	ColdStart *ColdStartResult `json:"coldStart,omitempty"`
	// Shards are the shards of a sharded fleet, one controller process
	// each; the figures above are then of the processes together (summed;
	// RSSPeak is the sum of each process's peak).
	Shards []*ShardResult `json:"shards,omitempty"`
	// Idle and Admission are scenarios 3 and 5 on this fleet.
	Idle      *IdleResult      `json:"idle,omitempty"`
	Admission *AdmissionResult `json:"admission,omitempty"`
	Note      string           `json:"note,omitempty"`
}

// Fleet is a converged fleet and its running controllers (one, or one
// per shard), for the scenarios that run on it.
type Fleet struct {
	Result *FleetResult
	// Namespace is the fleet's, Policy the policy of its first shard (the
	// only one without sharding).
	Namespace, Policy string

	// shards are the controller processes, the first one serving the
	// webhooks.
	shards []*fleetShard
	opts   FleetOptions
	obs    *observer
	// inProgress is the policy's maxClustersInProgress.
	inProgress int
}

// fleetNamespace and fleetPolicy are scenario 2's.
const (
	fleetNamespace = "fleet"
	fleetPolicy    = "to-1-13"
)

// RunFleet runs scenario 2. The returned Fleet's controller keeps running;
// the caller stops it with Fleet.Stop.
func RunFleet(ctx context.Context, w *World, o FleetOptions, logf func(string, ...any)) (_ *Fleet, reterr error) {
	ns := fleetNamespace
	if err := w.CreateNamespace(ctx, ns); err != nil {
		return nil, err
	}
	f := &Fleet{Namespace: ns, Policy: ShardPolicy(ShardOf(0, o.Shards)), opts: o}
	for k := range max(o.Shards, 1) {
		shard := ShardOf(k, o.Shards)
		f.shards = append(f.shards, &fleetShard{value: shard, policy: ShardPolicy(shard)})
	}
	defer func() {
		if reterr != nil {
			f.Stop()
		}
	}()
	var err error
	if f.obs, err = observe(ctx, w.Mgmt.Config, ns); err != nil {
		return nil, err
	}
	logf("Scenario 2: creating %d Clusters of %d Machines over %d workload apiserver(s)", o.Clusters, o.Machines, len(w.Workloads))
	start := time.Now()
	if err := createClusters(ctx, w, ns, o, 0, o.Clusters); err != nil {
		return nil, err
	}
	logf("Scenario 2: fleet created in %s", time.Since(start).Round(time.Second))

	for k, sh := range f.shards {
		if sh.controller, err = w.StartController(f.controllerOptions(k, fmt.Sprintf("fleet-%d", o.Clusters))); err != nil {
			return nil, err
		}
	}
	f.inProgress = o.MaxClustersInProgress
	if f.inProgress <= 0 {
		f.inProgress = o.Clusters
	}
	f.Result = f.newResult(w, o.Clusters)
	for _, sh := range f.shards {
		if err := waitForMetrics(ctx, sh.controller); err != nil {
			return nil, err
		}
		// The clock starts once the controller leads: a previous
		// scenario's controller did not release the Lease.
		if err := waitForLeader(ctx, sh.controller); err != nil {
			return nil, err
		}
	}
	if err := f.converge(ctx, w, logf, func() error {
		for _, sh := range f.shards {
			if err := w.CreatePolicy(ctx, PolicySpec{Namespace: ns, Name: sh.policy, MaxUnavailable: o.MaxUnavailable, MaxClustersInProgress: f.inProgress, Shard: sh.value}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return f, nil
}

// controllerOptions returns the options of shard k's process, named
// <name>[-<shard>]: its watch filter and Lease, and the webhooks served by
// the first shard only.
func (f *Fleet) controllerOptions(k int, name string) ControllerOptions {
	o := f.opts.Controller
	o.Name = name
	if shard := f.shards[k].value; shard != "" {
		o.Name += "-" + shard
		o.WatchFilter = shard
		o.LeaderElectionID = LeaderElectionID + "-" + shard
		o.SkipWebhooks = k > 0
	}
	return o
}

// Controller returns the first shard's controller: the only one without
// sharding, the one that serves the webhooks with.
func (f *Fleet) Controller() *Controller { return f.shards[0].controller }

// exited returns an error for each of the fleet's controllers that has
// exited, nil while they all run.
func (f *Fleet) exited() error {
	var errs []error
	for _, sh := range f.shards {
		if err := sh.controller.Exited(); err != nil && sh.value != "" {
			errs = append(errs, fmt.Errorf("shard %q: %w", sh.value, err))
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sharded reports whether the fleet runs one controller per shard.
func (f *Fleet) sharded() bool { return len(f.shards) > 1 }

// controllers returns the fleet's controllers, by shard.
func (f *Fleet) controllers() []*Controller {
	out := make([]*Controller, len(f.shards))
	for k, sh := range f.shards {
		out[k] = sh.controller
	}
	return out
}

// scrape reads the metrics of every controller of the fleet: their sum,
// and each one's by shard.
func (f *Fleet) scrape(ctx context.Context) (Metrics, []Metrics, error) {
	each := make([]Metrics, len(f.shards))
	for k, sh := range f.shards {
		m, err := sh.controller.Scrape(ctx)
		if err != nil {
			return nil, nil, err
		}
		each[k] = m
	}
	return sumMetrics(each), each, nil
}

// newResult starts the result of the fleet at size clusters.
func (f *Fleet) newResult(w *World, clusters int) *FleetResult {
	res := newFleetResult(w, f.opts, clusters)
	res.Controller = f.Controller().cmd.Args[1:]
	res.MaxClustersInProgress = f.inProgress
	res.Shards = newShardResults(f.shards, clusters)
	if f.sharded() {
		res.Note = joinNotes(res.Note, fmt.Sprintf("%d shards, one controller process each (--watch-filter, its own Lease), the webhooks served by the first: "+
			"the figures above are the processes' together (RSS and heap summed, RSS peak the sum of each one's), each shard's are in shards", len(f.shards)))
	}
	return res
}

func newFleetResult(w *World, o FleetOptions, clusters int) *FleetResult {
	res := &FleetResult{Clusters: clusters, Machines: clusters * o.Machines, Workloads: len(w.Workloads), Converged: o.Converged}
	if o.Converged {
		res.Note = "converged fleet: created on the target version, nothing rolled out; the rollout time is the time to create and reconcile every TalosUpgrade, request figures are per Machine reconciled, not upgraded"
	}
	return res
}

// Grow adds Clusters to a converged fleet up to clusters, while the
// controller runs, waits until their rollouts are Completed and measures
// the fleet at its new size: a new Result.
func (f *Fleet) Grow(ctx context.Context, w *World, clusters int, logf func(string, ...any)) error {
	from := f.Result.Clusters
	f.Result = f.newResult(w, clusters)
	logf("Scenario 2: growing the fleet from %d to %d Clusters", from, clusters)
	return f.converge(ctx, w, logf, func() error { return createClusters(ctx, w, f.Namespace, f.opts, from, clusters) })
}

// converge runs start (which creates the policy or the Clusters that make
// rollouts), waits for every rollout to be Completed, and measures the
// rollout and the steady state.
func (f *Fleet) converge(ctx context.Context, w *World, logf func(string, ...any), start func() error) error {
	res := f.Result
	s := sample(ctx, f.controllers(), f.obs)
	defer s.stop()
	before, eachBefore, err := f.scrape(ctx)
	if err != nil {
		return err
	}
	countsBefore := w.Proxy.Counts()
	routesBefore := f.routeCounts(w)
	begun := time.Now()
	if err := start(); err != nil {
		return err
	}
	logf("Scenario 2: rolling out %d Clusters, at most %d at once (per policy), over %d controller(s)", res.Clusters, res.MaxClustersInProgress, len(f.shards))
	if f.opts.Controller.Profile {
		go func() {
			path := filepath.Join(w.OutDir, fmt.Sprintf("cpu-rollout-%d.pb.gz", res.Clusters))
			if err := f.Controller().Profile(ctx, "profile?seconds=60", path); err != nil {
				logf("Scenario 2: CPU profile: %v", err)
			}
		}()
	}
	if err := f.obs.waitForRollouts(ctx, res.Clusters, f.opts.Timeout, f.exited, func(n rolloutCounts) {
		last := s.latest()
		logf("Scenario 2: %d of %d Clusters Completed after %s; %d admitted, %.0f workload connections",
			n.Completed, res.Clusters, time.Since(begun).Round(time.Second), n.Admitted, last.Connections)
	}); err != nil {
		return err
	}
	res.RolloutSeconds = time.Since(begun).Seconds()
	time.Sleep(time.Second) // Let the last reconciles land in the metrics; not a condition.
	after, eachAfter, err := f.scrape(ctx)
	if err != nil {
		return err
	}
	s.stop()
	peaks, shardPeaks, scrapes := s.result()
	res.HeapPeak, res.QueueDepthMax, res.Scrapes = peaks.Heap, peaks.QueueDepth, scrapes
	res.ConnectionsMax, res.AdmittedMax, res.ConnectionsOverAdmittedMax = peaks.Connections, peaks.Admitted, peaks.ConnectionsOverAdmitted

	counts := w.Proxy.Counts().Sub(countsBefore)
	machines := float64(res.Machines)
	res.ManagementRequestsPerMachine = float64(counts.Total(Management)) / machines
	res.WorkloadRequestsPerMachine = float64(counts.Total(Workload)) / machines
	res.WritesPerMachine = float64(counts.Total(IsWrite)) / machines
	res.TopRequests = counts.Top(10)
	res.ProbesPerSecond = float64(counts.Total(IsProbe)) / res.RolloutSeconds
	res.ReconcileP50 = Quantile(after, before, reconcileTimeMetric, 0.5, `controller="talosupgrade"`)
	res.ReconcileP99 = Quantile(after, before, reconcileTimeMetric, 0.99, `controller="talosupgrade"`)
	res.Reconciles = upgradeReconciles(after) - upgradeReconciles(before)
	res.CPUSeconds = after.Sum("process_cpu_seconds_total") - before.Sum("process_cpu_seconds_total")
	res.MachinesUpgraded = after.Sum("tollgate_upgrade_calls_total", `result="succeeded"`) - before.Sum("tollgate_upgrade_calls_total", `result="succeeded"`)
	if res.MachinesUpgraded > 0 {
		res.CPUSecondsPerMachine = res.CPUSeconds / res.MachinesUpgraded
	}
	for k, r := range res.Shards {
		r.Reconciles = upgradeReconciles(eachAfter[k]) - upgradeReconciles(eachBefore[k])
		r.CPUSeconds = eachAfter[k].Sum("process_cpu_seconds_total") - eachBefore[k].Sum("process_cpu_seconds_total")
		r.HeapPeak = shardPeaks[k].Heap
		r.ManagementRequests = w.Proxy.RouteCounts(f.shards[k].controller.route).Sub(routesBefore[k]).Total(nil)
		logf("Scenario 2: shard %s: %.0f reconciles of its %d TalosUpgrades, %d management requests", r.WatchFilter, r.Reconciles, r.Clusters, r.ManagementRequests)
	}
	if err := f.checkShardWrites(ctx, w); err != nil {
		return err
	}
	logf("Scenario 2: %d Clusters rolled out in %.1fs (%.0f Machines upgraded); at most %.0f workload connections, %d rollouts admitted",
		res.Clusters, res.RolloutSeconds, res.MachinesUpgraded, res.ConnectionsMax, res.AdmittedMax)
	restStart := time.Now()
	if err := f.waitForRest(ctx); err != nil {
		// The figures are still worth having: say so.
		res.Note = joinNotes(res.Note, fmt.Sprintf("not at rest %s after the last rollout Completed: %v", restTimeout, err))
		logf("Scenario 2: %v", err)
	}
	res.RestSeconds = time.Since(restStart).Seconds()
	logf("Scenario 2: at rest %.1fs after the last rollout Completed (no connection asked for or open, every controller quiet for %s); settling for %s",
		res.RestSeconds, quietFor, f.opts.Settle)

	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(f.opts.Settle):
	}
	steady, eachSteady, err := f.scrape(ctx)
	if err != nil {
		return err
	}
	res.RSSSteady, res.HeapSteady = steady.Sum("process_resident_memory_bytes"), steady.Sum("go_memstats_heap_alloc_bytes")
	res.ConnectionsSteady = steady.Sum(workloadConnectionsMetric)
	res.RSSPeak = 0
	for k, sh := range f.shards {
		_, peak, err := sh.controller.Memory()
		if err != nil {
			continue
		}
		res.RSSPeak += float64(peak)
		if res.Shards != nil {
			r := res.Shards[k]
			r.RSSPeak = float64(peak)
			r.RSSSteady, r.HeapSteady = eachSteady[k].Sum("process_resident_memory_bytes"), eachSteady[k].Sum("go_memstats_heap_alloc_bytes")
		}
	}
	for _, sh := range f.shards {
		if err := sh.controller.Profile(ctx, "heap", filepath.Join(w.OutDir, fmt.Sprintf("heap-steady-%d%s.pb.gz", res.Clusters, suffix(sh.value)))); err != nil {
			logf("Scenario 2: heap profile: %v", err)
		}
	}
	// The sampler scrapes every controller once a round: a round costs
	// the sum of their scrapes.
	res.ScrapeCPUSeconds = 0
	for _, sh := range f.shards {
		cost, err := scrapeCost(ctx, sh.controller, 50)
		if err != nil {
			return err
		}
		res.ScrapeCPUSeconds += cost
	}
	return nil
}

// suffix returns "-<shard>", or "" without a shard.
func suffix(shard string) string {
	if shard == "" {
		return ""
	}
	return "-" + shard
}

// upgradeReconciles returns the TalosUpgrade controller's reconciles.
func upgradeReconciles(m Metrics) float64 {
	return m.Sum("controller_runtime_reconcile_total", `controller="talosupgrade"`)
}

// routeCounts returns the request counts of each shard's proxy route.
func (f *Fleet) routeCounts(w *World) []Counts {
	out := make([]Counts, len(f.shards))
	for k, sh := range f.shards {
		out[k] = w.Proxy.RouteCounts(sh.controller.route)
	}
	return out
}

// checkShardWrites fails when a shard's process wrote a Cluster, a
// TalosUpgrade or a policy of another shard, and counts the TalosUpgrades
// each wrote. It does nothing without sharding.
func (f *Fleet) checkShardWrites(ctx context.Context, w *World) error {
	if !f.sharded() {
		return nil
	}
	owners, err := shardOwners(ctx, w.Mgmt.Client, f.Namespace)
	if err != nil {
		return err
	}
	var errs []error
	for k, sh := range f.shards {
		written := w.Proxy.Written(sh.controller.route)
		n := 0
		for _, obj := range written {
			if strings.HasPrefix(obj, "talosupgrades ") {
				n++
			}
		}
		f.Result.Shards[k].UpgradesWritten = n
		if foreign := foreignWrites(written, owners, sh.value); len(foreign) > 0 {
			errs = append(errs, fmt.Errorf("shard %q wrote %d objects of other shards, such as %s", sh.value, len(foreign), strings.Join(foreign[:min(5, len(foreign))], ", ")))
		}
	}
	return errors.Join(errs...)
}

// quietFor is how long every controller of a fleet at rest has had nothing
// to do, and restTimeout how long the bench waits for it.
const (
	quietFor    = 5 * time.Second
	restTimeout = 5 * time.Minute
)

// waitForRest waits until the fleet is at rest: no Cluster asks for a
// workload connection, the controller has none open (the clean-up of the
// last rollouts is done), and no controller has reconciled anything for
// quietFor with its queue empty (the policy controller may still be
// taking back the slots of rollouts that finished). From then on the fleet
// costs what a converged fleet costs.
func (f *Fleet) waitForRest(ctx context.Context) error {
	var (
		reconciles = -1.0
		quietSince time.Time
	)
	if err := waitForEvery(ctx, restTimeout, time.Second, func() (bool, error) {
		if err := f.exited(); err != nil {
			return false, err
		}
		asked, err := f.obs.connectionsAsked(ctx)
		if err != nil {
			return false, err
		}
		m, _, err := f.scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // A missed scrape is tried again.
		}
		busy := asked > 0 || m.Sum(workloadConnectionsMetric) > 0 || m.Sum("workqueue_depth") > 0 || m.Sum("controller_runtime_active_workers") > 0
		if n := m.Sum("controller_runtime_reconcile_total"); n != reconciles || busy {
			reconciles, quietSince = n, time.Now()
			return false, nil
		}
		return time.Since(quietSince) >= quietFor, nil
	}); err != nil {
		return fmt.Errorf("waiting for the fleet to be at rest: %w", err)
	}
	return nil
}

// joinNotes joins two notes of a result.
func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Stop stops the fleet's controllers and informers.
func (f *Fleet) Stop() {
	for _, sh := range f.shards {
		if sh.controller != nil {
			sh.controller.Stop()
		}
	}
	if f.obs != nil {
		f.obs.stop()
	}
}

// waitForMetrics waits until the controller serves its metrics.
func waitForMetrics(ctx context.Context, c *Controller) error {
	if err := waitFor(ctx, time.Minute, func() (bool, error) { _, err := c.Scrape(ctx); return err == nil, nil }); err != nil {
		return fmt.Errorf("waiting for the controller's metrics: %w", err)
	}
	return nil
}

// waitForLeader waits until the controller leads (at once without leader
// election), so that no object is created for a controller still waiting
// for its Lease: its webhooks would answer, its controllers not.
func waitForLeader(ctx context.Context, c *Controller) error {
	if !c.leaderElection {
		return nil
	}
	if err := waitFor(ctx, time.Minute, func() (bool, error) {
		m, err := c.Scrape(ctx)
		return err == nil && isLeader(m, c.lease), nil
	}); err != nil {
		return fmt.Errorf("waiting for the controller to lead: %w", err)
	}
	return nil
}

// isLeader reports whether the controller holds its Lease, lease.
func isLeader(m Metrics, lease string) bool {
	return m.Sum("leader_election_master_status", fmt.Sprintf("name=%q", lease)) == 1
}

// createClusters creates the Clusters c<from> to c<to-1> of the fleet,
// Cluster i of shard ShardOf(i) and its policy.
func createClusters(ctx context.Context, w *World, ns string, o FleetOptions, from, to int) error {
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
				shard := ShardOf(i, o.Shards)
				err := w.CreateCluster(ctx, ClusterSpec{
					Namespace: ns, Name: fmt.Sprintf("c%04d", i), ControlPlanes: o.ControlPlanes, Workers: o.Machines - o.ControlPlanes,
					Workload: i % len(w.Workloads), Policy: ShardPolicy(shard), Shard: shard, Converged: o.Converged,
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
