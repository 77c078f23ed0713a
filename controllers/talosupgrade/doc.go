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

// Package talosupgrade implements the controller of TalosUpgrade: the rollout
// of a Talos version to the Machines of one CAPI Cluster.
//
// Every Machine goes through a durable state machine recorded in the
// TalosUpgrade status:
//
//	Pending → WaitingForHold(preDrain) → Draining → Upgrading →
//	WaitingForHold(preReboot) → Rebooting → Verifying →
//	WaitingForHold(postUpgrade) → Completed (or Failed)
//
// The decisions are not made here: package internal/disruption holds them
// (the steps, the kinds of disruption, the ledger, the removal decision, the
// rollout's phase and conditions), as functions of what the world said and
// of the Machine's record to the next record and an intent. This package
// observes the world for them (records.go, workload.go, nodereads.go,
// gates.go, removal.go; the templates through internal/templates:
// templates.go, configtargets.go, kubernetes.go; CAPI's in-place updates
// through inplace.Readiness: inplace.go), executes what they decided
// (machine.go, rounds.go, write.go, disruption.go, drainstep.go) and sets
// the status they computed (status.go). Every call to a node's Talos API, a
// read or an effect, goes through package internal/talosnode and its one
// helper, Nodes.With, which dials the node and closes the client; the
// upgrade call is made there outside of the reconcile workers
// (talosnode.UpgradeCalls).
//
// The intent of every side effect (skip-remediation, cordon, upgrade call,
// reboot) is written to the status before the side effect is made, so that a
// controller killed at any instant resumes without repeating an upgrade call
// or skipping a step; what a side effect did is read back from the world (the
// node's Talos version and boot ID, the workload Node) rather than trusted.
//
// A reconcile moves the Machines it can move on together, in rounds: each
// Machine decides its next step on what the world said in the last round,
// the intents of all are persisted in one write, and then what every Machine
// asked for (reads, drain passes, cordons, calls) is done at once (see
// rounds.go).
//
// The controller is event-driven: it watches its Cluster, the Cluster's
// Machines, and, through CAPI's ClusterCache, the workload Nodes and
// Tollgate's Jobs, so the next Machine starts as soon as the previous one is
// verified. It requeues after a delay only while it waits for something that
// sends no event, such as a rebooting Talos API.
package talosupgrade
