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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestEndedRolloutCleansUpAndRests fails a rollout while its health check's
// Job runs: the control-plane node never comes back from its reboot while
// the check, due again for the worker that waits, hangs. Whether the failure
// policy halts the rollout (Failed) or pauses it (Paused, no Machine in
// flight), the rollout deletes that Job, gives its workload connection back
// and comes to rest: its TalosUpgrade is not written again. (Found by the
// soak: a rollout paused by its failure policy kept its health-check Job and
// its connection, and was reconciled at every Job and Node change of its
// workload cluster.)
func TestEndedRolloutCleansUpAndRests(t *testing.T) {
	envtestOnly(t)
	tests := []struct {
		action    upgradev1.FailureAction
		wantPhase upgradev1.UpgradePhase
	}{
		{action: upgradev1.FailureActionHalt, wantPhase: upgradev1.UpgradePhaseFailed},
		{action: upgradev1.FailureActionPause, wantPhase: upgradev1.UpgradePhasePaused},
	}
	for _, tt := range tests {
		t.Run(string(tt.action), func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1})
			r.sim.Node("alpha-cp-0").InjectFault(talossim.Faults{NeverComesBack: true})
			// The first run passes and lets the control plane start; the
			// next ones hang (within the check's one-minute timeout).
			r.driver.Script(jobdriver.NamePrefix("tollgate-hc-ceph"), jobdriver.Outcome{}, jobdriver.Outcome{Hang: true}, jobdriver.Outcome{Hang: true})
			r.createCheck(g, "ceph")
			g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
				p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
				p.Spec.FailurePolicy.Action = tt.action
			}))).To(Succeed())
			r.startManager()

			// The check runs again while the control-plane node reboots.
			g.Eventually(func(g Gomega) {
				u := r.upgrade(g)
				g.Expect(machineRecord(u, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseRebooting))
				g.Expect(r.driver.SeenMatching(jobdriver.NamePrefix("tollgate-hc-ceph"))).To(HaveLen(2))
				g.Expect(r.tollgateJobs(g)).To(HaveLen(1))
			}, time.Minute, 100*time.Millisecond).Should(Succeed())

			// The node never comes back: the rollout ends, deletes the
			// running Job and disconnects.
			g.Eventually(func(g Gomega) {
				u := r.upgrade(g)
				g.Expect(u.Status.Phase).To(Equal(tt.wantPhase), "blockedBy: %s", u.Status.BlockedBy)
				g.Expect(machineRecord(u, "alpha-cp-0").Phase).To(Equal(upgradev1.MachinePhaseFailed))
				g.Expect(machineRecord(u, "alpha-worker-0").Phase).To(Equal(upgradev1.MachinePhasePending))
				g.Expect(r.tollgateJobs(g)).To(BeEmpty(), "the health-check Job running when the rollout ended is deleted")
				g.Expect(r.hasConnectionAnnotation(g)).To(BeFalse(), "the workload connection is given back")
				g.Expect(r.connectionUp(g)).To(BeFalse())
				if u.Status.Phase == upgradev1.UpgradePhaseFailed {
					g.Expect(u.Annotations).NotTo(HaveKey(upgradev1.AdmittedAnnotation), "a finished rollout gives its slot back")
				}
			}, time.Minute, 100*time.Millisecond).Should(Succeed())

			// At rest: nothing writes the TalosUpgrade any more.
			version := r.upgrade(g).ResourceVersion
			g.Consistently(func(g Gomega) {
				g.Expect(r.upgrade(g).ResourceVersion).To(Equal(version))
				g.Expect(r.hasConnectionAnnotation(g)).To(BeFalse())
			}, 5*time.Second, 100*time.Millisecond).Should(Succeed())
			g.Expect(r.tollgateJobs(g)).To(BeEmpty())
		})
	}
}
