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

package talosupgrade_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// admissions records, for every TalosUpgrade of a namespace, when it was
// first seen admitted and in which phase the others were at that moment.
type admissions struct {
	mu    sync.Mutex
	order []string
	// completedBefore holds, per Cluster, the Clusters whose rollout had
	// Completed when it was first seen admitted.
	completedBefore map[string][]string
}

func watchAdmissions(ctx context.Context, ns string) *admissions {
	a := &admissions{completedBefore: map[string][]string{}}
	go func() {
		seen := map[string]bool{}
		for ctx.Err() == nil {
			list := &upgradev1.TalosUpgradeList{}
			if mgmt.Client.List(ctx, list, client.InNamespace(ns)) == nil {
				var completed []string
				for _, u := range list.Items {
					if u.Status.Phase == upgradev1.UpgradePhaseCompleted {
						completed = append(completed, u.Spec.ClusterName)
					}
				}
				a.mu.Lock()
				for _, u := range list.Items {
					if _, ok := u.Annotations[upgradev1.AdmittedAnnotation]; ok && !seen[u.Name] {
						seen[u.Name] = true
						a.order = append(a.order, u.Spec.ClusterName)
						a.completedBefore[u.Spec.ClusterName] = completed
					}
				}
				a.mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond) // Sampling period, not a wait for a condition.
		}
	}()
	return a
}

func (a *admissions) admitted() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.order...)
}

// createFleet creates n Clusters c0 … c<n-1> in ns, of one control-plane
// Machine on fromVersion each, opted in to the policy to-1-13, their Nodes
// in one shared workload control plane.
func createFleet(ctx context.Context, t *testing.T, ns string, n int) map[string]*sandbox.Cluster {
	t.Helper()
	var shared *sandbox.Workload
	clusters := map[string]*sandbox.Cluster{}
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{
			Namespace: ns, Name: name, ControlPlanes: 1, TalosVersion: fromVersion, Workload: shared,
			ClusterOptions: []builder.ClusterOption{builder.WithPolicy("to-1-13")},
		})
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = c.Stop() })
		shared, clusters[name] = c.Workload, c
	}
	return clusters
}

// TestFleetFailureBudgetAndCanaries rolls a fleet of four Clusters, one at a
// time, with a canary and a failure budget of one Cluster, one of the others
// failing on an A/B rollback: the canary completes before any other Cluster
// is admitted; the failing Cluster exhausts the budget, after which no new
// Cluster is admitted (the policy says why) until the budget is raised.
func TestFleetFailureBudgetAndCanaries(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := namespaceFor(t)
	clusters := createFleet(ctx, t, ns, 4)
	clusters["c0"].Simulator.Node("c0-cp-0").InjectFault(talossim.Faults{Rollback: true})
	watch, stop := context.WithCancel(ctx)
	defer stop()
	seen := watchAdmissions(watch, ns)

	g.Expect(mgmt.Client.Create(ctx, sb.Policy(ns, "to-1-13", toVersion, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Rollout.MaxClustersInProgress = ptr.To[int32](1)
		p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](1)
		p.Spec.Rollout.Canaries = &upgradev1.CanarySpec{ClusterNames: []string{"c2"}}
	}))).To(Succeed())
	NewWithT(t).Expect(sb.StartManager(ctx, manager.Options{Namespace: ns, Concurrency: 4, TalosCallTimeout: 3 * time.Second})).To(Succeed())
	t.Cleanup(func() { _ = sb.StopManager() })

	policy := func(g Gomega) *upgradev1.TalosUpgradePolicy {
		p := &upgradev1.TalosUpgradePolicy{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "to-1-13"}, p)).To(Succeed())
		return p
	}
	phase := func(g Gomega, cluster string) upgradev1.UpgradePhase {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, u)).To(Succeed())
		return u.Status.Phase
	}

	// c0 fails after the canary c2: the budget is spent.
	g.Eventually(func(g Gomega) {
		g.Expect(phase(g, "c0")).To(Equal(upgradev1.UpgradePhaseFailed))
		c := conditions.Get(policy(g), upgradev1.PolicyAdmittingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(upgradev1.FailureBudgetExhaustedReason))
		g.Expect(c.Message).To(ContainSubstring(`"c0"`))
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(policy(g).Status.Canaries).To(Equal([]string{"c2"}))
	admitted := seen.admitted()
	g.Expect(admitted).To(HaveLen(2))
	g.Expect(admitted[0]).To(Equal("c2"), "the canary goes first")
	g.Expect(seen.completedBefore["c0"]).To(ContainElement("c2"), "no other Cluster starts before the canary completed")

	// No new Cluster while the budget is spent.
	g.Consistently(func(g Gomega) {
		g.Expect(seen.admitted()).To(HaveLen(2))
		g.Expect(phase(g, "c1")).NotTo(Equal(upgradev1.UpgradePhaseInProgress))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// Raising the budget is the explicit act that resumes admission.
	g.Eventually(func(g Gomega) {
		p := policy(g)
		p.Spec.Rollout.MaxFailedClusters = ptr.To[int32](2)
		g.Expect(mgmt.Client.Update(ctx, p)).To(Succeed())
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(phase(g, "c1")).To(Equal(upgradev1.UpgradePhaseCompleted))
		g.Expect(phase(g, "c3")).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(seen.admitted()).To(Equal([]string{"c2", "c0", "c1", "c3"}))
	g.Expect(conditions.GetReason(policy(g), upgradev1.PolicyAdmittingCondition)).To(Equal(upgradev1.AdmittingReason))
}
