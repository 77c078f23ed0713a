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
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one `make bench` run measured.
type Report struct {
	// Command is the command line that produced the report.
	Command string `json:"command"`
	// Started is when the run started.
	Started time.Time `json:"started"`
	// CPUs is the number of CPUs of the machine.
	CPUs     int              `json:"cpus"`
	Overhead []OverheadResult `json:"overhead,omitempty"`
	// Fleet holds scenario 2 at each size, with scenarios 3 and 5 on it.
	Fleet []*FleetResult `json:"fleet,omitempty"`
	// Growth says how the converged fleet's figures grow with its size.
	Growth []Growth    `json:"growth,omitempty"`
	Pull   *PullResult `json:"slowPulls,omitempty"`
	// InPlace is scenario 6, the extension path against the policy path.
	InPlace *InPlaceResult `json:"inPlace,omitempty"`
	// Channel is scenario 8, a release through a ReleaseChannel.
	Channel *ChannelResult `json:"channel,omitempty"`
}

// NewReport starts a report.
func NewReport() *Report {
	// `go run` builds into a temporary directory: name the program instead.
	args := append([]string{"bench"}, os.Args[1:]...)
	return &Report{Command: strings.Join(args, " "), Started: time.Now().UTC(), CPUs: runtime.NumCPU()}
}

// WriteJSON writes the report to dir/bench-<time>.json and dir/latest.json.
func (r *Report) WriteJSON(dir string) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "bench-"+r.Started.Format("20060102T150405Z")+".json")
	if err := os.WriteFile(path, data, 0o644); err != nil { //nolint:gosec // A report, not a secret.
		return "", err
	}
	return path, os.WriteFile(filepath.Join(dir, "latest.json"), data, 0o644) //nolint:gosec // A report, not a secret.
}

// Print writes the report as tables.
func (r *Report) Print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	defer tw.Flush() //nolint:errcheck // Printing to a terminal.
	printf := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format, args...) }
	printf("\nTollgate benchmark, %d CPUs, %s\n%s\n", r.CPUs, r.Started.Format(time.RFC3339), r.Command)
	if len(r.Overhead) > 0 {
		printf("\n1. Overhead per Machine (seconds; controller time only, reboots excluded)\n")
		printf("maxUnavailable\tmachines\treboot\tstart p50\tstart p99\tverify p50\tverify p99\tper-machine p50\tper-machine p99\ttotal\tideal\tover ideal\tfirst call\tmgmt req/machine\twkld req/machine (no probes)\twrites/machine\treconcile p50/p99\n")
		for _, o := range r.Overhead {
			printf("%d\t%d\t%.1fs\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1fs\t%.1fs\t%+.1f%%\t%.1fs\t%.1f\t%.1f\t%.1f\t%.3f/%.3fs\n",
				o.MaxUnavailable, o.Machines, o.RebootSeconds, o.StartGap.P50, o.StartGap.P99, o.VerifyGap.P50, o.VerifyGap.P99,
				o.PerMachine.P50, o.PerMachine.P99, o.TotalSeconds, o.IdealSeconds, o.OverIdeal, o.FirstCallSeconds,
				o.ManagementRequestsPerMachine, o.WorkloadRequestsPerMachine, o.WritesPerMachine, o.ReconcileP50, o.ReconcileP99)
		}
		for _, o := range r.Overhead {
			printf("   maxUnavailable %d, top requests: %s\n", o.MaxUnavailable, strings.Join(o.TopRequests, ", "))
		}
	}
	if len(r.Fleet) > 0 {
		r.printFleet(printf)
	}
	if p := r.Pull; p != nil {
		printf("\n4. Reconcile time while every installer pull takes %.0fs (%d Clusters, %d Machines, rolled out in %.1fs)\n", p.PullSeconds, p.Clusters, p.Machines, p.RolloutSeconds)
		printf("controller\treconciles\tp50\tp99\tmean\tover 1s\n")
		for _, c := range p.Reconcile {
			printf("%s\t%.0f\t%.3fs\t%s\t%.3fs\t%.0f\n", c.Controller, c.Reconciles, c.P50, c.P99String(), c.Mean, c.OverOneSecond)
		}
	}
	if ip := r.InPlace; ip != nil {
		printf("\n6. Workers moved to the target by a policy and by CAPI's in-place update through the extension (%d workers, one at a time, reboot %.1fs)\n", ip.Workers, ip.RebootSeconds)
		printf("path\tfirst call\ttotal\tper machine\tover the reboot\thand-off to the next Machine (CAPI's part)\tCompleted to done\n")
		for _, p := range []struct {
			name string
			r    PathResult
		}{{"policy", ip.Policy}, {"CAPI + extension", ip.Extension}} {
			printf("%s\t%.1fs\t%.1fs\t%.2fs\t%+.0f%%\t%.2fs (%.2fs)\t%.2fs\n", p.name, p.r.FirstCallSeconds, p.r.TotalSeconds, p.r.PerMachineSeconds, p.r.OverIdealPercent, p.r.HandoffSeconds, p.r.CAPIHandoffSeconds, p.r.AnswerLagSeconds)
		}
		printf("   per machine, extension / policy: %.2fx\n", ip.Ratio)
		e := ip.Extension
		verdict := "met"
		if e.TollgateShareSeconds > TollgateShareGoalSeconds {
			verdict = "not met"
		}
		printf("   Tollgate's share per Machine: %.2fs (CAPI's mark to the upgrade call %.2fs, record Completed to the Machine released %.2fs); goal <= %.1fs: %s\n",
			e.TollgateShareSeconds, e.MarkToCallSeconds, e.ReleaseSeconds, TollgateShareGoalSeconds, verdict)
		printf("   CAPI's poll per Machine: %.2fs from the Machine released to CAPI having heard done (it asks again no sooner than the retryAfterSeconds of its previous answer); record Completed to done %.2fs in all\n",
			e.CAPIPollSeconds, e.AnswerLagSeconds)
	}
	if r.Channel != nil {
		r.printChannel(printf)
	}
}

