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
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

func newTestSoak() *soak {
	s := &soak{report: &Report{Checks: map[int]int{}}}
	s.cfg.Defaults()
	return s
}

func newTestObserver(s *soak) *observer {
	return &observer{s: s, over: map[string]bool{}, served: map[string]bool{}, disruptedSince: map[string]time.Time{}, present: map[string]map[string]bool{}}
}

// remediated is a worker Machine its MachineHealthCheck marked for
// remediation, with or without Tollgate's skip-remediation annotation.
func remediated(name string, protected bool) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "soak-r0-c0", Name: name}}
	if protected {
		m.Annotations = map[string]string{clusterv1.MachineSkipRemediationAnnotation: ""}
	}
	m.Status.Conditions = []metav1.Condition{
		{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionFalse, Message: "Node NotReady for more than 4s"},
		{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: clusterv1.MachineOwnerRemediatedWaitingForRemediationReason},
	}
	return m
}

// TestRemediationInvariant: a Machine marked for remediation while its
// record said, in this sample and the one before, that Tollgate disrupts it
// and has not given up on it is a violation of invariant 11, reported once;
// one Tollgate failed (released), one still Pending, one whose record holds
// only the intent to disrupt it (Draining or held before its drain, and the
// Machine not yet annotated), or one first seen already marked is not.
func TestRemediationInvariant(t *testing.T) {
	draining := upgradev1.MachineUpgradeStatus{Machine: "w-0", Phase: upgradev1.MachinePhaseDraining, Cordoned: true, SkipRemediationSet: true}
	failed := upgradev1.MachineUpgradeStatus{Machine: "w-0", Phase: upgradev1.MachinePhaseFailed, Cordoned: true}
	pending := upgradev1.MachineUpgradeStatus{Machine: "w-0", Phase: upgradev1.MachinePhasePending}
	heldBeforeDrain := upgradev1.MachineUpgradeStatus{Machine: "w-0", Phase: upgradev1.MachinePhaseWaitingForHold, HoldPoint: upgradev1.HoldPointPreDrain}
	heldBeforeReboot := upgradev1.MachineUpgradeStatus{Machine: "w-0", Phase: upgradev1.MachinePhaseWaitingForHold, HoldPoint: upgradev1.HoldPointPreReboot, Cordoned: true}
	tests := []struct {
		name      string
		before    *upgradev1.MachineUpgradeStatus // nil: not seen before
		marked    upgradev1.MachineUpgradeStatus
		protected bool // the Machine carries the skip-remediation annotation
		violation bool
	}{
		{name: "remediated while draining", before: &draining, marked: draining, protected: true, violation: true},
		{name: "remediated while held before its reboot", before: &heldBeforeReboot, marked: heldBeforeReboot, violation: true},
		{name: "remediated while held before its reboot, protected", before: &heldBeforeReboot, marked: heldBeforeReboot, protected: true, violation: true},
		{name: "remediated while draining, before its protection was written", before: &draining, marked: draining},
		{name: "remediated while held before its drain", before: &heldBeforeDrain, marked: heldBeforeDrain},
		{name: "remediated once failed", before: &draining, marked: failed},
		{name: "remediated while pending", before: &pending, marked: pending},
		{name: "disrupted only after the mark was seen", before: &pending, marked: draining, protected: true},
		{name: "first seen already marked", marked: draining, protected: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newTestSoak()
			o := newTestObserver(s)
			c := &soakCluster{ns: "soak-r0-c0", name: "r0c0"}
			tr := &machineTrack{}
			t0 := time.Now()
			if tt.before != nil {
				healthy := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "w-0"}}
				o.checkRemediation(c, healthy, tr, *tt.before, true, readTimes{machinesRead: t0, recordRead: t0})
			}
			t1 := t0.Add(samplePeriod)
			o.checkRemediation(c, remediated("w-0", tt.protected), tr, tt.marked, true, readTimes{machinesRead: t1, recordRead: t1})
			o.checkRemediation(c, remediated("w-0", tt.protected), tr, tt.marked, true, readTimes{machinesRead: t1.Add(samplePeriod), recordRead: t1.Add(samplePeriod)})
			g.Expect(s.report.Checks[11]).To(Equal(1), "each remediation is judged once")
			if !tt.violation {
				g.Expect(s.report.Violations).To(BeEmpty())
				return
			}
			g.Expect(s.report.Violations).To(HaveLen(1))
			g.Expect(s.report.Violations[0].Invariant).To(Equal(11))
			g.Expect(s.report.Violations[0].Message).To(And(ContainSubstring("soak-r0-c0/w-0"), ContainSubstring("phase "+string(tt.marked.Phase))))
		})
	}
}

// budgetNode is a Node of the soak's Cluster r0c0: cordoned, or NotReady
// after it served.
func budgetNode(name string, cordoned, ready bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.Unschedulable = cordoned
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	return n
}

