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
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/internal/inplace"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Scenario 6 compares the two ways a Talos upgrade reaches a Cluster's
// workers: a policy that names the target (Tollgate's own rollout), and
// CAPI's in-place update of a MachineDeployment whose template changed,
// handed to Tollgate through its Runtime Extension. Both run in one sandbox
// with CAPI core, on two Clusters made alike, one after the other, with the
// same manager; the figure is the ratio of their time per Machine, and each
// against the reboot ideal.

// TollgateShareGoalSeconds is the goal of scenario 6: what Tollgate adds to
// each Machine CAPI hands over, from its mark to the upgrade call and from
// the record Completed to Tollgate's answer being done (the Machine
// released). CAPI's wait to ask again (its hook cache keeps an "in
// progress" answer for its retryAfterSeconds, a second at least whatever
// the extension answers) is reported beside it, not in it.
const TollgateShareGoalSeconds = 0.3

// InPlaceOptions size scenario 6.
type InPlaceOptions struct {
	// Workers are the MachineDeployment's Machines of each Cluster, beside
	// one control-plane Machine.
	Workers int
	// Reboot is how long a node is down.
	Reboot time.Duration
	// Timeout bounds each rollout.
	Timeout time.Duration
	// RetryAfter is the retryAfterSeconds of the extension's "in progress"
	// answers (manager.Options.ExtensionRetryAfter): the sandbox's
	// (sandbox.DefaultExtensionRetryAfter, 1s) when zero. Set it to
	// inplace.DefaultRetryAfter to measure the manager's default.
	RetryAfter time.Duration
	// Logf receives the sandbox's set-up steps.
	Logf func(format string, args ...any)
}

// PathResult is how one path moved a Cluster's workers to the target.
type PathResult struct {
	// FirstCallSeconds is from the change (the policy's opt-in, or the
	// template's change) to the first worker's upgrade call: admission,
	// preflight, and for the extension path CAPI's rollout planner and its
	// first UpdateMachine call.
	FirstCallSeconds float64 `json:"firstCallSeconds"`
	// TotalSeconds is from the change to the last worker done (its record
	// Completed; for the extension path CAPI's in-place update ended).
	TotalSeconds float64 `json:"totalSeconds"`
	// PerMachineSeconds is from the first worker's upgrade call to the
	// last worker done, per worker: reboots and what each path adds.
	PerMachineSeconds float64 `json:"perMachineSeconds"`
	// OverIdealPercent compares PerMachineSeconds with the reboot.
	OverIdealPercent float64 `json:"overIdealPercent"`
	// HandoffSeconds is, averaged over the workers after the first, from
	// the previous worker done to a worker's upgrade call: what a path
	// takes to start the next Machine. For the extension path,
	// CAPIHandoffSeconds of it is CAPI's, until it marks the worker for an
	// in-place update, and the rest Tollgate's.
	HandoffSeconds     float64 `json:"handoffSeconds"`
	CAPIHandoffSeconds float64 `json:"capiHandoffSeconds,omitempty"`
	// AnswerLagSeconds is, averaged over the workers, from the rollout's
	// record of a worker Completed to the worker done: for the extension
	// path, until CAPI asks again and hears done, and ends the update.
	AnswerLagSeconds float64 `json:"answerLagSeconds"`
	// HeardDoneSeconds is, for the extension path, averaged over the
	// workers, the part of AnswerLagSeconds until CAPI heard done: from the
	// record Completed to CAPI removing the Machine's in-place update marks
	// (it does so in the reconcile that heard done). The rest, until the
	// Machine is UpToDate, is CAPI's own.
	HeardDoneSeconds float64 `json:"heardDoneSeconds,omitempty"`
	// MarkToCallSeconds is, for the extension path, averaged over the
	// workers, from CAPI's mark of a worker for an in-place update to its
	// upgrade call: Tollgate taking the Machine in, checking its gates and
	// draining it.
	MarkToCallSeconds float64 `json:"markToCallSeconds,omitempty"`
	// ReleaseSeconds is, for the extension path, averaged over the workers,
	// from the record Completed to the Machine released (its node
	// uncordoned, skip-remediation removed, on record): from then on
	// UpdateMachine answers done.
	ReleaseSeconds float64 `json:"releaseSeconds,omitempty"`
	// CAPIPollSeconds is, for the extension path, averaged over the
	// workers, from the Machine released to CAPI having heard done (its
	// in-place update marks removed): CAPI waiting to ask UpdateMachine
	// again, which it does no sooner than the retryAfterSeconds of its
	// previous answer (a second at least), and its reconcile that hears
	// done.
	CAPIPollSeconds float64 `json:"capiPollSeconds,omitempty"`
	// TollgateShareSeconds is, for the extension path, what Tollgate adds
	// to each Machine beside CAPI's own planner, CAPI's poll and the
	// reboot: MarkToCallSeconds and ReleaseSeconds.
	// TollgateShareGoalSeconds is its goal.
	TollgateShareSeconds float64 `json:"tollgateShareSeconds,omitempty"`
	// Workers are each worker's upgrade call, record Completed and done, in
	// seconds from the change, in the order of their calls.
	Workers []WorkerTiming `json:"workers"`
}

