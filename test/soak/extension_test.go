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

package soak

import (
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// handoverMachine is the worker w-0 with the given annotations and
// Updating condition (none when reason is empty).
func handoverMachine(annotations map[string]string, status metav1.ConditionStatus, reason string) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "soak-r0-c0", Name: "w-0", Annotations: annotations}}
	if reason != "" {
		m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineUpdatingCondition, Status: status, Reason: reason, Message: "soak: forged"}}
	}
	return m
}

// TestHandoverLeft: invariant 18 takes a Machine at rest that still
// carries any of CAPI's in-place update marks, or whose in-place update
// failed, for a violation, unless Tollgate's record of it failed (the fault
// is named, invariant 4); a Machine updated in place and given back is not.
func TestHandoverLeft(t *testing.T) {
	failed := &upgradev1.MachineUpgradeStatus{Machine: "w-0", Phase: upgradev1.MachinePhaseFailed, Message: "upgrade failed"}
	completed := &upgradev1.MachineUpgradeStatus{Machine: "w-0", Phase: upgradev1.MachinePhaseCompleted}
	tests := []struct {
		name    string
		machine *clusterv1.Machine
		record  *upgradev1.MachineUpgradeStatus
		// violation is a part of the message, empty for none.
		violation string
	}{
		{name: "updated in place and given back", machine: handoverMachine(nil, metav1.ConditionFalse, clusterv1.MachineNotUpdatingReason), record: completed},
		{name: "never handed over", machine: handoverMachine(map[string]string{"other": "x"}, "", "")},
		{name: "update in progress left", machine: handoverMachine(map[string]string{clusterv1.UpdateInProgressAnnotation: ""}, "", ""), record: completed,
			violation: "annotation " + clusterv1.UpdateInProgressAnnotation},
		{name: "pending UpdateMachine hook left", machine: handoverMachine(map[string]string{runtimev1.PendingHooksAnnotation: "UpdateMachine"}, "", ""),
			violation: "pending hook UpdateMachine"},
		{name: "pending acknowledge move left", machine: handoverMachine(map[string]string{clusterv1.PendingAcknowledgeMoveAnnotation: ""}, "", ""), record: completed,
			violation: "annotation " + clusterv1.PendingAcknowledgeMoveAnnotation},
		{name: "still updating", machine: handoverMachine(nil, metav1.ConditionTrue, clusterv1.MachineInPlaceUpdatingReason), record: completed,
			violation: "condition Updating True"},
		{name: "failed in place without a failed record", machine: handoverMachine(nil, metav1.ConditionFalse, clusterv1.MachineInPlaceUpdateFailedReason), record: completed,
			violation: "in-place update failed"},
		{name: "failed in place, the record failed naming the fault", machine: handoverMachine(map[string]string{clusterv1.UpdateInProgressAnnotation: ""}, metav1.ConditionFalse, clusterv1.MachineInPlaceUpdateFailedReason), record: failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			msg := handoverLeft(tt.machine, tt.record)
			if tt.violation == "" {
				g.Expect(msg).To(BeEmpty())
				return
			}
			g.Expect(msg).To(ContainSubstring("Machine w-0 is left handed over and unfinished"))
			g.Expect(msg).To(ContainSubstring(tt.violation))
		})
	}
}

// TestMoveLeft: a MachineSet that still acknowledges moved Machines at rest
// is a violation of invariant 18.
func TestMoveLeft(t *testing.T) {
	g := NewWithT(t)
	ms := &clusterv1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "r0c0-md-0-abc"}}
	g.Expect(moveLeft(ms)).To(BeEmpty())
	ms.Annotations = map[string]string{clusterv1.AcknowledgedMoveAnnotation: "w-0"}
	g.Expect(moveLeft(ms)).To(ContainSubstring(`MachineSet r0c0-md-0-abc still waits on Machines moved for an in-place update`))
}

