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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/drain"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// Requeue delays, used only while waiting for something that sends no event.
const (
	preflightRetry     = 30 * time.Second
	drainPoll          = 2 * time.Second
	rebootPoll         = 2 * time.Second
	talosRetry         = 5 * time.Second
	maxStepsPerMachine = 16
)

// reconcileInFlight moves every started Machine on as far as it can go.
func (r *Reconciler) reconcileInFlight(ctx context.Context, s *scope) (ctrl.Result, error) {
	res := ctrl.Result{}
	var errs []error
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
		if !inFlight(st.Phase) {
			continue
		}
		stepResult, err := r.advance(ctx, s, st)
		if err != nil {
			errs = append(errs, fmt.Errorf("machine %q: %w", st.Machine, err))
			continue
		}
		res = util.LowestNonZeroResult(res, stepResult)
	}
	return res, errors.Join(errs...)
}

// advance runs the steps of one Machine until it must wait.
func (r *Reconciler) advance(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", klogRefNS(s.upgrade.Namespace, st.Machine), "Node", st.Node)
	ctx = ctrl.LoggerInto(ctx, log)
	for range maxStepsPerMachine {
		m, ok := s.machines[st.Machine]
		if !ok {
			r.fail(ctx, s, st, "the Machine was deleted during its upgrade")
			return ctrl.Result{}, nil
		}
		before := *st.DeepCopy()
		res, err := r.step(ctx, s, st, m)
		if err != nil || !res.IsZero() || !inFlight(st.Phase) || sameStep(before, *st) {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// sameStep reports whether a step left a Machine where it was.
func sameStep(a, b upgradev1.MachineUpgradeStatus) bool {
	return a.Phase == b.Phase && a.HoldPoint == b.HoldPoint
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

// waitForHolds reports whether the Machine may pass the hold point: no hook
// annotation holds it and every action hook at the matching point
// succeeded. A failed hook fails the Machine.
func (r *Reconciler) waitForHolds(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, point upgradev1.HoldPoint, hookPoint upgradev1.HookPoint) (bool, ctrl.Result, error) {
	if owners := hooks.Holds(m, point); len(owners) > 0 {
		st.HeldBy = owners
		st.Message = fmt.Sprintf("held at %s by %s", point, quoteAll(owners))
		return false, ctrl.Result{}, nil // The Machine watch brings us back when a hold goes.
	}
	st.HeldBy = nil
	if s.workload == nil {
		st.Message = "waiting for the workload cluster to be reachable"
		return false, ctrl.Result{}, nil
	}
	runner := hooks.Runner{Client: s.workload, Now: r.Now}
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

// stepPreDrain waits for the pre-drain holds, then records the intent to
// cordon and to protect the Machine from remediation, and does both.
func (r *Reconciler) stepPreDrain(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	ok, res, err := r.waitForHolds(ctx, s, st, m, upgradev1.HoldPointPreDrain, upgradev1.HookPointPreDrain)
	if !ok || err != nil {
		return res, err
	}
	if !s.checksPassed {
		// Selected while the checks passed, but they no longer do: no
		// Machine is disrupted while a check runs or fails.
		st.Message = "waiting for the health checks to pass before draining"
		return ctrl.Result{}, nil // reconcileHealthChecks requeues.
	}
	st.SkipRemediationSet = !hasAnnotation(m, clusterv1.MachineSkipRemediationAnnotation) || st.SkipRemediationSet
	st.Cordoned = true
	r.setPhase(s, st, upgradev1.MachinePhaseDraining, "", "draining node")
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.disrupt(ctx, s, st, m)
}

// disrupt makes sure the Machine is protected from remediation and its node
// cordoned, as recorded in st. Both are idempotent.
func (r *Reconciler) disrupt(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) error {
	if st.SkipRemediationSet && !hasAnnotation(m, clusterv1.MachineSkipRemediationAnnotation) {
		if err := r.patchMachineAnnotation(ctx, m, clusterv1.MachineSkipRemediationAnnotation, true); err != nil {
			return err
		}
	}
	if st.Cordoned && st.Node != "" && s.workload != nil {
		cs, err := r.clientset(ctx, s)
		if err != nil {
			return err
		}
		if err := drain.Cordon(ctx, cs, st.Node); err != nil {
			return fmt.Errorf("cordoning node %q: %w", st.Node, err)
		}
	}
	return nil
}

// stepDrain drains the node, without waiting, until no Pod is left to evict
// or drain.timeout is exceeded; then it reads the boot ID the reboot will be
// measured against and resolves the installer image.
func (r *Reconciler) stepDrain(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	if err := r.disrupt(ctx, s, st, m); err != nil {
		return ctrl.Result{}, err
	}
	if s.workload == nil {
		st.Message = "waiting for the workload cluster to be reachable"
		return ctrl.Result{}, nil
	}
	cs, err := r.clientset(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, skip := m.Annotations[clusterv1.ExcludeNodeDrainingAnnotation]; !skip && st.Node != "" {
		res, err := drain.Drain(ctx, cs, st.Node, s.upgrade.Spec.Drain)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("draining node %q: %w", st.Node, err)
		}
		if !res.Done {
			timeout := durationOr(s.upgrade.Spec.Drain.Timeout, 10*time.Minute)
			if st.PhaseStartTime != nil && s.now.Sub(st.PhaseStartTime.Time) > timeout {
				r.fail(ctx, s, st, fmt.Sprintf("drain did not finish within %s: %s", timeout, res.Message))
				return ctrl.Result{}, nil
			}
			st.Message = "draining node: " + res.Message
			return requeueAfter(drainPoll), nil
		}
	}

	tc, err := r.Dialer.Dial(ctx, s.cluster, m)
	if err != nil {
		return r.talosError(ctx, st, err)
	}
	defer tc.Close() //nolint:errcheck // Nothing is lost when closing a client.
	bootID, err := tc.BootID(ctx)
	if err != nil {
		return r.talosError(ctx, st, err)
	}
	schematic := ""
	if talos.NeedsRunningSchematic(s.upgrade.Spec.Installer) {
		if schematic, err = tc.Schematic(ctx); err != nil {
			return r.talosError(ctx, st, err)
		}
	}
	image, err := talos.InstallerImage(s.upgrade.Spec.Installer, st.TargetVersion, schematic)
	if err != nil {
		r.fail(ctx, s, st, fmt.Sprintf("resolving the installer image: %v", err))
		return ctrl.Result{}, nil
	}
	st.BootID, st.InstallerImage = bootID, image
	r.setPhase(s, st, upgradev1.MachinePhaseUpgrading, "", "installing "+image)
	return ctrl.Result{}, nil
}

// legacy reports whether the Machine's node upgrades with the legacy API,
// which reboots by itself.
func legacy(st *upgradev1.MachineUpgradeStatus) bool {
	lifecycle, err := talos.UsesLifecycleAPI(st.FromVersion)
	return err == nil && !lifecycle
}

// stepUpgrade installs the new image. On Talos 1.13 and later the intent is
// persisted, the image installed, and the Machine waits at preReboot; older
// nodes, whose upgrade call reboots them, go to preReboot first.
func (r *Reconciler) stepUpgrade(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	if legacy(st) || st.UpgradeRequestedTime != nil {
		// Legacy nodes: the call is made after the preReboot holds. Others:
		// the call was made (or interrupted); it is never repeated, and
		// verification tells whether it took.
		r.setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
		return ctrl.Result{}, nil
	}
	st.UpgradeRequestedTime = ptrTime(s.now)
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.callUpgrade(ctx, s, st, m); err != nil {
		r.fail(ctx, s, st, err.Error())
		return ctrl.Result{}, nil
	}
	r.setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
	return ctrl.Result{}, nil
}

// callUpgrade makes the one upgrade call of a Machine.
func (r *Reconciler) callUpgrade(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) error {
	log := ctrl.LoggerFrom(ctx)
	log.Info("Upgrading Talos", "fromVersion", st.FromVersion, "targetVersion", st.TargetVersion, "image", st.InstallerImage)
	// The intent is recorded: finish the call even if the manager is
	// shutting down, so that a graceful restart never leaves it half made.
	ctx = context.WithoutCancel(ctx)
	tc, err := r.Dialer.Dial(ctx, s.cluster, m)
	if err != nil {
		return fmt.Errorf("upgrade call to %s not made: %w; not retried automatically", st.Node, err)
	}
	defer tc.Close() //nolint:errcheck // Nothing is lost when closing a client.
	if _, err := tc.Upgrade(ctx, st.InstallerImage); err != nil {
		return fmt.Errorf("upgrade to %s failed: %w; not retried automatically", st.InstallerImage, err)
	}
	r.event(s, corev1.EventTypeNormal, "UpgradeInstalled", "Upgrade", "Machine %s: installed %s", st.Machine, st.InstallerImage)
	return nil
}

// stepPreReboot waits for the pre-reboot holds, then records the intent to
// reboot and reboots (legacy nodes: makes the upgrade call, which reboots).
func (r *Reconciler) stepPreReboot(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	ok, res, err := r.waitForHolds(ctx, s, st, m, upgradev1.HoldPointPreReboot, upgradev1.HookPointPreReboot)
	if !ok || err != nil {
		return res, err
	}
	needsUpgradeCall := st.UpgradeRequestedTime == nil
	if needsUpgradeCall {
		st.UpgradeRequestedTime = ptrTime(s.now)
	}
	st.RebootRequestedTime = ptrTime(s.now)
	r.setPhase(s, st, upgradev1.MachinePhaseRebooting, "", "rebooting")
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if needsUpgradeCall {
		if err := r.callUpgrade(ctx, s, st, m); err != nil {
			r.fail(ctx, s, st, err.Error())
		}
		return requeueAfter(rebootPoll), nil
	}
	// The intent is recorded: finish the call even if the manager is
	// shutting down.
	callCtx := context.WithoutCancel(ctx)
	tc, err := r.Dialer.Dial(callCtx, s.cluster, m)
	if err == nil {
		defer tc.Close() //nolint:errcheck // Nothing is lost when closing a client.
		ctrl.LoggerFrom(ctx).Info("Rebooting node")
		err = tc.Reboot(callCtx)
	}
	if err != nil {
		// The reboot may have started; the boot ID tells, and the reboot
		// timeout bounds the wait.
		ctrl.LoggerFrom(ctx).Info("Reboot call returned an error; checking the boot ID", "err", err.Error())
	}
	return requeueAfter(rebootPoll), nil
}

// stepReboot waits for the node to come back with a new boot ID, and checks
// that it booted the target version.
func (r *Reconciler) stepReboot(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	timeout := durationOr(s.upgrade.Spec.RebootTimeout, 15*time.Minute)
	deadline := s.now.Add(timeout)
	if st.RebootRequestedTime != nil {
		deadline = st.RebootRequestedTime.Add(timeout)
	}
	version, bootID, err := r.readBoot(ctx, s, m)
	if err != nil || bootID == st.BootID {
		if s.now.After(deadline) {
			msg := fmt.Sprintf("node %q did not come back within rebootTimeout %s", st.Node, timeout)
			switch {
			case err == nil && legacy(st):
				msg = fmt.Sprintf("node %q answers on %s but did not reboot within rebootTimeout %s: before Talos 1.13 the upgrade runs on the node after the call returns, and a failed install leaves the node up on its old version (see `talosctl -n %s events`); not retried automatically", st.Node, version, timeout, st.Node)
			case err == nil:
				msg = fmt.Sprintf("node %q answers but did not reboot within rebootTimeout %s (was the controller killed while it asked for the reboot?); not retried automatically", st.Node, timeout)
			}
			r.fail(ctx, s, st, msg)
			return ctrl.Result{}, nil
		}
		st.Message = "waiting for the node to reboot"
		return requeueAfter(rebootPoll), nil // A rebooting Talos API sends no event.
	}
	if !sameVersion(version, st.TargetVersion) {
		r.fail(ctx, s, st, fmt.Sprintf("node %q came back on %s instead of %s (A/B rollback after a failed boot); the upgrade is not retried automatically", st.Node, version, st.TargetVersion))
		return ctrl.Result{}, nil
	}
	r.setPhase(s, st, upgradev1.MachinePhaseVerifying, "", "waiting for the node to be Ready")
	return ctrl.Result{}, nil
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

// stepVerify waits for the workload Node to be Ready, then undoes the
// disruption: uncordon, and the skip-remediation annotation goes.
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
		timeout := durationOr(s.upgrade.Spec.RebootTimeout, 15*time.Minute)
		if st.RebootRequestedTime != nil && s.now.Sub(st.RebootRequestedTime.Time) > timeout {
			r.fail(ctx, s, st, fmt.Sprintf("node %q runs %s but is not Ready within rebootTimeout %s", st.Node, st.TargetVersion, timeout))
			return ctrl.Result{}, nil
		}
		st.Message = "waiting for the node to be Ready"
		return ctrl.Result{}, nil // The Node watch brings us back.
	}
	if err := r.release(ctx, s, st); err != nil {
		return ctrl.Result{}, err
	}
	r.setPhase(s, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPostUpgrade, "")
	return ctrl.Result{}, nil
}

// stepPostUpgrade runs the nodeReady hooks and waits for the post-upgrade
// holds; then the Machine is Completed.
func (r *Reconciler) stepPostUpgrade(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	ok, res, err := r.waitForHolds(ctx, s, st, m, upgradev1.HoldPointPostUpgrade, upgradev1.HookPointNodeReady)
	if !ok || err != nil {
		return res, err
	}
	r.setPhase(s, st, upgradev1.MachinePhaseCompleted, "", fmt.Sprintf("upgraded from %s to %s", st.FromVersion, st.TargetVersion))
	st.CompletionTime = ptrTime(s.now)
	if d := s.upgrade.Spec.Rollout.DelayBetweenMachines; d != nil && d.Duration > 0 {
		s.upgrade.Status.NextMachineNotBefore = ptrTime(s.now.Add(d.Duration))
	}
	ctrl.LoggerFrom(ctx).Info("Machine upgraded", "fromVersion", st.FromVersion, "targetVersion", st.TargetVersion)
	r.event(s, corev1.EventTypeNormal, "MachineUpgraded", "Upgrade", "Machine %s upgraded from %s to %s", st.Machine, st.FromVersion, st.TargetVersion)
	return ctrl.Result{}, nil
}

// talosError handles a Talos API error of a step that can be retried.
func (r *Reconciler) talosError(ctx context.Context, st *upgradev1.MachineUpgradeStatus, err error) (ctrl.Result, error) {
	st.Message = fmt.Sprintf("Talos API: %v", err)
	ctrl.LoggerFrom(ctx).Info("Talos API call failed, retrying", "err", err.Error())
	return requeueAfter(talosRetry), nil
}

// fail marks a Machine Failed and undoes its disruption.
func (r *Reconciler) fail(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, msg string) {
	ctrl.LoggerFrom(ctx).Info("Machine upgrade failed", "reason", msg)
	r.setPhase(s, st, upgradev1.MachinePhaseFailed, "", msg)
	st.CompletionTime = ptrTime(s.now)
	r.event(s, corev1.EventTypeWarning, "MachineUpgradeFailed", "Upgrade", "Machine %s: %s", st.Machine, msg)
	if err := r.release(ctx, s, st); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Undoing the disruption of a failed Machine")
	}
}

// release uncordons the node if Tollgate cordoned it and removes the
// skip-remediation annotation if Tollgate added it.
func (r *Reconciler) release(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus) error {
	if st.Cordoned && s.workload != nil && st.Node != "" {
		cs, err := r.clientset(ctx, s)
		if err != nil {
			return err
		}
		if err := drain.Uncordon(ctx, cs, st.Node); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("uncordoning node %q: %w", st.Node, err)
		}
		st.Cordoned = false
	}
	if st.SkipRemediationSet {
		if m, ok := s.machines[st.Machine]; ok && hasAnnotation(m, clusterv1.MachineSkipRemediationAnnotation) {
			if err := r.patchMachineAnnotation(ctx, m, clusterv1.MachineSkipRemediationAnnotation, false); err != nil {
				return err
			}
		}
		st.SkipRemediationSet = false
	}
	return nil
}

// patchMachineAnnotation adds or removes an annotation on a Machine.
func (r *Reconciler) patchMachineAnnotation(ctx context.Context, m *clusterv1.Machine, key string, add bool) error {
	helper, err := patch.NewHelper(m, r.Client)
	if err != nil {
		return err
	}
	if add {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[key] = ""
	} else {
		delete(m.Annotations, key)
	}
	if err := helper.Patch(ctx, m); err != nil {
		return fmt.Errorf("patching the %s annotation of Machine %q: %w", key, m.Name, err)
	}
	return nil
}

// setPhase moves a Machine to a phase, recording the time spent in the
// previous one.
func (r *Reconciler) setPhase(s *scope, st *upgradev1.MachineUpgradeStatus, phase upgradev1.MachinePhase, point upgradev1.HoldPoint, msg string) {
	now := metav1.NewTime(s.now)
	if st.PhaseStartTime != nil && st.Phase != phase {
		addPhaseDuration(st, st.Phase, s.now.Sub(st.PhaseStartTime.Time))
	}
	if st.Phase != phase || st.HoldPoint != point {
		st.PhaseStartTime = &now
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

// persist writes the status now, before a side effect whose intent it
// records. It fails when the TalosUpgrade changed since it was read, and then
// the side effect is not made.
func (r *Reconciler) persist(ctx context.Context, s *scope) error {
	r.updateStatus(s)
	if err := writeUpgrade(ctx, r.Client, s); err != nil {
		return fmt.Errorf("persisting the intent before a side effect: %w", err)
	}
	return nil
}

func (r *Reconciler) event(s *scope, eventType, reason, action, format string, args ...any) {
	r.Recorder.Eventf(s.upgrade, nil, eventType, reason, action, format, args...)
}

func hasAnnotation(o metav1.Object, key string) bool {
	_, ok := o.GetAnnotations()[key]
	return ok
}

// nodeReady reports whether a Node is Ready.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func isControlPlane(m *clusterv1.Machine) bool {
	_, ok := m.Labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

// sameVersion compares Talos versions with or without their "v".
func sameVersion(a, b string) bool {
	return a != "" && strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v")
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return def
	}
	return d.Duration
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

func requeueIfSet(d time.Duration) ctrl.Result {
	if d <= 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: d}
}
