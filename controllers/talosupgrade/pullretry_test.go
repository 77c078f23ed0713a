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

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestLostPullAnswerIsAskedAgain loses the answer to the image pull of a
// control-plane node on the Talos 1.13 lifecycle API (the node pulled): a
// pull is safe to repeat, so it is asked for again, as a read is, instead of
// failing the Machine (which, under maxFailures: 1, would halt the rollout).
// The install is requested once, after the second pull.
func TestLostPullAnswerIsAskedAgain(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, version: toVersion})
	n := r.sim.Node("alpha-cp-0")
	// Lost once, at the answer: clearing a fault after the call is counted
	// would race the node's answer.
	n.LoseNextResponse(talossim.RPCImagePull)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TalosVersion = patchVersion }))).To(Succeed())
	r.startManager()

	// The first pull reaches the node and its answer is lost; the next one
	// is answered.
	g.Eventually(func() int { return r.sim.Calls("alpha-cp-0", talossim.RPCImagePull) }, time.Minute, 10*time.Millisecond).Should(BeNumerically(">=", 1))
	g.Expect(r.sim.Calls("alpha-cp-0", talossim.RPCUpgrade)).To(BeZero(), "no install without a pull answered")

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	rec := machineRecord(r.upgrade(g), "alpha-cp-0")
	g.Expect(rec.UpgradeInterrupted).To(BeFalse(), "the install request was answered")
	g.Expect(r.sim.Calls("alpha-cp-0", talossim.RPCImagePull)).To(Equal(2), "the pull is asked for again")
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1), "one install")
	for _, node := range r.sim.Nodes() {
		g.Expect(node.Version()).To(Equal(patchVersion))
	}
}
