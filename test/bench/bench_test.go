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
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		method, path, query string
		verb, resource      string
	}{
		{http.MethodGet, "/api/v1/secrets", "", "list", "secrets"},
		{http.MethodGet, "/api/v1/namespaces/fleet/secrets/c0001-talosconfig", "", "get", "secrets"},
		{http.MethodGet, "/api/v1/nodes", "watch=true&labelSelector=a%3Db", "watch", "nodes"},
		{http.MethodPatch, "/api/v1/nodes/c0001-cp-0", "", "patch", "nodes"},
		{http.MethodPatch, "/apis/upgrade.tollgate.dev/v1alpha1/namespaces/fleet/talosupgrades/c0001/status", "", "patch", "talosupgrades/status"},
		{http.MethodPost, "/apis/batch/v1/namespaces/default/jobs", "", "create", "jobs"},
		{http.MethodGet, "/api/v1/namespaces", "", "list", "namespaces"},
		{http.MethodGet, "/", "", "get", "(non-resource)"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			g := NewWithT(t)
			q, err := url.ParseQuery(tt.query)
			g.Expect(err).NotTo(HaveOccurred())
			verb, resource := classify(tt.method, tt.path, q)
			g.Expect(verb).To(Equal(tt.verb))
			g.Expect(resource).To(Equal(tt.resource))
		})
	}
}

func TestQuantileInterpolatesWithinABucket(t *testing.T) {
	g := NewWithT(t)
	before := Metrics{}
	after := Metrics{
		`m_bucket{controller="a",le="0.1"}`:  50,
		`m_bucket{controller="a",le="1"}`:    90,
		`m_bucket{controller="a",le="10"}`:   100,
		`m_bucket{controller="a",le="+Inf"}`: 100,
		`m_bucket{controller="b",le="0.1"}`:  1000, // Another controller: left out.
	}
	g.Expect(Quantile(after, before, "m", 0.5, `controller="a"`)).To(BeNumerically("~", 0.1, 1e-9))
	g.Expect(Quantile(after, before, "m", 0.7, `controller="a"`)).To(BeNumerically("~", 0.55, 1e-9))
	g.Expect(Quantile(after, before, "m", 0.99, `controller="a"`)).To(BeNumerically("~", 9.1, 1e-9))
}

func TestNewStats(t *testing.T) {
	g := NewWithT(t)
	s := NewStats([]float64{0.3, 0.1, 0.2, 1.0})
	g.Expect(s.N).To(Equal(4))
	g.Expect(s.P50).To(Equal(0.2))
	g.Expect(s.P99).To(Equal(1.0))
	g.Expect(s.Mean).To(BeNumerically("~", 0.4, 1e-9))
	g.Expect(NewStats(nil)).To(Equal(Stats{}))
}

