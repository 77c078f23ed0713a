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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestDeadNodeOfAFailedMachineTakesTheBudget is the regression test of a
// ledger that disagreed with itself (issue 39, item 1): the start of an
// upgrade did not count a Failed or Completed Machine whose node is down,
// which a removal did. With maxUnavailable 1 and a failure policy that
// allows two failures, worker-0 fails because its node never comes back
// (Tollgate uncordons it, and it stays NotReady): worker-1 must not start
// while it is down, and the rollout names the Machine that takes the
// budget. The Nodes of the workload cluster are sampled, not Tollgate's own
// counts: never more than one worker is NotReady or cordoned at once.
func TestDeadNodeOfAFailedMachineTakesTheBudget(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2})
	r.sim.Node("alpha-worker-0").InjectFault(talossim.Faults{NeverComesBack: true})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
		p.Spec.FailurePolicy = upgradev1.FailurePolicySpec{Action: upgradev1.FailureActionHalt, MaxFailures: ptr.To[int32](2)}
	}))).To(Succeed())
	samples := r.sample(ctx)
	const budgetTaken = `1 Machine(s) of group "md/alpha-md-0" unavailable, maxUnavailable 1: alpha-worker-0 (node NotReady)`
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(machineRecord(u, "alpha-worker-0").Phase).To(Equal(upgradev1.MachinePhaseFailed), "blockedBy: %s", u.Status.BlockedBy)
		n := &corev1.Node{}
		g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: "alpha-worker-0"}, n)).To(Succeed())
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "the failed Machine's node is uncordoned")
		// The record is written ahead of the side effects; the rollout's
		// summary (blockedBy) at the end of the same reconcile.
		g.Expect(u.Status.BlockedBy).To(ContainSubstring(budgetTaken), "the rollout names the Machine that takes the budget")
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())

	g.Consistently(func(g Gomega) {
		maxWorkers, order := samples.maxWorkers(), samples.firstDisrupted()
		g.Expect(maxWorkers).To(BeNumerically("<=", 1), "workers NotReady or cordoned at once, disrupted in order %v", order)
		u := r.upgrade(g)
		g.Expect(machineRecord(u, "alpha-worker-1").Phase).To(Equal(upgradev1.MachinePhasePending), "worker-1 waits while worker-0's node is down")
		g.Expect(r.upgradeCalls("alpha-worker-1")).To(BeZero())
		g.Expect(u.Status.BlockedBy).To(ContainSubstring(budgetTaken), "the rollout names the Machine that takes the budget")
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
}
