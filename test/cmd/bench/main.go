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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tollgate-dev/tollgate/test/bench"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

func main() {
	os.Exit(run())
}

// run runs the benchmarks and returns the exit code.
func run() int {
	var (
		scenarios       = flag.String("scenario", "all", "Scenarios to run, comma-separated: overhead, fleet, idle and admission (both run on the fleet), pull, inplace, channel, or all.")
		controlPlanes   = flag.Int("control-planes", 3, "Scenario 1: control-plane Machines.")
		workers         = flag.Int("workers", 20, "Scenario 1: worker Machines.")
		reboot          = flag.Duration("reboot", 5*time.Second, "Scenario 1: how long a simulated node is down.")
		maxUnavailable  = flag.String("max-unavailable", "1,5", "Scenario 1: worker budgets, one rollout each.")
		healthInterval  = flag.Duration("health-interval", 30*time.Second, "Scenario 1: interval of the health check (at least 5s).")
		clusters        = flag.String("clusters", "40", "Scenario 2: Clusters in the fleet; with --fleet-converged, sizes separated by commas (1000,5000) grow one fleet from size to size, each measured, and say how each figure grows per Cluster.")
		machines        = flag.Int("machines", 10, "Scenario 2: Machines per Cluster, 3 of them control plane.")
		fleetReboot     = flag.Duration("fleet-reboot", 2*time.Second, "Scenario 2: how long a simulated node is down.")
		fleetMU         = flag.Int("fleet-max-unavailable", 3, "Scenario 2: worker budget of each Cluster.")
		fleetInFlight   = flag.Int("fleet-max-clusters-in-progress", 0, "Scenario 2: the policy's maxClustersInProgress; 0 admits every Cluster at once.")
		shards          = flag.Int("shards", 1, "Scenario 2 with --fleet-converged: split the fleet into that many shards, Cluster i labelled cluster.x-k8s.io/watch-filter=shard-<i mod N> with a policy per shard, one controller process each (--watch-filter, its own --leader-election-id; the first serves the webhooks), each measured.")
		converged       = flag.Bool("fleet-converged", false, "Scenario 2: create the fleet on the target version already, to measure the footprint, cold start and idle cost of fleets too large to roll out here.")
		inPlaceWorkers  = flag.Int("inplace-workers", 4, "Scenario 6: workers of each of the two Clusters.")
		inPlaceReboot   = flag.Duration("inplace-reboot", 5*time.Second, "Scenario 6: how long a simulated node is down.")
		inPlaceRetry    = flag.Duration("inplace-retry-after", 0, "Scenario 6: the retryAfterSeconds of the extension's in-progress answers (manager.Options.ExtensionRetryAfter); 0 for the sandbox's 1s, 5s for the manager's default.")
		pullDelay       = flag.Duration("pull-delay", 60*time.Second, "Scenario 4: how long every node takes to pull the installer image.")
		pullClusters    = flag.Int("pull-clusters", 2, "Scenario 4: Clusters rolled out at once.")
		pullWorkers     = flag.Int("pull-workers", 2, "Scenario 4: worker Machines per Cluster, beside 1 control plane.")
		pullMU          = flag.Int("pull-max-unavailable", 2, "Scenario 4: worker budget of each Cluster.")
		policyUpdates   = flag.Int("admission-policy-updates", 300, "Scenario 5: dry-run updates of the fleet's policy plan.")
		clusterUpdates  = flag.Int("admission-cluster-updates", 300, "Scenario 5: dry-run moves of a Cluster to another policy.")
		apiservers      = flag.Int("workload-apiservers", 2, "Workload apiservers; the fleet's Clusters share them, each seeing only its own Nodes.")
		settle          = flag.Duration("settle", 30*time.Second, "Scenario 2: wait after convergence (and after a cold start) before reading steady-state memory.")
		idle            = flag.Duration("idle-duration", 5*time.Minute, "Scenario 3: how long the converged fleet is watched (the caches resync every 10 minutes).")
		reconcilers     = flag.Int("reconcilers", 10, "The controller's --talosupgrade-concurrency (MaxConcurrentReconciles).")
		qps             = flag.Int("qps", 50, "The controller's --kube-api-qps (management cluster).")
		burst           = flag.Int("burst", 100, "The controller's --kube-api-burst.")
		leaderElect     = flag.Bool("leader-elect", true, "Run the controller with --leader-elect, its default.")
		webhooks        = flag.Bool("webhooks", true, "Install the webhook configurations and have the controller serve them, as config/default does.")
		profile         = flag.Bool("profile", false, "Serve the controller's pprof and save profiles in --out: heap once converged and after a cold start, 60s of CPU from the start of a rollout.")
		talosPort       = flag.Int("talos-port", 51000, "Port of the simulated Talos APIs.")
		out             = flag.String("out", filepath.Join(envtest.RepoRoot(), "out", "bench"), "Directory of the JSON report, the controller binary and its logs.")
		timeout         = flag.Duration("timeout", 20*time.Minute, "Bound of each rollout.")
		channelClusters = flag.Int("channel-clusters", 1000, "Scenario 8: Clusters of the ReleaseChannel's stages, created converged.")
		channelStages   = flag.Int("channel-stages", 4, "Scenario 8: stages, a policy and a namespace each, the Clusters split evenly.")
		channelMachines = flag.Int("channel-machines", 3, "Scenario 8: Machines per Cluster.")
		channelSoak     = flag.Duration("channel-soak", 5*time.Second, "Scenario 8: every stage's soakTime.")
		channelIdle     = flag.Duration("channel-idle", 2*time.Minute, "Scenario 8: how long the fleet at rest is watched once the release passed every stage.")
		logFile         = flag.String("log-file", "", "Scenario 6: write the log of the controllers the bench runs in its own process (CAPI's in-place update sandbox: Tollgate, its extension and the test providers), at verbosity 5 with nanosecond timestamps, to this file.")
		controllerArgs  = flag.String("controller-args", "", "More arguments of the controller, separated by spaces, for example -v=6 to log every request it makes with its latency.")
	)
	flag.Parse()
	log := logr.Discard()
	if *logFile != "" {
		// The controllers run in the bench's own process (scenario 6's
		// sandbox) log there, for a look at where the time goes.
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer f.Close() //nolint:errcheck // The log is written as it goes.
		log = zap.New(zap.WriteTo(f), zap.Level(zapcore.Level(-5)),
			zap.ConsoleEncoder(func(c *zapcore.EncoderConfig) { c.EncodeTime = zapcore.RFC3339NanoTimeEncoder }))
	}
	// controller-runtime takes the first logger it is given.
	ctrl.SetLogger(log)
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	selected, err := parseScenarios(*scenarios)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	budgets, err := parseCounts("--max-unavailable", *maxUnavailable)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sizes, err := parseCounts("--clusters", *clusters)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if len(sizes) > 1 && !*converged {
		fmt.Fprintln(os.Stderr, "Several --clusters sizes need --fleet-converged: a fleet is rolled out once")
		return 2
	}
	if !slices.IsSorted(sizes) {
		fmt.Fprintln(os.Stderr, "--clusters sizes grow: list them in increasing order")
		return 2
	}
	if *shards < 1 {
		fmt.Fprintln(os.Stderr, "--shards is at least 1")
		return 2
	}
	if *shards > 1 && (!*converged || selected["admission"]) {
		fmt.Fprintln(os.Stderr, "--shards needs --fleet-converged, and runs without the admission scenario (whose policy would select one shard only)")
		return 2
	}
	if selected["admission"] && !*webhooks {
		fmt.Fprintln(os.Stderr, "The admission scenario needs --webhooks")
		return 2
	}
	inFlight := *fleetInFlight
	if inFlight <= 0 {
		inFlight = sizes[len(sizes)-1]
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	report := bench.NewReport()
	ctrlOpts := bench.ControllerOptions{Reconcilers: *reconcilers, QPS: *qps, Burst: *burst, LeaderElection: *leaderElect, Profile: *profile, ExtraArgs: strings.Fields(*controllerArgs)}
	err = func() error {
		w, err := bench.NewWorld(ctx, bench.WorldOptions{Workloads: *apiservers, RebootDuration: *reboot, TalosPort: *talosPort, OutDir: *out, Webhooks: *webhooks, Logf: logf})
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
		if selected["inplace"] {
			// A world of its own: CAPI core runs there, which at a
			// fleet's size would measure CAPI rather than Tollgate.
			res, err := bench.RunInPlace(ctx, bench.InPlaceOptions{Workers: *inPlaceWorkers, Reboot: *inPlaceReboot, RetryAfter: *inPlaceRetry, Timeout: *timeout}, logf)
			report.InPlace = res
			if err != nil {
				return err
			}
		}
		if selected["fleet"] {
			w.Sim.SetRebootDuration(*fleetReboot)
			if err := runFleet(ctx, w, report, selected, sizes, bench.FleetOptions{
				Clusters: sizes[0], Machines: *machines, ControlPlanes: min(3, *machines), MaxUnavailable: *fleetMU, MaxClustersInProgress: inFlight,
				Settle: *settle, Controller: ctrlOpts, Timeout: *timeout, Converged: *converged, Shards: *shards,
			}, *idle, bench.AdmissionOptions{PolicyUpdates: *policyUpdates, ClusterUpdates: *clusterUpdates}, logf); err != nil {
				return err
			}
		}
		// Last: its Clusters stay, and would be the fleet's too.
		if selected["channel"] {
			res, err := bench.RunChannel(ctx, w, bench.ChannelOptions{
				Clusters: *channelClusters, Stages: *channelStages, Machines: *channelMachines, Soak: *channelSoak, Idle: *channelIdle,
				Controller: ctrlOpts, Timeout: *timeout,
			}, logf)
			report.Channel = res
			if err != nil {
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

// runFleet runs scenario 2 at each size, and on each the selected
// scenarios 3 and 5 and a cold start.
func runFleet(ctx context.Context, w *bench.World, report *bench.Report, selected map[string]bool, sizes []int, o bench.FleetOptions,
	idle time.Duration, admission bench.AdmissionOptions, logf func(string, ...any),
) error {
	fleet, err := bench.RunFleet(ctx, w, o, logf)
	if err != nil {
		return err
	}
	defer fleet.Stop()
	for i, size := range sizes {
		if i > 0 {
			if err := fleet.Grow(ctx, w, size, logf); err != nil {
				return err
			}
		}
		report.Fleet = append(report.Fleet, fleet.Result)
		if selected["idle"] {
			if err := bench.RunIdle(ctx, w, fleet, idle, logf); err != nil {
				return err
			}
		}
		if selected["admission"] {
			if err := bench.RunAdmission(ctx, w, fleet, admission, logf); err != nil {
				return err
			}
		}
		if err := fleet.ColdStart(ctx, w, logf); err != nil {
			return err
		}
		report.Growth = bench.GrowthOf(report.Fleet)
	}
	return nil
}

// scenarioNames are the scenarios --scenario selects.
var scenarioNames = []string{"overhead", "fleet", "idle", "admission", "pull", "inplace", "channel"}

// parseScenarios returns the scenarios a --scenario value selects; idle
// and admission run on the fleet of scenario 2.
func parseScenarios(value string) (map[string]bool, error) {
	selected := map[string]bool{}
	for _, s := range strings.Split(value, ",") {
		switch s = strings.TrimSpace(s); {
		case s == "all":
			for _, n := range scenarioNames {
				selected[n] = true
			}
		case slices.Contains(scenarioNames, s):
			selected[s] = true
		default:
			return nil, fmt.Errorf("unknown scenario %q: use %s or all", s, strings.Join(scenarioNames, ", "))
		}
	}
	if selected["idle"] || selected["admission"] {
		selected["fleet"] = true
	}
	return selected, nil
}

// parseCounts parses a comma-separated list of positive numbers.
func parseCounts(flagName, value string) ([]int, error) {
	parts := strings.Split(value, ",")
	counts := make([]int, 0, len(parts))
	for _, s := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("invalid %s %q: positive numbers separated by commas", flagName, value)
		}
		counts = append(counts, n)
	}
	return counts, nil
}