func TestReconcileTimesByController(t *testing.T) {
	g := NewWithT(t)
	before := Metrics{
		`controller_runtime_reconcile_time_seconds_bucket{controller="talosupgrade",le="1"}`:    10,
		`controller_runtime_reconcile_time_seconds_bucket{controller="talosupgrade",le="60"}`:   10,
		`controller_runtime_reconcile_time_seconds_bucket{controller="talosupgrade",le="+Inf"}`: 10,
		`controller_runtime_reconcile_time_seconds_count{controller="talosupgrade"}`:            10,
		`controller_runtime_reconcile_time_seconds_sum{controller="talosupgrade"}`:              1,
	}
	after := Metrics{
		// 90 fast reconciles and 10 held by a 60s pull.
		`controller_runtime_reconcile_time_seconds_bucket{controller="talosupgrade",le="1"}`:    100,
		`controller_runtime_reconcile_time_seconds_bucket{controller="talosupgrade",le="60"}`:   100,
		`controller_runtime_reconcile_time_seconds_bucket{controller="talosupgrade",le="+Inf"}`: 110,
		`controller_runtime_reconcile_time_seconds_count{controller="talosupgrade"}`:            110,
		`controller_runtime_reconcile_time_seconds_sum{controller="talosupgrade"}`:              611,
		// A controller that did nothing in between: left out.
		`controller_runtime_reconcile_time_seconds_bucket{controller="cluster",le="1"}`:    3,
		`controller_runtime_reconcile_time_seconds_bucket{controller="cluster",le="60"}`:   3,
		`controller_runtime_reconcile_time_seconds_bucket{controller="cluster",le="+Inf"}`: 3,
		`controller_runtime_reconcile_time_seconds_count{controller="cluster"}`:            3,
	}
	before[`controller_runtime_reconcile_time_seconds_count{controller="cluster"}`] = 3
	got := ReconcileTimesByController(after, before)
	g.Expect(got).To(HaveLen(1))
	r := got[0]
	g.Expect(r.Controller).To(Equal("talosupgrade"))
	g.Expect(r.Reconciles).To(Equal(100.0))
	g.Expect(r.OverOneSecond).To(Equal(10.0))
	g.Expect(r.Mean).To(BeNumerically("~", 6.1, 1e-9))
	g.Expect(r.P50).To(BeNumerically("<=", 1))
	g.Expect(r.P99).To(Equal(60.0))
	g.Expect(r.P99Unbounded).To(BeTrue())
	g.Expect(r.P99String()).To(Equal(">60s"))
}

func TestHistogramStatsOf(t *testing.T) {
	g := NewWithT(t)
	const path = `webhook="/validate"`
	before := Metrics{
		`m_bucket{webhook="/validate",le="0.001"}`: 5,
		`m_bucket{webhook="/validate",le="0.01"}`:  5,
		`m_bucket{webhook="/validate",le="0.1"}`:   5,
		`m_bucket{webhook="/validate",le="+Inf"}`:  5,
		`m_count{webhook="/validate"}`:             5,
		`m_sum{webhook="/validate"}`:               0.002,
	}
	after := Metrics{
		// 90 answers within 1ms, 10 within 10ms, since before.
		`m_bucket{webhook="/validate",le="0.001"}`: 95,
		`m_bucket{webhook="/validate",le="0.01"}`:  105,
		`m_bucket{webhook="/validate",le="0.1"}`:   105,
		`m_bucket{webhook="/validate",le="+Inf"}`:  105,
		`m_count{webhook="/validate"}`:             105,
		`m_sum{webhook="/validate"}`:               0.102,
		`m_count{webhook="/other"}`:                1000, // Another webhook: left out.
	}
	s := HistogramStatsOf(after, before, "m", path)
	g.Expect(s.Count).To(Equal(100.0))
	g.Expect(s.Mean).To(BeNumerically("~", 0.001, 1e-9))
	g.Expect(s.P50).To(BeNumerically("<=", 0.001))
	g.Expect(s.P99).To(BeNumerically("~", 0.0091, 1e-9))
	g.Expect(s.Within).To(Equal(map[string]float64{"0.001": 0.9, "0.01": 1}))
	g.Expect(HistogramStatsOf(before, before, "m", path)).To(Equal(HistogramStats{}))
}

func TestGrowthOf(t *testing.T) {
	g := NewWithT(t)
	fleet := func(clusters int, rss, coldStart, idle float64) *FleetResult {
		return &FleetResult{
			Clusters: clusters, Converged: true, RSSSteady: rss,
			ColdStart: &ColdStartResult{AfterLeaderSeconds: coldStart, Requests: 16, RSSAfter: rss, HeapAfter: rss / 2},
			Idle:      &IdleResult{RequestsPerSecond: idle},
		}
	}
	rolledOut := fleet(1000, 1, 1, 1)
	rolledOut.Converged = false
	got := GrowthOf([]*FleetResult{fleet(1000, 200, 2, 0.5), fleet(5000, 600, 6, 0.5), rolledOut})
	g.Expect(got).To(HaveLen(1))
	gr := got[0]
	g.Expect(gr.From).To(Equal(1000))
	g.Expect(gr.To).To(Equal(5000))
	g.Expect(gr.RSSSteady).To(Equal(Line{Base: 100, PerCluster: 0.1}))
	g.Expect(gr.RSSSteady.At(10000)).To(Equal(1100.0))
	g.Expect(gr.ColdStart.Base).To(BeNumerically("~", 1, 1e-9))
	g.Expect(gr.ColdStart.PerCluster).To(BeNumerically("~", 0.001, 1e-12))
	g.Expect(gr.ColdStartRequests).To(Equal(Line{Base: 16}))
	g.Expect(gr.IdleRequests).To(Equal(Line{Base: 0.5}))
}

