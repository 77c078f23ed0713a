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
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// TestLedgerAsksTheSameQuestionFromEachSide: the start of an upgrade, of a
// reboot, of a configuration change and of a Kubernetes change, and the
// release of a removal ask the ledger the same question about a Machine,
// w-1 of MachineDeployment w, whose node is Ready, and get the same answer,
// whatever disrupts the others: a node that is down counts once, whoever's
// record it has (Pending, in flight, Completed, Failed, a removal, none).
func TestLedgerAsksTheSameQuestionFromEachSide(t *testing.T) {
	// sides are who asks about w-1: its record, or its removal.
	sides := []struct {
		name string
		ask  machineState
	}{
		{name: "an upgrade starts", ask: machineState{record: upgradev1.MachinePhasePending, action: upgradev1.MachineActionUpgrade}},
		{name: "a reboot starts", ask: machineState{record: upgradev1.MachinePhasePending, action: upgradev1.MachineActionReboot}},
		{name: "a configuration change starts", ask: machineState{record: upgradev1.MachinePhasePending, action: upgradev1.MachineActionConfigure}},
		{name: "a Kubernetes change starts", ask: machineState{record: upgradev1.MachinePhasePending, action: upgradev1.MachineActionKubernetes}},
		{name: "a removal is released", ask: machineState{removal: upgradev1.RemovalPhaseHeld}},
	}
	completed, failed, draining := upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseFailed, upgradev1.MachinePhaseDraining
	tests := []struct {
		name           string
		others         []machineState
		maxUnavailable intstr.IntOrString
		admitted       bool
		// taken is the budget's message when it has no room.
		taken string
	}{
		{name: "nothing is disrupted", others: []machineState{{name: "w-0", record: completed}, {name: "w-2"}}, maxUnavailable: intstr.FromInt32(1), admitted: true},
		{name: "a Completed Machine's node is NotReady", others: []machineState{{name: "w-0", record: completed, node: NodeNotReady}, {name: "w-2"}},
			maxUnavailable: intstr.FromInt32(1), taken: `1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: w-0 (node NotReady)`},
		{name: "a Failed Machine's node never came back", others: []machineState{{name: "w-0", record: failed, node: NodeNotReady}, {name: "w-2"}},
			maxUnavailable: intstr.FromInt32(1), taken: `1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: w-0 (node NotReady)`},
		{name: "a Machine without a record has its node cordoned by someone else", others: []machineState{{name: "w-0", node: NodeCordoned}, {name: "w-2"}},
			maxUnavailable: intstr.FromInt32(1), taken: `1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: w-0 (node cordoned)`},
		{name: "a Pending Machine's node is NotReady", others: []machineState{{name: "w-0", record: upgradev1.MachinePhasePending, node: NodeNotReady}, {name: "w-2"}},
			maxUnavailable: intstr.FromInt32(1), taken: `1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: w-0 (node NotReady)`},
		{name: "a Machine is upgrading", others: []machineState{{name: "w-0", record: draining}, {name: "w-2"}},
			maxUnavailable: intstr.FromInt32(1), taken: `1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: w-0 (upgrading)`},
		{name: "a Machine rebooting, its node NotReady, counts once", others: []machineState{{name: "w-0", record: upgradev1.MachinePhaseRebooting, action: upgradev1.MachineActionReboot, node: NodeNotReady}, {name: "w-2"}},
			maxUnavailable: intstr.FromInt32(2), admitted: true},
		{name: "a removal was released", others: []machineState{{name: "w-0", removal: upgradev1.RemovalPhaseReleased}, {name: "w-2"}},
			maxUnavailable: intstr.FromInt32(1), taken: `1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: w-0 (being removed)`},
		{name: "a removal held whose node is cordoned (its upgrade cut short)", others: []machineState{{name: "w-0", removal: upgradev1.RemovalPhaseHeld, node: NodeCordoned}, {name: "w-2"}},
			maxUnavailable: intstr.FromInt32(1), taken: `1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: w-0 (node cordoned)`},
		{name: "a control-plane Machine in flight: one group at a time", others: []machineState{{name: "cp-0", controlPlane: true, record: draining}, {name: "w-0"}},
			maxUnavailable: intstr.FromInt32(1), taken: `1 Machine(s) of group "md/w" unavailable, maxUnavailable 1: cp-0 (upgrading, group "control-plane")`},
		{name: "a NotReady node of another group does not take this one's budget", others: []machineState{{name: "cp-0", controlPlane: true, record: completed, node: NodeNotReady}, {name: "w-0"}},
			maxUnavailable: intstr.FromInt32(1), admitted: true},
		{name: "a percentage of the group's Machines, rounded down", others: []machineState{{name: "w-0", node: NodeNotReady}, {name: "w-2"}, {name: "w-3"}},
			maxUnavailable: intstr.FromString("50%"), admitted: true},
		{name: "a percentage counts once what is down twice over", others: []machineState{
			{name: "w-0", removal: upgradev1.RemovalPhaseReleased, node: NodeNotReady},
			{name: "w-2", record: upgradev1.MachinePhaseUpgrading, action: upgradev1.MachineActionConfigure, node: NodeCordoned}, {name: "w-3"},
		}, maxUnavailable: intstr.FromString("50%"),
			taken: `2 Machine(s) of group "md/w" unavailable, maxUnavailable 2: w-0 (being removed), w-2 (changing its configuration)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var answers []Verdict
			for _, side := range sides {
				spec := &upgradev1.TalosUpgradeSpec{}
				spec.Rollout.Workers.MaxUnavailable = &tt.maxUnavailable
				ask := side.ask
				ask.name = "w-1"
				machines, nodes, status := cluster(append([]machineState{ask}, tt.others...))
				v := NewLedger(spec, machines, nodes, status).Admit("w-1")
				answers = append(answers, v)
				t.Run(side.name, func(t *testing.T) {
					g := NewWithT(t)
					g.Expect(v.Admitted).To(Equal(tt.admitted))
					if !tt.admitted {
						g.Expect(v.Budget.Message()).To(Equal(tt.taken))
					}
				})
			}
			g := NewWithT(t)
			for i, a := range answers[1:] {
				g.Expect(a).To(Equal(answers[0]), "%s gets the answer %s does", sides[i+1].name, sides[0].name)
			}
		})
	}
}

// machineState is a Machine of a test Cluster: its node, its record, its
// removal.
type machineState struct {
	name         string
	controlPlane bool
	// node is where its Node stands; Ready when empty.
	node NodeState
	// record is the phase of its record, none when empty; action its
	// action.
	record upgradev1.MachinePhase
	action upgradev1.MachineAction
	// removal is the phase of its removal, none when empty: CAPI deletes it.
	removal upgradev1.RemovalPhase
}

// cluster builds a Cluster's Machines, the states of their nodes and a
// rollout's status from states.
func cluster(states []machineState) ([]*clusterv1.Machine, map[string]NodeState, *upgradev1.TalosUpgradeStatus) {
	var machines []*clusterv1.Machine
	nodes := map[string]NodeState{}
	status := &upgradev1.TalosUpgradeStatus{}
	for _, s := range states {
		opt := builder.WithMachineDeployment("w")
		group := "md/w"
		if s.controlPlane {
			opt, group = builder.WithControlPlane(), ControlPlaneGroup
		}
		m := builder.Machine("ns", s.name, "c", opt)
		nodes[m.Status.NodeRef.Name] = NodeUp
		if s.node != "" {
			nodes[m.Status.NodeRef.Name] = s.node
		}
		if s.record != "" {
			status.Machines = append(status.Machines, upgradev1.MachineUpgradeStatus{Machine: s.name, Group: group, Phase: s.record, Action: s.action})
		}
		if s.removal != "" {
			now := metav1.NewTime(t0)
			m.DeletionTimestamp = &now
			if s.removal == upgradev1.RemovalPhaseHeld {
				metav1.SetMetaDataAnnotation(&m.ObjectMeta, hooks.DeletionHookAnnotation, "")
			}
			status.Removals = append(status.Removals, upgradev1.MachineRemovalStatus{Machine: s.name, Group: group, Cause: upgradev1.RemovalCauseDeleted, Phase: s.removal})
		}
		machines = append(machines, m)
	}
	return machines, nodes, status
}

// TestLedgerAdmitsADownNode: disrupting a Machine whose node is down takes
// nothing more from its group's budget (a removal of a dead node waits for
// no room), and a batch of starts counts the Machines it started.
func TestLedgerAdmitsADownNode(t *testing.T) {
	g := NewWithT(t)
	spec := &upgradev1.TalosUpgradeSpec{}
	two := intstr.FromInt32(2)
	spec.Rollout.Workers.MaxUnavailable = &two
	l := Ledger{Spec: spec, Members: []Member{
		{Name: "w-0", Group: "md/w", Node: NodeNotReady},
		{Name: "w-1", Group: "md/w", Node: NodeUp, InFlight: true},
		{Name: "w-2", Group: "md/w", Node: NodeUp},
		{Name: "w-3", Group: "md/w", Node: NodeUp},
	}}
	g.Expect(l.Admit("w-0").Admitted).To(BeTrue(), "its node is down already")
	g.Expect(l.Admit("w-2").Admitted).To(BeFalse(), "w-0 and w-1 take the room")

	l.Members[0].Node = NodeUp
	g.Expect(l.Admit("w-2").Admitted).To(BeTrue())
	l.Disrupt("w-2", upgradev1.MachineActionReboot)
	v := l.Admit("w-3")
	g.Expect(v.Admitted).To(BeFalse(), "a batch counts the Machines it started")
	g.Expect(v.Budget.Message()).To(ContainSubstring("w-2 (rebooting)"))
	g.Expect(l.Admit("nobody").Admitted).To(BeFalse(), "a Machine the ledger does not know is not admitted")
	l.Members = append(l.Members, Member{Name: "w-4", Group: "md/w", Node: NodeNone})
	g.Expect(l.Admit("w-4").Admitted).To(BeTrue(), "a Machine without a node takes nothing")
	l.Members = append(l.Members, Member{Name: "w-5", Group: "md/w", Node: NodeUnknown})
	g.Expect(l.Admit("w-5").Admitted).To(BeFalse(), "a Machine whose node could not be read takes room")
}

// TestLedgerCountsWhatNoHookHolds: a Machine CAPI deletes whose deletion no
// hook of Tollgate's holds is on its way out, whatever the rollout's record
// says: its removal was released by a reconcile whose record was lost (its
// record still says Held), by another replica, by hand, or never held. It
// takes the budget until it is gone, so that a second removal of a group
// with maxUnavailable 1 waits for it (the soak, seed 20261129: two workers
// released at once).
func TestLedgerCountsWhatNoHookHolds(t *testing.T) {
	g := NewWithT(t)
	machines, nodes, status := cluster([]machineState{
		{name: "w-0", removal: upgradev1.RemovalPhaseHeld},
		{name: "w-1", removal: upgradev1.RemovalPhaseHeld},
		{name: "w-2"},
	})
	spec := &upgradev1.TalosUpgradeSpec{}
	g.Expect(NewLedger(spec, machines, nodes, status).Admit("w-1").Admitted).To(BeTrue(), "both removals are held: one may go")

	delete(machines[0].Annotations, hooks.DeletionHookAnnotation)
	v := NewLedger(spec, machines, nodes, status).Admit("w-1")
	g.Expect(v.Admitted).To(BeFalse(), "w-0 was released although its record says Held")
	g.Expect(v.Budget.Message()).To(ContainSubstring("w-0 (being removed)"))
	g.Expect(NewLedger(spec, machines, nodes, status).Admit("w-2").Admitted).To(BeFalse(), "an upgrade start asks the same")

	machines[0].DeletionTimestamp = nil
	g.Expect(NewLedger(spec, machines, nodes, status).Admit("w-1").Admitted).To(BeTrue(), "a Machine not deleting takes nothing for lacking the hook")
}
