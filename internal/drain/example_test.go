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

package drain_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/drain"
)

// How a reconcile drives a drain: cordon once, then one Drain call per
// reconcile until it is done, with the MachineDrainRules of the Machine;
// the deadline is the caller's.
func ExampleDrain() {
	var cs kubernetes.Interface // A clientset of the workload cluster.
	ctx := context.Background()
	// The MachineDrainRules of the Machine's namespace, read from the
	// management cluster, with the labels of the Machine and its Cluster.
	var all []clusterv1.MachineDrainRule
	rules, err := drain.RulesFor(all, map[string]string{"pool": "gpu"}, map[string]string{"stage": "production"})
	if err != nil {
		fmt.Println("requeue with backoff, without draining:", err)
		return
	}

	if err := drain.Cordon(ctx, cs, "worker-0"); err != nil {
		fmt.Println("requeue with backoff:", err)
		return
	}
	res, err := drain.Drain(ctx, cs, "worker-0", upgradev1.DrainSpec{}, rules)
	switch {
	case err != nil:
		fmt.Println("requeue with backoff:", err)
	case !res.Done:
		fmt.Println("still draining:", res.Message) // Requeue, unless the drain deadline passed.
	default:
		fmt.Println("drained")
	}
}

// The rules of a Machine are the MachineDrainRules whose machines selectors
// match its labels and its Cluster's, tried in name order for each Pod.
func ExampleRulesFor() {
	rules := []clusterv1.MachineDrainRule{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph-osd-last"},
			Spec: clusterv1.MachineDrainRuleSpec{
				Drain: clusterv1.MachineDrainRuleDrainConfig{Behavior: clusterv1.MachineDrainRuleDrainBehaviorDrain, Order: ptr.To[int32](100)},
				Pods:  []clusterv1.MachineDrainRulePodSelector{{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-osd"}}}},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu-jobs-complete"},
			Spec: clusterv1.MachineDrainRuleSpec{
				Drain:    clusterv1.MachineDrainRuleDrainConfig{Behavior: clusterv1.MachineDrainRuleDrainBehaviorWaitCompleted},
				Machines: []clusterv1.MachineDrainRuleMachineSelector{{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}}}},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "staging-skips-logging"},
			Spec: clusterv1.MachineDrainRuleSpec{
				Drain:    clusterv1.MachineDrainRuleDrainConfig{Behavior: clusterv1.MachineDrainRuleDrainBehaviorSkip},
				Machines: []clusterv1.MachineDrainRuleMachineSelector{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"stage": "staging"}}}},
			},
		},
	}
	for _, pool := range []string{"gpu", "cpu"} {
		r, err := drain.RulesFor(rules, map[string]string{"pool": pool}, map[string]string{"stage": "production"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(pool, r.Names())
	}
	// Output:
	// gpu [gpu-jobs-complete rook-ceph-osd-last]
	// cpu [rook-ceph-osd-last]
}
