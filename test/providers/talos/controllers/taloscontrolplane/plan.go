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

// machineState is what plan needs to know of a control-plane Machine.
type machineState struct {
	// name is the Machine's name.
	name string
	// created is its creation time: the oldest goes first.
	created time.Time
	// deleting is true once its deletion started.
	deleting bool
	// outdated is true when its version or TalosConfig spec differs from
	// the TalosControlPlane's.
	outdated bool
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
	// actionDelete deletes step.machine, if etcd keeps its quorum.
	actionDelete
)

// step is the one change plan chooses, and why.
type step struct {
	action action
	// machine is the Machine to delete.
	machine string
	// reason says why, for the log.
	reason string
}

// plan chooses the next change of a control plane of desired replicas
// (at least one) and rollout surge maxSurge (0 or 1) over its machines: one
// change at a time, only once every Machine has a node and none is being
// deleted; outdated Machines are replaced oldest first, creating the new
// one first under maxSurge 1; surplus Machines are deleted oldest first
// (outdated ones before); the last Machine is never deleted.
func plan(desired, maxSurge int, machines []machineState) step {
	sorted := append([]machineState(nil), machines...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].created.Before(sorted[j].created) })

	for _, m := range sorted {
		if m.deleting {
			return step{reason: fmt.Sprintf("waiting for Machine %s to be deleted", m.name)}
		}

		if !m.hasNode {
			return step{reason: fmt.Sprintf("waiting for Machine %s to have a node", m.name)}
		}
	}

	var outdated []machineState

	for _, m := range sorted {
		if m.outdated {
			outdated = append(outdated, m)
		}
	}

	n := len(sorted)

	switch {
	case len(outdated) > 0 && n < desired+maxSurge:
		return step{action: actionCreate, reason: fmt.Sprintf("rolling out: creating the replacement of Machine %s", outdated[0].name)}
	case len(outdated) > 0 && n > 1:
		return step{action: actionDelete, machine: outdated[0].name, reason: "rolling out: deleting the oldest outdated Machine"}
	case len(outdated) > 0:
		return step{reason: fmt.Sprintf("cannot roll out Machine %s with maxSurge 0: it is the only one", outdated[0].name)}
	case n < desired:
		return step{action: actionCreate, reason: fmt.Sprintf("scaling up from %d to %d", n, desired)}
	case n > desired:
		return step{action: actionDelete, machine: sorted[0].name, reason: fmt.Sprintf("scaling down from %d to %d", n, desired)}
	default:
		return step{reason: "the control plane is as desired"}
	}
}
