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
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/metrics"
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
// The node is cordoned from the drain until it is proven: back Ready on the
// target, its nodePreReady hooks succeeded and its post-upgrade holds
// released (WaitingForHold(postUpgrade), first part); only then is it
// uncordoned and do its nodeReady hooks run (second part).
//
// Every phase that can take a Machine down ends: the drain within
// drain.timeout, a silent Talos API within nodeUnreachableTimeout, the
// upgrade call within the client's install timeout, the reboot and the
// node's readiness within rebootTimeout. Only hook holds wait for as long as
// their owners hold.

// Requeue delays, used only while waiting for something that sends no event.
const (
	drainPoll          = 2 * time.Second
	rebootPoll         = 2 * time.Second
	talosRetry         = 5 * time.Second
	upgradeCallPoll    = 30 * time.Second
	maxStepsPerMachine = 16
)

// reconcileInFlight moves every started Machine on as far as it can go,
// together (see rounds.go).
func (r *Reconciler) reconcileInFlight(ctx context.Context, s *scope) (ctrl.Result, error) {
	var errs []error
	var started []*upgradev1.MachineUpgradeStatus
	for i := range s.upgrade.Status.Machines {
		st := &s.upgrade.Status.Machines[i]
		if done(st.Phase) && (st.Cordoned || st.SkipRemediationSet) {
			// A Machine that ended while its disruption could not be undone
			// (the workload API was down, say): undo it now.
			if err := r.release(ctx, s, st); err != nil {
				errs = append(errs, fmt.Errorf("machine %q: %w", st.Machine, err))
			}
			continue
		}
		if inFlight(st.Phase) {
			started = append(started, st)
		}
	}
	res, err := r.advanceAll(ctx, s, started)
	return res, errors.Join(append(errs, err)...)
}

