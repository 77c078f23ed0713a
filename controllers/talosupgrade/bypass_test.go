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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// updateUpgrade changes the TalosUpgrade's spec, retrying on conflicts.
func (r *rollout) updateUpgrade(g Gomega, mutate func(*upgradev1.TalosUpgrade)) {
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		mutate(u)
		g.Expect(mgmt.Client.Update(context.Background(), u)).To(Succeed())
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// eventNotes returns the notes of the events of reason in the test's
// namespace.
func (r *rollout) eventNotes(g Gomega, reason string) []string {
	events := &eventsv1.EventList{}
	g.Expect(mgmt.Client.List(context.Background(), events, client.InNamespace(r.ns))).To(Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// TestHookBypass fails a Machine's preDrain hook past its retries, then
// bypasses it for that Machine: Retry runs the hook once more, Skip counts it
// as succeeded; either way the Machine starts again and the rollout
// completes, the bypass names who asked for it in the Bypassed condition and
// the events, and it is cleared when the rollout ends.
func TestHookBypass(t *testing.T) {
	envtestOnly(t)
	for _, tt := range []struct {
		name   string
		action upgradev1.HookBypassAction
		// then is the outcome of the hook's runs after the bypass.
		then      []jobdriver.Outcome
		wantPhase upgradev1.HookRunPhase
		wantRuns  int
	}{
		{name: "retry", action: upgradev1.HookBypassRetry, wantPhase: upgradev1.HookRunSucceeded, wantRuns: 2},
		{name: "skip", action: upgradev1.HookBypassSkip, then: []jobdriver.Outcome{{Fail: true}}, wantPhase: upgradev1.HookRunSkipped, wantRuns: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			r := newRollout(t, rolloutOptions{controlPlanes: 1})
			isHook := jobdriver.HasLabels(map[string]string{workloadjob.JobKindLabel: workloadjob.JobKindHook})
			r.driver.Script(isHook, append([]jobdriver.Outcome{{Fail: true, Message: "noout: permission denied"}}, tt.then...)...)
			g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.Hooks = []upgradev1.ActionHook{{Name: "noout", Point: upgradev1.HookPointPreDrain, Template: jobTemplate("ceph", "osd", "set", "noout")}}
			}))).To(Succeed())
			r.startManager()
			g.Eventually(func(g Gomega) {
				g.Expect(r.upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseFailed))
			}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())

			// What the admission webhook records as the requester.
			r.updateUpgrade(g, func(u *upgradev1.TalosUpgrade) {
				u.Spec.Bypass = &upgradev1.BypassSpec{
					Machines:    []upgradev1.MachineBypass{{Machine: "alpha-cp-0", Hook: "noout", Action: tt.action}},
					Reason:      "INC-7: the noout hook's RBAC is fixed",
					RequestedBy: "alice@example.com",
				}
			})
			g.Eventually(func(g Gomega) {
				g.Expect(r.eventNotes(g, "HookBypassed")).To(ContainElement(And(ContainSubstring("alice@example.com"), ContainSubstring("INC-7"))))
			}, time.Minute, 200*time.Millisecond).Should(Succeed())
			g.Eventually(func(g Gomega) {
				u := r.upgrade(g)
				g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
				g.Expect(u.Spec.Bypass).To(BeNil(), "the bypass ends with the rollout")
				g.Expect(conditions.Has(u, upgradev1.BypassedCondition)).To(BeFalse())
				rec := machineRecord(u, "alpha-cp-0")
				g.Expect(rec.Hooks).To(HaveLen(1))
				g.Expect(rec.Hooks[0].Phase).To(Equal(tt.wantPhase))
			}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
			g.Expect(r.driver.SeenMatching(isHook)).To(HaveLen(tt.wantRuns))
			g.Expect(r.upgradeCalls("alpha-cp-0")).To(Equal(1))
			g.Eventually(func(g Gomega) { // Written behind the reconcile that ended the rollout.
				g.Expect(r.eventNotes(g, "BypassCleared")).To(ContainElement(ContainSubstring("alice@example.com")))
			}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		})
	}
}

// TestHoldBypass leaves a hold of an owner that is gone on a Machine, and
// bypasses that owner's holds: the Machine passes the hold (whose
// annotation stays), the Bypassed condition and an event say who bypassed
// it, and the rollout completes.
func TestHoldBypass(t *testing.T) {
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
		g.Expect(machineRecord(r.upgrade(g), "alpha-cp-0").HeldBy).To(ConsistOf("backup-operator"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	r.updateUpgrade(g, func(u *upgradev1.TalosUpgrade) {
		u.Spec.Bypass = &upgradev1.BypassSpec{HoldOwners: []string{"backup-operator"}, Reason: "the backup operator was uninstalled", RequestedBy: "bob"}
	})
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) { // Events are written behind the reconcile that records them.
		g.Expect(r.eventNotes(g, "HoldBypassed")).To(ContainElement(And(ContainSubstring("bob"), ContainSubstring("backup-operator"))))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "alpha-cp-0"}, m)).To(Succeed())
	g.Expect(hooks.Holds(m, upgradev1.HoldPointPreDrain)).To(ConsistOf("backup-operator"), "Tollgate never removes another owner's hold")
}

// TestBypassedCondition checks the Bypassed condition while a health-check
// bypass is in force: it names what, who and why.
func TestBypassedCondition(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	r.setHold(g, "alpha-cp-0", upgradev1.HoldPointPreDrain, true)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true, Reason: "the ceph check image is broken", RequestedBy: "carol"}
	}))).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		c := conditions.Get(r.upgrade(g), upgradev1.BypassedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(upgradev1.BypassRequestedReason))
		g.Expect(strings.Contains(c.Message, "health checks bypassed by carol: the ceph check image is broken")).To(BeTrue(), c.Message)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}

// TestRunNow starts a rollout outside its maintenance windows with the
// one-off maintenanceWindows bypass: the Machines start, an event names who
// ran it now, and the bypass ends with the rollout.
func TestRunNow(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1})
	now := time.Now().In(time.UTC)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		// Closed today and tomorrow, whatever the time of the test.
		p.Spec.Maintenance = &upgradev1.MaintenanceSpec{TimeZone: "UTC", ExcludeDates: []string{now.Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly)}}
	}))).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.GetReason(r.upgrade(g), upgradev1.ProgressingCondition)).To(Equal(upgradev1.WaitingForMaintenanceWindowReason))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	r.updateUpgrade(g, func(u *upgradev1.TalosUpgrade) {
		u.Spec.Bypass = &upgradev1.BypassSpec{MaintenanceWindows: true, Reason: "CVE-2026-0001: patch now", RequestedBy: "dave"}
	})
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(u.Spec.Bypass).To(BeNil())
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) { // Events are written behind the reconcile that records them.
		g.Expect(r.eventNotes(g, "MaintenanceWindowsBypassed")).To(ContainElement(And(ContainSubstring("dave"), ContainSubstring("CVE-2026-0001"))))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}