// printFleet prints scenarios 2, 3 and 5 and the growth of the fleet.
func (r *Report) printFleet(printf func(string, ...any)) {
	printf("\n2. Fleet scale\n")
	printf("clusters\tmachines\tconverged\tmaxClustersInProgress\trollout\tupgraded\tRSS steady/peak\theap steady/peak\treconcile p50/p99\tqueue depth max\tconnections max (admitted max, excess max)\treq/machine mgmt+wkld (no probes)\twrites/machine\tCPU s\tCPU s/machine upgraded\n")
	for _, f := range r.Fleet {
		perMachine := "-"
		if f.MachinesUpgraded > 0 {
			perMachine = fmt.Sprintf("%.3f", f.CPUSecondsPerMachine)
		}
		printf("%d\t%d\t%t\t%d\t%.1fs\t%.0f\t%s/%s\t%s/%s\t%.3f/%.3fs\t%.0f\t%.0f (%d, %+.0f)\t%.1f (%.1f+%.1f)\t%.1f\t%.1f\t%s\n",
			f.Clusters, f.Machines, f.Converged, f.MaxClustersInProgress, f.RolloutSeconds, f.MachinesUpgraded,
			mib(f.RSSSteady), mib(f.RSSPeak), mib(f.HeapSteady), mib(f.HeapPeak),
			f.ReconcileP50, f.ReconcileP99, f.QueueDepthMax, f.ConnectionsMax, f.AdmittedMax, f.ConnectionsOverAdmittedMax,
			f.ManagementRequestsPerMachine+f.WorkloadRequestsPerMachine, f.ManagementRequestsPerMachine, f.WorkloadRequestsPerMachine,
			f.WritesPerMachine, f.CPUSeconds, perMachine)
	}
	for _, f := range r.Fleet {
		printf("   %d Clusters: top requests: %s\n", f.Clusters, strings.Join(f.TopRequests, ", "))
		printf("   %d Clusters: ClusterCache health probes (not counted per Machine) %.1f/s; %d scrapes of /metrics at %.3f CPU s each; at rest %.1fs after the last Completed; %.0f workload connections once converged\n",
			f.Clusters, f.ProbesPerSecond, f.Scrapes, f.ScrapeCPUSeconds, f.RestSeconds, f.ConnectionsSteady)
		if f.Note != "" {
			printf("   note: %s\n", f.Note)
		}
	}
	if hasColdStart(r.Fleet) {
		printf("\nCold start (a restart over the converged fleet, until every TalosUpgrade is reconciled and the queue empty)\n")
		printf("clusters\tfrom the Lease held\tfrom the process start\tLease held after\trequests\twrites (no Lease)\tCPU s\tRSS/heap after\n")
		for _, f := range r.Fleet {
			if c := f.ColdStart; c != nil {
				printf("%d\t%.1fs\t%.1fs\t%.1fs\t%d\t%d\t%.1f\t%s/%s\n", f.Clusters, c.AfterLeaderSeconds, c.Seconds, c.LeaderSeconds, c.Requests, c.Writes, c.CPUSeconds,
					mib(c.RSSAfter), mib(c.HeapAfter))
			}
		}
	}
	printShards(printf, r.Fleet)
	if hasIdle(r.Fleet) {
		printf("\n3. Idle cost (everything converged; management and workload apiservers together)\n")
		printf("clusters\tduration\treq/s\tmgmt\twkld\tof them Lease\treq/s per cluster\twrites (no Lease)\tLease writes\treconciles\tresourceVersion changes\tCPU s\n")
		for _, f := range r.Fleet {
			if i := f.Idle; i != nil {
				printf("%d\t%.0fs\t%.2f\t%.2f\t%.2f\t%.2f\t%.4f\t%d\t%d\t%s\t%d\t%.1f\n", i.Clusters, i.Seconds, i.RequestsPerSecond, i.ManagementPerSecond, i.WorkloadPerSecond,
					i.LeasePerSecond, i.RequestsPerSecondPerCluster, i.Writes, i.LeaseWrites, formatCounts(i.Reconciles), i.ResourceVersionChanges, i.CPUSeconds)
			}
		}
		for _, f := range r.Fleet {
			if i := f.Idle; i != nil {
				printf("   %d Clusters: requests: %s\n", i.Clusters, strings.Join(i.TopRequests, ", "))
				if len(i.Changed) > 0 {
					printf("   %d Clusters: changed: %s\n", i.Clusters, strings.Join(i.Changed, ", "))
				}
			}
		}
	}
	if hasAdmission(r.Fleet) {
		printf("\n5. Admission latency (ms; client round trip, and the controller's webhook time: mean exact, p50/p99 within decade buckets)\n")
		printf("clusters\trequests\tclient p50/p99/max\tvalidate mean (p50/p99)\n")
		for _, f := range r.Fleet {
			if a := f.Admission; a != nil {
				for _, row := range []struct {
					what     string
					client   Stats
					validate HistogramStats
				}{
					{"policy pace", a.Policy, a.PolicyValidate},
					{"policy target", a.PolicyTarget, a.PolicyTargetValidate},
					{"Cluster moved", a.Cluster, a.ClusterValidate},
				} {
					printf("%d\t%d %s\t%.1f/%.1f/%.1f\t%.2f (%.1f/%.1f)\n", a.Clusters, row.client.N, row.what,
						ms(row.client.P50), ms(row.client.P99), ms(row.client.Max), ms(row.validate.Mean), ms(row.validate.P50), ms(row.validate.P99))
				}
				printf("%d\tpolicy default webhook mean %.2f\n", a.Clusters, ms(a.PolicyDefault.Mean))
			}
		}
	}
	for _, g := range r.Growth {
		printf("\nGrowth from %d to %d converged Clusters, per Cluster (and at 0):\n", g.From, g.To)
		printf("   RSS %s/Cluster (%s) once converged, %s/Cluster (%s) after a cold start; heap %s/Cluster (%s)\n",
			kib(g.RSSSteady.PerCluster), mib(g.RSSSteady.Base), kib(g.RSSColdStart.PerCluster), mib(g.RSSColdStart.Base), kib(g.HeapColdStart.PerCluster), mib(g.HeapColdStart.Base))
		printf("   cold start from the Lease held %.2fms/Cluster (%.1fs), %.2f requests/Cluster (%.0f); idle %.5f requests/s per Cluster (%.2f/s)\n",
			ms(g.ColdStart.PerCluster), g.ColdStart.Base, g.ColdStartRequests.PerCluster, g.ColdStartRequests.Base, g.IdleRequests.PerCluster, g.IdleRequests.Base)
	}
}

