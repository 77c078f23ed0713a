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

package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	kerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// Fault kinds, as counted in the report.
const (
	faultKill           = "controller-kill"
	faultFailover       = "leader-failover"
	faultMgmtOutage     = "management-apiserver-outage"
	faultWorkloadOutage = "workload-apiserver-outage"
	faultUpgradeError   = "talos-upgrade-error"
	faultRPCTimeout     = "talos-call-timeout"
	faultRollback       = "talos-ab-rollback"
	faultNeverComesBack = "talos-never-comes-back"
	faultEtcdUnhealthy  = "talos-etcd-unhealthy"
	faultCheckFlap      = "health-check-flap"
	faultHookFailOnce   = "hook-fails-once"
	faultHold           = "hold-annotation"
	faultPreRebootHold  = "pre-reboot-hold-annotation"
	faultNodeSilent     = "talos-node-silent-after-drain"
)

// terminalFaults end the rollout of their Cluster.
var terminalFaults = []string{faultUpgradeError, faultRollback, faultNeverComesBack, faultNodeSilent}

// timedFaults are injected by the chaos loop at random instants.
var timedFaults = []string{faultKill, faultFailover, faultMgmtOutage, faultWorkloadOutage, faultRPCTimeout, faultEtcdUnhealthy, faultHold, faultPreRebootHold}

// AllFaults lists every fault kind.
var AllFaults = slices.Concat(timedFaults, terminalFaults, []string{faultCheckFlap, faultHookFailOnce}, fleetFaults, requestFaults)

// Config sizes a soak.
type Config struct {
	// Seed makes the run reproducible: the same seed injects the same
	// faults in the same order (their instants depend on timing).
	Seed int64
	// Rounds of rollouts, each on Clusters fresh Clusters.
	Rounds, Clusters int
	// ControlPlanes and Workers per Cluster.
	ControlPlanes, Workers int
	// MaxUnavailable is the worker budget of every policy.
	MaxUnavailable int
	// Workloads is the number of workload control planes the Clusters
	// share.
	Workloads int
	// TerminalFaultPercent is the chance that a Cluster gets a Talos fault
	// that ends its rollout (upgrade error, A/B rollback, never comes
	// back); round 0 always has one of each.
	TerminalFaultPercent int
	// FaultInterval is the mean pause between two timed faults.
	FaultInterval time.Duration
	// FleetFaultPercent is the chance that a Cluster gets each living-fleet
	// event (scale-up, scale-down by one or two, a Machine replaced,
	// leaving and re-joining its policy, a new target once completed, a
	// Kubernetes target once completed, a rolling reboot, one Machine's
	// reboot); round 0 has each at least once.
	FleetFaultPercent int
	// RequestFaultPercent is the share of the requests to the apiservers
	// (management and workload) that fail: 500, 429 with Retry-After, or a
	// timeout. WatchDropPercent is the share of watches cut after 1 to
	// 10s. Negative disables.
	RequestFaultPercent, WatchDropPercent float64
	// RoundTimeout bounds how long a round may go on without progress: no
	// record of a rollout changing phase and no fleet event played. A slow
	// machine makes a round longer, never a failure: a round ends early
	// only when it stalls.
	RoundTimeout time.Duration
	// LeaseDuration, RenewDeadline and RetryPeriod of leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ExtensionPercent is the chance that a Cluster whose rollout can
	// complete and whose MachineDeployment rolls out RollingUpdate opts in
	// to Tollgate's in-place update extension, and has its workers'
	// template changed mid-round, with a change Tollgate claims or one it
	// does not (extension.go); round 0 has two at least (a change of each
	// kind) where two Clusters can opt in. Zero runs none.
	ExtensionPercent int
	// Dir holds the manager binary and the controller logs.
	Dir string
	// Manager is a manager binary built beforehand; when empty the soak
	// builds one from the tree into Dir.
	Manager string
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// Defaults fills in the zero fields.
func (c *Config) Defaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Rounds, 1)
	def(&c.Clusters, 20)
	def(&c.ControlPlanes, 1)
	def(&c.Workers, 5)
	def(&c.MaxUnavailable, 2)
	def(&c.Workloads, 2)
	def(&c.TerminalFaultPercent, 20)
	def(&c.FleetFaultPercent, 30)
	floatDef := func(v *float64, d float64) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	floatDef(&c.RequestFaultPercent, 2)
	floatDef(&c.WatchDropPercent, 10)
	durDef := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	durDef(&c.FaultInterval, 4*time.Second)
	durDef(&c.RoundTimeout, 10*time.Minute)
	durDef(&c.LeaseDuration, 6*time.Second)
	durDef(&c.RenewDeadline, 4*time.Second)
	durDef(&c.RetryPeriod, time.Second)
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// soak is one run.
type soak struct {
	cfg       Config
	rng       *rand.Rand
	world     *world
	replicas  []*Replica
	canaries  *Canaries
	talosPort int
	report    *Report

	mu sync.Mutex
	// killedAt is the last time a controller process was killed, for the
	// intent-without-call outcome.
	killedAt time.Time
	// transients are the transient Talos faults injected, by
	// namespace/node.
	transients map[string][]transient
	// blackouts are the intervals in which the controllers could not act:
	// no replica held the lease, or the management apiserver was cut;
	// managementCuts those in which the management apiserver was cut.
	blackouts, managementCuts []interval
	// holds are the hold annotations the soak placed, by
	// namespace/machine.
	holds map[string][]placedHold
	// reconciles are the reconciles of the TalosUpgrades the controllers
	// logged, and resting the rollouts the observer saw at rest, by
	// namespace/name (invariant 10, see rest.go).
	reconciles *reconciles
	// connects are the waits of the controllers' ClusterCache after a
	// failed connection to a workload cluster, by Cluster (invariant 8).
	connects *connectRetries
	resting  map[string]*restTrack
	// extension serves Tollgate's in-place update extension from the
	// replicas to CAPI core, with Config.ExtensionPercent; nil otherwise.
	extension *extensionServer
}

