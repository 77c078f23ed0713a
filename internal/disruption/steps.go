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

package disruption

import (
	"errors"
	"fmt"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file holds the steps of one Machine's state machine (see the package
// doc): one step per phase, each a decision on an Observation and the
// Machine's record, which it moves on.

// Requeue delays, used only while waiting for something that sends no event.
const (
	drainPoll       = 2 * time.Second
	rebootPoll      = 2 * time.Second
	talosRetry      = 5 * time.Second
	upgradeCallPoll = 30 * time.Second
	// UpgradeCallRetry is how long after a repeatable attempt of an
	// upgrade call failed it is made again, as the other reads of a node
	// are.
	UpgradeCallRetry = talosRetry
)

// rebootRetry is how long a node may answer on its old boot ID after a
// reboot was asked for before it is asked again, at the most: a third of
// rebootTimeout when that is shorter, so that a reboot call lost to a failed
// request or to a restart of the controller is asked for again (twice) well
// before the Machine runs out of time.
const rebootRetry = 30 * time.Second

// rebootRetryAfter is how long after a reboot was asked for it is asked for
// again, for a Machine whose reboot must end within timeout.
func rebootRetryAfter(timeout time.Duration) time.Duration {
	return min(rebootRetry, timeout/3)
}

// MaxStepsPerMachine bounds the steps a Machine takes in one reconcile.
const MaxStepsPerMachine = 16

// Decide runs the step of the Machine's phase: k is what the disruption
// does to the node (KindOf), obs what the world said, st the Machine's
// record, which the step moves on. The events of the kind are named with
// the words of the record's kind as the step leaves it (a drained node
// found on its target may turn an upgrade into a reboot).
func Decide(k Kind, w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	d := decide(k, w, st)
	action := string(KindOf(st.Action).Words().Action)
	for i := range d.Events {
		if d.Events[i].Action == "" {
			d.Events[i].Action = action
		}
	}
	return d
}

func decide(k Kind, w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	switch st.Phase {
	case upgradev1.MachinePhaseWaitingForHold:
		switch st.HoldPoint {
		case upgradev1.HoldPointPreDrain:
			return decidePreDrain(w, st)
		case upgradev1.HoldPointPreReboot:
			return decidePreReboot(k, w, st)
		default:
			return decidePostUpgrade(k, w, st)
		}
	case upgradev1.MachinePhaseDraining:
		return decideDrain(k, w, st)
	case upgradev1.MachinePhaseUpgrading:
		return k.act(w, st)
	case upgradev1.MachinePhaseRebooting:
		return decideReboot(k, w, st)
	case upgradev1.MachinePhaseVerifying:
		return decideVerify(w, st)
	}
	return Decision{}
}

// passPoint reports whether the Machine passes its hold point: no hold of
// the cache nor of the apiserver, read again by its round once the cache's
// are clear and its action hooks at hookPoint succeeded. A hold set an
// instant ago, which the cache has not heard of, is honoured. A failed hook
// fails the Machine.
func passPoint(w *Observation, st *upgradev1.MachineUpgradeStatus, point upgradev1.HoldPoint, hookPoint upgradev1.HookPoint) (bool, Decision) {
	if len(w.Holding) > 0 {
		held(st, point, w.Holding)
		return false, Decision{} // The Machine watch brings us back when a hold goes.
	}
	st.HeldBy = nil
	if ok, d := hooksDone(w, st, hookPoint); !ok {
		return false, d
	}
	if w.Held == nil || w.Held.Point != point {
		return false, Decision{Intent: IntentReadHolds}
	}
	if w.Held.Err != nil {
		return false, Decision{Err: fmt.Errorf("reading the %s holds of Machine %s: %w", point, st.Machine, w.Held.Err)}
	}
	if len(w.Held.Holding) > 0 {
		held(st, point, w.Held.Holding)
		return false, Decision{}
	}
	return true, Decision{}
}

// held records who holds the Machine at point.
func held(st *upgradev1.MachineUpgradeStatus, point upgradev1.HoldPoint, owners []string) {
	st.HeldBy = owners
	st.Message = fmt.Sprintf("held at %s by %s", point, QuoteAll(owners))
}

// hooksDone reports whether every action hook at point succeeded for the
// Machine; the executor runs them when the step asks.
func hooksDone(w *Observation, st *upgradev1.MachineUpgradeStatus, point upgradev1.HookPoint) (bool, Decision) {
	if !w.Reachable {
		st.Message = "waiting for the workload cluster to be reachable"
		return false, Decision{}
	}
	run, ok := w.Hooks[point]
	if !ok {
		return false, Decision{Intent: IntentRunHooks, HookPoint: point}
	}
	switch {
	case run.Err != nil:
		return false, Decision{Err: fmt.Errorf("running the %s hooks: %w", point, run.Err)}
	case run.Result.Failed:
		return false, Fail(w.Now, st, fmt.Sprintf("%s hook failed: %s", point, run.Result.Message))
	case !run.Result.Done:
		st.Message = fmt.Sprintf("waiting for the %s hooks", point)
		if run.Result.Message != "" {
			st.Message += ": " + run.Result.Message
		}
		return false, Decision{Requeue: run.Result.RequeueAfter}
	}
	return true, Decision{}
}

// decidePreDrain waits for the pre-drain holds and the health checks, then
// records the intent to cordon and to protect the Machine from remediation;
// its round does both once the intent is persisted.
func decidePreDrain(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	if ok, d := passPoint(w, st, upgradev1.HoldPointPreDrain, upgradev1.HookPointPreDrain); !ok {
		return d
	}
	if !w.ChecksPassed {
		// Selected while the checks passed, but they no longer do: no
		// Machine is disrupted while a check runs, fails or is missing.
		st.Message = "waiting for the health checks to pass before draining"
		return Decision{} // reconcileHealthChecks requeues.
	}
	st.SkipRemediationSet = !hasAnnotation(w.Machine, clusterv1.MachineSkipRemediationAnnotation) || st.SkipRemediationSet
	st.Cordoned = true
	MoveTo(w.Now, st, upgradev1.MachinePhaseDraining, "", "draining node")
	return Decision{Intent: IntentDisrupt}
}

// decideDrain drains the node, without waiting, until no Pod is left to
// evict or drain.Timeout is exceeded; then its kind decides on what the
// node runs. It asks its round for a drain pass, and decides on it in the
// next.
func decideDrain(k Kind, w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	obs := w.Drain
	switch {
	case obs == nil:
		return Decision{Intent: IntentDrainPass}
	case obs.Err != nil:
		return Decision{Err: obs.Err}
	case !obs.Reachable:
		st.Message = "waiting for the workload cluster to be reachable"
		return Decision{}
	}
	var d Decision
	if obs.Skipped && !st.DrainSkipped {
		st.DrainSkipped = true
		d.normalOf("DrainSkipped", "Drain", "Machine %s: node %s is cordoned but not drained: no other Ready, schedulable node could take its Pods", st.Machine, st.Node)
	}
	if !obs.Drained {
		timeout := durationOr(w.Spec.Drain.Timeout, plan.DefaultDrainTimeout)
		if w.Now.Sub(st.PhaseStartTime.Time) > timeout {
			f := Fail(w.Now, st, fmt.Sprintf("drain did not finish within %s: %s", timeout, obs.Pending))
			f.Events = append(d.Events, f.Events...)
			return f
		}
		st.Message = "draining node: " + obs.Pending
		d.Requeue = drainPoll
		return d
	}
	if obs.TalosErr != nil {
		u := unreachable(w, st, obs.TalosErr)
		u.Events = append(d.Events, u.Events...)
		return u
	}
	st.UnreachableSince = nil
	next := k.drained(w, st)
	next.Events = append(d.Events, next.Events...)
	return next
}

// decidePreReboot waits for the pre-reboot holds, then records the intent to
// reboot, as the kind reboots the node; once its round persisted it, the
// node is rebooted.
func decidePreReboot(k Kind, w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	if ok, d := passPoint(w, st, upgradev1.HoldPointPreReboot, upgradev1.HookPointPreReboot); !ok {
		return d
	}
	how := k.reboot(w, st)
	st.RebootRequestedTime = ptrTime(w.Now)
	MoveTo(w.Now, st, upgradev1.MachinePhaseRebooting, "", "rebooting")
	return Decision{Intent: how, Requeue: rebootPoll}
}

// decideReboot waits for the node to come back with a new boot ID, and has
// its kind check what it booted. A reboot that did not reach the node is
// asked for again; one that does not end within rebootTimeout fails the
// Machine, on what the node said past it (or the error of talking to it).
// A read that did not reach the node (talos.ErrNotDialed) is no answer of
// the node: it is an error, tried again.
func decideReboot(k Kind, w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	timeout := durationOr(w.Spec.RebootTimeout, plan.DefaultRebootTimeout)
	if w.Boot == nil {
		// With the other rebooting nodes.
		return Decision{Intent: IntentReadBoot, AskUpgrade: callUnknown(w, st, timeout)}
	}
	if !w.Call.Known && w.Call.Unmade && legacy(st) && st.UpgradeRequestedTime != nil {
		// This process wrote the intent of the upgrade call that reboots the
		// node without making it (the write returned an error but landed, or
		// the node was not dialed): the call was never made; make it. The
		// node is asked to reboot now: rebootTimeout counts from now.
		st.RebootRequestedTime = ptrTime(w.Now)
		return Decision{Intent: IntentInstallUnmade, Requeue: rebootPoll}
	}
	var d Decision
	if w.Call.Known && w.Call.Finished {
		// The upgrade call of a node whose call reboots it has ended.
		d.ForgetCall = true
		switch {
		case errors.Is(w.Call.Err, talos.ErrNotDialed):
			// The node was not dialed (its talosconfig Secret or its
			// Machine's address could not be read): the call was never
			// made, which this process knows (upgradeCalls.unmade), and
			// nothing is known of the node, whatever its boot ID says. It
			// is made again after UpgradeCallRetry.
			st.Message = fmt.Sprintf("rebooting: %v; making the upgrade call again", w.Call.Err)
			d.Requeue = UpgradeCallRetry
			return d
		case errors.Is(w.Call.Err, talos.ErrBootedSince):
			// The call made again (IntentInstallAgain) found the node on a
			// new boot: it rebooted meanwhile, and got no call. Its boot ID
			// and version tell the rest.
		case isInterrupted(w.Call.Err):
			// The request was sent and its answer lost: the node may be
			// installing, and reboots when it is done. The call is never
			// repeated; the boot ID and the version tell.
			interrupted(&d, st, w.Call.Err)
		case w.Call.Failure() != "":
			f := Fail(w.Now, st, w.Call.Failure())
			f.ForgetCall = true
			return f
		case !w.Call.Res.RebootsItself:
			// The node installed the image without rebooting (its version
			// changed since the drain): the pre-reboot holds have passed, so
			// reboot it now.
			d.Reboot = RebootAfterInstall
		}
	}
	version, bootID, err := w.Boot.Version, w.Boot.BootID, w.Boot.Err
	if errors.Is(err, talos.ErrNotDialed) {
		// The node was not reached (its talosconfig Secret or its Machine's
		// address could not be read): that says nothing of the node, before
		// or past rebootTimeout. Tried again; the Machine is failed for its
		// rebootTimeout only on a read that reached the node, or failed
		// talking to it.
		d.Err = fmt.Errorf("reading the boot ID of node %q: %w", st.Node, err)
		return d
	}
	if err == nil && bootID == st.BootID && callUnknown(w, st, timeout) && w.Boot.Stage == talos.StageRunning && !w.Boot.UpgradeStarted {
		// An earlier process of the controller (it restarted, or another
		// replica took over) recorded the intent of the upgrade call and,
		// for all this process knows, did not make it: its write returned
		// an error but landed, or it stopped before the call. The node
		// runs no upgrade, and started none on this boot: the call never
		// reached it, or reached it only to end with its caller, before
		// the install. Before Talos 1.13 only a new call moves it. It is
		// made for the boot the node answers on (a node that boots
		// meanwhile gets none), and rebootTimeout counts from it.
		d.warning("UpgradeCallMadeAgain", "Machine %s: node %s still runs %s on its old boot and started no upgrade on it, %s after an earlier process of the controller recorded its upgrade call (the call never reached the node); making the call again",
			st.Machine, st.Node, version, w.Now.Sub(rebootAskedAt(st)).Round(time.Second))
		st.RebootRequestedTime = ptrTime(w.Now)
		st.Message = "the node runs no upgrade: making the upgrade call again"
		d.Intent, d.Requeue = IntentInstallAgain, rebootPoll
		return d
	}
	deadline := phaseDeadline(w.Now, st, timeout)
	if err == nil && bootID == st.BootID && d.Reboot == RebootNone && rebootDue(w, st, timeout) {
		// The node answers on its old boot ID long after the reboot was
		// asked for: the call did not reach it (a failed request, a restart
		// of the controller). A reboot asked for twice is still one reboot.
		d.Reboot = RebootAgain
		if !w.Call.Known && w.Call.LastReboot.IsZero() {
			// This process took the Machine over from one that stopped
			// (a restart, a failover) after it wrote the intent and
			// before, for all this process knows, the reboot was asked
			// for: after an install without a reboot, the reboot comes
			// later. The node cannot be held to a reboot nobody may have
			// asked for: rebootTimeout counts from this ask, as for an
			// upgrade call made again (IntentInstallUnmade). A process
			// that asked once already counts from its first ask.
			st.RebootRequestedTime = ptrTime(w.Now)
			deadline = phaseDeadline(w.Now, st, timeout)
		}
	}
	if err != nil || bootID == st.BootID {
		// The boot read was made by this reconcile, after w.Now: past the
		// deadline, it is a read of the node made past the deadline.
		if w.Now.After(deadline) {
			var msg string
			switch {
			case err != nil:
				msg = fmt.Sprintf("node %q did not come back within rebootTimeout %s: %v", st.Node, timeout, err)
			case legacy(st) && st.UpgradeInterrupted:
				msg = fmt.Sprintf("node %q answers on %s but did not reboot within rebootTimeout %s: %s, so it may never have reached the node (see `talosctl -n %s events`); not retried automatically", st.Node, version, timeout, interruptedCause, st.Node)
			case legacy(st):
				msg = fmt.Sprintf("node %q answers on %s but did not reboot within rebootTimeout %s: before Talos 1.13 the upgrade runs on the node after the call returns, and a failed install leaves the node up on its old version (see `talosctl -n %s events`); not retried automatically", st.Node, version, timeout, st.Node)
			default:
				msg = fmt.Sprintf("node %q answers on its old boot ID but did not reboot within rebootTimeout %s, although the reboot was asked for again every %s; not retried automatically", st.Node, timeout, rebootRetryAfter(timeout))
			}
			f := Fail(w.Now, st, msg)
			f.Events = append(d.Events, f.Events...)
			f.ForgetCall = d.ForgetCall
			return f
		}
		st.Message = "waiting for the node to reboot"
		d.Requeue = atLeastASecond(min(rebootPoll, deadline.Sub(w.Now)+time.Second)) // A rebooting Talos API sends no event.
		return d
	}
	if msg := k.rebooted(w, st, version); msg != "" {
		f := Fail(w.Now, st, msg)
		f.Events = append(d.Events, f.Events...)
		f.ForgetCall = d.ForgetCall
		return f
	}
	d.normal("NodeRebooted", "Machine %s: node %s came back on %s", st.Machine, st.Node, version)
	MoveTo(w.Now, st, upgradev1.MachinePhaseVerifying, "", "waiting for the node to be Ready")
	return d
}

// interruptedCause says why a Machine's upgrade call has no known outcome.
const interruptedCause = "the upgrade call was interrupted (its request was sent and the node's answer lost)"

// interrupted records that the upgrade call of a Machine was sent and its
// answer lost: whether the node installed the image is known only once it
// has rebooted.
func interrupted(d *Decision, st *upgradev1.MachineUpgradeStatus, err error) {
	st.UpgradeInterrupted = true
	d.warning("UpgradeCallInterrupted", "Machine %s: %v; the call is not repeated, the node's boot ID and version will tell whether it took", st.Machine, err)
}

// callUnknown reports whether the upgrade call of a node whose call reboots
// it (Talos before 1.13), recorded by an earlier process of the controller,
// may have been lost: this process made no such call for the Machine (it
// would know its outcome, or that it reached the node), and rebootRetryAfter
// has passed since the call was asked for without the node rebooting. The
// node is then asked (Decision.AskUpgrade) whether it runs an upgrade or
// started one on its current boot; the call is made again only when it says
// it did neither (talos.StageRunning and no upgrade sequence in its event
// log). A node that cannot say is left to its rebootTimeout; so is a node
// whose install failed (it started an upgrade): Tollgate never retries an
// upgrade. A process makes the call again once at most.
func callUnknown(w *Observation, st *upgradev1.MachineUpgradeStatus, timeout time.Duration) bool {
	if !legacy(st) || st.UpgradeRequestedTime == nil || w.Call.Known || w.Call.Unmade || w.Call.SelfRebooting {
		return false
	}
	return w.Now.Sub(rebootAskedAt(st)) >= rebootRetryAfter(timeout)
}

// rebootAskedAt is when the reboot of a Machine was last asked for, as its
// record says.
func rebootAskedAt(st *upgradev1.MachineUpgradeStatus) time.Time {
	if st.RebootRequestedTime != nil {
		return st.RebootRequestedTime.Time
	}
	return st.UpgradeRequestedTime.Time
}

// rebootDue reports whether the reboot of a Machine whose node still answers
// on its old boot ID should be asked for again: rebootRetryAfter after it
// was last asked for. Only a Reboot call is repeated, and only on a node
// whose upgrade call does not reboot it: a node before Talos 1.13 installs
// after its call returns and reboots when it is done. The time of the last
// request is kept in memory only: a restarted controller counts from
// rebootRequestedTime, which asks again sooner, never later.
func rebootDue(w *Observation, st *upgradev1.MachineUpgradeStatus, timeout time.Duration) bool {
	if st.RebootRequestedTime == nil || legacy(st) || w.Call.SelfRebooting {
		return false
	}
	last := w.Call.LastReboot
	if last.IsZero() {
		last = st.RebootRequestedTime.Time
	}
	return w.Now.Sub(last) >= rebootRetryAfter(timeout)
}

// decideVerify waits for the workload Node to be Ready. The node stays
// cordoned: decidePostUpgrade releases it once it is proven.
func decideVerify(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	switch {
	case !w.Reachable:
		st.Message = "waiting for the workload cluster to be reachable"
		return Decision{}
	case w.NodeErr != nil:
		return Decision{Err: fmt.Errorf("reading node %q: %w", st.Node, w.NodeErr)}
	}
	if !NodeReady(w.Node) {
		timeout := durationOr(w.Spec.RebootTimeout, plan.DefaultRebootTimeout)
		deadline := phaseDeadline(w.Now, st, timeout)
		if w.Now.After(deadline) {
			return Fail(w.Now, st, fmt.Sprintf("node %q runs %s but is not Ready within rebootTimeout %s", st.Node, st.TargetVersion, timeout))
		}
		st.Message = "waiting for the node to be Ready"
		// The Node watch brings us back; the deadline sends no event.
		return Decision{Requeue: atLeastASecond(deadline.Sub(w.Now) + time.Second)}
	}
	if d, ok := kubernetesProven(w, st); !ok {
		return d
	}
	MoveTo(w.Now, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPostUpgrade, "")
	return Decision{}
}

// decidePostUpgrade proves the node before it takes work again: while it is
// still cordoned, it waits for the post-upgrade holds and the nodePreReady
// hooks; passing that point releases the node (uncordons it and removes
// skip-remediation, with the read of the holds). Then the nodeReady hooks
// run, and the Machine is Completed.
func decidePostUpgrade(k Kind, w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	passing := w.Held != nil && w.Held.Point == upgradev1.HoldPointPostUpgrade
	if passing || st.Cordoned || st.SkipRemediationSet {
		// A read that released the node is decided on all the same.
		ok, d := passPoint(w, st, upgradev1.HoldPointPostUpgrade, upgradev1.HookPointNodePreReady)
		if !ok {
			d.Release = d.Intent == IntentReadHolds
			return d
		}
		if st.Cordoned {
			st.Message = "proven; waiting for the workload cluster to be reachable to uncordon the node"
			return Decision{}
		}
	}
	if ok, d := hooksDone(w, st, upgradev1.HookPointNodeReady); !ok {
		return d
	}
	done := k.done(st)
	MoveTo(w.Now, st, upgradev1.MachinePhaseCompleted, "", done)
	st.CompletionTime = ptrTime(w.Now)
	var d Decision
	if delay := w.Spec.Rollout.DelayBetweenMachines; delay != nil && delay.Duration > 0 {
		d.NextMachineNotBefore = ptrTime(w.Now.Add(delay.Duration))
	}
	d.normal(k.Words().Completed, "Machine %s %s", st.Machine, done)
	return d
}

// unreachable decides on a Talos API error of a disrupted Machine: it is
// retried until the node has been silent for nodeUnreachableTimeout, and
// then the Machine fails (which undoes its cordon and skip-remediation, so
// that a MachineHealthCheck can act). An error of dialing the node
// (talos.ErrNotDialed: its talosconfig Secret or its Machine's address
// could not be read) is the management cluster's and says nothing of the
// node: it is returned, and tried again, without starting or advancing the
// node's silence.
func unreachable(w *Observation, st *upgradev1.MachineUpgradeStatus, err error) Decision {
	if errors.Is(err, talos.ErrNotDialed) {
		return Decision{Err: fmt.Errorf("dialing node %q: %w", st.Node, err)}
	}
	if st.UnreachableSince == nil {
		st.UnreachableSince = ptrTime(w.Now)
	}
	timeout := durationOr(w.Spec.NodeUnreachableTimeout, plan.DefaultNodeUnreachableTimeout)
	silent := w.Now.Sub(st.UnreachableSince.Time)
	if silent > timeout {
		return Fail(w.Now, st, fmt.Sprintf("the Talos API of node %q has not answered for %s (nodeUnreachableTimeout %s): %v", st.Node, silent.Round(time.Second), timeout, err))
	}
	st.Message = fmt.Sprintf("Talos API not answering for %s: %v", silent.Round(time.Second), err)
	return Decision{Retrying: err, Requeue: atLeastASecond(min(talosRetry, timeout-silent+time.Second))}
}

// failMachine records that the Machine failed; the executor undoes its
