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

// Package disruption decides what Tollgate does to a Machine: the
// decisions of the TalosUpgrade controller, as functions of what the world
// said and of the Machine's record, with no client, no context and no
// clock. The controller (controllers/talosupgrade) observes the world,
// asks this package, and executes what it decided.
//
// # The state machine
//
// Every Machine a rollout disrupts has a durable record in the
// TalosUpgrade's status, moved on by one step per phase (Decide):
//
//	Pending → WaitingForHold(preDrain) → Draining → Upgrading →
//	WaitingForHold(preReboot) → Rebooting → Verifying →
//	WaitingForHold(postUpgrade) → Completed (or Failed)
//
// A step reads an Observation (what the caches held and what the Machine's
// last round read) and the record, moves the record on, and returns a
// Decision: an Intent for the controller's executor (a read for the next
// round, or a side effect whose intent the record now holds, written ahead
// of it), events, a failure to undo, or nothing while the Machine waits.
//
// # The kinds
//
// The steps are the same for every kind of disruption: holds and hooks at
// each point, drain, act, reboot, verify, prove, release. A Kind supplies
// only what differs: what acting on the drained node means, how it reboots,
// what proves it came back right, what its completion says and the Words
// that name it in messages, events and metrics. The kinds are an upgrade
// (install.go), a reboot (reboot.go) and a configuration or Kubernetes
// change (configure.go).
//
// A new kind of disruption goes into three places: a type implementing
// Kind in a file of its own here, its Words beside the others (kind.go),
// and its case in KindOf, by the record's action (a new
// upgradev1.MachineAction). Its steps, gate, ledger, records and tests of
// the steps it shares come with it.
//
// # The ledger
//
// One function answers "may this Machine be disrupted now, and what is
// taken?" for every side that asks: the start of an upgrade, a reboot or a
// configuration change (Rollout.NextCandidates) and the release of a
// removal CAPI waits for at its deletion hook (DecideRemoval, through
// Rollout.ObserveRemoval). Ledger.Admit counts, for the Machine's
// group, every Machine whose node is NotReady or cordoned whatever its
// record says, every Machine in flight or being removed, and the group's
// size as CAPI sees it; ledger_test.go asks the same question from each
// side.
//
// # Removals
//
// A Machine CAPI deletes is held at its pre-drain hook until it passes
// the same gate as a disruption (the ledger, the health checks, etcd, its
// turn in the group) and its preRemoval hooks ran; its act is CAPI's, so it
// shares the gate, not the steps (removal.go).
//
// # The rollout's status
//
// The rollout's phase (Rollout.Phase) and its conditions are computed here
// too, from the records and what the controller read: Progressing,
// Completed, Paused, Bypassed, Removals, MachineConfigs, TemplatesOnTarget
// (from the templates internal/templates read) and KubernetesVersions
// (from the Cluster's CAPI objects); the controller sets them (status.go).
//
// # Purity
//
// Nothing here reads the world: a depguard rule of .golangci.yml
// (disruption-is-pure) refuses a context, controller-runtime, client-go,
// CAPI's controllers, the workload Jobs, the drain and any I/O package.
// The decisions' table tests live beside them and need no apiserver; the
// controller's envtest suite proves the wiring.
package disruption
