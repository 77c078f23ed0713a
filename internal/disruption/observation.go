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
	"time"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// Observation is what a step of one Machine knows of the world when it
// decides: what the manager's caches and the controller's process hold
// now, and what the Machine's last round read. The controller fills it
// (its observer); the steps only read it.
type Observation struct {
	// Now is the time of the reconcile.
	Now time.Time
	// Spec is the rollout's spec: its timeouts, reboot mode and installer.
	Spec *upgradev1.TalosUpgradeSpec
	// Machine is the Machine as the manager's cache has it.
	Machine *clusterv1.Machine
	// Reachable is whether the rollout holds a client of its workload
	// cluster.
	Reachable bool
	// ChecksPassed is the verdict of the health checks that gate the next
	// disruption.
	ChecksPassed bool

	// Holding are the owners that hold the Machine at its record's hold
	// point as the cache has them, less the bypassed ones.
	Holding []string
	// Held is the Machine's holds read again from the apiserver by its last
	// round; nil when not read.
	Held *HoldsRead
	// Hooks are what the action hooks said when the executor ran them for
	// this step, by point; a point is missing until they ran.
	Hooks map[upgradev1.HookPoint]HooksRun

	// Disrupted is set when the round that recorded the disruption made it:
	// the first drain pass need not make it again.
	Disrupted bool
	// Drain is what the last drain pass saw; nil when none was made.
	Drain *DrainPass
	// Boot is what the node said of its version and boot ID in the last
	// round; nil when it was not asked.
	Boot *BootRead
	// Apply is what the last round's application of the record's
	// configuration said; nil when none was made.
	Apply *ApplyRead
	// Call is the upgrade call of the Machine as the controller's process
	// knows it.
	Call CallView
	// Node is the workload Node as the workload cache has it (empty when it
	// does not exist) and NodeErr why it could not be read; read only while
	// the Machine verifies.
	Node    *corev1.Node
	NodeErr error
	// Kube is whether the Ready node runs its record's Kubernetes change;
	// read only while the Machine verifies one.
	Kube *KubernetesRead
}

// HoldsRead is a Machine's holds at a point as the apiserver had them.
type HoldsRead struct {
	Point upgradev1.HoldPoint
	// Holding are the owners that hold the Machine there, less the
	// bypassed ones.
	Holding []string
	Err     error
}

// HooksRun is what running the action hooks at a point said.
type HooksRun struct {
	Result HooksResult
	Err    error
}

// HooksResult is the verdict of the action hooks of a point for one
// Machine, as the controller's hook runner gives it.
type HooksResult struct {
	// Done is set when every hook of the point succeeded (or was skipped).
	Done bool
	// Failed is set when a hook failed after its retries; Message says
	// which and why.
	Failed bool
	// Message says what the hooks wait for, or why one failed.
	Message string
	// RequeueAfter is when to look again while a hook waits for its retry.
	RequeueAfter time.Duration
}

// CallView is the upgrade call of a Machine as the controller's process
// knows it.
type CallView struct {
	// Known is set when this process made a call it has not forgotten;
	// UpgradeCall is then its state.
	Known bool
	UpgradeCall
	// Unmade is set when this process wrote the call's intent without
	// making the call.
	Unmade bool
	// LastReboot is when the last call of this process asking the node to
	// reboot ended (the first ask, after its install, or again), zero when
	// it made none; SelfRebooting
	// is set when its upgrade call reboots it, and then its reboot is never
	// asked for again.
	LastReboot    time.Time
	SelfRebooting bool
}

// UpgradeCall is the state of one upgrade call.
type UpgradeCall struct {
	// Started is when the call started.
	Started time.Time
	// Retrying, while the call is not finished, is why its last attempt is
	// being made again: a read before the install (the node's version, the
	// image pull) whose answer was lost.
	Retrying error
	// Finished is set when the call returned; Res and Err are its outcome.
	Finished bool
	Res      talos.UpgradeResult
	Err      error
}

// Failure says why a finished call failed, or "" when it succeeded; the
// Machine then fails with this message.
func (c UpgradeCall) Failure() string {
	if c.Err == nil {
		return ""
	}
	return c.Err.Error()
}

// DrainPass is what one drain pass of a Machine saw.
type DrainPass struct {
	// Err ends the step with an error: the Machine could not be protected
	// or cordoned, its MachineDrainRules could not be read, or its node's
	// Pods could not be listed or evicted.
	Err error
	// Reachable is false while the workload cluster cannot be reached:
	// nothing was observed.
	Reachable bool
	// Skipped is set when no other node could take the Pods: the node is
	// only cordoned.
	Skipped bool
	// Drained is false while Pods are left on the node; Pending says which.
	Drained bool
	Pending string
	// TalosErr is the error of the node's Talos API, when it was read, or
	// of dialing it (talos.ErrNotDialed), which is not the node's.
	TalosErr error
	// Version, BootID and Schematic are what the node runs, read once it
	// is drained.
	Version, BootID, Schematic string
	// PreReboot is the Machine read again once its node is drained, when
	// the pre-reboot point is next (a node whose upgrade call reboots it):
	// the holds it passes there.
	PreReboot *HeldMachine
}

// HeldMachine is a Machine read again to pass a hold point.
type HeldMachine struct {
	Point   upgradev1.HoldPoint
	Machine *clusterv1.Machine
	Err     error
}

// BootRead is what a node said of its version and boot ID, and, when a
// configuration was staged for its boot, where it stands with it.
type BootRead struct {
	Version, BootID string
	// Stage is the node's machine stage and UpgradeStarted whether an
	// upgrade sequence started on its current boot, read when the step
	// asked (Decision.AskUpgrade) and the node answers on its old boot;
	// Stage is empty when they were not read or the node could not say.
	Stage          talos.MachineStage
	UpgradeStarted bool
	Config         upgradev1.MachineConfigState
	ConfigMessage  string
	Err            error
}

// ApplyRead is what a round's application of a configuration said.
type ApplyRead struct {
	// State is Converged when the node ran the template's patches already,
	// and Applied when it took them without a reboot.
	State upgradev1.MachineConfigState
	// Kubernetes is Converged when the node's configuration named the
	// Kubernetes change's version already, and Applied when it names it
	// now.
	Kubernetes upgradev1.MachineConfigState
	// Staged is set when the node takes them at its next boot.
	Staged bool
	// Hash is the hash of the patches applied.
	Hash string
	// Refused says why the patches cannot be applied in place, and
	// KubernetesRefused why the images cannot be changed.
	Refused, KubernetesRefused string
	Err                        error
}

// KubernetesRead is what the workload cluster said of a node whose
// Kubernetes change was applied: whether what runs is the version.
type KubernetesRead struct {
	Proven  bool
	Message string
	Err     error
}
