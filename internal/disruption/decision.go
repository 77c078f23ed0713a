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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Intent is what a step asks the controller's executor to do for its
// Machine.
type Intent int

const (
	// IntentNone lets the Machine wait for an event or the step's requeue.
	IntentNone Intent = iota
	// IntentRunHooks runs the action hooks at Decision.HookPoint, and asks
	// the step again with what they said.
	IntentRunHooks
	// IntentReadHolds has the round read the Machine again from the
	// apiserver, for the step to pass its hold point on what the owners
	// say now; with Decision.Release it also releases the node when no
	// hold is read.
	IntentReadHolds
	// IntentDisrupt protects the Machine from remediation and cordons its
	// node, as its record says, once its round persisted that.
	IntentDisrupt
	// IntentDrainPass has the round make a drain pass (a DrainPass).
	IntentDrainPass
	// IntentInstall makes the upgrade call that installs without
	// rebooting, once its round persisted its intent.
	IntentInstall
	// IntentInstallRebooting makes the upgrade call that reboots the node
	// by itself (Talos before 1.13), once its round persisted its intent.
	IntentInstallRebooting
	// IntentInstallUnmade makes, now, an upgrade call whose intent the
	// controller's process wrote without making it.
	IntentInstallUnmade
	// IntentInstallAgain makes again, once its round persisted the intent,
	// an upgrade call an earlier process of the controller recorded: the
	// install of a node of Talos 1.13 or later, whose outcome is unknown
	// (see install.act), or the call that reboots a node before Talos
	// 1.13, for the boot it answers on, when the node runs no upgrade and
	// started none (see callUnknown).
	IntentInstallAgain
	// IntentReboot reboots the node once its round persisted the intent.
	IntentReboot
	// IntentReadBoot has the round read the node's version and boot ID.
	IntentReadBoot
	// IntentApplyConfig applies the record's configuration, without a
	// reboot when Talos allows it, else staged, once its round persisted
	// the intent.
	IntentApplyConfig
	// IntentStageConfig stages the record's configuration for the node's
	// next boot, once its round persisted the intent.
	IntentStageConfig
)

// RebootNow is a reboot a step asks for again, now: its intent is on
// record already.
type RebootNow int

const (
	// RebootNone asks for no reboot.
	RebootNone RebootNow = iota
	// RebootAfterInstall reboots a node that installed without rebooting, as its
	// version allows, after its pre-reboot point.
	RebootAfterInstall
	// RebootAgain reboots a node that answers on its old boot ID long after its
	// reboot was asked for.
	RebootAgain
)

// Decision is what a step decided for its Machine, besides the record it
// moved on.
type Decision struct {
	Intent Intent
	// HookPoint is the point of IntentRunHooks.
	HookPoint upgradev1.HookPoint
	// Release, with IntentReadHolds, releases the node when no hold is
	// read.
	Release bool
	// AskUpgrade, with IntentReadBoot, also asks a node still on its old
	// boot whether it runs an upgrade or started one on that boot
	// (BootRead.Stage and UpgradeStarted).
	AskUpgrade bool
	// Reboot is a reboot asked for again now.
	Reboot RebootNow
	// Requeue is when to look again although no event comes; zero when an
	// event brings the Machine back.
	Requeue time.Duration
	// Fail is why the Machine failed: the step recorded it, the executor
	// undoes the disruption.
	Fail string
	// ForgetCall is set when the step decided on the end of the Machine's
	// upgrade call: the controller's process forgets it.
	ForgetCall bool
	// Retrying is the Talos API error retried until
	// nodeUnreachableTimeout.
	Retrying error
	// PreReboot, when set, is the Machine's pre-reboot holds read by the
	// drain pass: its next step passes that point on them.
	PreReboot *HeldMachine
	// NextMachineNotBefore, when set, is when the rollout may start its
	// next Machine (delayBetweenMachines).
	NextMachineNotBefore *metav1.Time
	// Events are what the step tells the rollout's events.
	Events []Event
	// Err ends the step with an error: it is tried again.
	Err error
}

// Event is an event of a step on the TalosUpgrade.
type Event struct {
	// Type is Normal or Warning.
	Type string
	// Reason is the event's reason.
	Reason string
	// Action is the event's action; the Machine's kind's when empty (see
	// Words).
	Action string
	// Message is the event's note.
	Message string
}

// normal and warning add an event of the Machine's kind to a decision;
// normalOf and warningOf one of another action.
func (d *Decision) normal(reason, format string, args ...any) {
	d.normalOf(reason, "", format, args...)
}

func (d *Decision) warning(reason, format string, args ...any) {
	d.warningOf(reason, "", format, args...)
}

func (d *Decision) normalOf(reason, action, format string, args ...any) {
	d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Message: fmt.Sprintf(format, args...)})
}

func (d *Decision) warningOf(reason, action, format string, args ...any) {
	d.Events = append(d.Events, Event{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Message: fmt.Sprintf(format, args...)})
}
