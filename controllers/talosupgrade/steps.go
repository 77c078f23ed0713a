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

package talosupgrade

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "what does a Machine do next": the steps of one
// Machine's state machine,
//
//	Pending → WaitingForHold(preDrain) → Draining → Upgrading →
//	WaitingForHold(preReboot) → Rebooting → Verifying →
//	WaitingForHold(postUpgrade) → Completed (or Failed)
//
// A step is a decision: a function of what the world said (a world, filled
// by the executor in machine.go from the manager's caches and what the
// Machine's last round read) and of the Machine's record, which it moves on,
// to an intent that the executor carries out: a read for the next round, a
// side effect whose intent the record now holds (written ahead of it by the
// round, see rounds.go), or nothing while the Machine waits. No step reads
// or writes the world itself, so each is tested by a table of worlds and
// records (steps_test.go), as CAPI tests its Machine phases.
//
// The steps are the same for every kind of disruption: gates, holds and
// hooks at each point, drain, act, reboot, verify, prove, release. What a
// disruption does to the node is its kind (see kind): the kind decides only
// what the node runs once it is drained, what acting on it means, how it
// reboots, and what it must run when it is back. A Talos upgrade is the
// kind install (install.go).
//
// The node is cordoned from the drain until it is proven: back Ready, its
// nodePreReady hooks succeeded and its post-upgrade holds released
// (WaitingForHold(postUpgrade), first part); only then is it uncordoned and
// do its nodeReady hooks run (second part).
//
// Every phase that can take a Machine down ends: the drain within
// drain.timeout, a silent Talos API within nodeUnreachableTimeout, the act
// within the client's call timeout, the reboot and the node's readiness
// within rebootTimeout. Only hook holds wait for as long as their owners
// hold.

// Requeue delays, used only while waiting for something that sends no event.
const (
	drainPoll          = 2 * time.Second
	rebootPoll         = 2 * time.Second
	talosRetry         = 5 * time.Second
	upgradeCallPoll    = 30 * time.Second
	maxStepsPerMachine = 16
)

// kind is what a disruption does to a node. The steps around it, and their
// order, are the same for every kind.
type kind interface {
	// drained decides, once the node is drained and what it runs has been
	// read (w.drain), what is left to do: it moves the record to Upgrading
	// to act on the node, or to Verifying when the node already runs what
	// it should.
	drained(w *world, st *upgradev1.MachineUpgradeStatus) decision
	// act decides the Upgrading phase: what the node is asked to do before
	// it reboots, and what its answer means. It moves the record to
	// WaitingForHold(preReboot) when the node is ready to reboot.
	act(w *world, st *upgradev1.MachineUpgradeStatus) decision
	// reboot is how the node is rebooted once its pre-reboot point is
	// passed; it may change the record (the time of a call it asks for).
	reboot(w *world, st *upgradev1.MachineUpgradeStatus) intent
	// rebooted checks what the node runs when it is back on a new boot ID:
	// it returns why the Machine fails, or "".
	rebooted(w *world, st *upgradev1.MachineUpgradeStatus, version string) string
}

// world is what a step of one Machine knows of the world when it decides:
// what the manager's caches and this process hold now, and what the
// Machine's last round read. The executor fills it (observe); the steps only
// read it.
type world struct {
	// now is the time of the reconcile.
	now time.Time
	// spec is the rollout's spec: its timeouts, reboot mode and installer.
	spec *upgradev1.TalosUpgradeSpec
	// machine is the Machine as the manager's cache has it.
	machine *clusterv1.Machine
	// reachable is whether the rollout holds a client of its workload
	// cluster.
	reachable bool
	// checksPassed is the verdict of the health checks that gate the next
	// disruption.
	checksPassed bool

	// holding are the owners that hold the Machine at its record's hold
	// point as the cache has them, less the bypassed ones.
	holding []string
	// held is the Machine's holds read again from the apiserver by its last
	// round; nil when not read.
	held *holdsRead
	// hooks are what the action hooks said when the executor ran them for
	// this step, by point; a point is missing until they ran.
	hooks map[upgradev1.HookPoint]hooksRun

	// disrupted is set when the round that recorded the disruption made it:
	// the first drain pass need not make it again.
	disrupted bool
	// drain is what the last drain pass saw; nil when none was made.
	drain *drainObservation
	// boot is what the node said of its version and boot ID in the last
	// round; nil when it was not asked.
	boot *bootRead
	// apply is what the last round's application of the record's
	// configuration said; nil when none was made.
	apply *applyRead
	// call is the upgrade call of the Machine as this process knows it.
	call callView
	// node is the workload Node as the workload cache has it (empty when it
	// does not exist) and nodeErr why it could not be read; read only while
	// the Machine verifies.
	node    *corev1.Node
	nodeErr error
	// kube is whether the Ready node runs its record's Kubernetes change;
	// read only while the Machine verifies one.
	kube *kubernetesRead
}

