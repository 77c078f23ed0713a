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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/metrics"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/talosnode"
)

// This file is the executor of the steps of steps.go: for one Machine it
// fills the world its step decides on (observe), runs the step, and carries
// out what it decided (execute): the reads and side effects go to the
// Machine's round (see rounds.go), the intents of side effects written
// ahead of them.

// reconcileInFlight moves every started Machine on as far as it can go,
// together (see rounds.go).
func (r *Reconciler) reconcileInFlight(ctx context.Context, s *scope) (ctrl.Result, error) {
	var errs []error
	var started []*upgradev1.MachineUpgradeStatus
	for i := range s.Upgrade.Status.Machines {
		st := &s.Upgrade.Status.Machines[i]
		if st.Phase.Ended() && (st.Cordoned || st.SkipRemediationSet) {
			// A Machine that ended while its disruption could not be undone
			// (the workload API was down, say): undo it now.
			if err := r.release(ctx, s, st); err != nil {
				errs = append(errs, fmt.Errorf("machine %q: %w", st.Machine, err))
			}
			continue
		}
		if st.Phase.InFlight() {
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
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KRef(s.Upgrade.Namespace, st.Machine), "Node", st.Node)
	ctx = ctrl.LoggerInto(ctx, log)
	m, ok := s.Machines[st.Machine]
	if !ok {
		return ctrl.Result{}, nil // Left the Cluster: reconcileMachines drops its record.
	}
	for range disruption.MaxStepsPerMachine {
		before := *st.DeepCopy()
		res, err := r.step(ctx, s, st, m)
		if err != nil || !res.IsZero() || !st.Phase.InFlight() || s.waits(st.Machine) || (before.Phase == st.Phase && before.HoldPoint == st.HoldPoint) {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// step runs one step of a Machine: it observes the world the step decides
// on, decides, and carries out the decision. It returns a zero result when
// the Machine moved on, or when it waits for an event.
func (r *Reconciler) step(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) (ctrl.Result, error) {
	w := r.observe(ctx, s, st, m)
	for {
		before := st.DeepCopy()
		d := disruption.Decide(disruption.KindOf(st.Action), w, st)
		phaseEnded(s, before, st)
		if d.Intent != disruption.IntentRunHooks {
			return r.execute(ctx, s, st, m, w, d)
		}
		// The hooks create their Jobs and read them in the workload
		// cluster, which they only need once: the step decides again on
		// what they said.
		runner := hooks.Runner{Client: s.workload, Now: r.Now, Ended: metrics.JobRunEnded(s.Upgrade.Namespace, s.Cluster.Name)}
		res, err := runner.Run(ctx, hooks.RunInput{
			UpgradeName: s.Upgrade.Name, ClusterName: s.Cluster.Name, Machine: st.Machine, Node: st.Node,
			FromVersion: st.FromVersion, ToVersion: st.TargetVersion, Action: disruption.KindOf(st.Action).Words().Hook, Point: d.HookPoint,
			Hooks: s.Upgrade.Spec.Hooks, Previous: st.Hooks,
		})
		st.Hooks = res.Statuses
		run := disruption.HooksRun{Result: hooksResult(res), Err: err}
		if w.Hooks == nil {
			w.Hooks = map[upgradev1.HookPoint]disruption.HooksRun{}
		}
		w.Hooks[d.HookPoint] = run
	}
}

// hooksResult is the verdict of a run of the hook runner, for the steps.
func hooksResult(res hooks.RunResult) disruption.HooksResult {
	return disruption.HooksResult{Done: res.Done, Failed: res.Failed, Message: res.Message, RequeueAfter: res.RequeueAfter}
}

// observe fills the world a step of st's Machine decides on: what the
// manager's caches and this process hold, and what the Machine's last round
// read for its phase, which is decided on once.
func (r *Reconciler) observe(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) *disruption.Observation {
	w := &disruption.Observation{
		Now: s.Now, Spec: &s.Upgrade.Spec, Machine: m,
		Reachable: s.workload != nil, ChecksPassed: s.checksPassed,
		Call: r.calls.View(s.Upgrade, st.Machine),
	}
	switch st.Phase {
	case upgradev1.MachinePhaseWaitingForHold:
		w.Holding = r.passHolds(s, st, st.HoldPoint, hooks.Holds(m, st.HoldPoint))
		if read, ok := readFor(s.read.holds, st.Machine); ok && read.Point == st.HoldPoint {
			w.Held = &disruption.HoldsRead{Point: read.Point, Err: read.Err}
			if read.Err == nil {
				w.Held.Holding = r.passHolds(s, st, read.Point, hooks.Holds(read.Machine, read.Point))
			}
		}
	case upgradev1.MachinePhaseDraining:
		disrupted, _ := readFor(s.read.disrupted, st.Machine)
		w.Disrupted = disrupted != nil && *disrupted
		w.Drain, _ = readFor(s.read.drains, st.Machine)
	case upgradev1.MachinePhaseUpgrading:
		w.Apply, _ = readFor(s.read.applies, st.Machine)
	case upgradev1.MachinePhaseRebooting:
		w.Boot, _ = readFor(s.read.boots, st.Machine)
	case upgradev1.MachinePhaseVerifying:
		if s.workload != nil {
			w.Node = &corev1.Node{}
			if err := s.workload.Get(ctx, client.ObjectKey{Name: st.Node}, w.Node); err != nil && !apierrors.IsNotFound(err) {
				w.NodeErr = err
			}
			if k := st.Kubernetes; w.NodeErr == nil && disruption.NodeReady(w.Node) && k != nil && (k.State == upgradev1.MachineConfigApplied || k.State == upgradev1.MachineConfigPending) {
				read := r.readKubernetes(ctx, s, st, w.Node)
				w.Kube = &read
			}
		}
	}
	return w
}

// reboot asks st's node to reboot, unless it booted since st.BootID, and
// records when the call ended: the reboot is asked for again only
// rebootRetryAfter later (see rebootDue in internal/disruption).
func (r *Reconciler) reboot(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) {
	r.nodes().Reboot(ctx, s.Cluster, m, s.Upgrade.Spec.RebootMode, st.BootID)
	r.calls.RebootAsked(s.Upgrade, st.Machine)
}

// execute carries out what a step decided for st's Machine: its events, the
// undoing of a failed Machine's disruption, and its intent, which the
// Machine's round makes (writing the record ahead of a side effect).
func (r *Reconciler) execute(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, w *disruption.Observation, d disruption.Decision) (ctrl.Result, error) {
	for _, e := range d.Events {
		r.machineEvent(s, st.Machine, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
	if d.ForgetCall {
		r.calls.Forget(s.Upgrade, st.Machine)
	}
	if st.Phase != upgradev1.MachinePhaseRebooting {
		r.calls.RebootOver(s.Upgrade, st.Machine)
	}
	if d.Fail != "" {
		r.fail(ctx, s, st, d.Fail)
		return ctrl.Result{}, nil
	}
	if d.Retrying != nil {
		ctrl.LoggerFrom(ctx).Info("Talos API call failed, retrying", "err", d.Retrying.Error())
	}
	if d.NextMachineNotBefore != nil {
		s.Upgrade.Status.NextMachineNotBefore = d.NextMachineNotBefore
	}
	if st.Phase == upgradev1.MachinePhaseCompleted {
		ctrl.LoggerFrom(ctx).Info("Machine completed its "+disruption.KindOf(st.Action).Words().Noun, "fromVersion", st.FromVersion, "targetVersion", st.TargetVersion)
	}
	if d.PreReboot != nil {
		if s.read.holds == nil {
			s.read.holds = map[string]*disruption.HeldMachine{}
		}
		s.read.holds[st.Machine] = d.PreReboot
	}
	switch d.Reboot {
	case disruption.RebootAfterInstall, disruption.RebootAgain:
		r.reboot(ctx, s, st, m)
	}
	selfReboot := talos.UpgradeOptions{AllowSelfReboot: true, RebootMode: s.Upgrade.Spec.RebootMode}
	switch d.Intent {
	case disruption.IntentReadHolds:
		r.askHolds(s, st, m, d.Release)
	case disruption.IntentDisrupt:
		disrupted := toRead(&s.reading.disrupted, st.Machine)
		s.intend(st, func(ctx context.Context) error {
			if err := r.disrupt(ctx, s, st, m); err != nil {
				return err
			}
			*disrupted = true // The first drain pass need not do it again.
			return nil
		}, nil)
	case disruption.IntentDrainPass:
		pass := toRead(&s.reading.drains, st.Machine)
		s.ask(st, func(ctx context.Context) error {
			*pass = r.observeDrain(ctx, s, st, m, w.Disrupted)
			return nil // decideDrain decides on what the pass saw.
		})
	case disruption.IntentInstall:
		s.intend(st, func(ctx context.Context) error {
			r.startUpgradeCall(ctx, s, st, m, talos.UpgradeOptions{})
			return nil
		}, func() { r.upgradeCalls().NotMade(s.Upgrade, st.Machine) })
	case disruption.IntentInstallRebooting:
		s.intend(st, func(ctx context.Context) error {
			r.startUpgradeCall(ctx, s, st, m, selfReboot)
			return nil
		}, func() { r.upgradeCalls().NotMade(s.Upgrade, st.Machine) })
	case disruption.IntentInstallUnmade:
		if r.calls.TakeUnmade(s.Upgrade, st.Machine) {
			opts := talos.UpgradeOptions{}
			if st.Phase == upgradev1.MachinePhaseRebooting {
				opts = selfReboot
			}
			r.startUpgradeCall(ctx, s, st, m, opts)
		}
	case disruption.IntentInstallAgain:
		again := talos.UpgradeOptions{}
		if st.Phase == upgradev1.MachinePhaseRebooting {
			again = selfReboot
			again.BootID = st.BootID
		}
		s.intend(st, func(ctx context.Context) error {
			r.startUpgradeCall(ctx, s, st, m, again)
			return nil
		}, func() { r.upgradeCalls().NotMade(s.Upgrade, st.Machine) })
	case disruption.IntentReboot:
		s.intend(st, func(ctx context.Context) error {
			r.reboot(ctx, s, st, m)
			return nil
		}, nil)
	case disruption.IntentReadBoot:
		read := toRead(&s.reading.boots, st.Machine)
		askUpgrade := d.AskUpgrade
		s.ask(st, func(ctx context.Context) error {
			*read = r.nodes().ReadBoot(ctx, s.Cluster, st, m, s.ConfigTargetOf(m), askUpgrade)
			return nil // decideReboot decides on what the node said.
		})
	case disruption.IntentApplyConfig, disruption.IntentStageConfig:
		read := toRead(&s.reading.applies, st.Machine)
		staged := d.Intent == disruption.IntentStageConfig
		withConfig := !disruption.ConfigApplied(st.Config)
		var k *upgradev1.MachineKubernetesStatus
		if disruption.KubernetesPending(st) {
			k = st.Kubernetes.DeepCopy()
		}
		s.intend(st, func(ctx context.Context) error {
			*read = r.nodes().ApplyConfig(ctx, s.Cluster, m, s.ConfigTargetOf(m), withConfig, k, staged)
			return nil // The step decides on what the node said.
		}, nil)
	}
	return requeueIfSet(d.Requeue), d.Err
}

// askHolds has the Machine's round read it again from the apiserver, for
// its step to pass its hold point on what the owners say now; with release,
// the round also releases the node as soon as no hold is read.
func (r *Reconciler) askHolds(s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, release bool) {
	read := toRead(&s.reading.holds, st.Machine)
	read.Point = st.HoldPoint
	key := client.ObjectKeyFromObject(m)
	s.ask(st, func(ctx context.Context) error {
		read.Machine = &clusterv1.Machine{}
		read.Err = r.APIReader.Get(ctx, key, read.Machine)
		holding := func(owner string) bool { return s.HoldBypass(owner) == nil }
		if read.Err == nil && release && !slices.ContainsFunc(hooks.Holds(read.Machine, read.Point), holding) {
			return r.release(ctx, s, st)
		}
		return nil // The step decides on what was read, and says who holds.
	})
}

// startUpgradeCall makes the upgrade call of a Machine in the background
// (see talosnode.UpgradeCalls). Its intent must be persisted before: the
// call is made once.
func (r *Reconciler) startUpgradeCall(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, opts talos.UpgradeOptions) {
	r.upgradeCalls().Start(ctx, talosnode.UpgradeRequest{Upgrade: s.Upgrade, Cluster: s.Cluster, Machine: m, Record: st, Options: opts, Now: s.Now})
}

// fail undoes the disruption of a Machine whose failure its step recorded
// (see failMachine). The failure is persisted first: a disruption is never
// undone while the log still says the Machine goes on (another replica
// would resume it on an uncordoned node). When it cannot be persisted, the
// disruption stays until the next reconcile undoes it (see
// reconcileInFlight).
func (r *Reconciler) fail(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, msg string) {
	words := disruption.KindOf(st.Action).Words()
	ctrl.LoggerFrom(ctx).Info("Machine failed its "+words.Noun, "reason", msg)
	r.calls.Forget(s.Upgrade, st.Machine)
	r.machineEvent(s, st.Machine, corev1.EventTypeWarning, words.Failed, string(words.Action), "Machine %s: %s", st.Machine, msg)
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

// failNow fails a Machine outside of its steps: it records the failure
// (see failMachine) and undoes the disruption (see fail).
func (r *Reconciler) failNow(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, msg string) {
	before := st.DeepCopy()
	disruption.Fail(s.Now, st, msg)
	phaseEnded(s, before, st)
	r.fail(ctx, s, st, msg)
}

// setPhase moves a Machine to a phase outside of its steps (see moveTo),
// and counts the time spent in the previous one.
func setPhase(s *scope, st *upgradev1.MachineUpgradeStatus, phase upgradev1.MachinePhase, point upgradev1.HoldPoint, msg string) {
	before := st.DeepCopy()
	disruption.MoveTo(s.Now, st, phase, point, msg)
	phaseEnded(s, before, st)
}

// phaseEnded counts, in the metrics, the phase a Machine left between
// before and st.
func phaseEnded(s *scope, before, st *upgradev1.MachineUpgradeStatus) {
	if before.PhaseStartTime != nil && before.Phase != st.Phase {
		metrics.MachinePhaseEnded(s.Upgrade.Namespace, s.Upgrade.Spec.PolicyName, before.Phase, s.Now.Sub(before.PhaseStartTime.Time))
	}
}