// TestNoteHandovers: the observer counts each Machine handed over once,
// reports at once a handover outside a namespace that opts in to the
// extension, and counts a failed in-place update Tollgate's record does not
// share (CAPI calls again; one left so at rest is TestHandoverLeft's).
func TestNoteHandovers(t *testing.T) {
	g := NewWithT(t)
	s := &soak{report: &Report{Faults: map[string]int{}, Checks: map[int]int{}}, cfg: Config{Logf: t.Logf}}
	o := &observer{s: s}
	handed := handoverMachine(map[string]string{clusterv1.UpdateInProgressAnnotation: ""}, metav1.ConditionTrue, clusterv1.MachineInPlaceUpdatingReason)
	machines := &clusterv1.MachineList{Items: []clusterv1.Machine{*handed}}
	ext := &soakCluster{ns: "soak-r0-c0", name: "r0c0", extension: true}
	o.noteHandovers(ext, machines, nil)
	o.noteHandovers(ext, machines, nil)
	g.Expect(s.report.Faults[extensionHandovers]).To(Equal(1))
	g.Expect(s.report.Checks[handoverInvariant]).To(Equal(1))
	g.Expect(s.report.Violations).To(BeEmpty())

	plain := &soakCluster{ns: "soak-r0-c1", name: "r0c1"}
	o.noteHandovers(plain, machines, nil)
	g.Expect(s.report.Violations).To(HaveLen(1))
	g.Expect(s.report.Violations[0].Message).To(ContainSubstring("does not opt in to the extension"))

	failedInPlace := handoverMachine(nil, metav1.ConditionFalse, clusterv1.MachineInPlaceUpdateFailedReason)
	u := &upgradev1.TalosUpgrade{Status: upgradev1.TalosUpgradeStatus{Machines: []upgradev1.MachineUpgradeStatus{{Machine: "w-0", Phase: upgradev1.MachinePhaseCompleted}}}}
	o.noteHandovers(ext, &clusterv1.MachineList{Items: []clusterv1.Machine{*failedInPlace}}, u)
	o.noteHandovers(ext, &clusterv1.MachineList{Items: []clusterv1.Machine{*failedInPlace}}, u)
	g.Expect(s.report.Violations).To(HaveLen(1))
	g.Expect(s.report.Faults[extensionFailedCalls]).To(Equal(1))
}

// TestExtensionClusters: only Clusters whose rollout can complete and that
// are not Kubernetes-capable opt in; round 0 has two where two can (a
// change of each kind), whatever the percentage; none without one.
func TestExtensionClusters(t *testing.T) {
	terminals := []string{faultNeverComesBack, "", "", "", faultUpgradeError, ""}
	perm := []int{0, 1, 2, 3, 4, 5}
	kube := []bool{false, true, false, false, false, false}
	tests := []struct {
		name    string
		percent int
		round   int
		// want is how many opt in, at least, and max how many at most.
		want, max int
	}{
		{name: "off", percent: 0, want: 0, max: 0},
		{name: "round 0 has two at 1%", percent: 1, want: 2, max: 3},
		{name: "all candidates at 100%", percent: 100, want: 3, max: 3},
		{name: "a later round may have none", percent: 1, round: 1, want: 0, max: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := &soak{rng: rand.New(rand.NewPCG(1, 2)), cfg: Config{Clusters: 6, ExtensionPercent: tt.percent, Logf: t.Logf}} //nolint:gosec // A test's draws.
			ext := s.extensionClusters(tt.round, terminals, perm, kube)
			n := 0
			for i, on := range ext {
				if on {
					n++
					g.Expect(terminals[perm[i]]).To(BeEmpty(), "Cluster %d has a terminal fault", i)
					g.Expect(kube[i]).To(BeFalse(), "Cluster %d is Kubernetes-capable", i)
				}
			}
			g.Expect(n).To(And(BeNumerically(">=", tt.want), BeNumerically("<=", tt.max)))
		})
	}
	g := NewWithT(t)
	s := &soak{rng: rand.New(rand.NewPCG(1, 2)), cfg: Config{Clusters: 2, ExtensionPercent: 100, Logf: t.Logf}} //nolint:gosec // A test's draws.
	g.Expect(s.extensionClusters(0, []string{faultNeverComesBack, ""}, []int{0, 1}, []bool{false, true})).To(Equal([]bool{false, false}), "no candidate")
}