// holdsRead is a Machine's holds at a point as the apiserver had them.
type holdsRead struct {
	point upgradev1.HoldPoint
	// holding are the owners that hold the Machine there, less the
	// bypassed ones.
	holding []string
	err     error
}

// hooksRun is what running the action hooks at a point said.
type hooksRun struct {
	res hooks.RunResult
	err error
}

// callView is the upgrade call of a Machine as this process knows it.
type callView struct {
	// known is set when this process made a call it has not forgotten;
	// upgradeCall is then its state.
	known bool
	upgradeCall
	// unmade is set when this process wrote the call's intent without
	// making the call (see upgradeCalls.unmade).
	unmade bool
	// lastReboot is when the node's reboot was last asked for by this
	// process (after its install, or again), zero when never; selfRebooting is set when its upgrade
	// call reboots it, and then its reboot is never asked for again.
	lastReboot    time.Time
	selfRebooting bool
}

// intent is what a step asks the executor to do for its Machine.
type intent int

const (
	// intentNone: the Machine waits for an event or the step's requeue.
	intentNone intent = iota
	// intentRunHooks runs the action hooks at decision.hookPoint, and asks
	// the step again with what they said.
	intentRunHooks
	// intentReadHolds has the round read the Machine again from the
	// apiserver, for the step to pass its hold point on what the owners
	// say now; with decision.release it also releases the node when no
	// hold is read.
	intentReadHolds
	// intentDisrupt protects the Machine from remediation and cordons its
	// node, as its record says, once its round persisted that.
	intentDisrupt
	// intentDrainPass has the round make a drain pass (observeDrain).
	intentDrainPass
	// intentInstall makes the upgrade call that installs without
	// rebooting, once its round persisted its intent.
	intentInstall
	// intentInstallRebooting makes the upgrade call that reboots the node
	// by itself (Talos before 1.13), once its round persisted its intent.
	intentInstallRebooting
	// intentInstallUnmade makes, now, an upgrade call whose intent this
	// process wrote without making it.
	intentInstallUnmade
	// intentReboot reboots the node once its round persisted the intent.
	intentReboot
	// intentReadBoot has the round read the node's version and boot ID.
	intentReadBoot
	// intentApplyConfig applies the record's configuration, without a
	// reboot when Talos allows it, else staged, once its round persisted
	// the intent.
	intentApplyConfig
	// intentStageConfig stages the record's configuration for the node's
	// next boot, once its round persisted the intent.
	intentStageConfig
)

// rebootNow is a reboot a step asks for again, now: its intent is on
// record already.
type rebootNow int

const (
	rebootNone rebootNow = iota
	// rebootAfterInstall: the node installed without rebooting, as its
	// version allows, after its pre-reboot point.
	rebootAfterInstall
	// rebootAgain: the node answers on its old boot ID long after its
	// reboot was asked for.
	rebootAgain
)