// WorkerTiming is what happened to one worker, in seconds from the change:
// marked for an in-place update by CAPI (extension path only), its upgrade
// call, its record Completed, unmarked by CAPI (extension path only), and
// done.
type WorkerTiming struct {
	Node      string  `json:"node"`
	Marked    float64 `json:"marked,omitempty"`
	Call      float64 `json:"call"`
	Completed float64 `json:"completed"`
	// Released is when the record was Completed with its Machine released
	// (extension path only): UpdateMachine answers done from then on.
	Released float64 `json:"released,omitempty"`
	// Unmarked is when CAPI removed the marks of the Machine's in-place
	// update, having heard done (extension path only).
	Unmarked float64 `json:"unmarked,omitempty"`
	Done     float64 `json:"done"`
}

// InPlaceResult is the outcome of scenario 6.
type InPlaceResult struct {
	Workers       int     `json:"workers"`
	RebootSeconds float64 `json:"rebootSeconds"`
	// Policy and Extension are the two paths.
	Policy    PathResult `json:"policy"`
	Extension PathResult `json:"extension"`
	// Ratio is the extension path's time per Machine over the policy
	// path's.
	Ratio float64 `json:"ratio"`
}

// RunInPlace runs scenario 6 in a sandbox of its own.
func RunInPlace(ctx context.Context, o InPlaceOptions, logf func(string, ...any)) (*InPlaceResult, error) {
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Webhooks: true, CAPI: true, Extension: true, InstallerVersions: []string{ToVersion},
		RebootDuration: o.Reboot, JobDelay: -1, Logf: o.Logf,
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sb.Stop() }()
	if err := sb.StartManager(ctx, manager.Options{ExtensionRetryAfter: o.RetryAfter}); err != nil {
		return nil, err
	}
	res := &InPlaceResult{Workers: o.Workers, RebootSeconds: o.Reboot.Seconds()}

	logf("Scenario 6: the policy path, %d workers", o.Workers)
	policyCluster, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "inplace-policy", Name: "policy-path", ControlPlanes: 1, Workers: o.Workers, TalosVersion: FromVersion})
	if err != nil {
		return nil, err
	}
	if err := sb.Management.Client.Create(ctx, sb.Policy(policyCluster.Namespace, "to-1-13", ToVersion)); err != nil {
		return nil, err
	}
	begun := time.Now()
	if err := policyCluster.OptIn(ctx, "to-1-13"); err != nil {
		return nil, err
	}
	seen, err := waitForWorkers(ctx, sb, policyCluster, o.Timeout, recordCompleted)
	if err != nil {
		return nil, fmt.Errorf("the policy path: %w", err)
	}
	res.Policy = pathResult(begun, policyCluster.Simulator, seen, o)

	logf("Scenario 6: the extension path, %d workers", o.Workers)
	capiCluster, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "inplace-capi", Name: "extension-path", ControlPlanes: 1, Workers: o.Workers, TalosVersion: FromVersion, InPlaceUpdates: true})
	if err != nil {
		return nil, err
	}
	if err := sb.Management.Client.Create(ctx, sb.Policy(capiCluster.Namespace, "capi", "", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TargetFrom = upgradev1.TargetFromCAPI
	})); err != nil {
		return nil, err
	}
	if err := capiCluster.OptIn(ctx, "capi"); err != nil {
		return nil, err
	}
	// CAPI hands the Machines over only once Tollgate serves the namespace:
	// the rollout says so before the clock starts.
	if err := waitFor(ctx, time.Minute, func() (bool, error) {
		u, err := sb.Upgrade(ctx, capiCluster.Namespace, capiCluster.Name)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return conditions.IsTrue(u, upgradev1.InPlaceUpdatesReadyCondition), nil
	}); err != nil {
		return nil, fmt.Errorf("waiting for CAPI to hand the Machines of %s/%s to Tollgate: %w", capiCluster.Namespace, capiCluster.Name, err)
	}
	before, err := capiCluster.MachineNames(ctx, sandbox.RoleWorker)
	if err != nil {
		return nil, err
	}
	begun = time.Now()
	if _, err := capiCluster.SetWorkersTalosVersion(ctx, ToVersion); err != nil {
		return nil, err
	}
	seen, err = waitForWorkers(ctx, sb, capiCluster, o.Timeout, inPlaceDone)
	if err != nil {
		return nil, fmt.Errorf("the extension path: %w", err)
	}
	after, err := capiCluster.MachineNames(ctx, sandbox.RoleWorker)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(before, after) {
		return nil, fmt.Errorf("the extension path replaced Machines: %v before, %v after", before, after)
	}
	res.Extension = pathResult(begun, capiCluster.Simulator, seen, o)
	res.Ratio = res.Extension.PerMachineSeconds / res.Policy.PerMachineSeconds
	logf("Scenario 6: per Machine %.2fs by the policy, %.2fs by CAPI and the extension (%.2fx), reboot %.1fs; Tollgate's share %.2fs (goal %.1fs)",
		res.Policy.PerMachineSeconds, res.Extension.PerMachineSeconds, res.Ratio, o.Reboot.Seconds(), res.Extension.TollgateShareSeconds, TollgateShareGoalSeconds)
	return res, nil
}

