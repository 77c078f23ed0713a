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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// settleTimeout is how long a finished rollout has to clean up after
// itself (uncordon, annotations, Jobs) once the faults stop.
const settleTimeout = time.Minute

// transient is a transient Talos fault injected on a node.
type transient struct {
	kind string
	at   time.Time
}

func (s *soak) noteTransient(c *soakCluster, node, kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.transients == nil {
		s.transients = map[string][]transient{}
	}
	s.transients[c.ns+"/"+node] = append(s.transients[c.ns+"/"+node], transient{kind: kind, at: time.Now()})
}

// runRound runs the rollouts of fresh Clusters under faults, then checks
// how each ended.
func (s *soak) runRound(ctx context.Context, round int) error {
	cfg := s.cfg
	start := time.Now()
	var terminals []string
	for i := range cfg.Clusters {
		switch {
		case round == 0 && i < len(terminalFaults):
			terminals = append(terminals, terminalFaults[i])
		case s.rng.IntN(100) < cfg.TerminalFaultPercent:
			terminals = append(terminals, terminalFaults[s.rng.IntN(len(terminalFaults))])
		default:
			terminals = append(terminals, "")
		}
	}
	terminals = keepOneClean(terminals, round)
	// Which Cluster gets which terminal fault is random too.
	perm := s.rng.Perm(cfg.Clusters)
	kube := s.kubernetesClusters(round, terminals, perm)
	ext := s.extensionClusters(round, terminals, perm, kube)
	var clusters []*soakCluster
	defer func() {
		for _, c := range clusters {
			_ = c.cluster.Stop()
		}
	}()
	// CAPI makes the Clusters' Machines at once; the faults are scripted in
	// order, from the seed.
	clusters = make([]*soakCluster, cfg.Clusters)
	errs := make([]error, cfg.Clusters)
	var created sync.WaitGroup
	slots := make(chan struct{}, createConcurrency)
	for i := range cfg.Clusters {
		created.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			clusters[i], errs[i] = s.createCluster(ctx, round, i, kube[i], ext[i])
		})
	}
	created.Wait()
	clusters = slices.DeleteFunc(clusters, func(c *soakCluster) bool { return c == nil })
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("round %d: %w", round, err)
	}
	for i, c := range clusters {
		s.scriptFaults(c, terminals[perm[i]])
	}
	events := s.scriptExtension(clusters, s.scriptFleet(clusters, round), round)
	cfg.Logf("Round %d: created %d Clusters in %s; terminal Talos faults: %s; fleet events: %s", round, len(clusters), time.Since(start).Round(time.Second), describeTerminals(clusters), describeFleet(clusters))

	obsCtx, stopObs := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.observe(obsCtx, clusters) })
	wg.Go(func() { s.pollBoots(obsCtx, clusters) })
	defer func() { stopObs(); wg.Wait() }()
	for _, c := range clusters {
		c.mu.Lock()
		c.optedIn = time.Now()
		c.mu.Unlock()
		if err := c.cluster.OptIn(ctx, policyName); err != nil {
			return err
		}
	}
	chaosCtx, stopChaos := context.WithCancel(ctx)
	var chaosWG sync.WaitGroup
	chaosWG.Go(func() { s.chaos(chaosCtx, clusters, round) })
	for _, c := range clusters {
		if c.terminal == faultNodeSilent {
			chaosWG.Go(func() { s.silence(chaosCtx, c) })
		}
	}
	var fleetDone atomic.Int64 // Unix nanoseconds; zero while events play.
	chaosWG.Go(func() {
		s.fleet(chaosCtx, events)
		fleetDone.Store(time.Now().UnixNano())
	})

	progress := newProgress()
	minFaults := 0
	if round == 0 {
		minFaults = len(timedFaults)
	}
	var tollgateOverSince time.Time
	for {
		s.superviseReplicas()
		// The fleet's last change is given a few seconds to be noticed.
		fleetOver := fleetDone.Load() != 0 && time.Since(time.Unix(0, fleetDone.Load())) > fleetSettle
		tollgateOver := fleetOver && s.allOver(ctx, clusters) && s.timedFaultsInjected() >= minFaults
		capiWhy := ""
		if tollgateOver {
			capiWhy = s.capiBusy(ctx, clusters)
		}
		switch {
		case !tollgateOver:
			tollgateOverSince = time.Time{}
		case tollgateOverSince.IsZero():
			tollgateOverSince = time.Now()
			cfg.Logf("Round %d: Tollgate's rollouts over after %s; waiting for CAPI: %s", round, time.Since(start).Round(time.Second), or(capiWhy, "done"))
		}
		if tollgateOver && capiWhy == "" {
			break
		}
		if stalled := progress.since(s.fingerprint(ctx, clusters)); stalled > cfg.RoundTimeout {
			cfg.Logf("Round %d: no progress for %s (no rollout record changed phase, no fleet event played): ending the round", round, stalled.Round(time.Second))
			break
		}
		if tollgateOver && time.Since(tollgateOverSince) > capiSettleTimeout {
			// Judged by invariants 11 and 12.
			cfg.Logf("Round %d: Tollgate's rollouts are over, but CAPI is still busy after %s: %s", round, capiSettleTimeout, capiWhy)
			break
		}
		if !sleep(ctx, time.Second) {
			stopChaos()
			return ctx.Err()
		}
	}
	stopChaos()
	chaosWG.Wait()
	s.superviseReplicas()
	cfg.Logf("Round %d: Tollgate and CAPI done after %s; checking how the rollouts ended", round, time.Since(start).Round(time.Second))
	s.finish(ctx, clusters)
	s.judgeReboots(ctx, clusters)
	s.judgeConfigs(ctx, clusters)
	for _, c := range clusters {
		s.judgeKubernetes(ctx, c)
	}
	s.judgeRemovalHooks(clusters)
	s.judgeHandovers(ctx, clusters)
	s.judgeRemediations(ctx, clusters)
	s.judgeStable(ctx, round)
	s.mu.Lock()
	s.report.Rollouts += len(clusters)
	s.mu.Unlock()
	return nil
}