// decision is what a step decided for its Machine, besides the record it
// moved on.
type decision struct {
	intent intent
	// hookPoint is the point of intentRunHooks.
	hookPoint upgradev1.HookPoint
	// release, with intentReadHolds, releases the node when no hold is read.
	release bool
	// reboot is a reboot asked for again now.
	reboot rebootNow
	// requeue is when to look again although no event comes; zero when an
	// event brings the Machine back.
	requeue time.Duration
	// fail is why the Machine failed: the step recorded it, the executor
	// undoes the disruption.
	fail string
	// forgetCall is set when the step decided on the end of the Machine's
	// upgrade call: this process forgets it.
	forgetCall bool
	// retrying is the Talos API error retried until nodeUnreachableTimeout.
	retrying error
	// preReboot, when set, is the Machine's pre-reboot holds read by the
	// drain pass: its next step passes that point on them.
	preReboot *heldMachine
	// nextMachineNotBefore, when set, is when the rollout may start its
	// next Machine (delayBetweenMachines).
	nextMachineNotBefore *metav1.Time
	// events are what the step tells the rollout's events.
	events []stepEvent
	// err ends the step with an error: it is tried again.
	err error
}

// stepEvent is an event of a step on the TalosUpgrade.
type stepEvent struct {
	eventType, reason, action, message string
}

// normal and warning add an event to a decision.
func (d *decision) normal(reason, action, format string, args ...any) {
	d.events = append(d.events, stepEvent{corev1.EventTypeNormal, reason, action, fmt.Sprintf(format, args...)})
}

func (d *decision) warning(reason, action, format string, args ...any) {
	d.events = append(d.events, stepEvent{corev1.EventTypeWarning, reason, action, fmt.Sprintf(format, args...)})
}

