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
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// IdleResult is the outcome of scenario 3.
type IdleResult struct {
	Clusters int     `json:"clusters"`
	Seconds  float64 `json:"seconds"`
	// Requests of the controller over the period, to both the management
	// and the workload apiservers, the leader election's included.
	Requests                    int64   `json:"requests"`
	RequestsPerSecond           float64 `json:"requestsPerSecond"`
	RequestsPerSecondPerCluster float64 `json:"requestsPerSecondPerCluster"`
	// ManagementPerSecond and WorkloadPerSecond split RequestsPerSecond.
	ManagementPerSecond float64 `json:"managementRequestsPerSecond"`
	WorkloadPerSecond   float64 `json:"workloadRequestsPerSecond"`
	// LeasePerSecond are the leader election's requests (a renewal every
	// --leader-elect-retry-period), and LeaseWrites the writes among them.
	LeasePerSecond float64 `json:"leaseRequestsPerSecond"`
	LeaseWrites    int64   `json:"leaseWrites"`
	// Writes are the controller's other writes.
	Writes      int64    `json:"writes"`
	TopRequests []string `json:"topRequests"`
	// Reconciles counts the reconciles by controller over the period (a
	// cache resync reconciles every object).
	Reconciles map[string]float64 `json:"reconciles,omitempty"`
	// ResourceVersionChanges counts the watch events (objects created,
	// changed or deleted) in both clusters over the period, and Changed
	// names a few of the objects.
	ResourceVersionChanges int      `json:"resourceVersionChanges"`
	Changed                []string `json:"changed,omitempty"`
	// CPUSeconds is the controller's CPU time over the period (of every
	// shard's controller together).
	CPUSeconds float64 `json:"cpuSeconds"`
}

// RunIdle runs scenario 3 against a converged fleet: f.Result.Idle.
func RunIdle(ctx context.Context, w *World, f *Fleet, d time.Duration, logf func(string, ...any)) error {
	logf("Scenario 3: watching the converged fleet for %s", d)
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	changes := &changeCounter{seen: map[string]int{}}
	type target struct {
		cfg  *rest.Config
		list client.ObjectList
		kind string
	}
	targets := make([]target, 0, 5+2*len(w.Workloads))
	targets = append(targets,
		target{w.Mgmt.Config, &upgradev1.TalosUpgradeList{}, "TalosUpgrade"},
		target{w.Mgmt.Config, &upgradev1.TalosUpgradePolicyList{}, "TalosUpgradePolicy"},
		target{w.Mgmt.Config, &clusterv1.ClusterList{}, "Cluster"},
		target{w.Mgmt.Config, &clusterv1.MachineList{}, "Machine"},
		target{w.Mgmt.Config, &corev1.SecretList{}, "Secret"},
	)
	for _, wl := range w.Workloads {
		targets = append(targets, target{wl.Config, &corev1.NodeList{}, "Node"}, target{wl.Config, &batchv1.JobList{}, "Job"})
	}
	for _, t := range targets {
		if err := changes.watch(watchCtx, t.cfg, t.list, t.kind); err != nil {
			return err
		}
	}
	before, eachBefore, err := f.scrape(ctx)
	if err != nil {
		return err
	}
	countsBefore := w.Proxy.Counts()
	routesBefore := f.routeCounts(w)
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	elapsed := time.Since(start).Seconds()
	counts := w.Proxy.Counts().Sub(countsBefore)
	after, eachAfter, err := f.scrape(ctx)
	if err != nil {
		return err
	}
	for k, r := range f.Result.Shards {
		r.IdleRequestsPerSecond = float64(w.Proxy.RouteCounts(f.shards[k].controller.route).Sub(routesBefore[k]).Total(nil)) / elapsed
		r.IdleCPUSeconds = eachAfter[k].Sum("process_cpu_seconds_total") - eachBefore[k].Sum("process_cpu_seconds_total")
	}
	res := &IdleResult{
		Clusters: f.Result.Clusters, Seconds: elapsed, Requests: counts.Total(nil), TopRequests: counts.Top(8),
		Writes:      counts.Total(func(k RequestKey) bool { return IsWrite(k) && !IsLease(k) }),
		LeaseWrites: counts.Total(func(k RequestKey) bool { return IsWrite(k) && IsLease(k) }),
	}
	res.RequestsPerSecond = float64(res.Requests) / elapsed
	res.RequestsPerSecondPerCluster = res.RequestsPerSecond / float64(max(res.Clusters, 1))
	res.ManagementPerSecond = float64(counts.Total(Management)) / elapsed
	res.WorkloadPerSecond = float64(counts.Total(func(k RequestKey) bool { return k.Target == "workload" })) / elapsed
	res.LeasePerSecond = float64(counts.Total(IsLease)) / elapsed
	res.CPUSeconds = after.Sum("process_cpu_seconds_total") - before.Sum("process_cpu_seconds_total")
	res.Reconciles = map[string]float64{}
	for _, name := range after.LabelValues("controller_runtime_reconcile_total", "controller") {
		label := fmt.Sprintf("controller=%q", name)
		if n := after.Sum("controller_runtime_reconcile_total", label) - before.Sum("controller_runtime_reconcile_total", label); n > 0 {
			res.Reconciles[name] = n
		}
	}
	res.ResourceVersionChanges, res.Changed = changes.summary(8)
	f.Result.Idle = res
	logf("Scenario 3: %.2f requests/s (%.2f of them the Lease's), %d writes besides the Lease's, %d resourceVersion changes",
		res.RequestsPerSecond, res.LeasePerSecond, res.Writes, res.ResourceVersionChanges)
	return nil
}

// changeCounter counts watch events by object.
type changeCounter struct {
	mu   sync.Mutex
	seen map[string]int
}

// watch lists the kind, then counts every event after the list.
func (c *changeCounter) watch(ctx context.Context, cfg *rest.Config, list client.ObjectList, kind string) error {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: envtest.NewScheme()})
	if err != nil {
		return err
	}
	if err := wc.List(ctx, list); err != nil {
		return fmt.Errorf("listing %s: %w", kind, err)
	}
	rv := list.GetResourceVersion()
	wi, err := wc.Watch(ctx, list, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		return fmt.Errorf("watching %s: %w", kind, err)
	}
	go func() {
		defer wi.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-wi.ResultChan():
				if !ok {
					return
				}
				obj, err := meta.Accessor(ev.Object)
				if err != nil {
					continue
				}
				key := fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName())
				c.mu.Lock()
				c.seen[key]++
				c.mu.Unlock()
			}
		}
	}()
	return nil
}

func (c *changeCounter) summary(n int) (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	keys := make([]string, 0, len(c.seen))
	for k, v := range c.seen {
		total += v
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.seen[keys[i]] > c.seen[keys[j]] })
	var out []string
	for i, k := range keys {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%s x%d", k, c.seen[k]))
	}
	return total, out
}