// advance runs the steps of one Machine until it must wait, or until it has
// recorded the intent of a side effect, which its round makes (see
// rounds.go).
func (r *Reconciler) advance(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KRef(s.upgrade.Namespace, st.Machine), "Node", st.Node)
	ctx = ctrl.LoggerInto(ctx, log)
	m, ok := s.machines[st.Machine]
	if !ok {
		return ctrl.Result{}, nil // Left the Cluster: reconcileMachines drops its record.
	}
	for range maxStepsPerMachine {
		before := *st.DeepCopy()
		res, err := r.step(ctx, s, st, m)
		if err != nil || !res.IsZero() || !inFlight(st.Phase) || s.waits(st.Machine) || (before.Phase == st.Phase && before.HoldPoint == st.HoldPoint) {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// step runs one step of a Machine's state machine. It returns a zero result
// when the Machine moved on, or when it waits for an event.
func (r *Reconciler) step(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	switch st.Phase {
	case upgradev1.MachinePhaseWaitingForHold:
		switch st.HoldPoint {
		case upgradev1.HoldPointPreDrain:
			return r.stepPreDrain(ctx, s, st, m)
		case upgradev1.HoldPointPreReboot:
			return r.stepPreReboot(ctx, s, st, m)
		default:
			return r.stepPostUpgrade(ctx, s, st, m)
		}
	case upgradev1.MachinePhaseDraining:
		return r.stepDrain(ctx, s, st, m)
	case upgradev1.MachinePhaseUpgrading:
		return r.stepUpgrade(ctx, s, st, m)
	case upgradev1.MachinePhaseRebooting:
		return r.stepReboot(ctx, s, st, m)
	case upgradev1.MachinePhaseVerifying:
		return r.stepVerify(ctx, s, st, m)
	}
	return ctrl.Result{}, nil
}

// waitForHolds reports whether the Machine may pass the hold point (the
// holds read again from the apiserver at the moment it passes): no hook
// annotation holds it and every action hook at the matching point
// succeeded. A failed hook fails the Machine. The holds are read again by
// the Machine's round, once its cached holds are clear and its hooks
// succeeded; it passes in the next round on what was read. then, when set,
// is what passing the point undoes (it needs no intent on record): the
// round makes it with the read, as soon as the holds read are clear.
func (r *Reconciler) waitForHolds(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, point upgradev1.HoldPoint, hookPoint upgradev1.HookPoint, then func(ctx context.Context) error) (bool, ctrl.Result, error) {
	if owners := r.passHolds(s, st, point, hooks.Holds(m, point)); len(owners) > 0 {
		st.HeldBy = owners
		st.Message = fmt.Sprintf("held at %s by %s", point, quoteAll(owners))
		return false, ctrl.Result{}, nil // The Machine watch brings us back when a hold goes.
	}
	st.HeldBy = nil
	ok, res, err := r.runHooks(ctx, s, st, hookPoint)
	if !ok || err != nil {
		return ok, res, err
	}
	// The Machine passes the point on what its owners say now, not on what
	// the cache last heard: a hold set a moment ago is honoured.
	read, ok := readFor(s.read.holds, st.Machine)
	if !ok || read.point != point {
		held := toRead(&s.reading.holds, st.Machine)
		held.point = point
		key := client.ObjectKeyFromObject(m)
		s.ask(st, func(ctx context.Context) error {
			held.machine = &clusterv1.Machine{}
			held.err = r.APIReader.Get(ctx, key, held.machine)
			holding := func(owner string) bool { return s.holdBypass(owner) == nil }
			if held.err == nil && then != nil && !slices.ContainsFunc(hooks.Holds(held.machine, point), holding) {
				return then(ctx)
			}
			return nil // waitForHolds decides on what was read, and says who holds.
		})
		return false, ctrl.Result{}, nil
	}
	if read.err != nil {
		return false, ctrl.Result{}, fmt.Errorf("reading the %s holds of Machine %s: %w", point, m.Name, read.err)
	}
	if owners := r.passHolds(s, st, point, hooks.Holds(read.machine, point)); len(owners) > 0 {
		st.HeldBy = owners
		st.Message = fmt.Sprintf("held at %s by %s", point, quoteAll(owners))
		return false, ctrl.Result{}, nil
	}
	return true, ctrl.Result{}, nil
}

// runHooks reports whether every action hook at hookPoint succeeded for the
// Machine, running them as needed. A failed hook fails the Machine.
func (r *Reconciler) runHooks(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, hookPoint upgradev1.HookPoint) (bool, ctrl.Result, error) {
	if s.workload == nil {
		st.Message = "waiting for the workload cluster to be reachable"
		return false, ctrl.Result{}, nil
	}
	runner := hooks.Runner{Client: s.workload, Now: r.Now, Ended: metrics.JobRunEnded(s.upgrade.Namespace, s.cluster.Name)}
	res, err := runner.Run(ctx, hooks.RunInput{
		UpgradeName: s.upgrade.Name, ClusterName: s.cluster.Name, Machine: st.Machine, Node: st.Node,
		FromVersion: st.FromVersion, ToVersion: st.TargetVersion, Point: hookPoint,
		Hooks: s.upgrade.Spec.Hooks, Previous: st.Hooks,
	})
	st.Hooks = res.Statuses
	if err != nil {
		return false, ctrl.Result{}, fmt.Errorf("running the %s hooks: %w", hookPoint, err)
	}
	switch {
	case res.Failed:
		r.fail(ctx, s, st, fmt.Sprintf("%s hook failed: %s", hookPoint, res.Message))
		return false, ctrl.Result{}, nil
	case !res.Done:
		st.Message = fmt.Sprintf("waiting for the %s hooks", hookPoint)
		if res.Message != "" {
			st.Message += ": " + res.Message
		}
		return false, requeueIfSet(res.RequeueAfter), nil
	}
	return true, ctrl.Result{}, nil
}

// stepPreDrain waits for the pre-drain holds and the health checks, then
// records the intent to cordon and to protect the Machine from remediation;
// its round does both once the intent is persisted.
func (r *Reconciler) stepPreDrain(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	ok, res, err := r.waitForHolds(ctx, s, st, m, upgradev1.HoldPointPreDrain, upgradev1.HookPointPreDrain, nil)
	if !ok || err != nil {
		return res, err
	}
	if !s.checksPassed {
		// Selected while the checks passed, but they no longer do: no
		// Machine is disrupted while a check runs, fails or is missing.
		st.Message = "waiting for the health checks to pass before draining"
		return ctrl.Result{}, nil // reconcileHealthChecks requeues.
	}
	st.SkipRemediationSet = !hasAnnotation(m, clusterv1.MachineSkipRemediationAnnotation) || st.SkipRemediationSet
	st.Cordoned = true
	setPhase(s, st, upgradev1.MachinePhaseDraining, "", "draining node")
	disrupted := toRead(&s.reading.disrupted, st.Machine)
	s.intend(st, func(ctx context.Context) error {
		if err := r.disrupt(ctx, s, st, m); err != nil {
			return err
		}
		*disrupted = true // The first drain pass need not do it again.
		return nil
	}, nil)
	return ctrl.Result{}, nil
}

// legacy reports whether the Machine's node upgrades with the legacy API,
// which reboots by itself. FromVersion is the version the node reported at
// the end of its drain.
func legacy(st *upgradev1.MachineUpgradeStatus) bool {
	lifecycle, err := talos.UsesLifecycleAPI(st.FromVersion)
	return err == nil && !lifecycle
}

// stepUpgrade installs the new image on nodes whose upgrade API does not
// reboot them (Talos 1.13 and later): the intent is recorded, and once its
// round persisted it the call is made outside of the reconcile (it lasts as
// long as the node pulls); the Machine then waits at preReboot. Nodes whose
// upgrade call reboots them go to preReboot first and are called there.
func (r *Reconciler) stepUpgrade(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	if st.UpgradeRequestedTime == nil {
		if legacy(st) {
			setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
			return ctrl.Result{}, nil
		}
		st.UpgradeRequestedTime = ptrTime(s.now)
		st.Message = "installing " + st.InstallerImage
		s.intend(st, func(ctx context.Context) error {
			r.startUpgradeCall(ctx, s, st, m, talos.UpgradeOptions{})
			return nil
		}, func() { r.notMade(s, st) })
		return requeueAfter(upgradeCallPoll), nil
	}
	call, ok := r.calls.result(s.upgrade, st.Machine)
	if ok && call.finished {
		r.calls.forget(s.upgrade, st.Machine)
	}
	switch {
	case !ok && r.calls.takeUnmade(s.upgrade, st.Machine):
		// This process wrote the intent without making the call (the write
		// returned an error but landed): the call was never made; make it.
		r.startUpgradeCall(ctx, s, st, m, talos.UpgradeOptions{})
		st.Message = "installing " + st.InstallerImage
		return requeueAfter(upgradeCallPoll), nil
	case !ok:
		// The call was made by an earlier process of the controller, and
		// maybe interrupted by its restart: it is never repeated, and the
		// verification after the reboot tells whether it took.
		st.UpgradeInterrupted = true
	case !call.finished:
		st.Message = fmt.Sprintf("installing %s (%s)", st.InstallerImage, s.now.Sub(call.started).Round(time.Second))
		if call.retrying != nil {
			st.Message += fmt.Sprintf("; asking again after a lost answer: %v", call.retrying)
		}
		return requeueAfter(upgradeCallPoll), nil // The call's end sends an event.
	case errors.Is(call.err, talos.ErrRebootsItself):
		// The node turned out to run a version whose upgrade call reboots
		// it, and got no call: it is called after the pre-reboot holds.
		st.UpgradeRequestedTime = nil
	case errors.Is(call.err, talos.ErrUpgradeInterrupted):
		// The request was sent and its answer lost: the node may be
		// installing. As after a restart during the call, it is never
		// repeated, and the verification after the reboot tells.
		r.interrupted(s, st, call.err)
	case call.failure() != "":
		r.fail(ctx, s, st, call.failure())
		return ctrl.Result{}, nil
	default:
		r.event(s, corev1.EventTypeNormal, "UpgradeInstalled", "Upgrade", "Machine %s: installed %s", st.Machine, st.InstallerImage)
	}
	setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
	return ctrl.Result{}, nil
}

// stepPreReboot waits for the pre-reboot holds, then records the intent to
// reboot; once its round persisted it, the node is rebooted with a Reboot
// call or, for nodes whose upgrade call reboots them, with that call.
func (r *Reconciler) stepPreReboot(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	ok, res, err := r.waitForHolds(ctx, s, st, m, upgradev1.HoldPointPreReboot, upgradev1.HookPointPreReboot, nil)
	if !ok || err != nil {
		return res, err
	}
	needsUpgradeCall := st.UpgradeRequestedTime == nil
	if needsUpgradeCall {
		st.UpgradeRequestedTime = ptrTime(s.now)
	}
	st.RebootRequestedTime = ptrTime(s.now)
	setPhase(s, st, upgradev1.MachinePhaseRebooting, "", "rebooting")
	if needsUpgradeCall {
		s.intend(st, func(ctx context.Context) error {
			r.startUpgradeCall(ctx, s, st, m, talos.UpgradeOptions{AllowSelfReboot: true, RebootMode: s.upgrade.Spec.RebootMode})
			return nil
		}, func() { r.notMade(s, st) })
		return requeueAfter(rebootPoll), nil
	}
	s.intend(st, func(ctx context.Context) error {
		r.reboot(ctx, s, m)
		return nil
	}, nil)
	return requeueAfter(rebootPoll), nil
}

// reboot asks the node to reboot. The intent is recorded: the call is
// finished even if the manager is shutting down. An error is only logged:
// the reboot may have started, the boot ID tells, and rebootTimeout bounds
// the wait.
func (r *Reconciler) reboot(ctx context.Context, s *scope, m *clusterv1.Machine) {
	callCtx := context.WithoutCancel(ctx)
	tc, err := r.Dialer.Dial(callCtx, s.cluster, m)
	if err == nil {
		defer tc.Close() //nolint:errcheck // Nothing is lost when closing a client.
		ctrl.LoggerFrom(ctx).Info("Rebooting node", "mode", s.upgrade.Spec.RebootMode)
		err = tc.Reboot(callCtx, s.upgrade.Spec.RebootMode)
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Reboot call returned an error; checking the boot ID", "err", err.Error())
	}
}

// stepReboot waits for the node to come back with a new boot ID, and checks
// that it booted the target version.
func (r *Reconciler) stepReboot(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	boot, ok := readFor(s.read.boots, st.Machine)
	if !ok {
		// The node is asked by the round, with the other rebooting nodes.
		read := toRead(&s.reading.boots, st.Machine)
		s.ask(st, func(ctx context.Context) error {
			read.version, read.bootID, read.err = r.readBoot(ctx, s, m)
			return nil // stepReboot decides on what the node said.
		})
		return ctrl.Result{}, nil
	}
	if _, ok := r.calls.result(s.upgrade, st.Machine); !ok && legacy(st) && st.UpgradeRequestedTime != nil && r.calls.takeUnmade(s.upgrade, st.Machine) {
		// This process wrote the intent of the upgrade call that reboots the
		// node without making it (the write returned an error but landed):
		// the call was never made; make it.
		r.startUpgradeCall(ctx, s, st, m, talos.UpgradeOptions{AllowSelfReboot: true, RebootMode: s.upgrade.Spec.RebootMode})
		return requeueAfter(rebootPoll), nil
	}
	if call, ok := r.calls.result(s.upgrade, st.Machine); ok && call.finished {
		// The upgrade call of a node whose call reboots it has ended.
		r.calls.forget(s.upgrade, st.Machine)
		switch {
		case errors.Is(call.err, talos.ErrUpgradeInterrupted):
			// The request was sent and its answer lost: the node may be
			// installing, and reboots when it is done. The call is never
			// repeated; the boot ID and the version tell.
			r.interrupted(s, st, call.err)
		case call.failure() != "":
			r.fail(ctx, s, st, call.failure())
			return ctrl.Result{}, nil
		case !call.res.RebootsItself:
			// The node installed the image without rebooting (its version
			// changed since the drain): the pre-reboot holds have passed, so
			// reboot it now.
			r.reboot(ctx, s, m)
		}
	}
	timeout := durationOr(s.upgrade.Spec.RebootTimeout, plan.DefaultRebootTimeout)
	deadline := s.phaseDeadline(st, timeout)
	version, bootID, err := boot.version, boot.bootID, boot.err
	if err == nil && bootID == st.BootID && r.calls.rebootDue(s.upgrade, st, s.now, timeout) {
		// The node answers on its old boot ID long after the reboot was
		// asked for: the call did not reach it (a failed request, a restart
		// of the controller). A reboot asked for twice is still one reboot.
		r.reboot(ctx, s, m)
	}
	if err != nil || bootID == st.BootID {
		if s.now.After(deadline) {
			msg := fmt.Sprintf("node %q did not come back within rebootTimeout %s", st.Node, timeout)
			switch {
			case err == nil && legacy(st) && st.UpgradeInterrupted:
				msg = fmt.Sprintf("node %q answers on %s but did not reboot within rebootTimeout %s: %s, so it may never have reached the node (see `talosctl -n %s events`); not retried automatically", st.Node, version, timeout, interruptedCause, st.Node)
			case err == nil && legacy(st):
				msg = fmt.Sprintf("node %q answers on %s but did not reboot within rebootTimeout %s: before Talos 1.13 the upgrade runs on the node after the call returns, and a failed install leaves the node up on its old version (see `talosctl -n %s events`); not retried automatically", st.Node, version, timeout, st.Node)
			case err == nil:
				msg = fmt.Sprintf("node %q answers on its old boot ID but did not reboot within rebootTimeout %s, although the reboot was asked for again every %s; not retried automatically", st.Node, timeout, rebootRetryAfter(timeout))
			}
			r.fail(ctx, s, st, msg)
			return ctrl.Result{}, nil
		}
		st.Message = "waiting for the node to reboot"
		return requeueAfter(min(rebootPoll, deadline.Sub(s.now)+time.Second)), nil // A rebooting Talos API sends no event.
	}
	if !talos.SameVersion(version, st.TargetVersion) {
		cause := "A/B rollback after a failed boot"
		if st.UpgradeInterrupted {
			cause = interruptedCause + ", which may not have finished installing the image"
		}
		r.fail(ctx, s, st, fmt.Sprintf("node %q came back on %s instead of %s (%s); the upgrade is not retried automatically", st.Node, version, st.TargetVersion, cause))
		return ctrl.Result{}, nil
	}
	r.event(s, corev1.EventTypeNormal, "NodeRebooted", "Upgrade", "Machine %s: node %s came back on %s", st.Machine, st.Node, version)
	setPhase(s, st, upgradev1.MachinePhaseVerifying, "", "waiting for the node to be Ready")
	return ctrl.Result{}, nil
}

// interruptedCause says why a Machine's upgrade call has no known outcome.
const interruptedCause = "the upgrade call was interrupted (the controller restarted during the call, or the node's answer was lost)"

// interrupted records that the upgrade call of a Machine was sent and its
// answer lost: whether the node installed the image is known only once it
// has rebooted.
func (r *Reconciler) interrupted(s *scope, st *upgradev1.MachineUpgradeStatus, err error) {
	st.UpgradeInterrupted = true
	r.event(s, corev1.EventTypeWarning, "UpgradeCallInterrupted", "Upgrade", "Machine %s: %v; the call is not repeated, the node's boot ID and version will tell whether it took", st.Machine, err)
}

// readBoot reads the node's version and boot ID.
func (r *Reconciler) readBoot(ctx context.Context, s *scope, m *clusterv1.Machine) (version, bootID string, err error) {
	tc, err := r.Dialer.Dial(ctx, s.cluster, m)
	if err != nil {
		return "", "", err
	}
	defer tc.Close() //nolint:errcheck // Nothing is lost when closing a client.
	if version, err = tc.Version(ctx); err != nil {
		return "", "", err
	}
	if bootID, err = tc.BootID(ctx); err != nil {
		return "", "", err
	}
	return version, bootID, nil
}

// stepVerify waits for the workload Node to be Ready on the target. The node
// stays cordoned: stepPostUpgrade uncordons it once it is proven.
func (r *Reconciler) stepVerify(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, _ *clusterv1.Machine) (ctrl.Result, error) {
	if s.workload == nil {
		st.Message = "waiting for the workload cluster to be reachable"
		return ctrl.Result{}, nil
	}
	node := &corev1.Node{}
	if err := s.workload.Get(ctx, client.ObjectKey{Name: st.Node}, node); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading node %q: %w", st.Node, err)
	}
	if !nodeReady(node) {
		timeout := durationOr(s.upgrade.Spec.RebootTimeout, plan.DefaultRebootTimeout)
		deadline := s.phaseDeadline(st, timeout)
		if s.now.After(deadline) {
			r.fail(ctx, s, st, fmt.Sprintf("node %q runs %s but is not Ready within rebootTimeout %s", st.Node, st.TargetVersion, timeout))
			return ctrl.Result{}, nil
		}
		st.Message = "waiting for the node to be Ready"
		// The Node watch brings us back; the deadline sends no event.
		return requeueAfter(deadline.Sub(s.now) + time.Second), nil
	}
	setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPostUpgrade, "")
	return ctrl.Result{}, nil
}