// keepOneClean takes the terminal fault off the last Cluster of round 0
// when every Cluster got one and some got theirs by chance: the fleet
// events that need a rollout that completes (completing) are played on
// Clusters without one, and round 0 plays every kind. Seed 20261211
// (TestSoakShort, 6 Clusters): the two Clusters after the four scripted
// ones both drew a terminal fault (20% each), and seven kinds never played.
func keepOneClean(terminals []string, round int) []string {
	if round != 0 || len(terminals) <= len(terminalFaults) || slices.Contains(terminals, "") {
		return terminals
	}
	terminals[len(terminals)-1] = ""
	return terminals
}

// or returns s, or otherwise when s is empty.
func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// fleetSettle is how long after the fleet's last event a round may end.
const fleetSettle = 3 * time.Second

// createConcurrency is how many Clusters of a round are created at once:
// CAPI makes their Machines meanwhile.
const createConcurrency = 8

// capiSettleTimeout is how long a round waits, once Tollgate's rollouts
// are over, for CAPI to be done too (its MachineDeployments rolled out,
// its remediations over), before the invariants judge what is left.
const capiSettleTimeout = remediationTimeout

func describeFleet(clusters []*soakCluster) string {
	var out []string
	for _, c := range clusters {
		for _, k := range c.fleet {
			out = append(out, fmt.Sprintf("%s on %s", k, c.name))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func describeTerminals(clusters []*soakCluster) string {
	var out []string
	for _, c := range clusters {
		if c.terminal != "" {
			out = append(out, fmt.Sprintf("%s on %s", c.terminal, c.terminalNode))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func (s *soak) timedFaultsInjected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range timedFaults {
		if s.report.Faults[k] > 0 {
			n++
		}
	}
	return n
}

func (s *soak) superviseReplicas() {
	for _, r := range s.replicas {
		if restarted, err := r.RestartIfExited(); restarted {
			s.cfg.Logf("Replica %s exited on its own; restarted it (err: %v)", r.name, err)
		}
	}
}

// allOver reports whether every rollout reached an end for its current
// targets (Talos and Kubernetes): Completed, Failed or Paused, with no Machine in flight, answered
// the reboots the soak asked for (invariant 13), brought the control
// plane's patches or said they are refused (invariant 15), and gave its workload
// connection back (the Cluster's upgradev1.WorkloadConnectionAnnotation
// goes once its clean-up there is done, which waits for a workload
// apiserver that was cut to be reached again).
func (s *soak) allOver(ctx context.Context, clusters []*soakCluster) bool {
	for _, c := range clusters {
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil || !over(u) ||
			u.Spec.TalosVersion != c.target() || u.Spec.KubernetesVersion != c.kubeTargetVersion() || u.Status.ObservedGeneration != u.Generation {
			return false
		}
		if left, err := s.unansweredReboots(ctx, c, u); err != nil || len(left) > 0 {
			return false
		}
		if left, err := s.unconfigured(ctx, c, u); err != nil || len(left) > 0 {
			return false
		}
		cluster := &clusterv1.Cluster{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cluster); err != nil {
			return false
		}
		if _, connected := cluster.Annotations[upgradev1.WorkloadConnectionAnnotation]; connected {
			return false
		}
	}
	return true
}

// progress tells how long a round has gone without progress.
type progress struct {
	last time.Time
	seen string
}

func newProgress() *progress { return &progress{last: time.Now()} }

// since records fingerprint and returns how long ago it last changed.
func (p *progress) since(fingerprint string) time.Duration {
	if fingerprint != p.seen {
		p.seen, p.last = fingerprint, time.Now()
	}
	return time.Since(p.last)
}

// fingerprint sums up what moves in a round: the phase of every rollout
// and of its records and removals, and how many fleet events were played.
// The timed faults are left out: they go on until the round ends, whether
// the rollouts move or not. A rollout that cannot be read counts as
// unchanged.
func (s *soak) fingerprint(ctx context.Context, clusters []*soakCluster) string {
	var b strings.Builder
	for _, c := range clusters {
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s/%s %s %s;", c.ns, c.name, u.Spec.TalosVersion, u.Status.Phase)
		for _, st := range u.Status.Machines {
			fmt.Fprintf(&b, "%s=%s,", st.Machine, st.Phase)
		}
		for _, rec := range u.Status.Removals {
			fmt.Fprintf(&b, "%s~%s,", rec.Machine, rec.Phase)
		}
	}
	s.mu.Lock()
	played := 0
	for _, kind := range fleetFaults {
		played += s.report.Faults[kind]
	}
	s.mu.Unlock()
	fmt.Fprintf(&b, "fleet=%d", played)
	return b.String()
}

func over(u *upgradev1.TalosUpgrade) bool {
	switch u.Status.Phase {
	case upgradev1.UpgradePhaseCompleted, upgradev1.UpgradePhaseFailed, upgradev1.UpgradePhasePaused:
	default:
		return false
	}
	for _, st := range u.Status.Machines {
		switch st.Phase {
		case upgradev1.MachinePhasePending, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseFailed:
		default:
			return false
		}
	}
	return true
}

// finish checks invariants 3, 4 and 6 on every Cluster of the round,
// giving the controller settleTimeout to clean up.
func (s *soak) finish(ctx context.Context, clusters []*soakCluster) {
	for _, c := range clusters {
		for _, n := range c.nodes() {
			s.check(3)
			for target, calls := range c.upgradeCallsByTarget(n) {
				if calls > 1 {
					s.violation(3, "%s: node %s received %d upgrade calls to %s", c.ns, n, calls, target)
				}
			}
		}
		s.noteCallsMadeAgain(ctx, c)
	}
	deadline := time.Now().Add(settleTimeout)
	var problems map[string][]string
	for {
		problems = map[string][]string{}
		for _, c := range clusters {
			if p := s.leftovers(ctx, c); len(p) > 0 {
				problems[c.ns] = p
			}
		}
		if len(problems) == 0 || time.Now().After(deadline) || !sleep(ctx, time.Second) {
			break
		}
	}
	for ns, p := range problems {
		for _, msg := range p {
			s.violation(4, "%s: %s", ns, msg)
		}
	}
	for _, c := range clusters {
		s.judgeOutcome(ctx, c)
		s.judgeMachines(ctx, c)
	}
}

// leftovers lists what a finished rollout left behind: cordoned nodes,
// skip-remediation annotations, Tollgate Jobs.
func (s *soak) leftovers(ctx context.Context, c *soakCluster) []string {
	var out []string
	nodes := &corev1.NodeList{}
	if err := c.wl.Client.List(ctx, nodes); err != nil {
		return []string{err.Error()}
	}
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, c.name+"-") && n.Spec.Unschedulable {
			out = append(out, fmt.Sprintf("node %s left cordoned", n.Name))
		}
	}
	machines := &clusterv1.MachineList{}
	if err := s.world.mgmt.Client.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		return []string{err.Error()}
	}
	for _, m := range machines.Items {
		if _, ok := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]; ok {
			out = append(out, fmt.Sprintf("Machine %s left with %s", m.Name, clusterv1.MachineSkipRemediationAnnotation))
		}
	}
	jobs := &batchv1.JobList{}
	if err := c.wl.Client.List(ctx, jobs, client.MatchingLabels{workloadjob.ManagedByLabel: workloadjob.ManagedByValue, workloadjob.ClusterLabel: workloadjob.LabelValue(c.name)}); err != nil {
		return []string{err.Error()}
	}
	for _, j := range jobs.Items {
		if j.DeletionTimestamp == nil {
			out = append(out, fmt.Sprintf("Job %s/%s left behind", j.Namespace, j.Name))
		}
	}
	return out
}

// expected are the parts of a failed Machine's message (one suffices,
// case-insensitive) that name each terminal Talos fault.
var expected = map[string][]string{
	faultUpgradeError:   {"failed"},
	faultRollback:       {"A/B rollback"},
	faultNeverComesBack: {"did not come back within rebootTimeout"},
	faultNodeSilent:     {"unreachable", "not answer", "did not come back", "deadline exceeded", "deadlineexceeded"},
}

// names reports whether a failure message names the fault.
func names(msg, fault string) bool {
	for _, e := range expected[fault] {
		if strings.Contains(strings.ToLower(msg), strings.ToLower(e)) {
			return true
		}
	}
	return false
}

// judgeOutcome checks invariant 4: the rollout ended Completed, or Failed or
// Paused with every failed Machine's message naming a fault injected on it.
func (s *soak) judgeOutcome(ctx context.Context, c *soakCluster) {
	u := &upgradev1.TalosUpgrade{}
	if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
		s.violation(4, "%s: reading the TalosUpgrade: %v", c.ns, err)
		return
	}
	s.mu.Lock()
	if s.report.Outcomes == nil {
		s.report.Outcomes = map[string]int{}
	}
	s.report.Outcomes[string(u.Status.Phase)]++
	s.mu.Unlock()
	if !over(u) {
		s.violation(4, "%s: rollout did not end: phase %s, blocked by %q", c.ns, u.Status.Phase, u.Status.BlockedBy)
		return
	}
	if u.Status.Phase == upgradev1.UpgradePhaseCompleted {
		// CAPI may delete the faulty node's Machine before Tollgate reaches
		// it (a scale-down, a MachineDeployment rollout): then nothing
		// fails.
		if _, gone := c.isGone(c.terminalNode); c.terminal != "" && !gone {
			s.violation(4, "%s: rollout Completed although %s was injected on %s", c.ns, c.terminal, c.terminalNode)
		}
		return
	}
	failed := 0
	for _, st := range u.Status.Machines {
		if st.Phase != upgradev1.MachinePhaseFailed {
			continue
		}
		failed++
		s.explainFailure(c, st)
	}
	if failed == 0 {
		s.violation(4, "%s: rollout %s without a failed Machine: %q", c.ns, u.Status.Phase, u.Status.BlockedBy)
	}
}