func TestCountRollouts(t *testing.T) {
	g := NewWithT(t)
	upgrade := func(name string, phase upgradev1.UpgradePhase, admitted bool) upgradev1.TalosUpgrade {
		u := upgradev1.TalosUpgrade{}
		u.Name = name
		u.Status.Phase = phase
		if admitted {
			u.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "2026-12-02T00:00:00Z"}
		}
		return u
	}
	n := countRollouts([]upgradev1.TalosUpgrade{
		upgrade("a", upgradev1.UpgradePhaseCompleted, true),
		upgrade("b", upgradev1.UpgradePhaseCompleted, false),
		upgrade("c", upgradev1.UpgradePhaseInProgress, true),
		upgrade("d", upgradev1.UpgradePhasePending, false),
	})
	g.Expect(n.Total).To(Equal(4))
	g.Expect(n.Completed).To(Equal(2))
	g.Expect(n.Failed).To(Equal(0))
	g.Expect(n.Admitted).To(Equal(1), "an admitted rollout that finished frees its slot")
}

func TestShardOf(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ShardOf(7, 1)).To(Equal(""))
	g.Expect(ShardOf(7, 0)).To(Equal(""))
	g.Expect([]string{ShardOf(0, 2), ShardOf(1, 2), ShardOf(2, 2), ShardOf(9999, 2)}).To(Equal([]string{"shard-0", "shard-1", "shard-0", "shard-1"}))
	g.Expect(ShardPolicy("")).To(Equal(fleetPolicy))
	g.Expect(ShardPolicy("shard-1")).To(Equal(fleetPolicy + "-shard-1"))
	// The counts of the shards are those ShardOf assigns.
	for _, tt := range []struct{ clusters, shards int }{{10000, 2}, {201, 2}, {7, 3}, {5, 1}} {
		counts := map[string]int{}
		for i := range tt.clusters {
			counts[ShardOf(i, tt.shards)]++
		}
		for k := range tt.shards {
			g.Expect(shardClusters(tt.clusters, tt.shards, k)).To(Equal(counts[ShardOf(k, tt.shards)]), "%d Clusters, shard %d of %d", tt.clusters, k, tt.shards)
		}
	}
}

func TestWrittenObject(t *testing.T) {
	g := NewWithT(t)
	g.Expect(writtenObject("patch", "/apis/upgrade.tollgate.dev/v1alpha1/namespaces/fleet/talosupgrades/c0001/status")).To(Equal("talosupgrades fleet/c0001"))
	g.Expect(writtenObject("update", "/apis/cluster.x-k8s.io/v1beta2/namespaces/fleet/clusters/c0002")).To(Equal("clusters fleet/c0002"))
	g.Expect(writtenObject("get", "/apis/cluster.x-k8s.io/v1beta2/namespaces/fleet/clusters/c0002")).To(BeEmpty())
	g.Expect(writtenObject("create", "/apis/upgrade.tollgate.dev/v1alpha1/namespaces/fleet/talosupgrades")).To(BeEmpty())
	g.Expect(writtenObject("update", "/apis/coordination.k8s.io/v1/namespaces/tollgate-system/leases/l")).To(Equal("leases tollgate-system/l"))
}