// decide runs the step of the Machine's phase.
func decide(k kind, w *world, st *upgradev1.MachineUpgradeStatus) decision {
	switch st.Phase {
	case upgradev1.MachinePhaseWaitingForHold:
		switch st.HoldPoint {
		case upgradev1.HoldPointPreDrain:
			return decidePreDrain(w, st)
		case upgradev1.HoldPointPreReboot:
			return decidePreReboot(k, w, st)
		default:
			return decidePostUpgrade(w, st)
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
	return decision{}
}

// passPoint reports whether the Machine passes its hold point: no hold of
// the cache nor of the apiserver, read again by its round once the cache's
// are clear and its action hooks at hookPoint succeeded. A hold set an
// instant ago, which the cache has not heard of, is honoured. A failed hook
// fails the Machine.
func passPoint(w *world, st *upgradev1.MachineUpgradeStatus, point upgradev1.HoldPoint, hookPoint upgradev1.HookPoint) (bool, decision) {
	if len(w.holding) > 0 {
		held(st, point, w.holding)
		return false, decision{} // The Machine watch brings us back when a hold goes.
	}
	st.HeldBy = nil
	if ok, d := hooksDone(w, st, hookPoint); !ok {
		return false, d
	}
	if w.held == nil || w.held.point != point {
		return false, decision{intent: intentReadHolds}
	}
	if w.held.err != nil {
		return false, decision{err: fmt.Errorf("reading the %s holds of Machine %s: %w", point, st.Machine, w.held.err)}
	}
	if len(w.held.holding) > 0 {
		held(st, point, w.held.holding)
		return false, decision{}
	}
	return true, decision{}
}

// held records who holds the Machine at point.
func held(st *upgradev1.MachineUpgradeStatus, point upgradev1.HoldPoint, owners []string) {
	st.HeldBy = owners
	st.Message = fmt.Sprintf("held at %s by %s", point, quoteAll(owners))
}

// hooksDone reports whether every action hook at point succeeded for the
// Machine; the executor runs them when the step asks.
func hooksDone(w *world, st *upgradev1.MachineUpgradeStatus, point upgradev1.HookPoint) (bool, decision) {
	if !w.reachable {
		st.Message = "waiting for the workload cluster to be reachable"
		return false, decision{}
	}
	run, ok := w.hooks[point]
	if !ok {
		return false, decision{intent: intentRunHooks, hookPoint: point}
	}
	switch {
	case run.err != nil:
		return false, decision{err: fmt.Errorf("running the %s hooks: %w", point, run.err)}
	case run.res.Failed:
		return false, failMachine(w.now, st, fmt.Sprintf("%s hook failed: %s", point, run.res.Message))
	case !run.res.Done:
		st.Message = fmt.Sprintf("waiting for the %s hooks", point)
		if run.res.Message != "" {
			st.Message += ": " + run.res.Message
		}
		return false, decision{requeue: run.res.RequeueAfter}
	}
	return true, decision{}
}

// decidePreDrain waits for the pre-drain holds and the health checks, then
// records the intent to cordon and to protect the Machine from remediation;
// its round does both once the intent is persisted.
func decidePreDrain(w *world, st *upgradev1.MachineUpgradeStatus) decision {
	if ok, d := passPoint(w, st, upgradev1.HoldPointPreDrain, upgradev1.HookPointPreDrain); !ok {
		return d
	}
	if !w.checksPassed {
		// Selected while the checks passed, but they no longer do: no
		// Machine is disrupted while a check runs, fails or is missing.
		st.Message = "waiting for the health checks to pass before draining"
		return decision{} // reconcileHealthChecks requeues.
	}
	st.SkipRemediationSet = !hasAnnotation(w.machine, clusterv1.MachineSkipRemediationAnnotation) || st.SkipRemediationSet
	st.Cordoned = true
	moveTo(w.now, st, upgradev1.MachinePhaseDraining, "", "draining node")
	return decision{intent: intentDisrupt}
}

// decideDrain drains the node, without waiting, until no Pod is left to
// evict or drain.timeout is exceeded; then its kind decides on what the
// node runs. It asks its round for a drain pass, and decides on it in the
// next.
func decideDrain(k kind, w *world, st *upgradev1.MachineUpgradeStatus) decision {
	obs := w.drain
	switch {
	case obs == nil:
		return decision{intent: intentDrainPass}
	case obs.err != nil:
		return decision{err: obs.err}
	case !obs.reachable:
		st.Message = "waiting for the workload cluster to be reachable"
		return decision{}
	}
	var d decision
	if obs.skipped && !st.DrainSkipped {
		st.DrainSkipped = true
		d.normal("DrainSkipped", "Drain", "Machine %s: node %s is cordoned but not drained: no other Ready, schedulable node could take its Pods", st.Machine, st.Node)
	}
	if !obs.drained {
		timeout := durationOr(w.spec.Drain.Timeout, plan.DefaultDrainTimeout)
		if w.now.Sub(st.PhaseStartTime.Time) > timeout {
			f := failMachine(w.now, st, fmt.Sprintf("drain did not finish within %s: %s", timeout, obs.pending))
			f.events = append(d.events, f.events...)
			return f
		}
		st.Message = "draining node: " + obs.pending
		d.requeue = drainPoll
		return d
	}
	if obs.talosErr != nil {
		u := unreachable(w, st, obs.talosErr)
		u.events = append(d.events, u.events...)
		return u
	}
	st.UnreachableSince = nil
	next := k.drained(w, st)
	next.events = append(d.events, next.events...)
	return next
}

// decidePreReboot waits for the pre-reboot holds, then records the intent to
// reboot, as the kind reboots the node; once its round persisted it, the
// node is rebooted.
func decidePreReboot(k kind, w *world, st *upgradev1.MachineUpgradeStatus) decision {
	if ok, d := passPoint(w, st, upgradev1.HoldPointPreReboot, upgradev1.HookPointPreReboot); !ok {
		return d
	}
	how := k.reboot(w, st)
	st.RebootRequestedTime = ptrTime(w.now)
	moveTo(w.now, st, upgradev1.MachinePhaseRebooting, "", "rebooting")
	return decision{intent: how, requeue: rebootPoll}
}

// decideReboot waits for the node to come back with a new boot ID, and has
// its kind check what it booted. A reboot that did not reach the node is
// asked for again; one that does not end within rebootTimeout fails the
// Machine, on what the node said past it (or the error of talking to it).
// A read that did not reach the node (talos.ErrNotDialed) is no answer of
// the node: it is an error, tried again.
func decideReboot(k kind, w *world, st *upgradev1.MachineUpgradeStatus) decision {
	if w.boot == nil {
		return decision{intent: intentReadBoot} // With the other rebooting nodes.
	}
	if !w.call.known && w.call.unmade && legacy(st) && st.UpgradeRequestedTime != nil {
		// This process wrote the intent of the upgrade call that reboots the
		// node without making it (the write returned an error but landed, or
		// the node was not dialed): the call was never made; make it. The
		// node is asked to reboot now: rebootTimeout counts from now.
		st.RebootRequestedTime = ptrTime(w.now)
		return decision{intent: intentInstallUnmade, requeue: rebootPoll}
	}
	var d decision
	if w.call.known && w.call.finished {
		// The upgrade call of a node whose call reboots it has ended.
		d.forgetCall = true
		switch {
		case errors.Is(w.call.err, talos.ErrNotDialed):
			// The node was not dialed (its talosconfig Secret or its
			// Machine's address could not be read): the call was never
			// made, which this process knows (upgradeCalls.unmade), and
			// nothing is known of the node, whatever its boot ID says. It
			// is made again after upgradeCallRetry.
			st.Message = fmt.Sprintf("rebooting: %v; making the upgrade call again", w.call.err)
			d.requeue = upgradeCallRetry
			return d
		case isInterrupted(w.call.err):
			// The request was sent and its answer lost: the node may be
			// installing, and reboots when it is done. The call is never
			// repeated; the boot ID and the version tell.
			interrupted(&d, st, w.call.err)
		case w.call.failure() != "":
			f := failMachine(w.now, st, w.call.failure())
			f.forgetCall = true
			return f
		case !w.call.res.RebootsItself:
			// The node installed the image without rebooting (its version
			// changed since the drain): the pre-reboot holds have passed, so
			// reboot it now.
			d.reboot = rebootAfterInstall
		}
	}
	version, bootID, err := w.boot.version, w.boot.bootID, w.boot.err
	if errors.Is(err, talos.ErrNotDialed) {
		// The node was not reached (its talosconfig Secret or its Machine's
		// address could not be read): that says nothing of the node, before
		// or past rebootTimeout. Tried again; the Machine is failed for its
		// rebootTimeout only on a read that reached the node, or failed
		// talking to it.
		d.err = fmt.Errorf("reading the boot ID of node %q: %w", st.Node, err)
		return d
	}
	timeout := durationOr(w.spec.RebootTimeout, plan.DefaultRebootTimeout)
	deadline := phaseDeadline(w.now, st, timeout)
	if err == nil && bootID == st.BootID && d.reboot == rebootNone && rebootDue(w, st, timeout) {
		// The node answers on its old boot ID long after the reboot was
		// asked for: the call did not reach it (a failed request, a restart
		// of the controller). A reboot asked for twice is still one reboot.
		d.reboot = rebootAgain
		if !w.call.known && w.call.lastReboot.IsZero() {
			// This process took the Machine over from one that stopped
			// (a restart, a failover) after it wrote the intent and
			// before, for all this process knows, the reboot was asked
			// for: after an install without a reboot, the reboot comes
			// later. The node cannot be held to a reboot nobody may have
			// asked for: rebootTimeout counts from this ask, as for an
			// upgrade call made again (intentInstallUnmade). A process
			// that asked once already counts from its first ask.
			st.RebootRequestedTime = ptrTime(w.now)
			deadline = phaseDeadline(w.now, st, timeout)
		}
	}
	if err != nil || bootID == st.BootID {
		// The boot read was made by this reconcile, after w.now: past the
		// deadline, it is a read of the node made past the deadline.
		if w.now.After(deadline) {
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
			f := failMachine(w.now, st, msg)
			f.events = append(d.events, f.events...)
			f.forgetCall = d.forgetCall
			return f
		}
		st.Message = "waiting for the node to reboot"
		d.requeue = atLeastASecond(min(rebootPoll, deadline.Sub(w.now)+time.Second)) // A rebooting Talos API sends no event.
		return d
	}
	if msg := k.rebooted(w, st, version); msg != "" {
		f := failMachine(w.now, st, msg)
		f.events = append(d.events, f.events...)
		f.forgetCall = d.forgetCall
		return f
	}
	d.normal("NodeRebooted", "Upgrade", "Machine %s: node %s came back on %s", st.Machine, st.Node, version)
	moveTo(w.now, st, upgradev1.MachinePhaseVerifying, "", "waiting for the node to be Ready")
	return d
}

// interruptedCause says why a Machine's upgrade call has no known outcome.
const interruptedCause = "the upgrade call was interrupted (the controller restarted during the call, or the node's answer was lost)"

// interrupted records that the upgrade call of a Machine was sent and its
// answer lost: whether the node installed the image is known only once it
// has rebooted.
func interrupted(d *decision, st *upgradev1.MachineUpgradeStatus, err error) {
	st.UpgradeInterrupted = true
	d.warning("UpgradeCallInterrupted", "Upgrade", "Machine %s: %v; the call is not repeated, the node's boot ID and version will tell whether it took", st.Machine, err)
}

// rebootDue reports whether the reboot of a Machine whose node still answers
// on its old boot ID should be asked for again: rebootRetryAfter after it
// was last asked for. Only a Reboot call is repeated, and only on a node
// whose upgrade call does not reboot it: a node before Talos 1.13 installs
// after its call returns and reboots when it is done. The time of the last
// request is kept in memory only: a restarted controller counts from
// rebootRequestedTime, which asks again sooner, never later.
func rebootDue(w *world, st *upgradev1.MachineUpgradeStatus, timeout time.Duration) bool {
	if st.RebootRequestedTime == nil || legacy(st) || w.call.selfRebooting {
		return false
	}
	last := w.call.lastReboot
	if last.IsZero() {
		last = st.RebootRequestedTime.Time
	}
	return w.now.Sub(last) >= rebootRetryAfter(timeout)
}

// decideVerify waits for the workload Node to be Ready. The node stays
// cordoned: decidePostUpgrade releases it once it is proven.
func decideVerify(w *world, st *upgradev1.MachineUpgradeStatus) decision {
	switch {
	case !w.reachable:
		st.Message = "waiting for the workload cluster to be reachable"
		return decision{}
	case w.nodeErr != nil:
		return decision{err: fmt.Errorf("reading node %q: %w", st.Node, w.nodeErr)}
	}
	if !nodeReady(w.node) {
		timeout := durationOr(w.spec.RebootTimeout, plan.DefaultRebootTimeout)
		deadline := phaseDeadline(w.now, st, timeout)
		if w.now.After(deadline) {
			return failMachine(w.now, st, fmt.Sprintf("node %q runs %s but is not Ready within rebootTimeout %s", st.Node, st.TargetVersion, timeout))
		}
		st.Message = "waiting for the node to be Ready"
		// The Node watch brings us back; the deadline sends no event.
		return decision{requeue: atLeastASecond(deadline.Sub(w.now) + time.Second)}
	}
	if d, ok := kubernetesProven(w, st); !ok {
		return d
	}
	moveTo(w.now, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPostUpgrade, "")
	return decision{}
}

// decidePostUpgrade proves the node before it takes work again: while it is
// still cordoned, it waits for the post-upgrade holds and the nodePreReady
// hooks; passing that point releases the node (uncordons it and removes
// skip-remediation, with the read of the holds). Then the nodeReady hooks
// run, and the Machine is Completed.
func decidePostUpgrade(w *world, st *upgradev1.MachineUpgradeStatus) decision {
	passing := w.held != nil && w.held.point == upgradev1.HoldPointPostUpgrade
	if passing || st.Cordoned || st.SkipRemediationSet {
		// A read that released the node is decided on all the same.
		ok, d := passPoint(w, st, upgradev1.HoldPointPostUpgrade, upgradev1.HookPointNodePreReady)
		if !ok {
			d.release = d.intent == intentReadHolds
			return d
		}
		if st.Cordoned {
			st.Message = "proven; waiting for the workload cluster to be reachable to uncordon the node"
			return decision{}
		}
	}
	if ok, d := hooksDone(w, st, upgradev1.HookPointNodeReady); !ok {
		return d
	}
	moveTo(w.now, st, upgradev1.MachinePhaseCompleted, "", fmt.Sprintf("upgraded from %s to %s", st.FromVersion, st.TargetVersion))
	st.CompletionTime = ptrTime(w.now)
	var d decision
	if delay := w.spec.Rollout.DelayBetweenMachines; delay != nil && delay.Duration > 0 {
		d.nextMachineNotBefore = ptrTime(w.now.Add(delay.Duration))
	}
	d.normal("MachineUpgraded", "Upgrade", "Machine %s upgraded from %s to %s", st.Machine, st.FromVersion, st.TargetVersion)
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
func unreachable(w *world, st *upgradev1.MachineUpgradeStatus, err error) decision {
	if errors.Is(err, talos.ErrNotDialed) {
		return decision{err: fmt.Errorf("dialing node %q: %w", st.Node, err)}
	}
	if st.UnreachableSince == nil {
		st.UnreachableSince = ptrTime(w.now)
	}
	timeout := durationOr(w.spec.NodeUnreachableTimeout, plan.DefaultNodeUnreachableTimeout)
	silent := w.now.Sub(st.UnreachableSince.Time)
	if silent > timeout {
		return failMachine(w.now, st, fmt.Sprintf("the Talos API of node %q has not answered for %s (nodeUnreachableTimeout %s): %v", st.Node, silent.Round(time.Second), timeout, err))
	}
	st.Message = fmt.Sprintf("Talos API not answering for %s: %v", silent.Round(time.Second), err)
	return decision{retrying: err, requeue: atLeastASecond(min(talosRetry, timeout-silent+time.Second))}
}

// failMachine records that the Machine failed; the executor undoes its
// disruption once the failure is persisted (see Reconciler.fail).
func failMachine(now time.Time, st *upgradev1.MachineUpgradeStatus, msg string) decision {
	moveTo(now, st, upgradev1.MachinePhaseFailed, "", msg)
	st.CompletionTime = ptrTime(now)
	return decision{fail: msg}
}

// phaseDeadline is when a Machine rebooting or verifying has run out of
// timeout: counted from its reboot request, or from the start of its phase
// when it was never rebooted by Tollgate (a node found on the target).
func phaseDeadline(now time.Time, st *upgradev1.MachineUpgradeStatus, timeout time.Duration) time.Time {
	switch {
	case st.RebootRequestedTime != nil:
		return st.RebootRequestedTime.Add(timeout)
	case st.PhaseStartTime != nil:
		return st.PhaseStartTime.Add(timeout)
	}
	return now.Add(timeout)
}

// moveTo moves a Machine's record to a phase at now, adding the time spent
// in the previous one to its phase durations.
func moveTo(now time.Time, st *upgradev1.MachineUpgradeStatus, phase upgradev1.MachinePhase, point upgradev1.HoldPoint, msg string) {
	at := metav1.NewTime(now)
	if st.PhaseStartTime != nil && st.Phase != phase {
		addPhaseDuration(st, st.Phase, now.Sub(st.PhaseStartTime.Time))
	}
	if st.Phase != phase || st.HoldPoint != point {
		st.PhaseStartTime = &at
		st.UnreachableSince = nil
	}
	if st.StartTime == nil {
		st.StartTime = &at
	}
	st.Phase, st.HoldPoint, st.Message = phase, point, msg
	if phase != upgradev1.MachinePhaseWaitingForHold {
		st.HeldBy = nil
	}
}

func addPhaseDuration(st *upgradev1.MachineUpgradeStatus, phase upgradev1.MachinePhase, d time.Duration) {
	for i := range st.PhaseDurations {
		if st.PhaseDurations[i].Phase == phase {
			st.PhaseDurations[i].Seconds += int64(d.Seconds())
			return
		}
	}
	st.PhaseDurations = append(st.PhaseDurations, upgradev1.PhaseDuration{Phase: phase, Seconds: int64(d.Seconds())})
}

// atLeastASecond is a requeue delay that is never zero or negative.
func atLeastASecond(d time.Duration) time.Duration {
	return max(d, time.Second)
}
