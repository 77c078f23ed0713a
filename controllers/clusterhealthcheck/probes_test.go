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

package clusterhealthcheck

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// rollout returns the TalosUpgrade of cluster, in phase, listing checks in
// its status.
func rollout(cluster string, phase upgradev1.UpgradePhase, labels map[string]string, checks ...string) upgradev1.TalosUpgrade {
	u := upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Name: cluster, Labels: labels}}
	u.Spec.ClusterName = cluster
	u.Status.Phase = phase
	for _, c := range checks {
		u.Status.HealthChecks = append(u.Status.HealthChecks, upgradev1.HealthCheckStatus{Name: c})
	}
	return u
}

func TestPlanProbes(t *testing.T) {
	now := time.Date(2026, 5, 4, 22, 0, 0, 0, time.UTC)
	future := ptr.To(metav1.NewTime(now.Add(7 * time.Second)))
	past := ptr.To(metav1.NewTime(now.Add(-time.Second)))
	check := func(generation, observed int64, results ...upgradev1.ClusterHealthCheckResult) *upgradev1.ClusterHealthCheck {
		return &upgradev1.ClusterHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Name: "ceph", Generation: generation},
			Status:     upgradev1.ClusterHealthCheckStatus{ObservedGeneration: observed, Results: results},
		}
	}
	shardA := map[string]string{clusterv1.WatchLabel: "a"}
	tests := []struct {
		name     string
		check    *upgradev1.ClusterHealthCheck
		upgrades []upgradev1.TalosUpgrade
		shard    string
		clusters []string
		due      []string
		next     time.Time
	}{
		{
			name:  "a rollout that lists the check runs it at once",
			check: check(1, 1), upgrades: []upgradev1.TalosUpgrade{rollout("b", upgradev1.UpgradePhaseWaitingForHealthChecks, nil, "ceph"), rollout("a", upgradev1.UpgradePhaseWaitingForHealthChecks, nil, "other")},
			clusters: []string{"b"}, due: []string{"b"},
		},
		{
			name:     "not before its next run time; when it is past, at once",
			check:    check(1, 1, upgradev1.ClusterHealthCheckResult{Cluster: "a", NextRunTime: future}, upgradev1.ClusterHealthCheckResult{Cluster: "b", NextRunTime: past}),
			upgrades: []upgradev1.TalosUpgrade{rollout("a", upgradev1.UpgradePhaseInProgress, nil, "ceph"), rollout("b", upgradev1.UpgradePhaseInProgress, nil, "ceph")},
			clusters: []string{"a", "b"}, due: []string{"b"}, next: future.Time,
		},
		{
			name:     "a finished rollout keeps its last result, and runs nothing",
			check:    check(1, 1, upgradev1.ClusterHealthCheckResult{Cluster: "a", Result: upgradev1.HealthCheckPassed, NextRunTime: past}),
			upgrades: []upgradev1.TalosUpgrade{rollout("a", upgradev1.UpgradePhaseCompleted, nil, "ceph")},
			clusters: []string{"a"},
		},
		{
			name:     "a Cluster whose rollout no longer lists the check loses its result",
			check:    check(1, 1, upgradev1.ClusterHealthCheckResult{Cluster: "gone", NextRunTime: past}),
			upgrades: []upgradev1.TalosUpgrade{rollout("gone", upgradev1.UpgradePhaseInProgress, nil)},
		},
		{
			name:     "a new spec runs at once",
			check:    check(2, 1, upgradev1.ClusterHealthCheckResult{Cluster: "a", NextRunTime: future, ConsecutiveSuccesses: 3}),
			upgrades: []upgradev1.TalosUpgrade{rollout("a", upgradev1.UpgradePhaseInProgress, nil, "ceph")},
			clusters: []string{"a"}, due: []string{"a"},
		},
		{
			name:  "with a watch filter, the rollouts of the shard only",
			check: check(1, 1), shard: "a",
			upgrades: []upgradev1.TalosUpgrade{rollout("a", upgradev1.UpgradePhaseInProgress, shardA, "ceph"), rollout("b", upgradev1.UpgradePhaseInProgress, nil, "ceph")},
			clusters: []string{"a", "b"}, due: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			plan := planProbes(tt.check, tt.upgrades, tt.shard, now)
			var clusters, due []string
			for _, r := range plan.results {
				clusters = append(clusters, r.Cluster)
			}
			for _, i := range plan.due {
				due = append(due, plan.results[i].Cluster)
				if tt.check.Generation != tt.check.Status.ObservedGeneration {
					g.Expect(plan.results[i].ConsecutiveSuccesses).To(BeZero(), "passes of an earlier spec do not count")
				}
			}
			g.Expect(clusters).To(Equal(tt.clusters))
			g.Expect(due).To(Equal(tt.due))
			g.Expect(plan.next).To(Equal(tt.next))
		})
	}
}