// noteCallsMadeAgain reports the upgrade calls a manager that took a
// Machine of the Cluster over made again (UpgradeCallMadeAgain events),
// which invariant 3 judged with the others.
func (s *soak) noteCallsMadeAgain(ctx context.Context, c *soakCluster) {
	events := &eventsv1.EventList{}
	if err := s.world.mgmt.Client.List(ctx, events, client.InNamespace(c.ns)); err != nil {
		s.cfg.Logf("Listing the events of %s: %v", c.ns, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events.Items {
		if e.Reason == "UpgradeCallMadeAgain" {
			s.report.CallsMadeAgain = append(s.report.CallsMadeAgain, fmt.Sprintf("%s: %s", c.ns, e.Note))
		}
	}
}

// explainFailure checks that a failed Machine's message names a fault the
// soak injected on its node.
func (s *soak) explainFailure(c *soakCluster, st upgradev1.MachineUpgradeStatus) {
	if st.Node == c.terminalNode && names(st.Message, c.terminal) {
		return
	}
	if _, gone := c.isGone(st.Machine); gone {
		return // CAPI deleted the Machine (scale-down, remediation, rollout).
	}
	// A kill or a failover explains no failure: the manager taking over
	// makes again an upgrade call whose outcome it does not know, when
	// that cannot upgrade the node twice (see install.act and callUnknown
	// in internal/disruption).
	s.mu.Lock()
	transients := s.transients[c.ns+"/"+st.Node]
	s.mu.Unlock()
	for _, t := range transients {
		if t.kind == faultRPCTimeout && strings.Contains(strings.ToLower(st.Message), "deadline") {
			s.mu.Lock()
			s.report.TimeoutFailures = append(s.report.TimeoutFailures, fmt.Sprintf("%s/%s: %s", c.ns, st.Machine, st.Message))
			s.mu.Unlock()
			return
		}
	}
	s.violation(4, "%s: Machine %s failed with a reason that names no fault injected on node %s (terminal fault %q on %q, %d upgrade calls): %s",
		c.ns, st.Machine, st.Node, c.terminal, c.terminalNode, c.upgradeCalls(st.Node), st.Message)
}

// judgeMachines checks invariant 6: every Machine present at the end, the
// joiners included, runs the target on its node (as the simulator says;
// for the workers, the version their MachineDeployment declares, if any),
// or failed (judged by judgeOutcome), or was never started by a rollout
// that stopped on a failure.
func (s *soak) judgeMachines(ctx context.Context, c *soakCluster) {
	mgmt := s.world.mgmt.Client
	u := &upgradev1.TalosUpgrade{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
		s.violation(6, "%s: reading the TalosUpgrade: %v", c.ns, err)
		return
	}
	records := map[string]upgradev1.MachineUpgradeStatus{}
	for _, st := range u.Status.Machines {
		records[st.Machine] = st
	}
	machines := &clusterv1.MachineList{}
	if err := mgmt.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		s.violation(6, "%s: listing the Machines: %v", c.ns, err)
		return
	}
	policyTarget, declared := c.target(), c.declaredVersion()
	stopped := u.Status.Phase == upgradev1.UpgradePhaseFailed || u.Status.Phase == upgradev1.UpgradePhasePaused
	for _, m := range machines.Items {
		s.check(6)
		version := "(no node)"
		if n := c.sim.Node(m.Status.NodeRef.Name); n != nil {
			version = n.Version()
		}
		target := policyTarget
		if declared != "" && m.Labels[clusterv1.MachineDeploymentNameLabel] == sandbox.WorkersName(c.name) {
			target = declared // Its MachineDeployment's version wins.
		}
		if version == target {
			continue
		}
		st, ok := records[m.Name]
		switch {
		case !ok:
			s.violation(6, "%s: Machine %s runs %s, not the target %s, and the rollout (%s) has no record of it", c.ns, m.Name, version, target, u.Status.Phase)
		case st.Phase == upgradev1.MachinePhaseFailed:
			// judgeOutcome checked that its message names the fault.
		case st.Phase == upgradev1.MachinePhasePending && stopped:
			// Never started: the rollout stopped on a failure.
		default:
			s.violation(6, "%s: Machine %s runs %s, not the target %s; rollout %s, record: phase %s, node %q, from %q to %q: %s",
				c.ns, m.Name, version, target, u.Status.Phase, st.Phase, st.Node, st.FromVersion, st.TargetVersion, st.Message)
		}
	}
}
