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
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"
)

// Invariants names the invariants, by the number the report gives them.
var Invariants = map[int]string{
	0:  "failover: another replica takes the lease within what leader election allows with the configured lease duration, retry period and request timeout",
	1:  "at most maxUnavailable workers and one control-plane machine disrupted, whatever the cause: upgrades, reboots, configuration changes, removals released to CAPI's drain",
	2:  "no drain while a hold is present or a health check fails",
	3:  "at most one upgrade per node per target version (a legacy upgrade call; the installs of one boot on Talos 1.13 and later); per Kubernetes target, at most one change of a node's control-plane static Pods and one of its kubelet, none with a boot no upgrade made, no configuration staged for and no reboot asked for",
	4:  "every rollout ends Completed, or Failed/Paused naming the fault; nothing left behind",
	5:  "no secret material in the controller's logs",
	6:  "every Machine present at the end runs the target, or the version its MachineDeployment declares (joiners included), or failed naming the fault, or was never started by a stopped rollout",
	7:  "no upgrade or reboot call before the node's drain finished and (for a call that reboots) its pre-reboot holds were clear",
	8:  "no Machine stays in a phase longer than its timeout plus slack (and the time the controllers could not act)",
	9:  "after a Cluster leaves its policy, no Machine of it starts until it re-joins",
	10: "a rollout at rest (over for its target) is not reconciled again and again",
	11: "CAPI never remediates a Machine Tollgate disrupts and has not given up on; a Machine it gave up on, unhealthy, is remediated",
	12: "at rest, no Machine, Cluster, TalosUpgrade or TalosUpgradePolicy changes (resourceVersions stable for 30s)",
	13: "every reboot asked for is answered at rest (the node booted after it), and no node reboots more than once per request",
	14: "a Machine CAPI deletes carries Tollgate's deletion hook, released only after its preRemoval hook succeeded, once",
	15: "at rest, every control-plane node runs its OnDelete TalosControlPlane's patches, or, refused (NotInPlace), none runs the refused change and the rollout says so; at most one boot per node for each change that needs one, none for a change that needs none",
	16: "no node's Kubernetes changes before the policy's Kubernetes target and the CAPI objects' versions agree; at rest, a Completed rollout to it has every Node's kubelet, every control-plane node's static Pods and every Machine's spec.version on it",
	18: "no Machine is ever left handed over and unfinished: at rest none carries CAPI's in-place update marks (update-in-progress, pending-acknowledge-move, a pending UpdateMachine hook, Updating True) and no MachineSet waits on a move; none is left failed in place unless Tollgate's record of it failed naming the fault; none is handed over outside a namespace that opts in",
}

// Violation is one broken invariant.
type Violation struct {
	// Invariant is the number of the invariant (see Invariants).
	Invariant int
	// At is when the observer saw it.
	At time.Time
	// Message says what was seen.
	Message string
}

// Resume is the time from a kill to a replica holding the lease again.
type Resume struct {
	// Kind is faultKill or faultFailover.
	Kind string
	// After is the time to resume.
	After time.Duration
}

// Report is what a soak saw.
type Report struct {
	// Seed replays the run.
	Seed int64
	// Rollouts is the number of rollouts run; Outcomes counts their final
	// phases.
	Rollouts int
	Outcomes map[string]int
	// Faults counts the faults injected, by kind.
	Faults map[string]int
	// Violations are the invariant violations; there must be none.
	Violations []Violation
	// Checks counts, by invariant, the cases checked (nodes, calls,
	// Machines, phases entered, starts); invariants 0, 1, 2 and 5 are
	// checked continuously and not counted.
	Checks map[int]int
	// Resumes are the times to resume after each kill or failover.
	Resumes []Resume
	// KillTimes are the instants controller processes were killed.
	KillTimes []time.Time
	// TimeoutFailures are the Machines failed by an injected call timeout.
	TimeoutFailures []string
	// CallsMadeAgain are the upgrade calls a manager that took a Machine
	// over made again, not knowing their outcome (UpgradeCallMadeAgain
	// events).
	CallsMadeAgain []string
	// UnexpectedExits counts controller processes that exited on their own
	// (a lost lease on a busy machine) and were restarted.
	UnexpectedExits int
	// LogLines is the number of controller log lines scanned for secrets.
	LogLines int64
	// Duration of the whole soak.
	Duration time.Duration
}

