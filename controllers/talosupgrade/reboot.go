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
	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// This file answers "how does a reboot pass the gate": a reboot asked for
// on a policy (spec.reboot.after) or on one Machine (the
// upgrade.tollgate.dev/reboot-after annotation) is a record of the Machine
// in its Cluster's rollout, whose kind reboots the node on the version it
// runs (rebootOnly). Every other step (holds, hooks, checks, budget, drain,
// the proof of the reboot, the release) is the upgrade's. Whether a node
// still needs the reboot is read from the node: when it last booted.

// hookAction is what st's Machine goes through, for its hooks.
func hookAction(st *upgradev1.MachineUpgradeStatus) string {
	switch st.Action {
	case upgradev1.MachineActionReboot:
		return hooks.ActionReboot
	case upgradev1.MachineActionConfigure:
		return hooks.ActionConfigure
	case upgradev1.MachineActionKubernetes:
		return hooks.ActionKubernetes
	}
	return hooks.ActionUpgrade
}
