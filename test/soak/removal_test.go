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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// removalMachine is the worker w-0 of the soak's Cluster r0c0, with its
// Node, carrying Tollgate's deletion hook or not, deleting since deleting
// (zero: not deleting).
func removalMachine(hooked bool, deleting time.Time) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "soak-r0-c0", Name: "w-0", Labels: map[string]string{clusterv1.MachineDeploymentNameLabel: "r0c0-md-0"}}}
	m.Status.NodeRef.Name = "w-0"
	if hooked {
		m.Annotations = map[string]string{hooks.DeletionHookAnnotation: "held"}
	}
	if !deleting.IsZero() {
		m.DeletionTimestamp = &metav1.Time{Time: deleting}
	}
	return m
}

// TestRemovalAfterRejoin: invariant 14 does not take a hook seen before
// the Cluster left its policy for one that holds the Machine after it
// re-joined (Tollgate takes its hooks off when the Cluster leaves): a
// Machine CAPI deletes unhooked soon after the re-join, or later but within
// the time the controllers could not act (seed 20261207), is not a
// violation; one deleted unhooked past hookGrace after the re-join with the
// controllers able to act is; and one whose hook was put back after the
// re-join and released before its preRemoval hook ran is.
func TestRemovalAfterRejoin(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 4, 21, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	grace := hookGrace.Seconds()
	tests := []struct {
		name string
		// rehooked says Tollgate put the hook back after the re-join (seen
		// at 12s); deleted is when CAPI deletes the Machine.
		rehooked  bool
		deleted   float64
		blackouts []interval
		violation string
	}{
		{name: "deleted unhooked 6s after the re-join", deleted: 16},
		{name: "deleted unhooked 5s past hookGrace after the re-join, hookGrace of it without a leader", deleted: 15 + grace, blackouts: []interval{{from: at(11), to: at(11 + grace)}}},
		{name: "deleted unhooked 5s past hookGrace after the re-join, the controllers able to act", deleted: 15 + grace, violation: "which the observer never saw on it since its Cluster opted in"},
		{name: "hooked again after the re-join, released before its preRemoval hook ran", rehooked: true, deleted: 16, violation: "before its preRemoval hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newTestSoak()
			s.blackouts = tt.blackouts
			o := newTestObserver(s)
			c := &soakCluster{ns: "soak-r0-c0", name: "r0c0", optedIn: t0, wl: &workload{Workload: &sandbox.Workload{Jobs: jobdriver.New(nil, jobdriver.Options{})}}}
			observe := func(m *clusterv1.Machine, s float64) {
				o.checkRemovals(c, &clusterv1.MachineList{Items: []clusterv1.Machine{*m}}, at(s))
			}
			observe(removalMachine(true, time.Time{}), 2)
			// Out of its policy from 5s to 10s: Tollgate takes its hook off.
			c.detached = []interval{{from: at(5), to: at(10)}}
			observe(removalMachine(false, time.Time{}), 6)
			if tt.rehooked {
				observe(removalMachine(true, time.Time{}), 12)
			}
			observe(removalMachine(false, time.Time{}), tt.deleted-0.5)
			observe(removalMachine(false, at(tt.deleted)), tt.deleted+0.3)
			if tt.violation == "" {
				g.Expect(s.report.Violations).To(BeEmpty())
				return
			}
			g.Expect(s.report.Violations).To(HaveLen(1))
			g.Expect(s.report.Violations[0].Invariant).To(Equal(14))
			g.Expect(s.report.Violations[0].Message).To(And(ContainSubstring("soak-r0-c0/w-0"), ContainSubstring(tt.violation)))
		})
	}
}