// LongestResume returns the longest time to resume after a kill or
// failover.
func (r *Report) LongestResume() Resume {
	var longest Resume
	for _, x := range r.Resumes {
		if x.After > longest.After {
			longest = x
		}
	}
	return longest
}

// Missing returns the fault kinds never injected.
func (r *Report) Missing() []string {
	var out []string
	for _, k := range AllFaults {
		if r.Faults[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

// Print writes the report.
func (r *Report) Print(w io.Writer) {
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(w, format+"\n", args...) }
	p("Soak report (seed %d, replay with --seed=%d), %s", r.Seed, r.Seed, r.Duration.Round(time.Second))
	p("  rollouts run:        %d %v", r.Rollouts, sortedCounts(r.Outcomes))
	p("  faults injected:")
	kinds := slices.Clone(AllFaults)
	sort.Strings(kinds)
	total := 0
	for _, k := range kinds {
		p("    %-30s %d", k, r.Faults[k])
		total += r.Faults[k]
	}
	p("    %-30s %d", "total", total)
	p("  Kubernetes targets:  %d %s, %d %s, %d %s", r.Faults[kubeModeKind(kubeWithTalos)], kubeWithTalos,
		r.Faults[kubeModeKind(kubeAlone)], kubeAlone, r.Faults[kubeModeKind(kubeMidRollout)], kubeMidRollout)
	p("  in-place update extension: %d template changes Tollgate claims, %d it does not; %d Machines handed over, %d seen InPlaceUpdateFailed for a while (a failed UpdateMachine call CAPI makes again)",
		r.Faults[extensionClaimable], r.Faults[extensionUnclaimable], r.Faults[extensionHandovers], r.Faults[extensionFailedCalls])
	l := r.LongestResume()
	p("  longest resume:      %s (after a %s; %d kills and failovers)", l.After.Round(time.Millisecond), l.Kind, len(r.Resumes))
	p("  replicas restarted after exiting on their own: %d", r.UnexpectedExits)
	p("  log lines scanned for secrets: %d", r.LogLines)
	p("  upgrade calls made again by a manager that took over: %d", len(r.CallsMadeAgain))
	for _, m := range r.CallsMadeAgain {
		p("    %s", m)
	}
	p("  Machines failed by an injected call timeout: %d", len(r.TimeoutFailures))
	for _, m := range r.TimeoutFailures {
		p("    %s", m)
	}
	p("  invariants:")
	violations := map[int]int{}
	for _, v := range r.Violations {
		violations[v.Invariant]++
	}
	// The numbers need not be contiguous.
	numbers := slices.Sorted(maps.Keys(Invariants))
	for _, i := range numbers {
		checked := "continuous"
		if n, ok := r.Checks[i]; ok {
			checked = fmt.Sprintf("%d checked", n)
		}
		p("    %d %-14s %3d violations  %s", i, checked, violations[i], Invariants[i])
	}
	p("  invariant violations: %d", len(r.Violations))
	for _, v := range r.Violations {
		known := ""
		if bug, ok := Known(v); ok {
			known = " (known bug, " + bug.Reproducer + ")"
		}
		p("    [%d %s]%s %s: %.400s", v.Invariant, Invariants[v.Invariant], known, v.At.Format(time.TimeOnly), v.Message)
	}
}

func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for _, k := range keys {
		out += fmt.Sprintf(" %s=%d", k, m[k])
	}
	return "(" + out[min(1, len(out)):] + ")"
}
