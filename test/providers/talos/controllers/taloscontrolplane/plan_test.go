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
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestPlan(t *testing.T) {
	t0 := time.Now()
	m := func(name string, age int, opts ...func(*machineState)) machineState {
		s := machineState{name: name, created: t0.Add(-time.Duration(age) * time.Minute), hasNode: true}
		for _, o := range opts {
			o(&s)
		}

		return s
	}
	outdated := func(s *machineState) { s.outdated = true }
	noNode := func(s *machineState) { s.hasNode = false }
	deleting := func(s *machineState) { s.deleting = true }
	annotated := func(s *machineState) { s.deleteAnnotated = true }

	tests := []struct {
		name     string
		desired  int
		maxSurge int
		mode     ScaleDown
		machines []machineState
		want     action
		machine  string
	}{
		{name: "first Machine", desired: 3, maxSurge: 1, want: actionCreate},
		{name: "scale up once the first has a node", desired: 3, maxSurge: 1, machines: []machineState{m("a", 3)}, want: actionCreate},
		{name: "one at a time: wait for a node", desired: 3, maxSurge: 1, machines: []machineState{m("a", 3), m("b", 1, noNode)}, want: actionNone},
		{name: "a user's deletion is replaced once gone", desired: 3, maxSurge: 1, machines: []machineState{m("a", 3, deleting), m("b", 2), m("c", 1)}, want: actionNone},
		{name: "a scale-up waits for a deletion (pre-terminate hook)", desired: 3, maxSurge: 1, mode: PreTerminateHook, machines: []machineState{m("a", 3, deleting), m("b", 2)}, want: actionNone},
		{name: "a scale-up does not wait for a deletion (v0.5)", desired: 3, maxSurge: 1, machines: []machineState{m("a", 3, deleting), m("b", 2)}, want: actionCreate},
		{name: "a scale-down waits for every node", desired: 1, maxSurge: 1, machines: []machineState{m("a", 3), m("b", 1, noNode)}, want: actionNone},
		{name: "a deleting Machine loses its Node again", desired: 1, maxSurge: 1, machines: []machineState{m("a", 3, deleting), m("b", 2), m("c", 1)}, want: actionDeleteNode, machine: "a"},
		{name: "a deleting Machine is waited for (pre-terminate hook)", desired: 1, maxSurge: 1, mode: PreTerminateHook, machines: []machineState{m("a", 3, deleting), m("b", 2), m("c", 1)}, want: actionNone},
		{name: "as desired", desired: 3, maxSurge: 1, machines: []machineState{m("a", 3), m("b", 2), m("c", 1)}, want: actionNone},
		{name: "a deleting Machine counts while it is not gone", desired: 3, maxSurge: 1, machines: []machineState{m("a", 3, deleting), m("b", 2), m("c", 1), m("d", 0)}, want: actionDeleteNode, machine: "a"},
		{name: "scale down the oldest", desired: 1, maxSurge: 1, machines: []machineState{m("b", 2), m("a", 3), m("c", 1)}, want: actionRemove, machine: "a"},
		{name: "scale down the delete-annotated first", desired: 2, maxSurge: 1, machines: []machineState{m("a", 3), m("b", 2, annotated), m("c", 1)}, want: actionRemove, machine: "b"},
		{name: "rollout surges first", desired: 3, maxSurge: 1, machines: []machineState{m("a", 3, outdated), m("b", 2, outdated), m("c", 1, outdated)}, want: actionCreate},
		{name: "rollout removes the oldest outdated after the surge", desired: 3, maxSurge: 1, machines: []machineState{m("a", 4), m("b", 3, outdated), m("c", 2, outdated), m("d", 1)}, want: actionRemove, machine: "b"},
		{name: "rollout removes a delete-annotated outdated first", desired: 3, maxSurge: 1, machines: []machineState{m("a", 4), m("b", 3, outdated), m("c", 2, outdated, annotated), m("d", 1)}, want: actionRemove, machine: "c"},
		{name: "rollout without surge removes first", desired: 3, maxSurge: 0, machines: []machineState{m("a", 3, outdated), m("b", 2, outdated), m("c", 1)}, want: actionRemove, machine: "a"},
		{name: "rollout without surge then creates", desired: 3, maxSurge: 0, machines: []machineState{m("b", 2, outdated), m("c", 1)}, want: actionCreate},
		{name: "a single Machine is never removed without surge", desired: 1, maxSurge: 0, machines: []machineState{m("a", 3, outdated)}, want: actionNone},
		{name: "a single Machine surges", desired: 1, maxSurge: 1, machines: []machineState{m("a", 3, outdated)}, want: actionCreate},
		{name: "the replaced single Machine goes", desired: 1, maxSurge: 1, machines: []machineState{m("a", 3, outdated), m("b", 1)}, want: actionRemove, machine: "a"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			mode := tt.mode
			if mode == "" {
				mode = LeaveEtcdFirst
			}

			got := plan(tt.desired, tt.maxSurge, mode, tt.machines)
			g.Expect(got.action).To(Equal(tt.want), got.reason)
			g.Expect(got.machine).To(Equal(tt.machine))
			g.Expect(got.reason).NotTo(BeEmpty())
		})
	}
}

func TestRemovalKeepsQuorum(t *testing.T) {
	member := func(name string, healthy bool) EtcdMember { return EtcdMember{Hostname: name, Healthy: healthy} }

	tests := []struct {
		name    string
		members []EtcdMember
		remove  string
		want    bool
	}{
		{name: "three healthy, remove one", members: []EtcdMember{member("a", true), member("b", true), member("c", true)}, remove: "a", want: true},
		{name: "one unhealthy left of two", members: []EtcdMember{member("a", true), member("b", true), member("c", false)}, remove: "a", want: false},
		{name: "removing the unhealthy one", members: []EtcdMember{member("a", true), member("b", true), member("c", false)}, remove: "c", want: true},
		{name: "four, one unhealthy, remove a healthy one", members: []EtcdMember{member("a", true), member("b", true), member("c", true), member("d", false)}, remove: "a", want: true},
		{name: "the last member", members: []EtcdMember{member("a", true)}, remove: "a", want: false},
		{name: "not a member", members: []EtcdMember{member("a", true)}, remove: "x", want: true},
		{name: "two to one", members: []EtcdMember{member("a", true), member("b", true)}, remove: "a", want: true},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			got, why := removalKeepsQuorum(tt.members, tt.remove)
			g.Expect(got).To(Equal(tt.want), why)
			g.Expect(why).To(ContainSubstring(tt.remove))
		})
	}
}
