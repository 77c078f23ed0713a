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

package talosnode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/metrics"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// The upgrade call of a node lasts as long as the node pulls and installs
// the image: minutes on a slow registry. It is made outside of the reconcile
// workers, so that slow pulls never stall the other Clusters of a replica:
// the reconcile persists the intent (upgradeRequestedTime), starts the call
// and returns; the call's end enqueues the TalosUpgrade again, and the next
// reconcile reads its outcome (UpgradeCalls.View).
//
// What is kept here is only an optimisation of the wait: a controller that
// restarts while a call is in flight finds no outcome, does not repeat the
// call (its intent is recorded), and lets the verification after the reboot
// tell whether it took. Only the call that reboots a node before Talos 1.13
// is made again by a process that knows of none, when the node says it
// started no upgrade on its boot (see callUnknown in internal/disruption).
//
// A call that could not dial the node (talos.ErrNotDialed: its talosconfig
// Secret or its Machine's address could not be read) was never made: it
// ends with that error, and its intent is known to this process as made
// without its call (unmade), so that its step makes it again (see
// install.act and decideReboot in internal/disruption).

// UpgradeCalls are the upgrade calls of one controller, in flight or ended
// and not yet read. A nil *UpgradeCalls knows of no call.
type UpgradeCalls struct {
	mu    sync.Mutex
	calls map[callKey]*disruption.UpgradeCall
	// reboots are when the last call asking a Machine's node to reboot
	// ended, by Machine.
	reboots map[callKey]time.Time
	// selfRebooting are the Machines whose upgrade call reboots them: their
	// reboot is never asked for again.
	selfRebooting map[callKey]bool
	// unmade are the Machines whose upgrade intent this process wrote
	// without making the call, because the write returned an error: a write
	// that timed out may have landed, and then the intent is on record with
	// no call behind it; or whose call ended without dialing the node
	// (talos.ErrNotDialed). This process, and only it, knows the call was
	// never made: it makes it when it reads the intent back (TakeUnmade).
	unmade map[callKey]bool
	// Done receives the TalosUpgrade of every call that ends; the
	// controller watches it.
	Done chan event.GenericEvent
	// nodes makes the calls, and now times their attempts.
	nodes Nodes
	now   func() time.Time
	// retry is how long after a repeatable attempt the next is made
	// (disruption.UpgradeCallRetry).
	retry time.Duration
}

// callKey identifies the call of one Machine of one rollout.
type callKey struct {
	upgrade types.UID
	machine string
}

// NewUpgradeCalls returns the upgrade calls of a controller, made to its
// nodes; now is time.Now when nil.
func NewUpgradeCalls(nodes Nodes, now func() time.Time) *UpgradeCalls {
	if now == nil {
		now = time.Now
	}
	return &UpgradeCalls{
		nodes: nodes, now: now, retry: disruption.UpgradeCallRetry,
		calls: map[callKey]*disruption.UpgradeCall{}, reboots: map[callKey]time.Time{}, selfRebooting: map[callKey]bool{}, unmade: map[callKey]bool{},
		Done: make(chan event.GenericEvent, 1024),
	}
}

// View returns the call of machine in u as this process knows it, for its
// step to decide on.
func (c *UpgradeCalls) View(u *upgradev1.TalosUpgrade, machine string) disruption.CallView {
	if c == nil {
		return disruption.CallView{}
	}
	key := callKey{upgrade: u.UID, machine: machine}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := disruption.CallView{Unmade: c.unmade[key], LastReboot: c.reboots[key], SelfRebooting: c.selfRebooting[key]}
	if call, ok := c.calls[key]; ok {
		v.Known, v.UpgradeCall = true, *call
	}
	return v
}

// RebootAsked records that a call asking the node of machine in u to reboot
// ended now: a reboot is asked for again only long enough after the last
// call ended for the node to go down (see rebootDue in internal/disruption),
// so that a call whose answer was lost, or that was answered late, is given
// the time a call answered at once is.
func (c *UpgradeCalls) RebootAsked(u *upgradev1.TalosUpgrade, machine string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reboots[callKey{upgrade: u.UID, machine: machine}] = c.now()
}

// RebootOver forgets the reboot calls of machine in u once it is no longer
// rebooting.
func (c *UpgradeCalls) RebootOver(u *upgradev1.TalosUpgrade, machine string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reboots, callKey{upgrade: u.UID, machine: machine})
}

