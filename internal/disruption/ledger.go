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
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// ControlPlaneGroup is the rollout group of the control-plane Machines,
// always disrupted first and one at a time.
const ControlPlaneGroup = "control-plane"

// NodeState is where a Machine's workload Node stands, for the ledger.
type NodeState string

const (
	// NodeUnknown is a node that could not be read.
	NodeUnknown NodeState = ""
	// NodeNone is no node: the Machine has no status.nodeRef, yet or any more.
	NodeNone NodeState = "none"
	// NodeUp is a node Ready and schedulable.
	NodeUp NodeState = "Ready"
	// NodeNotReady is a node whose Ready condition is not True.
	NodeNotReady NodeState = "NotReady"
	// NodeCordoned is a node Ready but unschedulable, whoever cordoned it.
	NodeCordoned NodeState = "cordoned"
)

// Down reports whether a node takes no work: NotReady or cordoned.
func (n NodeState) Down() bool {
	return n == NodeNotReady || n == NodeCordoned
}

// takesNothing reports whether disrupting a Machine whose node stands so
// takes nothing more away: its node is down already, or it has none.
func (n NodeState) takesNothing() bool {
	return n.Down() || n == NodeNone
}

// Member is one Machine of a Cluster as the ledger counts it.
type Member struct {
	// Name is the Machine's name, Group its rollout group.
	Name, Group string
	// Node is where its workload Node stands.
	Node NodeState
	// InFlight is set while the rollout disrupts it: its record is in
	// flight (an upgrade, a reboot, a configuration change).
	InFlight bool
	// Released is set once its removal was released to CAPI's drain, until
	// it is gone: recorded so, or deleting without Tollgate's deletion
	// hook.
	Released bool
	// Kind names what disrupts it while it is in flight, for messages; an
	// upgrade when empty.
	Kind upgradev1.MachineAction
}

// Ledger is the one ledger of a Cluster's disruption budgets: the start of
// an upgrade, of a reboot and of a configuration change, and the release of
// a removal all ask it the same question (Admit).
type Ledger struct {
	// Spec gives each group's maxUnavailable.
	Spec *upgradev1.TalosUpgradeSpec
	// Members are the Cluster's Machines, those CAPI deletes included.
	Members []Member
}

// NewLedger counts a Cluster for the ledger: its Machines (those CAPI
// deletes included), where their nodes stand (by node name; a node not in
// nodes could not be read), the rollout's records in flight and its
// removals released, as recorded or as the Machines show them (deleting,
// without Tollgate's deletion hook).
func NewLedger(spec *upgradev1.TalosUpgradeSpec, machines []*clusterv1.Machine, nodes map[string]NodeState, status *upgradev1.TalosUpgradeStatus) Ledger {
	l := Ledger{Spec: spec, Members: make([]Member, 0, len(machines))}
	index := make(map[string]int, len(machines))
	for _, m := range machines {
		index[m.Name] = len(l.Members)
		node := NodeNone
		if name := m.Status.NodeRef.Name; name != "" {
			node = nodes[name]
		}
		// A Machine CAPI deletes that no deletion hook of Tollgate's holds
		// is on its way out whatever its record says: released by a
		// reconcile whose record was lost or whose cache was behind, by
		// another replica, by hand, or never held.
		released := !m.DeletionTimestamp.IsZero() && !hooks.HasDeletionHook(m)
		l.Members = append(l.Members, Member{Name: m.Name, Group: GroupOf(spec, m), Node: node, Released: released})
	}
	for _, st := range status.Machines {
		if i, ok := index[st.Machine]; ok && st.Phase.InFlight() {
			l.Members[i].InFlight, l.Members[i].Kind = true, st.Action
		}
	}
	for _, rec := range status.Removals {
		if i, ok := index[rec.Machine]; ok && rec.Phase == upgradev1.RemovalPhaseReleased {
			l.Members[i].Released = true
		}
	}
	return l
}

// Ledger is the ledger of the rollout's Cluster: its Machines, where their
// nodes stand (Rollout.Nodes) and the rollout's records and removals.
func (r *Rollout) Ledger() Ledger {
	machines := make([]*clusterv1.Machine, 0, len(r.Machines))
	for _, name := range SortedNames(r.Machines) {
		machines = append(machines, r.Machines[name])
	}
	return NewLedger(&r.Upgrade.Spec, machines, r.Nodes, &r.Upgrade.Status)
}