// phaseDeadline is when a Machine rebooting or verifying has run out of
// timeout: counted from its reboot request, or from the start of its phase
// when it was never rebooted by Tollgate (a node found on the target).
func (s *scope) phaseDeadline(st *upgradev1.MachineUpgradeStatus, timeout time.Duration) time.Time {
	switch {
	case st.RebootRequestedTime != nil:
		return st.RebootRequestedTime.Add(timeout)
	case st.PhaseStartTime != nil:
		return st.PhaseStartTime.Add(timeout)
	}
	return s.now.Add(timeout)
}

// stepPostUpgrade proves the node before it takes work again: while it is
// still cordoned, it waits for the post-upgrade holds and runs the
// nodePreReady hooks; then it uncordons the node (and removes
// skip-remediation), runs the nodeReady hooks, and the Machine is Completed.
func (r *Reconciler) stepPostUpgrade(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	read, reading := s.read.holds[st.Machine]
	if passing := reading && read.point == upgradev1.HoldPointPostUpgrade; passing || st.Cordoned || st.SkipRemediationSet {
		// Passing the point releases the node, with the read of its holds:
		// a read that released it is decided on all the same.
		ok, res, err := r.waitForHolds(ctx, s, st, m, upgradev1.HoldPointPostUpgrade, upgradev1.HookPointNodePreReady,
			func(ctx context.Context) error { return r.release(ctx, s, st) })
		if !ok || err != nil {
			return res, err
		}
		if st.Cordoned {
			st.Message = "proven; waiting for the workload cluster to be reachable to uncordon the node"
			return ctrl.Result{}, nil
		}
	}
	ok, res, err := r.runHooks(ctx, s, st, upgradev1.HookPointNodeReady)
	if !ok || err != nil {
		return res, err
	}
	setPhase(s, st, upgradev1.MachinePhaseCompleted, "", fmt.Sprintf("upgraded from %s to %s", st.FromVersion, st.TargetVersion))
	st.CompletionTime = ptrTime(s.now)
	if d := s.upgrade.Spec.Rollout.DelayBetweenMachines; d != nil && d.Duration > 0 {
		s.upgrade.Status.NextMachineNotBefore = ptrTime(s.now.Add(d.Duration))
	}
	ctrl.LoggerFrom(ctx).Info("Machine upgraded", "fromVersion", st.FromVersion, "targetVersion", st.TargetVersion)
	r.event(s, corev1.EventTypeNormal, "MachineUpgraded", "Upgrade", "Machine %s upgraded from %s to %s", st.Machine, st.FromVersion, st.TargetVersion)
	return ctrl.Result{}, nil
}

