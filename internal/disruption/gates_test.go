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
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

func record(name, group string, phase upgradev1.MachinePhase) upgradev1.MachineUpgradeStatus {
	role := upgradev1.MachineRoleWorker
	if group == "control-plane" {
		role = upgradev1.MachineRoleControlPlane
	}
	return upgradev1.MachineUpgradeStatus{Machine: name, Node: name, Group: group, Role: role, Phase: phase}
}

// TestNextCandidates checks which Pending Machines of the group under way
// start, as the one ledger admits them, from where the workload's Nodes
// stand (Rollout.Nodes), with no apiserver.
func TestNextCandidates(t *testing.T) {
	pending, running, done := upgradev1.MachinePhasePending, upgradev1.MachinePhaseRebooting, upgradev1.MachinePhaseCompleted
	two, half := intstr.FromInt32(2), intstr.FromString("50%")
	tests := []struct {
		name           string
		records        []upgradev1.MachineUpgradeStatus
		maxUnavailable *intstr.IntOrString
		notReady       []string
		cordoned       []string
		// unread are nodes missing from Rollout.Nodes: not read (the
		// workload cluster not reached yet) or gone.
		unread []string
		// unrecorded are Machines of group md/a without a record (a
		// rollout whose target comes from CAPI has records of the Machines
		// it handed over only).
		unrecorded     []string
		wantGroup      string
		wantQuota      int
		wantCandidates []string
	}{
		{
			name:      "control plane first, one at a time",
			records:   []upgradev1.MachineUpgradeStatus{record("cp-0", "control-plane", pending), record("cp-1", "control-plane", pending), record("w-0", "md/a", pending)},
			wantGroup: "control-plane", wantQuota: 1, wantCandidates: []string{"cp-0", "cp-1"},
		},
		{
			name:      "no second control-plane Machine while one is in flight",
			records:   []upgradev1.MachineUpgradeStatus{record("cp-0", "control-plane", running), record("cp-1", "control-plane", pending)},
			wantGroup: "control-plane", wantQuota: 0,
		},
		{
			name:           "workers within maxUnavailable once the control plane is done",
			records:        []upgradev1.MachineUpgradeStatus{record("cp-0", "control-plane", done), record("w-0", "md/a", running), record("w-1", "md/a", pending), record("w-2", "md/a", pending)},
			maxUnavailable: &two,
			wantGroup:      "md/a", wantQuota: 1, wantCandidates: []string{"w-1", "w-2"},
		},
		{
			name:           "a Node already NotReady counts against the budget",
			records:        []upgradev1.MachineUpgradeStatus{record("w-0", "md/a", pending), record("w-1", "md/a", pending), record("w-2", "md/a", pending)},
			maxUnavailable: &two,
			notReady:       []string{"w-2"},
			wantGroup:      "md/a", wantQuota: 1, wantCandidates: []string{"w-0", "w-1"},
		},
		{
			name:           "a percentage of the group, rounded down, at least one",
			records:        []upgradev1.MachineUpgradeStatus{record("w-0", "md/a", pending), record("w-1", "md/a", pending), record("w-2", "md/a", pending)},
			maxUnavailable: &half,
			wantGroup:      "md/a", wantQuota: 1, wantCandidates: []string{"w-0", "w-1", "w-2"},
		},
		{
			name:      "a Completed Machine whose node is NotReady counts against the budget",
			records:   []upgradev1.MachineUpgradeStatus{record("w-0", "md/a", done), record("w-1", "md/a", pending)},
			notReady:  []string{"w-0"},
			wantGroup: "md/a", wantQuota: 0,
		},
		{
			name:      "a Failed Machine whose node never came back counts against the budget",
			records:   []upgradev1.MachineUpgradeStatus{record("w-0", "md/a", upgradev1.MachinePhaseFailed), record("w-1", "md/a", pending)},
			notReady:  []string{"w-0"},
			wantGroup: "md/a", wantQuota: 0,
		},
		{
			name:      "a cordoned node counts against the budget, whoever cordoned it",
			records:   []upgradev1.MachineUpgradeStatus{record("w-0", "md/a", done), record("w-1", "md/a", pending)},
			cordoned:  []string{"w-0"},
			wantGroup: "md/a", wantQuota: 0,
		},
		{
			name:       "a Machine without a record whose node is NotReady counts against the budget",
			records:    []upgradev1.MachineUpgradeStatus{record("w-1", "md/a", pending)},
			unrecorded: []string{"w-0"},
			notReady:   []string{"w-0"},
			wantGroup:  "md/a", wantQuota: 0,
		},
		{
			name:           "a node that could not be read is a candidate: the start gate says what the rollout waits for",
			records:        []upgradev1.MachineUpgradeStatus{record("w-0", "md/a", pending), record("w-1", "md/a", pending)},
			maxUnavailable: &two,
			unread:         []string{"w-0", "w-1"},
			wantGroup:      "md/a", wantQuota: 2, wantCandidates: []string{"w-0", "w-1"},
		},
		{
			name:           "one group at a time: a Machine of another group in flight counts",
			records:        []upgradev1.MachineUpgradeStatus{record("w-0", "md/a", running), record("w-1", "md/b", pending), record("w-2", "md/b", pending)},
			maxUnavailable: &two,
			wantGroup:      "md/a", wantQuota: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			machines := map[string]*clusterv1.Machine{}
			nodes := map[string]NodeState{}
			names := slices.Clone(tt.unrecorded)
			for _, r := range tt.records {
				names = append(names, r.Node)
			}
			for _, name := range names {
				switch {
				case slices.Contains(tt.unread, name):
				case slices.Contains(tt.notReady, name):
					nodes[name] = NodeNotReady
				case slices.Contains(tt.cordoned, name):
					nodes[name] = NodeCordoned
				default:
					nodes[name] = NodeUp
				}
				opt := builder.WithMachineDeployment("a")
				if strings.HasPrefix(name, "cp-") {
					opt = builder.WithControlPlane()
				} else if i := slices.IndexFunc(tt.records, func(r upgradev1.MachineUpgradeStatus) bool { return r.Machine == name }); i >= 0 {
					opt = builder.WithMachineDeployment(strings.TrimPrefix(tt.records[i].Group, "md/"))
				}
				machines[name] = builder.Machine("ns", name, "alpha", opt)
			}
			s := &Rollout{Machines: machines, Reachable: true, Nodes: nodes, Upgrade: &upgradev1.TalosUpgrade{
				ObjectMeta: metav1.ObjectMeta{Name: "alpha"},
				Spec:       upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{Rollout: upgradev1.RolloutSpec{Workers: upgradev1.WorkerRollout{MaxUnavailable: tt.maxUnavailable}}}},
				Status:     upgradev1.TalosUpgradeStatus{Machines: tt.records},
			}}
			starting, b := s.NextCandidates()
			group, quota := b.Group, b.Room()
			g.Expect(group).To(Equal(tt.wantGroup))
			if tt.wantQuota > 0 {
				g.Expect(quota).To(Equal(tt.wantQuota))
			} else {
				g.Expect(quota).To(BeNumerically("<=", 0))
			}
			var started []string
			for _, c := range starting {
				started = append(started, c.Machine)
			}
			// The ledger admits the candidates one after the other, as
			// many as the budget has room for.
			var want []string
			if tt.wantQuota > 0 {
				want = tt.wantCandidates[:min(tt.wantQuota, len(tt.wantCandidates))]
			}
			g.Expect(started).To(Equal(want))
		})
	}
}

