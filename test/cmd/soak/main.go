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
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/test/soak"
)

func main() {
	ctrl.SetLogger(logr.Discard())
	cfg := soak.Config{}
	flag.Int64Var(&cfg.Seed, "seed", time.Now().UnixNano()%1_000_000_000, "Seed of the faults; printed, and replays a run.")
	flag.IntVar(&cfg.Rounds, "rounds", 3, "Rounds of rollouts, each on fresh Clusters.")
	flag.IntVar(&cfg.Clusters, "clusters", 20, "Clusters per round.")
	flag.IntVar(&cfg.ControlPlanes, "control-planes", 1, "Control-plane Machines per Cluster.")
	flag.IntVar(&cfg.Workers, "workers", 5, "Worker Machines per Cluster.")
	flag.IntVar(&cfg.MaxUnavailable, "max-unavailable", 2, "Worker budget of every policy.")
	flag.IntVar(&cfg.Workloads, "workloads", 2, "Workload control planes the Clusters share.")
	flag.IntVar(&cfg.TerminalFaultPercent, "terminal-fault-percent", 20, "Chance that a Cluster gets a Talos fault that ends its rollout.")
	flag.IntVar(&cfg.FleetFaultPercent, "fleet-fault-percent", 30, "Chance that a Cluster gets each living-fleet event (scale-up, scale-down by one or two, Machine replaced, leaving its policy, new target, rolling reboot, one Machine's reboot).")
	flag.IntVar(&cfg.ExtensionPercent, "extension-percent", 30, "Chance that a Cluster whose rollout can complete opts in to Tollgate's in-place update extension and has its workers' template changed mid-round (a change Tollgate claims or one it does not); round 0 has two at least, one of each, where two Clusters can (more than six Clusters); 0 runs none.")
	flag.Float64Var(&cfg.RequestFaultPercent, "request-fault-percent", 2, "Share of the API requests failed with 500, 429 or a timeout; negative disables.")
	flag.Float64Var(&cfg.WatchDropPercent, "watch-drop-percent", 10, "Share of the API watches cut after 1 to 10s; negative disables.")
	flag.DurationVar(&cfg.FaultInterval, "fault-interval", 4*time.Second, "Mean pause between two timed faults.")
	flag.DurationVar(&cfg.RoundTimeout, "round-timeout", 15*time.Minute, "Longest a round may go on without progress (no rollout record changing phase, no fleet event played): a slow machine makes a round longer, never a failure.")
	flag.DurationVar(&cfg.LeaseDuration, "lease-duration", 6*time.Second, "Leader election lease duration of the replicas.")
	flag.StringVar(&cfg.Manager, "manager", "", "A manager binary built beforehand; built from the tree when empty.")
	keep := flag.Bool("keep", false, "Keep the controller logs even when the soak passes.")
	flag.Parse()

	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run `make soak`, or export KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)")
		os.Exit(2)
	}
	dir, err := soak.TempDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg.Dir = dir
	cfg.Logf = func(format string, args ...any) {
		fmt.Printf("%s %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	fmt.Printf("Soak seed %d; controller logs in %s\n", cfg.Seed, dir)
	report, err := soak.Run(ctx, cfg)
	if report != nil {
		report.Print(os.Stdout)
	}
	code := 0
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "The soak could not run: %v\n", err)
		code = 2
	case unknown(report) > 0:
		code = 1
	case len(report.Violations) > 0:
		fmt.Printf("Every violation is a known bug (soak.KnownBugs), not fixed yet\n")
	}
	if code == 0 && !*keep {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Printf("Controller logs kept in %s\n", dir)
	}
	os.Exit(code) //nolint:gocritic // cancel has nothing left to release at exit.
}

// unknown counts the violations that are no known bug.
func unknown(report *soak.Report) int {
	n := 0
	for _, v := range report.Violations {
		if _, known := soak.Known(v); !known {
			n++
		}
	}
	return n
}
