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

package drain

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, opts ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }

func tainted(key string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
}

func TestRoomElsewhere(t *testing.T) {
	const cpTaint = "node-role.kubernetes.io/control-plane"
	tests := []struct {
		name  string
		nodes []corev1.Node
		want  bool
	}{
		{name: "single node", nodes: []corev1.Node{node("cp-0")}, want: false},
		{name: "a schedulable worker", nodes: []corev1.Node{node("cp-0"), node("w-0")}, want: true},
		{name: "the only other node cordoned", nodes: []corev1.Node{node("cp-0"), node("w-0", cordoned)}, want: false},
		{name: "the only other node NotReady", nodes: []corev1.Node{node("cp-0"), node("w-0", notReady)}, want: false},
		{name: "control planes tainted alike", nodes: []corev1.Node{node("cp-0", tainted(cpTaint)), node("cp-1", tainted(cpTaint))}, want: true},
		{name: "a worker's Pods cannot go to a tainted control plane", nodes: []corev1.Node{node("w-0"), node("cp-0", tainted(cpTaint))}, want: false},
		{name: "a PreferNoSchedule taint keeps nothing away", nodes: []corev1.Node{node("w-0"), node("w-1", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}
		})}, want: true},
		{name: "the other node is being upgraded and will be back", nodes: []corev1.Node{node("w-0"), node("w-1", cordoned, notReady)}, want: true},
		{name: "being deleted", nodes: []corev1.Node{node("w-0"), node("w-2", func(n *corev1.Node) { now := metav1.Now(); n.DeletionTimestamp = &now })}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			returning := func(name string) bool { return name == "w-1" }
			NewWithT(t).Expect(RoomElsewhere(tt.nodes, tt.nodes[0].Name, returning)).To(Equal(tt.want))
		})
	}
}