// printShards prints the shards of sharded fleets, one line each.
func printShards(printf func(string, ...any), fleet []*FleetResult) {
	header := false
	for _, f := range fleet {
		for _, sh := range f.Shards {
			if !header {
				printf("\nShards (one controller process per --watch-filter; cold start until every TalosUpgrade of the shard is reconciled, its requests alone)\n")
				printf("clusters\tshard\tits clusters\twebhooks\treconciles\tTalosUpgrades written\tmgmt requests\tRSS steady/peak\theap steady/peak\tCPU s\tidle req/s\tcold start from the Lease (from the start)\tcold start reconciles\tcold start requests\tRSS/heap after\n")
				header = true
			}
			cold := "-\t-\t-\t-"
			if c := sh.ColdStart; c != nil {
				cold = fmt.Sprintf("%.1fs (%.1fs)\t%.0f\t%d\t%s/%s", c.AfterLeaderSeconds, c.Seconds, c.Reconciles, c.Requests, mib(c.RSSAfter), mib(c.HeapAfter))
			}
			printf("%d\t%s\t%d\t%t\t%.0f\t%d\t%d\t%s/%s\t%s/%s\t%.1f\t%.2f\t%s\n", f.Clusters, sh.WatchFilter, sh.Clusters, sh.Webhooks, sh.Reconciles, sh.UpgradesWritten,
				sh.ManagementRequests, mib(sh.RSSSteady), mib(sh.RSSPeak), mib(sh.HeapSteady), mib(sh.HeapPeak), sh.CPUSeconds, sh.IdleRequestsPerSecond, cold)
		}
	}
}

// hasColdStart reports whether a fleet has an unsharded cold start (a
// sharded fleet's are in its shards).
func hasColdStart(fleet []*FleetResult) bool {
	for _, f := range fleet {
		if f.ColdStart != nil {
			return true
		}
	}
	return false
}

func hasIdle(fleet []*FleetResult) bool {
	for _, f := range fleet {
		if f.Idle != nil {
			return true
		}
	}
	return false
}

func hasAdmission(fleet []*FleetResult) bool {
	for _, f := range fleet {
		if f.Admission != nil {
			return true
		}
	}
	return false
}

// formatCounts prints counts by name, sorted by name.
func formatCounts(counts map[string]float64) string {
	if len(counts) == 0 {
		return "0"
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

func mib(b float64) string { return fmt.Sprintf("%.0fMiB", b/(1<<20)) }

func kib(b float64) string { return fmt.Sprintf("%.1fKiB", b/(1<<10)) }

func ms(s float64) float64 { return 1000 * s }