func budgetMachine(name string, deleting bool) clusterv1.Machine {
	m := clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "soak-r0-c0", Name: name, Labels: map[string]string{clusterv1.MachineDeploymentNameLabel: "r0c0-md-0"}}}
	m.Status.NodeRef.Name = name
	if deleting {
		m.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return m
}

// heldMachine is a worker Machine CAPI deletes whose removal Tollgate's
// deletion hook still holds.
func heldMachine(name string) clusterv1.Machine {
	m := budgetMachine(name, true)
	m.Annotations = map[string]string{hooks.DeletionHookAnnotation: "held"}
	return m
}

func controlPlaneMachine(name string) clusterv1.Machine {
	m := budgetMachine(name, false)
	m.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
	return m
}

// TestBudgetInvariant: invariant 1 counts every disruption, whatever its
// cause: what Tollgate's rollout disrupts (cordoned, or NotReady after it
// served), the removals its gate released to CAPI's drain (once seen
// released in an earlier sample than the Nodes' read), and the nodes the
// soak killed; a budget overrun by a node dying, or by a removal CAPI made
// while the Cluster was out of its policy, is Tollgate's only if Tollgate
// started a Machine after it.
func TestBudgetInvariant(t *testing.T) {
	tests := []struct {
		name string
		// nodes: cordoned by Tollgate (w-0, w-1), killed (w-2), deleted by
		// CAPI (w-3, w-4); started says when Tollgate's were first seen
		// disrupted, relative to the kill.
		nodes    []corev1.Node
		machines []clusterv1.Machine
		// released are the Machines seen released in an earlier sample;
		// exempt those deleted while the Cluster was out of its policy.
		released, exempt []string
		started          time.Duration
		violation        bool
	}{
		{
			name:     "within the budget",
			nodes:    []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false)},
			machines: []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false)},
		},
		{
			name:      "three disrupted by Tollgate",
			nodes:     []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-4", true, true)},
			machines:  []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), budgetMachine("w-4", false)},
			violation: true,
		},
		{
			name:      "a removal released beside two upgrades",
			nodes:     []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-3", true, true)},
			machines:  []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), budgetMachine("w-3", true)},
			released:  []string{"w-3"},
			violation: true,
		},
		{
			name:      "a removal released after its node is gone still counts",
			nodes:     []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false)},
			machines:  []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), budgetMachine("w-3", true)},
			released:  []string{"w-3"},
			violation: true,
		},
		{
			name:     "a removal first seen released in this sample is not counted yet",
			nodes:    []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-3", true, true)},
			machines: []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), budgetMachine("w-3", true)},
		},
		{
			name:     "a removal held by Tollgate's hook takes nothing down",
			nodes:    []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-3", false, true)},
			machines: []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), heldMachine("w-3")},
		},
		{
			name:      "a held removal whose node an upgrade left cordoned",
			nodes:     []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-3", true, true)},
			machines:  []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), heldMachine("w-3")},
			violation: true,
		},
		{
			name:      "three removals released at once",
			nodes:     []corev1.Node{budgetNode("w-0", false, true), budgetNode("w-3", true, true), budgetNode("w-4", true, true)},
			machines:  []clusterv1.Machine{budgetMachine("w-0", true), budgetMachine("w-3", true), budgetMachine("w-4", true)},
			released:  []string{"w-0", "w-3", "w-4"},
			violation: true,
		},
		{
			name:     "a worker removed while the control plane is disrupted",
			nodes:    []corev1.Node{budgetNode("cp-0", true, false), budgetNode("w-3", true, true)},
			machines: []clusterv1.Machine{controlPlaneMachine("cp-0"), budgetMachine("w-3", true)},
			released: []string{"w-3"},
		},
		{
			name:     "a removal CAPI made while the Cluster was out of its policy",
			nodes:    []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-3", true, true)},
			machines: []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), budgetMachine("w-3", true)},
			released: []string{"w-3"},
			exempt:   []string{"w-3"},
			started:  -time.Minute,
		},
		{
			name:     "a node dies while the budget is spent",
			nodes:    []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-2", false, false)},
			machines: []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), budgetMachine("w-2", false)},
			started:  -time.Minute,
		},
		{
			name:     "a dead node's remediation released while the budget is spent",
			nodes:    []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-2", true, false)},
			machines: []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), budgetMachine("w-2", true)},
			released: []string{"w-2"},
			started:  -time.Minute,
		},
		{
			name:     "the control plane disrupted while a worker is dead",
			nodes:    []corev1.Node{budgetNode("cp-0", true, false), budgetNode("w-2", false, false)},
			machines: []clusterv1.Machine{controlPlaneMachine("cp-0"), budgetMachine("w-2", false)},
			started:  time.Minute,
		},
		{
			name:      "the control plane and a worker disrupted by Tollgate",
			nodes:     []corev1.Node{budgetNode("cp-0", true, false), budgetNode("w-0", true, true)},
			machines:  []clusterv1.Machine{controlPlaneMachine("cp-0"), budgetMachine("w-0", false)},
			violation: true,
		},
		{
			name:      "Tollgate starts one after a node died",
			nodes:     []corev1.Node{budgetNode("w-0", true, true), budgetNode("w-1", true, false), budgetNode("w-2", false, false)},
			machines:  []clusterv1.Machine{budgetMachine("w-0", false), budgetMachine("w-1", false), budgetMachine("w-2", false)},
			started:   time.Minute,
			violation: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newTestSoak()
			o := newTestObserver(s)
			killed := time.Now().Add(-2 * time.Minute)
			c := &soakCluster{ns: "soak-r0-c0", name: "r0c0", maxUnavailable: 2, killed: map[string]time.Time{"w-2": killed}, removals: map[string]*removalTrack{}}
			for _, m := range tt.machines {
				o.served[c.ns+"/"+m.Name] = true
			}
			sampleStart := killed.Add(tt.started)
			for _, name := range tt.released {
				c.removals[name] = &removalTrack{deleting: killed, released: sampleStart.Add(-time.Second)}
				if slices.Contains(tt.exempt, name) {
					c.removals[name].exempt = "its Cluster was out of its policy"
				}
			}
			o.checkBudget(c, &corev1.NodeList{Items: tt.nodes}, &clusterv1.MachineList{Items: tt.machines}, sampleStart, sampleStart.Add(time.Second))
			if !tt.violation {
				g.Expect(s.report.Violations).To(BeEmpty())
				return
			}
			g.Expect(s.report.Violations).To(HaveLen(1))
			g.Expect(s.report.Violations[0].Invariant).To(Equal(1))
		})
	}
}