// Budget is a group's disruption budget as the ledger counts it.
type Budget struct {
	// Group is the group's name; Limit its maxUnavailable, resolved
	// against the size of the group.
	Group string
	Limit int
	// Taken are the Machines that take the budget, by name, each with why.
	Taken map[string]string
}

// Room is how many more Machines of the group may be disrupted now.
func (b Budget) Room() int {
	return b.Limit - len(b.Taken)
}

// Message says what takes the budget, naming every Machine and why.
func (b Budget) Message() string {
	names := make([]string, 0, len(b.Taken))
	for name := range b.Taken {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s (%s)", name, b.Taken[name]))
	}
	return fmt.Sprintf("%d Machine(s) of group %q unavailable, maxUnavailable %d: %s", len(b.Taken), b.Group, b.Limit, strings.Join(parts, ", "))
}

// Budget counts what takes the budget of group, every Machine but except.
// A Machine counts once, whatever disrupts it and whoever's record it has
// (Pending, in flight, Completed, Failed, a removal, none):
//
//   - its node is down: NotReady, or cordoned (by Tollgate, CAPI's drain or
//     anyone);
//   - the rollout disrupts it; a Machine of another group in flight counts
//     too, as the rollout disrupts one group at a time;
//   - its removal was released to CAPI and it is not gone yet.
//
// The limit is the group's maxUnavailable, a percentage of its Machines,
// those CAPI deletes included: the Machine asking counts the same whether it
// is to be upgraded or removed.
func (l Ledger) Budget(group, except string) Budget {
	b := Budget{Group: group, Taken: map[string]string{}}
	size := 0
	for _, m := range l.Members {
		if m.Group == group {
			size++
		}
		if m.Name == except || (m.Group != group && !m.InFlight) {
			continue
		}
		switch {
		case m.InFlight && m.Group != group:
			b.Taken[m.Name] = fmt.Sprintf("%s, group %q", kindNoun(m.Kind), m.Group)
		case m.InFlight:
			b.Taken[m.Name] = kindNoun(m.Kind)
		case m.Released:
			b.Taken[m.Name] = "being removed"
		case m.Node.Down():
			b.Taken[m.Name] = "node " + string(m.Node)
		}
	}
	b.Limit = MaxUnavailable(l.Spec, group, size)
	return b
}

// Verdict is the ledger's answer on one Machine.
type Verdict struct {
	// Admitted is set when the Machine may be disrupted now: its node is
	// down already, or it has none (disrupting it takes nothing more), or
	// its group's budget has room for it.
	Admitted bool
	// Budget is its group's budget without it: what takes the room.
	Budget Budget
}

// Admit answers "may this Machine be disrupted now, and what is taken?",
// for the start of an upgrade, a reboot or a configuration change, and for
// the release of a removal alike.
func (l Ledger) Admit(name string) Verdict {
	i := slices.IndexFunc(l.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Verdict{}
	}
	m := l.Members[i]
	b := l.Budget(m.Group, m.Name)
	return Verdict{Admitted: m.Node.takesNothing() || b.Room() > 0, Budget: b}
}

// Disrupt records that the rollout now disrupts the Machine name (a
// Machine it just started): the next question counts it.
func (l *Ledger) Disrupt(name string, kind upgradev1.MachineAction) {
	for i := range l.Members {
		if l.Members[i].Name == name {
			l.Members[i].InFlight, l.Members[i].Kind = true, kind
		}
	}
}

// MaxUnavailable resolves the disruption budget of a group of size
// Machines.
func MaxUnavailable(spec *upgradev1.TalosUpgradeSpec, group string, size int) int {
	if group == ControlPlaneGroup {
		return int(ptr.Deref(spec.Rollout.ControlPlane.MaxUnavailable, plan.ControlPlaneMaxUnavailable))
	}
	value := spec.Rollout.Workers.MaxUnavailable
	for _, g := range spec.Rollout.Order {
		if g.Name == group && g.MaxUnavailable != nil {
			value = g.MaxUnavailable
		}
	}
	if value == nil {
		return int(plan.DefaultWorkersMaxUnavailable)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(value, size, false)
	if err != nil || n < 1 {
		return 1 // A percentage rounds down to at least one Machine.
	}
	return n
}

// kindNoun names what disrupts a Machine in flight, for the ledger's
// messages: the gerund of its kind.
func kindNoun(action upgradev1.MachineAction) string {
	return KindOf(action).Words().Doing
}
