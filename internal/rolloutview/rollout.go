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

package rolloutview

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// holdPoints are the hold points in the order a Machine passes them.
var holdPoints = []upgradev1.HoldPoint{upgradev1.HoldPointPreDrain, upgradev1.HoldPointPreReboot, upgradev1.HoldPointPostUpgrade}

// Rollout is one Cluster's rollout as the views show it.
type Rollout struct {
	// Namespace and Cluster name the CAPI Cluster.
	Namespace, Cluster string

	// Upgrade is the Cluster's TalosUpgrade; nil while there is none.
	Upgrade *upgradev1.TalosUpgrade

	// Holds are the hold annotations present on the Cluster's Machines, by
	// Machine name, whether or not the rollout reached them yet; nil when
	// the Machines were not read.
	Holds map[string][]Hold
}

// Hold is one hold annotation on a Machine (see package hooks).
type Hold struct {
	// Point is where the hold holds the Machine.
	Point upgradev1.HoldPoint
	// Owner is the <owner> of the annotation.
	Owner string
}

// String is "preDrain by backup-operator".
func (h Hold) String() string {
	return fmt.Sprintf("%s by %s", h.Point, h.Owner)
}

// HoldsOf returns the holds on a Machine (any object with its annotations,
// a metadata-only one included), in the order the Machine meets them.
func HoldsOf(machine metav1.Object) []Hold {
	var holds []Hold
	for _, point := range holdPoints {
		for _, owner := range hooks.Holds(machine, point) {
			holds = append(holds, Hold{Point: point, Owner: owner})
		}
	}
	return holds
}

// holdsText is "holds: preDrain by backup-operator, preReboot by storage",
// or "" without holds.
func holdsText(holds []Hold) string {
	if len(holds) == 0 {
		return ""
	}
	parts := make([]string, 0, len(holds))
	for _, h := range holds {
		parts = append(parts, h.String())
	}
	return "holds: " + strings.Join(parts, ", ")
}

// BypassText says what a bypass bypasses, who asked for it and why:
// 'health checks, holds of backup-operator; by alice: "INC-4711"'. It is ""
// when nothing is bypassed.
func BypassText(b *upgradev1.BypassSpec) string {
	if !b.Any() {
		return ""
	}
	var what []string
	if b.HealthChecks {
		what = append(what, "health checks")
	}
	if b.MaintenanceWindows {
		what = append(what, "maintenance windows")
	}
	if len(b.HoldOwners) > 0 {
		owners := slices.Clone(b.HoldOwners)
		slices.Sort(owners)
		what = append(what, "holds of "+strings.Join(owners, ", "))
	}
	for _, m := range b.Machines {
		what = append(what, fmt.Sprintf("hook %s of %s (%s)", m.Hook, m.Machine, m.Action))
	}
	by := b.RequestedBy
	if by == "" {
		by = "unknown"
	}
	return fmt.Sprintf("%s; by %s: %q", strings.Join(what, ", "), by, b.Reason)
}

// blocker is what a Machine's line says it waits for: its message, or the
// owners holding it.
func blocker(m *upgradev1.MachineUpgradeStatus) string {
	if m.Message != "" {
		return m.Message
	}
	if len(m.HeldBy) > 0 {
		return "held by " + strings.Join(m.HeldBy, ", ")
	}
	return ""
}

// pendingHolds are the holds of a Machine the rollout has not reached yet,
// or has not recorded: the holds present on the Machine that its record
// does not show it waiting for. A Machine done with its upgrade has none.
func pendingHolds(m *upgradev1.MachineUpgradeStatus, holds []Hold) []Hold {
	if m.Phase.Ended() {
		return nil
	}
	var out []Hold
	for _, h := range holds {
		if m.Phase == upgradev1.MachinePhaseWaitingForHold && m.HoldPoint == h.Point && slices.Contains(m.HeldBy, h.Owner) {
			continue
		}
		// A hold at a point the Machine passed holds nothing any more.
		if slices.Index(machineSteps, string(h.Point))+1 < step(m) {
			continue
		}
		out = append(out, h)
	}
	return out
}