// unreachable handles a Talos API error of a disrupted Machine: it is
// retried until the node has been silent for nodeUnreachableTimeout, and
// then the Machine fails (which undoes its cordon and skip-remediation, so
// that a MachineHealthCheck can act).
func (r *Reconciler) unreachable(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, err error) (ctrl.Result, error) {
	if st.UnreachableSince == nil {
		st.UnreachableSince = ptrTime(s.now)
	}
	timeout := durationOr(s.upgrade.Spec.NodeUnreachableTimeout, plan.DefaultNodeUnreachableTimeout)
	silent := s.now.Sub(st.UnreachableSince.Time)
	if silent > timeout {
		r.fail(ctx, s, st, fmt.Sprintf("the Talos API of node %q has not answered for %s (nodeUnreachableTimeout %s): %v", st.Node, silent.Round(time.Second), timeout, err))
		return ctrl.Result{}, nil
	}
	st.Message = fmt.Sprintf("Talos API not answering for %s: %v", silent.Round(time.Second), err)
	ctrl.LoggerFrom(ctx).Info("Talos API call failed, retrying", "err", err.Error())
	return requeueAfter(min(talosRetry, timeout-silent+time.Second)), nil
}

// fail marks a Machine Failed and undoes its disruption. The failure is
// persisted first: a disruption is never undone while the log still says the
// Machine goes on (another replica would resume it on an uncordoned node).
// When it cannot be persisted, the disruption stays until the next reconcile
// undoes it (see reconcileInFlight).
func (r *Reconciler) fail(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, msg string) {
	ctrl.LoggerFrom(ctx).Info("Machine upgrade failed", "reason", msg)
	setPhase(s, st, upgradev1.MachinePhaseFailed, "", msg)
	st.CompletionTime = ptrTime(s.now)
	r.calls.forget(s.upgrade, st.Machine)
	r.event(s, corev1.EventTypeWarning, "MachineUpgradeFailed", "Upgrade", "Machine %s: %s", st.Machine, msg)
	if !st.Cordoned && !st.SkipRemediationSet {
		return
	}
	if err := r.persist(ctx, s); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Recording the failure of a Machine; its disruption is undone once it is recorded")
		return
	}
	if err := r.release(ctx, s, st); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Undoing the disruption of a failed Machine")
	}
}

// setPhase moves a Machine to a phase, recording the time spent in the
// previous one.
func setPhase(s *scope, st *upgradev1.MachineUpgradeStatus, phase upgradev1.MachinePhase, point upgradev1.HoldPoint, msg string) {
	now := metav1.NewTime(s.now)
	if st.PhaseStartTime != nil && st.Phase != phase {
		d := s.now.Sub(st.PhaseStartTime.Time)
		addPhaseDuration(st, st.Phase, d)
		metrics.MachinePhaseEnded(s.upgrade.Namespace, s.upgrade.Spec.PolicyName, st.Phase, d)
	}
	if st.Phase != phase || st.HoldPoint != point {
		st.PhaseStartTime = &now
		st.UnreachableSince = nil
	}
	if st.StartTime == nil {
		st.StartTime = &now
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