// TestChanges: what changed between two reads of the objects names the
// object, its resourceVersions, the field manager that wrote it and the
// fields, a condition by its type.
func TestChanges(t *testing.T) {
	g := NewWithT(t)
	early := metav1.NewTime(time.Date(2026, 12, 4, 19, 0, 0, 0, time.UTC))
	late := metav1.NewTime(early.Add(time.Minute))
	before := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "soak-r0-c0", Name: "w-0", ResourceVersion: "10",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "capi-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &early}}}}
	before.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	after := before.DeepCopy()
	after.ResourceVersion = "11"
	after.ManagedFields[0].Time = &late
	after.Status.Conditions = append([]metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, LastTransitionTime: late}}, after.Status.Conditions...)
	same := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "soak-r0-c0", Name: "r0c0", ResourceVersion: "5"}}
	gone := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "soak-r0-c0", Name: "w-1", ResourceVersion: "7"}}

	got := changes(
		objectSnapshot{"Machine soak-r0-c0/w-0": before, "Cluster soak-r0-c0/r0c0": same, "Machine soak-r0-c0/w-1": gone},
		objectSnapshot{"Machine soak-r0-c0/w-0": after, "Cluster soak-r0-c0/r0c0": same.DeepCopy()},
	)
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[0]).To(Equal("Machine soak-r0-c0/w-0 changed, resourceVersion 10 -> 11, written by capi-manager (Update status): " +
		`status.conditions[type=HealthCheckSucceeded].lastTransitionTime: "" -> "2026-12-04T19:01:00Z"; ` +
		`status.conditions[type=HealthCheckSucceeded].status: "" -> "True"; status.conditions[type=HealthCheckSucceeded].type: "" -> "HealthCheckSucceeded"`))
	g.Expect(got[1]).To(Equal("Machine soak-r0-c0/w-1 deleted (resourceVersion 7)"))
	g.Expect(changes(objectSnapshot{"Cluster soak-r0-c0/r0c0": same}, objectSnapshot{"Cluster soak-r0-c0/r0c0": same})).To(BeEmpty())
}

// TestSpecUnobserved: a Machine whose spec changed after CAPI last wrote a
// condition of it (Tollgate set its spec.version) keeps its Cluster from
// rest until CAPI observed it; a condition without an observedGeneration
// (the providers' stand-ins write some) says nothing.
func TestSpecUnobserved(t *testing.T) {
	machine := func(generation int64, observed ...int64) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Generation: generation}}
		for _, o := range observed {
			m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: "T", ObservedGeneration: o})
		}
		return m
	}
	for _, tt := range []struct {
		name string
		m    *clusterv1.Machine
		want bool
	}{
		{name: "observed", m: machine(4, 4, 4)},
		{name: "a condition behind", m: machine(4, 4, 3), want: true},
		{name: "no observedGeneration", m: machine(4, 0)},
		{name: "no condition", m: machine(4)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := specUnobserved(tt.m); got != tt.want {
				t.Errorf("specUnobserved = %t, want %t", got, tt.want)
			}
		})
	}
}
