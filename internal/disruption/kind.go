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
	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// Kind is what a disruption does to a node. The steps around it, and their
// order, are the same for every kind; a kind supplies only what differs.
type Kind interface {
	// Words are how messages, events and metrics name the kind.
	Words() Words
	// drained decides, once the node is drained and what it runs has been
	// read (Observation.Drain), what is left to do: it moves the record to
	// Upgrading to act on the node, or to Verifying when the node already
	// runs what it should.
	drained(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision
	// act decides the Upgrading phase: what the node is asked to do before
	// it reboots, and what its answer means. It moves the record to
	// WaitingForHold(preReboot) when the node is ready to reboot.
	act(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision
	// reboot is how the node is rebooted once its pre-reboot point is
	// passed; it may change the record (the time of a call it asks for).
	reboot(w *Observation, st *upgradev1.MachineUpgradeStatus) Intent
	// rebooted checks what the node runs when it is back on a new boot ID:
	// it returns why the Machine fails, or "".
	rebooted(w *Observation, st *upgradev1.MachineUpgradeStatus, version string) string
	// done says what a Machine that completed the disruption went
	// through, for its record's message and its event.
	done(st *upgradev1.MachineUpgradeStatus) string
}

// Words name a kind of disruption. They are the one place its name is
// spelt: the record's action (status.machines[].action), the action of its
// events and the action label of the tollgate_machines metric, the noun of
// its messages and the reasons of its events.
type Words struct {
	// Action names the kind in the record, in the action of its events and
	// in the metrics.
	Action upgradev1.MachineAction
	// Noun names it in messages: "upgrade", "reboot"; Doing says that a
	// Machine goes through it: "upgrading", "rebooting".
	Noun, Doing string
	// Completed and Failed are the reasons of the events of a Machine that
	// completed it or failed.
	Completed, Failed string
	// Hook names it to the Machine's hooks (TOLLGATE_ACTION of their Jobs).
	Hook string
}

// The kinds of disruption, by the action of a record.
var (
	wordsUpgrade = Words{Action: upgradev1.MachineActionUpgrade, Noun: "upgrade", Doing: "upgrading",
		Completed: "MachineUpgraded", Failed: "MachineUpgradeFailed", Hook: hooks.ActionUpgrade}
	wordsReboot = Words{Action: upgradev1.MachineActionReboot, Noun: "reboot", Doing: "rebooting",
		Completed: "MachineRebooted", Failed: "MachineRebootFailed", Hook: hooks.ActionReboot}
	wordsConfigure = Words{Action: upgradev1.MachineActionConfigure, Noun: "configuration change", Doing: "changing its configuration",
		Completed: "MachineConfigured", Failed: "MachineConfigurationFailed", Hook: hooks.ActionConfigure}
	wordsKubernetes = Words{Action: upgradev1.MachineActionKubernetes, Noun: "Kubernetes change", Doing: "changing its Kubernetes",
		Completed: "MachineKubernetesChanged", Failed: "MachineKubernetesChangeFailed", Hook: hooks.ActionKubernetes}
)

// KindOf returns the kind of a record's action: what the rollout does to
// its node. A record without an action is an upgrade.
func KindOf(action upgradev1.MachineAction) Kind {
	switch action {
	case upgradev1.MachineActionReboot:
		return rebootOnly{}
	case upgradev1.MachineActionConfigure:
		return configure{words: wordsConfigure}
	case upgradev1.MachineActionKubernetes:
		// A Kubernetes change is a change of the images of the node's
		// machine configuration.
		return configure{words: wordsKubernetes}
	}
	return install{}
}
