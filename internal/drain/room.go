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
	corev1 "k8s.io/api/core/v1"
)

// RoomElsewhere reports whether the Pods of node could go to another of
// nodes: one that is Ready and schedulable, or that is only away for the
// moment (returning: being upgraded, it will be back), and that keeps no Pod
// of node away with a taint. A Pod that runs on node tolerates node's
// taints, so another node whose NoSchedule and NoExecute taints node has too
// can take it; a node with a taint of its own cannot be counted on.
//
// Without such a node a drain only moves the Pods to Pending, or waits on
// their PodDisruptionBudgets until it times out: a single-node Cluster, or
// one whose other nodes are all cordoned by someone else, NotReady or kept
// from the Pods by their taints.
func RoomElsewhere(nodes []corev1.Node, node string, returning func(name string) bool) bool {
	var own []corev1.Taint
	for i := range nodes {
		if nodes[i].Name == node {
			own = nodes[i].Spec.Taints
		}
	}
	for i := range nodes {
		n := &nodes[i]
		if n.Name == node || !n.DeletionTimestamp.IsZero() {
			continue
		}
		if (n.Spec.Unschedulable || !ready(n)) && (returning == nil || !returning(n.Name)) {
			continue
		}
		if taintsAmong(n.Spec.Taints, own) {
			return true
		}
	}
	return false
}

// taintsAmong reports whether every NoSchedule and NoExecute taint of
// taints is in among.
func taintsAmong(taints, among []corev1.Taint) bool {
	for _, t := range taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		found := false
		for _, o := range among {
			if o.Key == t.Key && o.Value == t.Value && o.Effect == t.Effect {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// ready reports whether a Node is Ready.
func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