func TestForeignWrites(t *testing.T) {
	g := NewWithT(t)
	owners := map[string]string{
		"talosupgrades fleet/c0000": "shard-0", "clusters fleet/c0000": "shard-0",
		"talosupgrades fleet/c0001": "shard-1", "talosupgradepolicies fleet/to-1-13-shard-1": "shard-1",
	}
	written := []string{"talosupgrades fleet/c0000", "clusters fleet/c0000", "leases tollgate-system/l", "events fleet/e"}
	g.Expect(foreignWrites(written, owners, "shard-0")).To(BeEmpty())
	g.Expect(foreignWrites(append(written, "talosupgrades fleet/c0001", "talosupgradepolicies fleet/to-1-13-shard-1", "talosupgrades fleet/unlabelled"), owners, "shard-0")).To(Equal([]string{
		`talosupgrades fleet/c0001 (of shard "shard-1")`, `talosupgradepolicies fleet/to-1-13-shard-1 (of shard "shard-1")`, `talosupgrades fleet/unlabelled (of shard "")`,
	}))
}

func TestCheckColdStartReconciles(t *testing.T) {
	g := NewWithT(t)
	g.Expect(checkColdStartReconciles("shard-0", 5000, 5000, 10000)).To(Succeed())
	g.Expect(checkColdStartReconciles("shard-0", 7499, 5000, 10000)).To(Succeed())
	g.Expect(checkColdStartReconciles("shard-0", 10000, 5000, 10000)).To(MatchError(ContainSubstring("reconciles the other shards' rollouts")))
	g.Expect(checkColdStartReconciles("", 30000, 10000, 10000)).To(Succeed(), "no other shard")
}

func TestSumMetrics(t *testing.T) {
	g := NewWithT(t)
	a := Metrics{`process_resident_memory_bytes`: 100, `leader_election_master_status{name="a"}`: 1}
	b := Metrics{`process_resident_memory_bytes`: 50, `leader_election_master_status{name="b"}`: 1}
	sum := sumMetrics([]Metrics{a, b})
	g.Expect(sum.Sum("process_resident_memory_bytes")).To(Equal(150.0))
	g.Expect(isLeader(sum, "a")).To(BeTrue())
	g.Expect(isLeader(sum, "c")).To(BeFalse())
}

func TestControllerArgsOfAShard(t *testing.T) {
	g := NewWithT(t)
	o := ControllerOptions{LeaderElection: true, WatchFilter: "shard-1", LeaderElectionID: LeaderElectionID + "-shard-1"}
	args := controllerArgs(o, "127.0.0.1:1", "", nil, 50000)
	g.Expect(args).To(ContainElements("--watch-filter=shard-1", "--leader-election-id=tollgate-controller-leader-shard-1", "--webhook-port=0"))
	g.Expect(o.route()).To(Equal("management-shard-1"))
	g.Expect(isManagementRoute(o.route())).To(BeTrue())
	g.Expect(isManagementRoute("workload-0")).To(BeFalse())
	g.Expect(controllerArgs(ControllerOptions{LeaderElection: true}, "127.0.0.1:1", "", nil, 50000)).NotTo(ContainElement(HavePrefix("--watch-filter")))
}

func TestExitedSaysHowAndWhy(t *testing.T) {
	g := NewWithT(t)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "controller.log"))
	g.Expect(err).NotTo(HaveOccurred())
	release := filepath.Join(t.TempDir(), "release")
	// The process runs until the file release exists, logs why it stops
	// and exits 1, as a manager that lost its Lease does.
	cmd := exec.Command("sh", "-c", `echo started; while [ ! -e "$0" ]; do sleep 0.05; done; echo '"Manager stopped with an error" err="leader election lost"'; exit 1`, release)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	c := &Controller{cmd: cmd, log: logFile, done: make(chan struct{})}
	g.Expect(c.start()).To(Succeed())
	defer c.Stop()
	g.Expect(c.Exited()).To(Succeed(), "running")
	g.Expect(os.WriteFile(release, nil, 0o600)).To(Succeed())
	g.Eventually(c.Exited, 10*time.Second, 50*time.Millisecond).Should(MatchError(And(
		ContainSubstring("exit status 1"), ContainSubstring(`err="leader election lost"`), ContainSubstring(logFile.Name()))))
}