// workerDone says whether a worker Machine is done, from its record in the
// Cluster's rollout and from CAPI's Machine.
type workerDone func(m *clusterv1.Machine, record *upgradev1.MachineUpgradeStatus) bool

// recordCompleted: the rollout's record of the Machine is Completed.
func recordCompleted(_ *clusterv1.Machine, record *upgradev1.MachineUpgradeStatus) bool {
	return record != nil && record.Phase == upgradev1.MachinePhaseCompleted
}

// recordReleased: the rollout's record of the Machine is Completed and its
// release went through, as UpdateMachine asks before it answers done.
func recordReleased(record *upgradev1.MachineUpgradeStatus) bool {
	return record != nil && record.Phase == upgradev1.MachinePhaseCompleted && !record.Cordoned && !record.SkipRemediationSet
}

// inPlaceDone: CAPI ended the Machine's in-place update (Tollgate answered
// done), and the node runs the target.
func inPlaceDone(m *clusterv1.Machine, _ *upgradev1.MachineUpgradeStatus) bool {
	return !inplace.Marked(m) && m.Status.NodeInfo != nil && m.Status.NodeInfo.OSImage == talossim.OSImage(ToVersion) &&
		conditions.IsTrue(m, clusterv1.MachineUpToDateCondition)
}

// sighting is when the bench first saw what happens to a worker.
type sighting struct {
	marked, completed, released, unmarked, done time.Time
}