// NotMade records that the upgrade intent of machine in u may be on record
// without its call: its write returned an error, and the call was not made.
func (c *UpgradeCalls) NotMade(u *upgradev1.TalosUpgrade, machine string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unmade[callKey{upgrade: u.UID, machine: machine}] = true
}

// TakeUnmade reports whether this process wrote the upgrade intent of
// machine in u without making its call (NotMade), and forgets it.
func (c *UpgradeCalls) TakeUnmade(u *upgradev1.TalosUpgrade, machine string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := callKey{upgrade: u.UID, machine: machine}
	unmade := c.unmade[key]
	delete(c.unmade, key)
	return unmade
}

// Forget drops the call of machine in u once its outcome is recorded.
func (c *UpgradeCalls) Forget(u *upgradev1.TalosUpgrade, machine string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.calls, callKey{upgrade: u.UID, machine: machine})
	delete(c.reboots, callKey{upgrade: u.UID, machine: machine})
}

// UpgradeRequest is the upgrade call of one Machine of a rollout.
type UpgradeRequest struct {
	// Upgrade is the rollout whose record holds the call's intent; the
	// call's end enqueues it (Done).
	Upgrade *upgradev1.TalosUpgrade
	// Cluster and Machine are the Machine called and its Cluster.
	Cluster *clusterv1.Cluster
	Machine *clusterv1.Machine
	// Record is the Machine's record: its node, versions and installer
	// image.
	Record *upgradev1.MachineUpgradeStatus
	// Options are the options of the call.
	Options talos.UpgradeOptions
	// Now is when the call starts (the reconcile's time).
	Now time.Time
}

// Start makes the upgrade call of a Machine in the background. Its intent
// must be persisted before: the call is made once.
func (c *UpgradeCalls) Start(ctx context.Context, req UpgradeRequest) {
	st, opts := req.Record, req.Options
	key := callKey{upgrade: req.Upgrade.UID, machine: st.Machine}
	call := &disruption.UpgradeCall{Started: req.Now}
	c.mu.Lock()
	c.calls[key] = call
	delete(c.unmade, key)
	if opts.AllowSelfReboot {
		c.selfRebooting[key] = true
	}
	c.mu.Unlock()

	log := ctrl.LoggerFrom(ctx)
	log.Info("Upgrading Talos", "fromVersion", st.FromVersion, "targetVersion", st.TargetVersion, "image", st.InstallerImage, "rebootsItself", opts.AllowSelfReboot)
	// The intent is recorded: finish the call even if the manager is
	// shutting down, so that a graceful restart never leaves it half made.
	callCtx := context.WithoutCancel(ctx)
	cluster, machine, image, node := req.Cluster.DeepCopy(), req.Machine.DeepCopy(), st.InstallerImage, st.Node
	owner := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: req.Upgrade.Namespace, Name: req.Upgrade.Name}}
	namespace, clusterName := req.Upgrade.Namespace, req.Cluster.Name
	retryFor := plan.DefaultNodeUnreachableTimeout
	if d := req.Upgrade.Spec.NodeUnreachableTimeout; d != nil && d.Duration > 0 {
		retryFor = d.Duration
	}
	go func() {
		res, err := c.repeating(callCtx, call, retryFor, func() (talos.UpgradeResult, error) {
			return c.nodes.Upgrade(callCtx, cluster, machine, node, image, opts)
		})
		notDialed := errors.Is(err, talos.ErrNotDialed)
		switch {
		case notDialed:
			log.Info("Upgrade call not made: the node was not dialed; its step makes it again", "err", err.Error())
		case errors.Is(err, talos.ErrBootedSince):
			log.Info("Upgrade call not made: the node booted since it was decided", "err", err.Error())
		case err != nil:
			log.Info("Upgrade call failed", "err", err.Error())
		}
		metrics.UpgradeCall(namespace, clusterName, upgradeAPI(res, err, opts), callResult(err))
		c.mu.Lock()
		call.Finished, call.Res, call.Err = true, res, err
		if notDialed {
			// The call was never made: its intent is on record without it.
			c.unmade[key] = true
		}
		c.mu.Unlock()
		select {
		case c.Done <- event.GenericEvent{Object: owner}:
		default:
			// The queue is full: the TalosUpgrade's periodic requeue
			// (internal/disruption's upgradeCallPoll) reads the outcome.
		}
	}()
}

// upgradeAPI names the upgrade API of a call for the metrics: the legacy one
// reboots the node by itself.
func upgradeAPI(res talos.UpgradeResult, err error, opts talos.UpgradeOptions) string {
	if opts.AllowSelfReboot || res.RebootsItself || errors.Is(err, talos.ErrRebootsItself) {
		return metrics.APILegacy
	}
	return metrics.APILifecycle
}

