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

package taloscontrolplane

import (
	"fmt"
	"sort"
	"time"
)

// ScaleDown is how the control plane takes a Machine out: the released
// provider's way, or the unreleased variant's (a switch of the stand-in).
type ScaleDown string

const (
	// LeaveEtcdFirst is CACPPT v0.5.x's scale-down (controllers/scale.go,
	// scaleDownControlPlane): the chosen Machine's node leaves etcd over the
	// Talos API (gracefulEtcdLeave: forfeit the leadership, leave; a failed
	// leave is ignored), the Machine is deleted, and its workload Node is
	// deleted by the provider itself, all before CAPI consults a deletion
	// hook; while a deleted Machine is not gone, every scale-down deletes its
	// Node again and does nothing else.
	LeaveEtcdFirst ScaleDown = "LeaveEtcdFirst"
	// PreTerminateHook is the unreleased variant's (siderolabs CACPPT PR
	// #270; sidero-community's fork, controllers/preterminate.go and
	// scale.go): every control-plane Machine carries the pre-terminate hook
	// PreTerminateHookAnnotation, a scale-down only deletes the Machine, and
	// its node leaves etcd once CAPI has drained it and waits at the hook,
	// which the provider then removes; CAPI deletes the Node.
	PreTerminateHook ScaleDown = "PreTerminateHook"
)

// machineState is what plan needs to know of a control-plane Machine.
type machineState struct {
	// name is the Machine's name.
	name string
	// created is its creation time: the oldest goes first.
	created time.Time
	// deleting is true once its deletion started.
	deleting bool
	// outdated is true when it needs a rollout: its version, its
	// InfraMachine's template or its TalosConfig spec differs from the
	// TalosControlPlane's (never with the OnDelete strategy).
	outdated bool
	// deleteAnnotated is true when it carries cluster.x-k8s.io/delete-machine.
	deleteAnnotated bool
	// hasNode is true once it has a status.nodeRef.
	hasNode bool
}

// action is what a step does.
type action int

const (
	// actionNone changes nothing.
	actionNone action = iota
	// actionCreate creates one control-plane Machine.
	actionCreate
	// actionRemove takes step.machine out of the control plane, as the
	// ScaleDown mode does it, if etcd keeps its quorum.
	actionRemove
	// actionDeleteNode deletes the workload Node of step.machine, which is
	// being deleted (LeaveEtcdFirst).
	actionDeleteNode
)

// step is the one change plan chooses, and why.
type step struct {
	action action
	// machine is the Machine to remove, or whose Node to delete.
	machine string
	// reason says why, for the log.
	reason string
}

// plan chooses the next change of a control plane of desired replicas
// (at least one) and rollout surge maxSurge (0 or 1) over its machines, as
// CACPPT's reconcileMachines and upgradeControlPlane do
// (controllers/taloscontrolplane_controller.go, upgrade.go): Machines that
// need a rollout are replaced, a new one first while the control plane has
// fewer than desired+maxSurge Machines (counting those being deleted);
// otherwise it scales up to desired or down from it, one Machine at a time
// (scaleUp). A scale-down (scaleDown) waits for every Machine to have a node
// and, with LeaveEtcdFirst, deletes the Node of a Machine being deleted
// instead; with PreTerminateHook it waits for that Machine to be gone. The
// last Machine is never removed.
func plan(desired, maxSurge int, mode ScaleDown, machines []machineState) step {
	sorted := append([]machineState(nil), machines...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].created.Before(sorted[j].created) })

	var outdated []machineState

	for _, m := range sorted {
		if m.outdated && !m.deleting {
			outdated = append(outdated, m)
		}
	}

	n := len(sorted)

	switch {
	case len(outdated) > 0 && n < desired+maxSurge:
		return scaleUp(mode, sorted, fmt.Sprintf("rolling out: creating the replacement of Machine %s", outdated[0].name))
	case len(outdated) > 0:
		return scaleDown(mode, sorted, outdated, "rolling out")
	case n < desired:
		return scaleUp(mode, sorted, fmt.Sprintf("scaling up from %d to %d", n, desired))
	case n > desired:
		return scaleDown(mode, sorted, nil, fmt.Sprintf("scaling down from %d to %d", n, desired))
	default:
		return step{reason: "the control plane is as desired"}
	}
}

// scaleUp creates a Machine once every Machine has a node and, with
// PreTerminateHook, none is being deleted, as the variant's preflight checks
// ask; CACPPT v0.5.x does not wait, the stand-in does, one Machine at a
// time.
func scaleUp(mode ScaleDown, sorted []machineState, why string) step {
	for _, m := range sorted {
		switch {
		case !m.hasNode:
			return step{reason: fmt.Sprintf("%s: waiting for Machine %s to have a node", why, m.name)}
		case m.deleting && mode == PreTerminateHook:
			return step{reason: fmt.Sprintf("%s: waiting for Machine %s to be deleted", why, m.name)}
		}
	}

	return step{action: actionCreate, reason: why}
}

// scaleDown chooses the Machine a scale-down removes, as CACPPT's
// scaleDownControlPlane and selectMachineForScaleDown do: none of the last
// Machine, none while a Machine has no node, the Node of a Machine being
// deleted (LeaveEtcdFirst) or none while one is (PreTerminateHook), else
// the oldest of the delete-annotated outdated Machines, the delete-annotated
// ones, the outdated ones, all of them.
func scaleDown(mode ScaleDown, sorted, outdated []machineState, why string) step {
	if len(sorted) == 1 {
		return step{reason: fmt.Sprintf("%s: cannot scale the control plane down to no Machine (Machine %s is the only one)", why, sorted[0].name)}
	}

	for _, m := range sorted {
		if !m.hasNode {
			return step{reason: fmt.Sprintf("%s: waiting for Machine %s to have a node", why, m.name)}
		}
	}

	for _, m := range sorted {
		if !m.deleting {
			continue
		}

		if mode == LeaveEtcdFirst {
			return step{action: actionDeleteNode, machine: m.name, reason: fmt.Sprintf("%s: Machine %s is being deleted", why, m.name)}
		}

		return step{reason: fmt.Sprintf("%s: waiting for Machine %s to be deleted", why, m.name)}
	}

	annotated := func(ms []machineState) []machineState {
		var out []machineState

		for _, m := range ms {
			if m.deleteAnnotated {
				out = append(out, m)
			}
		}

		return out
	}

	candidates := sorted
	switch {
	case len(annotated(outdated)) > 0:
		candidates = annotated(outdated)
	case len(annotated(sorted)) > 0:
		candidates = annotated(sorted)
	case len(outdated) > 0:
		candidates = outdated
	}

	return step{action: actionRemove, machine: candidates[0].name, reason: why + ": removing the Machine chosen for the scale-down"}
}
