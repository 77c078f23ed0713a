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

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// install is the kind of a Talos upgrade: the node installs the target's
// installer image over the Talos API and boots it. How depends on the
// version the node runs, read once it is drained: from Talos 1.13 the
// upgrade call installs without rebooting (the lifecycle API) and the node
// is rebooted after its pre-reboot point; before, the upgrade call reboots
// the node by itself, so it is made after that point, as its reboot.
type install struct{}

var _ Kind = install{}

// drained records what the node itself says the upgrade is measured
// against: its Talos version (which decides how it is upgraded), its boot
// ID, and the installer image it needs.
func (install) drained(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	obs := w.Drain
	// The node, not the Machine's status, says what it runs.
	st.FromVersion, st.BootID = obs.Version, obs.BootID
	if talos.SameVersion(obs.Version, st.TargetVersion) && st.RebootAfter != nil {
		// The node runs the target already (its Machine's status lagged),
		// and a reboot is asked for it: it is rebooted instead.
		st.Action = upgradev1.MachineActionReboot
		return rebootOnly{}.drained(w, st)
	}
	if talos.SameVersion(obs.Version, st.TargetVersion) && (!ConfigApplied(st.Config) || KubernetesPending(st)) {
		// The node runs the target already (its Machine's status lagged),
		// and its configuration or Kubernetes changes: they are applied
		// instead, as for a node on the target.
		st.Action = upgradev1.MachineActionConfigure
		if KubernetesPending(st) {
			st.Action = upgradev1.MachineActionKubernetes
		}
		return KindOf(st.Action).drained(w, st)
	}
	if talos.SameVersion(obs.Version, st.TargetVersion) {
		MoveTo(w.Now, st, upgradev1.MachinePhaseVerifying, "", fmt.Sprintf("node already runs %s; waiting for it to be Ready", obs.Version))
		return Decision{}
	}
	if err := talos.CheckUpgradeStep(obs.Version, st.TargetVersion, w.Spec.AllowDowngrade); errors.Is(err, talos.ErrDowngradeNotAllowed) {
		// The record was started for an older node than this one (its
		// Machine's status lagged, or someone upgraded the node since):
		// an install would take the node back.
		return Fail(w.Now, st, fmt.Sprintf("node %q runs %s, newer than the %s the record was started for; not installed: %v", st.Node, obs.Version, st.TargetVersion, err))
	}
	image, err := talos.InstallerImage(w.Spec.Installer, st.TargetVersion, obs.Schematic)
	if err != nil {
		return Fail(w.Now, st, fmt.Sprintf("resolving the installer image: %v", err))
	}
	st.InstallerImage = image
	MoveTo(w.Now, st, upgradev1.MachinePhaseUpgrading, "", "installing "+image)
	// Read with the pass when the pre-reboot point is next: the Machine
	// passes it in this round.
	return Decision{PreReboot: obs.PreReboot}
}

