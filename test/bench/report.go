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
	Fleet    *FleetResult     `json:"fleet,omitempty"`
	Idle     *IdleResult      `json:"idle,omitempty"`
	Pull     *PullResult      `json:"slowPulls,omitempty"`
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
	if f := r.Fleet; f != nil {
		printf("\n2. Fleet scale\n")
		printf("clusters\tmachines\trollout\tRSS steady/peak\theap steady/peak\treconcile p50/p99\tqueue depth max\tcold start\treq/machine mgmt+wkld (no probes)\twrites/machine\tCPU s\n")
		printf("%d\t%d\t%.1fs\t%s/%s\t%s/%s\t%.3f/%.3fs\t%.0f\t%.1fs\t%.1f (%.1f+%.1f)\t%.1f\t%.1f\n",
			f.Clusters, f.Machines, f.RolloutSeconds, mib(f.RSSSteady), mib(f.RSSPeak), mib(f.HeapSteady), mib(f.HeapPeak),
			f.ReconcileP50, f.ReconcileP99, f.QueueDepthMax, f.ColdStartSeconds,
			f.ManagementRequestsPerMachine+f.WorkloadRequestsPerMachine, f.ManagementRequestsPerMachine, f.WorkloadRequestsPerMachine,
			f.WritesPerMachine, f.CPUSeconds)
		printf("   top requests: %s\n", strings.Join(f.TopRequests, ", "))
		printf("   ClusterCache health probes (not counted per Machine): %.1f/s\n", f.ProbesPerSecond)
		if f.Note != "" {
			printf("   note: %s\n", f.Note)
		}
	}
	if i := r.Idle; i != nil {
		printf("\n3. Idle cost (everything converged)\n")
		printf("clusters\tduration\treq/s\treq/s per cluster\twrites\tresourceVersion changes\tCPU s\n")
		printf("%d\t%.0fs\t%.2f\t%.3f\t%d\t%d\t%.1f\n", i.Clusters, i.Seconds, i.RequestsPerSecond, i.RequestsPerSecondPerCluster, i.Writes, i.ResourceVersionChanges, i.CPUSeconds)
		printf("   requests: %s\n", strings.Join(i.TopRequests, ", "))
		if len(i.Changed) > 0 {
			printf("   changed: %s\n", strings.Join(i.Changed, ", "))
		}
	}
	if p := r.Pull; p != nil {
		printf("\n4. Reconcile time while every installer pull takes %.0fs (%d Clusters, %d Machines, rolled out in %.1fs)\n", p.PullSeconds, p.Clusters, p.Machines, p.RolloutSeconds)
		printf("controller\treconciles\tp50\tp99\tmean\tover 1s\n")
		for _, c := range p.Reconcile {
			printf("%s\t%.0f\t%.3fs\t%s\t%.3fs\t%.0f\n", c.Controller, c.Reconciles, c.P50, c.P99String(), c.Mean, c.OverOneSecond)
		}
	}
}

func mib(b float64) string { return fmt.Sprintf("%.0fMiB", b/(1<<20)) }
