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

package sampler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sampler"
)

func TestDisrupted(t *testing.T) {
	ready := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}, {Type: corev1.NodeReady, Status: s}}
	}
	for _, tc := range []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"Ready and schedulable", corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)}}, false},
		{"cordoned", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)}}, true},
		{"NotReady", corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionFalse)}}, true},
		{"Ready unknown", corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionUnknown)}}, true},
		{"no Ready condition yet", corev1.Node{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(sampler.Disrupted(&tc.node)).To(Equal(tc.want))
		})
	}
}

// TestNodes changes Nodes one request at a time, as a rollout does, and
// reads what Nodes recorded: every state is seen, however briefly it lasts.
func TestNodes(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	cp, err := envtest.StartControlPlane()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := cp.Client

	create := func(name string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		g.Expect(c.Create(ctx, n)).To(Succeed())
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		g.Expect(c.Status().Update(ctx, n)).To(Succeed())
		return n
	}
	cordon := func(n *corev1.Node, unschedulable bool) {
		n.Spec.Unschedulable = unschedulable
		g.Expect(c.Update(ctx, n)).To(Succeed())
	}
	ready := func(n *corev1.Node, s corev1.ConditionStatus) {
		n.Status.Conditions[0].Status = s
		g.Expect(c.Status().Update(ctx, n)).To(Succeed())
	}
	cp0, w0, w1 := create("cp-0"), create("w-0"), create("w-1")
	// One disrupted before the watch starts: seen in its initial events.
	cordon(w1, true)

	d := sampler.Nodes(ctx, c, func(n *corev1.Node) bool { return strings.HasPrefix(n.Name, "cp-") })
	cordon(w0, true)
	ready(w0, corev1.ConditionFalse)
	// Two workers at once for the span of two requests.
	cordon(w1, false)
	ready(w0, corev1.ConditionTrue)
	cordon(w0, false)
	cordon(cp0, true)
	g.Expect(c.Delete(ctx, cp0)).To(Succeed())
	cordon(w1, true)

	g.Eventually(func(g Gomega) {
		g.Expect(d.Order()).To(Equal([]string{"w-1", "w-0", "cp-0"}))
		controlPlane, workers, total := d.Max()
		g.Expect(controlPlane).To(Equal(1))
		g.Expect(workers).To(Equal(2))
		// The deleted control-plane Node no longer counts when w-1 is
		// cordoned again.
		g.Expect(total).To(Equal(2))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
}