// callResult is the result label of a call for the metrics.
func callResult(err error) string {
	switch {
	case err == nil:
		return metrics.CallSucceeded
	case errors.Is(err, talos.ErrRebootsItself), errors.Is(err, talos.ErrBootedSince):
		return metrics.CallNotMade
	}
	return metrics.CallFailed
}

// repeatable reports whether a failed attempt of an upgrade call may be made
// again:
//   - the Talos API did not answer (its answer was lost, or late) while the
//     call only read (the node's version) or pulled the image, which the
//     node does again as if once;
//   - the install of a node of Talos 1.13 or later was sent and its answer
//     lost (ErrUpgradeInterrupted): the install does not reboot the node,
//     and one that started runs to its end on it whatever became of its
//     request. Asked again, the node refuses it while that one runs, then
//     installs the same image to the same slot: the outcome becomes known
//     before the node is rebooted into a slot that may be half written;
//   - the node refused the install because another one runs on it (that
//     one, or an earlier process's: see install.act in internal/disruption).
//
// The legacy call of a node before Talos 1.13 (res.RebootsItself), whose
// request was sent, is never repeated: it reboots the node. Nothing else
// the node answered is repeated either.
func repeatable(res talos.UpgradeResult, err error) bool {
	switch {
	case errors.Is(err, talos.ErrInstallInProgress):
		return true
	case errors.Is(err, talos.ErrUpgradeInterrupted):
		return !res.RebootsItself
	}
	return errors.Is(err, talos.ErrUnreachable) || errors.Is(err, talos.ErrDeadlineExceeded)
}

// repeating makes the attempts of an upgrade call, each with
// attempt, until one does not fail in a repeatable way, or until the node has
// not answered for retryFor (its nodeUnreachableTimeout); call.Retrying says
// meanwhile why an attempt is made again.
func (c *UpgradeCalls) repeating(ctx context.Context, call *disruption.UpgradeCall, retryFor time.Duration, attempt func() (talos.UpgradeResult, error)) (talos.UpgradeResult, error) {
	var silentSince time.Time
	for {
		res, err := attempt()
		if !repeatable(res, err) {
			return res, err
		}
		now := c.now()
		if silentSince.IsZero() {
			silentSince = now
		}
		var why string
		switch {
		case errors.Is(err, talos.ErrInstallInProgress):
			why = "another install runs on the node"
		case errors.Is(err, talos.ErrUpgradeInterrupted):
			why = "the answer to the install was lost"
		default:
			why = "the node did not answer before the install"
		}
		if silent := now.Sub(silentSince); silent >= retryFor {
			// Given up: the Machine fails on this error, which is no
			// longer an interrupted call whose outcome a reboot would tell.
			return res, fmt.Errorf("%s; asked again for %s (nodeUnreachableTimeout %s): %s: %w", err.Error(), silent.Round(time.Second), retryFor, why, talos.ErrUnreachable)
		}
		ctrl.LoggerFrom(ctx).Info("Upgrade call made again: "+why, "err", err.Error(), "retryAfter", c.retry)
		c.mu.Lock()
		call.Retrying = err
		c.mu.Unlock()
		select {
		case <-time.After(c.retry):
		case <-ctx.Done():
			return res, err
		}
	}
}

// Upgrade makes one attempt of the upgrade call of a Machine. An error
// of dialing the node is talos.ErrNotDialed: the call was not made, and may
// be made later.
func (n Nodes) Upgrade(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, node, image string, opts talos.UpgradeOptions) (talos.UpgradeResult, error) {
	var res talos.UpgradeResult
	called := false
	err := n.With(ctx, cluster, m, func(tc talos.Client) error {
		called = true
		var err error
		res, err = tc.Upgrade(ctx, image, opts)
		return err
	})
	switch {
	case err != nil && !called:
		return res, fmt.Errorf("upgrade call to %s not made: %w", node, err)
	case errors.Is(err, talos.ErrBootedSince):
		return res, fmt.Errorf("upgrade call to %s not made: %w", node, err)
	case errors.Is(err, talos.ErrUpgradeInterrupted), repeatable(res, err):
		return res, fmt.Errorf("upgrade to %s: %w", image, err)
	case err != nil:
		return res, fmt.Errorf("upgrade to %s failed: %w; not retried automatically", image, err)
	}
	return res, nil
}