// interval is a span of time; a zero to is still open.
type interval struct{ from, to time.Time }

// overlap returns how much of [from, to] the intervals cover, each instant
// once however many intervals cover it.
func overlap(intervals []interval, from, to time.Time) time.Duration {
	var spans []interval
	for _, iv := range intervals {
		end := iv.to
		if end.IsZero() {
			end = to
		}
		lo, hi := maxTime(iv.from, from), minTime(end, to)
		if hi.After(lo) {
			spans = append(spans, interval{from: lo, to: hi})
		}
	}
	slices.SortFunc(spans, func(a, b interval) int { return a.from.Compare(b.from) })
	var d time.Duration
	var covered time.Time // The end of what is counted so far.
	for _, sp := range spans {
		lo := maxTime(sp.from, covered)
		if sp.to.After(lo) {
			d += sp.to.Sub(lo)
			covered = sp.to
		}
	}
	return d
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (s *soak) blackout(from, to time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blackouts = append(s.blackouts, interval{from: from, to: to})
}

func (s *soak) check(invariant int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report.Checks[invariant]++
}

func (s *soak) count(kind string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report.Faults[kind] += n
}

func (s *soak) violation(invariant int, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report.Violations = append(s.report.Violations, Violation{Invariant: invariant, At: time.Now(), Message: fmt.Sprintf(format, args...)})
}

// Run runs a soak and reports what it saw. An error means the soak itself
// could not run; invariant violations are in the report.
func Run(ctx context.Context, cfg Config) (_ *Report, err error) {
	cfg.Defaults()
	if cfg.Dir == "" {
		return nil, errors.New("soak: Config.Dir is required")
	}
	s := &soak{
		cfg: cfg, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x50a4)), //nolint:gosec // Reproducible chaos, not cryptography.
		canaries: &Canaries{}, report: &Report{Seed: cfg.Seed, Faults: map[string]int{}, Checks: map[int]int{}},
		reconciles: newReconciles(), connects: newConnectRetries(),
	}
	start := time.Now()
	cfg.Logf("Soak seed %d: %d round(s) of %d Clusters x (%d+%d) Machines, maxUnavailable %d, %.1f%% of API requests and %.0f%% of watches failed (replay with --seed=%d)",
		cfg.Seed, cfg.Rounds, cfg.Clusters, cfg.ControlPlanes, cfg.Workers, cfg.MaxUnavailable, cfg.RequestFaultPercent, cfg.WatchDropPercent, cfg.Seed)
	if s.talosPort, err = envtest.FreePort(); err != nil {
		return nil, err
	}
	rf := requestFaultOptions{seed: uint64(cfg.Seed), percent: cfg.RequestFaultPercent, watchPercent: cfg.WatchDropPercent, count: func(kind string) { s.count(kind, 1) }} //nolint:gosec // A seed.
	wo := worldOptions{dir: cfg.Dir, manager: cfg.Manager, workloads: cfg.Workloads, versions: installerVersions, talosPort: s.talosPort, logf: cfg.Logf}
	if s.world, err = startWorld(ctx, wo, s.canaries, rf); err != nil {
		return nil, err
	}
	defer func() { err = kerrors.NewAggregate([]error{err, s.stop()}) }()
	cfg.Logf("Started the management and %d workload control planes in %s", cfg.Workloads, time.Since(start).Round(time.Second))
	copts := ControllerOptions{
		Binary: s.world.binary, Kubeconfig: s.world.kubeconfig, TalosAPIPort: s.talosPort,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod, LogDir: cfg.Dir,
	}
	names := []string{"a", "b"}
	if cfg.ExtensionPercent > 0 {
		if s.extension, err = startExtensionServer(names); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		r := &Replica{name: name, opts: copts, scan: s.canaries, reconciles: s.reconciles, connects: s.connects}
		if s.extension != nil {
			r.extra = s.extension.args(name)
		}
		if err := r.Start(); err != nil {
			return nil, err
		}
		s.replicas = append(s.replicas, r)
	}
	if s.extension != nil {
		if err := s.extension.register(ctx, s.world.mgmt.Client); err != nil {
			return nil, err
		}
		cfg.Logf("Registered Tollgate's in-place update extension with CAPI core (ExtensionConfig %s), served by every replica", sandbox.ExtensionName)
	}
	for round := range cfg.Rounds {
		if err := s.runRound(ctx, round); err != nil {
			return s.report, err
		}
	}
	for _, r := range s.replicas {
		r.Kill()
		s.report.UnexpectedExits += r.exits
	}
	leaks, n, scanned := s.canaries.Leaks()
	s.report.LogLines = scanned
	for _, l := range leaks {
		s.violation(5, "%s", l)
	}
	if n > len(leaks) {
		s.violation(5, "%d more log lines leaked secret material", n-len(leaks))
	}
	s.report.Duration = time.Since(start)
	return s.report, nil
}

func (s *soak) stop() error {
	for _, r := range s.replicas {
		r.Kill()
	}
	if s.extension != nil {
		s.extension.stop()
	}
	if s.world == nil {
		return nil
	}
	// Stops the Clusters' simulators too.
	return s.world.stop()
}

// TempDir makes a directory for a soak outside the tree.
func TempDir() (string, error) {
	return os.MkdirTemp("", "tollgate-soak-")
}