// waitForWorkers polls the Cluster's worker Machines and its rollout every
// 100ms until every worker is done, and returns what it saw of each, by
// node name.
func waitForWorkers(ctx context.Context, sb *sandbox.Sandbox, c *sandbox.Cluster, timeout time.Duration, done workerDone) (map[string]*sighting, error) {
	seen := map[string]*sighting{}
	err := waitForEvery(ctx, timeout, 100*time.Millisecond, func() (bool, error) {
		machines := &clusterv1.MachineList{}
		if err := sb.Management.Client.List(ctx, machines, client.InNamespace(c.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
			return false, err
		}
		records := map[string]*upgradev1.MachineUpgradeStatus{}
		if u, err := sb.Upgrade(ctx, c.Namespace, c.Name); err == nil {
			if u.Status.Phase == upgradev1.UpgradePhaseFailed {
				return false, fmt.Errorf("the rollout failed: %s", u.Status.BlockedBy)
			}
			for i := range u.Status.Machines {
				records[u.Status.Machines[i].Machine] = &u.Status.Machines[i]
			}
		}
		workers, finished := 0, 0
		now := time.Now()
		for i := range machines.Items {
			m := &machines.Items[i]
			if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp || !m.Status.NodeRef.IsDefined() {
				continue
			}
			workers++
			w := seen[m.Status.NodeRef.Name]
			if w == nil {
				w = &sighting{}
				seen[m.Status.NodeRef.Name] = w
			}
			if w.marked.IsZero() && inplace.Marked(m) {
				w.marked = now
			}
			if w.completed.IsZero() && recordCompleted(m, records[m.Name]) {
				w.completed = now
			}
			if w.released.IsZero() && recordReleased(records[m.Name]) {
				w.released = now
			}
			if !w.marked.IsZero() && w.unmarked.IsZero() && !inplace.Marked(m) {
				w.unmarked = now
			}
			if w.done.IsZero() && done(m, records[m.Name]) {
				w.done = now
			}
			if !w.done.IsZero() {
				finished++
			}
		}
		return workers > 0 && finished == workers, nil
	})
	return seen, err
}

// pathResult reads a path's figures: begun is the change, seen what the
// bench saw of each worker, the simulator's call log the upgrade calls.
func pathResult(begun time.Time, sim *talossim.Simulator, seen map[string]*sighting, o InPlaceOptions) PathResult {
	calls := map[string]time.Time{}
	for _, call := range sim.CallLog() {
		if _, worker := seen[call.Node]; !worker || (call.RPC != talossim.RPCUpgrade && call.RPC != talossim.RPCLegacyUpgrade) || call.Time.Before(begun) {
			continue
		}
		if t, ok := calls[call.Node]; !ok || call.Time.Before(t) {
			calls[call.Node] = call.Time
		}
	}
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return t.Sub(begun).Seconds()
	}
	timings := make([]WorkerTiming, 0, len(calls))
	for node, call := range calls {
		w := seen[node]
		timings = append(timings, WorkerTiming{Node: node, Marked: since(w.marked), Call: since(call), Completed: since(w.completed), Released: since(w.released), Unmarked: since(w.unmarked), Done: since(w.done)})
	}
	slices.SortFunc(timings, func(a, b WorkerTiming) int { return cmp.Compare(a.Call, b.Call) })
	if len(timings) == 0 {
		return PathResult{}
	}
	var handoffs, capiHandoffs, lags, heard, markToCall, releases, polls []float64
	last := 0.0
	for i, t := range timings {
		last = max(last, t.Done)
		lags = append(lags, t.Done-t.Completed)
		if t.Unmarked > 0 {
			// Polled every 100ms, the marks can be seen gone in the poll
			// that first sees the record Completed.
			heard = append(heard, max(0, t.Unmarked-t.Completed))
			if t.Released > 0 {
				releases = append(releases, max(0, t.Released-t.Completed))
				polls = append(polls, max(0, t.Unmarked-t.Released))
			}
		}
		if t.Marked > 0 {
			markToCall = append(markToCall, max(0, t.Call-t.Marked))
		}
		if i == 0 {
			continue
		}
		// Polled every 100ms, a call can come before its predecessor was
		// seen done: the hand-off is then none.
		handoffs = append(handoffs, max(0, t.Call-timings[i-1].Done))
		if t.Marked > 0 {
			capiHandoffs = append(capiHandoffs, max(0, t.Marked-timings[i-1].Done))
		}
	}
	per := (last - timings[0].Call) / float64(len(timings))
	lag := NewStats(lags).Mean
	var share float64
	if len(markToCall) > 0 {
		share = NewStats(markToCall).Mean + NewStats(releases).Mean
	}
	return PathResult{
		FirstCallSeconds:     timings[0].Call,
		TotalSeconds:         last,
		PerMachineSeconds:    per,
		OverIdealPercent:     100 * (per - o.Reboot.Seconds()) / o.Reboot.Seconds(),
		HandoffSeconds:       NewStats(handoffs).Mean,
		CAPIHandoffSeconds:   NewStats(capiHandoffs).Mean,
		AnswerLagSeconds:     lag,
		HeardDoneSeconds:     NewStats(heard).Mean,
		MarkToCallSeconds:    NewStats(markToCall).Mean,
		ReleaseSeconds:       NewStats(releases).Mean,
		CAPIPollSeconds:      NewStats(polls).Mean,
		TollgateShareSeconds: share,
		Workers:              timings,
	}
}