// act installs the image on nodes whose upgrade call does not reboot them:
// the intent is recorded, and once its round persisted it the call is made
// outside of the reconcile (it lasts as long as the node pulls); the Machine
// then waits at preReboot. Nodes whose upgrade call reboots them go to
// preReboot first and are called there (see reboot).
func (install) act(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	if st.UpgradeRequestedTime == nil {
		// A configuration change of the node is staged first: it takes it
		// with the boot into the target, one drain and one reboot for both.
		if d, done := applyConfig(w, st, true); !done {
			return d
		}
		if legacy(st) {
			MoveTo(w.Now, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
			return Decision{}
		}
		st.UpgradeRequestedTime = ptrTime(w.Now)
		st.Message = "installing " + st.InstallerImage
		return Decision{Intent: IntentInstall, Requeue: upgradeCallPoll}
	}
	call := w.Call
	var d Decision
	switch {
	case !call.Known && call.Unmade:
		// This process wrote the intent without making the call (the write
		// returned an error but landed, or the node was not dialed): the
		// call was never made; make it.
		st.Message = "installing " + st.InstallerImage
		return Decision{Intent: IntentInstallUnmade, Requeue: upgradeCallPoll}
	case !call.Known:
		// An earlier process of the controller (it restarted, or another
		// replica took over) recorded the install and stopped: it may never
		// have made it, or made it and not heard its end. Rebooting on the
		// chance that it took would boot the old version and fail the
		// Machine, or cut an install that still runs. The install does not
		// reboot the node, and the node runs one at a time: it is made
		// again, waits while that one runs (see talosnode.UpgradeCalls),
		// and writes the same image to the same slot. An install made
		// twice is one.
		st.Message = "installing " + st.InstallerImage + " again"
		d.warning("UpgradeCallMadeAgain", "Machine %s: the install of %s on node %s was recorded by an earlier process of the controller, which stopped before its outcome was known; installing again (the install does not reboot the node)",
			st.Machine, st.InstallerImage, st.Node)
		d.Intent, d.Requeue = IntentInstallAgain, upgradeCallPoll
		return d
	case !call.Finished:
		st.Message = fmt.Sprintf("installing %s (%s)", st.InstallerImage, w.Now.Sub(call.Started).Round(time.Second))
		switch {
		case errors.Is(call.Retrying, talos.ErrInstallInProgress):
			st.Message += fmt.Sprintf("; asking again, another install runs on the node: %v", call.Retrying)
		case call.Retrying != nil:
			st.Message += fmt.Sprintf("; asking again after a lost answer: %v", call.Retrying)
		}
		return Decision{Requeue: upgradeCallPoll} // The call's end sends an event.
	case errors.Is(call.Err, talos.ErrNotDialed):
		// The node was not dialed (its talosconfig Secret or its Machine's
		// address could not be read): the call was never made, which this
		// process knows (upgradeCalls.unmade), and nothing is known of the
		// node. It is made again after UpgradeCallRetry.
		st.Message = fmt.Sprintf("installing %s: %v; making the call again", st.InstallerImage, call.Err)
		return Decision{ForgetCall: true, Requeue: UpgradeCallRetry}
	case errors.Is(call.Err, talos.ErrRebootsItself):
		// The node turned out to run a version whose upgrade call reboots
		// it, and got no call: it is called after the pre-reboot holds.
		st.UpgradeRequestedTime = nil
	case isInterrupted(call.Err):
		// The request was sent and its answer lost, and the call was not
		// asked again (talosnode.UpgradeCalls asks an install again until
		// it gives up, which is a failure): the verification after the
		// reboot tells.
		interrupted(&d, st, call.Err)
	case call.Failure() != "":
		d = Fail(w.Now, st, call.Failure())
	default:
		d.normal("UpgradeInstalled", "Machine %s: installed %s", st.Machine, st.InstallerImage)
	}
	d.ForgetCall = call.Known && call.Finished
	if d.Fail == "" {
		MoveTo(w.Now, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
	}
	return d
}

// reboot reboots the node with a Reboot call, or, for a node whose upgrade
// call reboots it and that got none yet, with that call.
func (install) reboot(w *Observation, st *upgradev1.MachineUpgradeStatus) Intent {
	if st.UpgradeRequestedTime == nil {
		st.UpgradeRequestedTime = ptrTime(w.Now)
		return IntentInstallRebooting
	}
	return IntentReboot
}

// rebooted fails a node that came back on another version than the target:
// an A/B rollback after a failed boot, or an install that never finished.
func (install) rebooted(w *Observation, st *upgradev1.MachineUpgradeStatus, version string) string {
	if talos.SameVersion(version, st.TargetVersion) {
		return bootedConfig(w, st)
	}
	cause := "A/B rollback after a failed boot"
	if st.UpgradeInterrupted {
		cause = interruptedCause + ", which may not have finished installing the image"
	}
	return fmt.Sprintf("node %q came back on %s instead of %s (%s); the upgrade is not retried automatically", st.Node, version, st.TargetVersion, cause)
}

// legacy reports whether the Machine's node upgrades with the legacy API,
// which reboots by itself; never for a Machine that is only rebooted.
// FromVersion is the version the node reported at the end of its drain.
func legacy(st *upgradev1.MachineUpgradeStatus) bool {
	if st.Action == upgradev1.MachineActionReboot {
		return false // A reboot is a Reboot call, whatever the version.
	}
	lifecycle, err := talos.UsesLifecycleAPI(st.FromVersion)
	return err == nil && !lifecycle
}

// isInterrupted reports whether an upgrade call's request was sent and its
// answer lost.
func isInterrupted(err error) bool {
	return errors.Is(err, talos.ErrUpgradeInterrupted)
}

// done says from which version to which the node was upgraded.
func (install) done(st *upgradev1.MachineUpgradeStatus) string {
	if talos.SameVersion(st.FromVersion, st.TargetVersion) {
		return "runs " + st.TargetVersion + ", which it ran already when it was drained"
	}
	return fmt.Sprintf("upgraded from %s to %s", st.FromVersion, st.TargetVersion)
}

// Words name an upgrade.
func (install) Words() Words { return wordsUpgrade }
