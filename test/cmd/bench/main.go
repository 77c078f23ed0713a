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

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/test/bench"
	"github.com/tollgate-dev/tollgate/test/envtest"
)

func main() {
	os.Exit(run())
}

// run runs the benchmarks and returns the exit code.
func run() int {
	var (
		scenarios      = flag.String("scenario", "all", "Scenarios to run, comma-separated: overhead, fleet, idle (idle runs after fleet, on its fleet), pull, or all.")
		controlPlanes  = flag.Int("control-planes", 3, "Scenario 1: control-plane Machines.")
		workers        = flag.Int("workers", 20, "Scenario 1: worker Machines.")
		reboot         = flag.Duration("reboot", 5*time.Second, "Scenario 1: how long a simulated node is down.")
		maxUnavailable = flag.String("max-unavailable", "1,5", "Scenario 1: worker budgets, one rollout each.")
		healthInterval = flag.Duration("health-interval", 30*time.Second, "Scenario 1: interval of the health check (at least 5s).")
		clusters       = flag.Int("clusters", 40, "Scenario 2: Clusters in the fleet.")
		machines       = flag.Int("machines", 10, "Scenario 2: Machines per Cluster, 3 of them control plane.")
		fleetReboot    = flag.Duration("fleet-reboot", 2*time.Second, "Scenario 2: how long a simulated node is down.")
		fleetMU        = flag.Int("fleet-max-unavailable", 3, "Scenario 2: worker budget of each Cluster.")
		converged      = flag.Bool("fleet-converged", false, "Scenario 2: create the fleet on the target version already, to measure the footprint, cold start and idle cost of fleets too large to roll out here.")
		pullDelay      = flag.Duration("pull-delay", 60*time.Second, "Scenario 4: how long every node takes to pull the installer image.")
		pullClusters   = flag.Int("pull-clusters", 2, "Scenario 4: Clusters rolled out at once.")
		pullWorkers    = flag.Int("pull-workers", 2, "Scenario 4: worker Machines per Cluster, beside 1 control plane.")
		pullMU         = flag.Int("pull-max-unavailable", 2, "Scenario 4: worker budget of each Cluster.")
		apiservers     = flag.Int("workload-apiservers", 2, "Workload apiservers; the fleet's Clusters share them, each seeing only its own Nodes.")
		settle         = flag.Duration("settle", 30*time.Second, "Scenario 2: wait after convergence before reading steady-state memory.")
		idle           = flag.Duration("idle-duration", 5*time.Minute, "Scenario 3: how long the converged fleet is watched.")
		reconcilers    = flag.Int("reconcilers", 10, "The controller's --talosupgrade-concurrency (MaxConcurrentReconciles).")
		qps            = flag.Int("qps", 50, "The controller's --kube-api-qps (management cluster).")
		burst          = flag.Int("burst", 100, "The controller's --kube-api-burst.")
		talosPort      = flag.Int("talos-port", 51000, "Port of the simulated Talos APIs.")
		out            = flag.String("out", filepath.Join(envtest.RepoRoot(), "out", "bench"), "Directory of the JSON report, the controller binary and its logs.")
		timeout        = flag.Duration("timeout", 20*time.Minute, "Bound of each rollout.")
	)
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	selected := map[string]bool{}
	for _, s := range strings.Split(*scenarios, ",") {
		switch s = strings.TrimSpace(s); s {
		case "all":
			selected["overhead"], selected["fleet"], selected["idle"], selected["pull"] = true, true, true, true
		case "overhead", "fleet", "idle", "pull":
			selected[s] = true
		default:
			fmt.Fprintf(os.Stderr, "Unknown scenario %q: use overhead, fleet, idle, pull or all\n", s)
			return 2
		}
	}
	if selected["idle"] {
		selected["fleet"] = true
	}
	parts := strings.Split(*maxUnavailable, ",")
	budgets := make([]int, 0, len(parts))
	for _, s := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "Invalid --max-unavailable %q\n", *maxUnavailable)
			return 2
		}
		budgets = append(budgets, n)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	report := bench.NewReport()
	ctrlOpts := bench.ControllerOptions{Reconcilers: *reconcilers, QPS: *qps, Burst: *burst}
	err := func() error {
		w, err := bench.NewWorld(ctx, bench.WorldOptions{Workloads: *apiservers, RebootDuration: *reboot, TalosPort: *talosPort, OutDir: *out, Logf: logf})
		if err != nil {
			return err
		}
		defer func() {
			logf("Stopping the apiservers")
			_ = w.Close()
		}()
		if selected["overhead"] {
			w.Sim.SetRebootDuration(*reboot)
			res, err := bench.RunOverhead(ctx, w, bench.OverheadOptions{
				ControlPlanes: *controlPlanes, Workers: *workers, Reboot: *reboot, MaxUnavailable: budgets,
				HealthCheckInterval: *healthInterval, Controller: ctrlOpts, Timeout: *timeout,
			}, logf)
			report.Overhead = res
			if err != nil {
				return err
			}
		}
		if selected["pull"] {
			w.Sim.SetRebootDuration(*reboot)
			res, err := bench.RunPull(ctx, w, bench.PullOptions{
				Clusters: *pullClusters, ControlPlanes: 1, Workers: *pullWorkers, MaxUnavailable: *pullMU,
				PullDelay: *pullDelay, Controller: ctrlOpts, Timeout: *timeout,
			}, logf)
			report.Pull = res
			if err != nil {
				return err
			}
		}
		if selected["fleet"] {
			w.Sim.SetRebootDuration(*fleetReboot)
			fleet, err := bench.RunFleet(ctx, w, bench.FleetOptions{
				Clusters: *clusters, Machines: *machines, ControlPlanes: min(3, *machines), MaxUnavailable: *fleetMU,
				Settle: *settle, Controller: ctrlOpts, Timeout: *timeout, Converged: *converged,
			}, logf)
			if err != nil {
				return err
			}
			report.Fleet = fleet.Result
			defer func() { fleet.Controller.Stop() }()
			if selected["idle"] {
				if report.Idle, err = bench.RunIdle(ctx, w, fleet, *idle, logf); err != nil {
					return err
				}
			}
			if err := bench.ColdStart(ctx, w, fleet, ctrlOpts, logf); err != nil {
				return err
			}
		}
		return nil
	}()
	report.Print(os.Stdout)
	if path, werr := report.WriteJSON(*out); werr != nil {
		logf("Writing the JSON report: %v", werr)
	} else {
		logf("Report written to %s", path)
	}
	if err != nil {
		logf("Benchmark failed: %v", err)
		return 1
	}
	return 0
}
