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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
)

// TestBypassOutlivesTheRollout passes another owner's hold with the
// rollout's own bypass: once the rollout has ended, the bypass is cleared
// and the Bypassed condition gone, but the TalosUpgrade's status still says
// who bypassed what, why and when.
func TestBypassOutlivesTheRollout(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	m := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "alpha-cp-0"}, m)).To(Succeed())
	g.Expect(hooks.SetHold(ctx, mgmt.Client, m, upgradev1.HoldPointPreDrain, "backup-operator", "snapshot")).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(machineRecord(r.upgrade(g), m.Name).HeldBy).To(ConsistOf("backup-operator"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	before := time.Now().Add(-time.Second)
	r.updateUpgrade(g, func(u *upgradev1.TalosUpgrade) {
		u.Spec.Bypass = &upgradev1.BypassSpec{HoldOwners: []string{"backup-operator"}, Reason: "the backup operator was uninstalled", RequestedBy: "bob"}
	})
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(u.Spec.Bypass).To(BeNil(), "the rollout's bypass is cleared when it ends")
		g.Expect(conditions.Has(u, upgradev1.BypassedCondition)).To(BeFalse())
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	history := r.upgrade(g).Status.BypassHistory
	g.Expect(history).To(HaveLen(1))
	g.Expect(history[0].Source).To(Equal(upgradev1.BypassSourceUpgrade))
	g.Expect(history[0].RequestedBy).To(Equal("bob"))
	g.Expect(history[0].Reason).To(Equal("the backup operator was uninstalled"))
	g.Expect(history[0].Bypassed).To(Equal("the holds of backup-operator"))
	g.Expect(history[0].AppliedTime.Time).To(BeTemporally(">=", before.Truncate(time.Second)))
}