func TestGroupOrder(t *testing.T) {
	g := NewWithT(t)
	u := &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{Rollout: upgradev1.RolloutSpec{
		Order: []upgradev1.RolloutGroup{
			{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}},
			{Name: "storage", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "storage"}}},
		},
	}}}}
	canary := builder.Machine("ns", "w-9", "alpha", builder.WithMachineDeployment("md-a"), builder.WithLabels(map[string]string{"tier": "canary"}))
	storage := builder.Machine("ns", "w-1", "alpha", builder.WithMachineDeployment("md-a"), builder.WithLabels(map[string]string{"role": "storage"}))
	plain := builder.Machine("ns", "w-0", "alpha", builder.WithMachineDeployment("md-a"))
	cp := builder.Machine("ns", "cp-0", "alpha", builder.WithControlPlane())
	records := []upgradev1.MachineUpgradeStatus{
		NewRecord(plain, u, "v1.13.0"), NewRecord(storage, u, "v1.13.0"), NewRecord(canary, u, "v1.13.0"), NewRecord(cp, u, "v1.13.0"),
	}
	SortRecords(&u.Spec, records)
	var order []string
	for _, r := range records {
		order = append(order, r.Group+":"+r.Machine)
	}
	g.Expect(order).To(Equal([]string{"control-plane:cp-0", "canary:w-9", "storage:w-1", "md/md-a:w-0"}))
}
