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

package disruption

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

func TestRebootAsked(t *testing.T) {
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	tests := []struct {
		name        string
		policy      metav1.Time
		annotation  string
		wantDue     *metav1.Time
		wantNext    time.Time
		wantInvalid string
	}{
		{name: "nothing asked"},
		{name: "the policy's reboot, due", policy: at(-time.Hour), wantDue: ago(time.Hour)},
		{name: "the policy's reboot, still to come", policy: at(time.Hour), wantNext: t0.Add(time.Hour)},
		{name: "the Machine's reboot, due", annotation: t0.Add(-time.Minute).Format(time.RFC3339), wantDue: ago(time.Minute)},
		{
			name: "the later of two due reboots", policy: at(-time.Hour), annotation: t0.Add(-time.Minute).Format(time.RFC3339),
			wantDue: ago(time.Minute),
		},
		{
			name: "a due reboot and one to come", policy: at(-time.Hour), annotation: t0.Add(time.Minute).Format(time.RFC3339),
			wantDue: ago(time.Hour), wantNext: t0.Add(time.Minute),
		},
		{name: "due at the very time", policy: at(0), wantDue: ptrTime(t0)},
		{
			name: "an annotation that is not a time is said and ignored", policy: at(-time.Hour), annotation: "tomorrow",
			wantDue: ago(time.Hour), wantInvalid: `annotation upgrade.tollgate.dev/reboot-after="tomorrow" of Machine m-0 is not an RFC 3339 time`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{}
			u.Spec.Reboot.After = tt.policy
			m := builder.Machine("ns", "m-0", "c")
			if tt.annotation != "" {
				m.Annotations = map[string]string{upgradev1.RebootAfterAnnotation: tt.annotation}
			}
			req := RebootAsked(u, m, t0)
			if tt.wantDue == nil {
				g.Expect(req.Due).To(BeNil())
			} else {
				g.Expect(req.Due).NotTo(BeNil())
				g.Expect(req.Due.Time).To(BeTemporally("==", tt.wantDue.Time))
			}
			g.Expect(req.Next).To(BeTemporally("==", tt.wantNext))
			if tt.wantInvalid == "" {
				g.Expect(req.Invalid).To(BeEmpty())
			} else {
				g.Expect(req.Invalid).To(ContainSubstring(tt.wantInvalid))
			}
		})
	}
}

func TestSettleOnTarget(t *testing.T) {
	pending := upgradev1.MachineUpgradeStatus{Machine: "m-0", Node: "n-0", FromVersion: "v1.13.1", TargetVersion: "v1.13.1", Phase: upgradev1.MachinePhasePending}
	tests := []struct {
		name        string
		rebootAfter *metav1.Time
		bootTime    *metav1.Time
		wantSettled bool
		wantPhase   upgradev1.MachinePhase
		wantAction  upgradev1.MachineAction
		wantMessage string
	}{
		{
			name: "no reboot asked: done", wantSettled: true,
			wantPhase: upgradev1.MachinePhaseCompleted, wantMessage: "already runs v1.13.1",
		},
		{
			name: "a reboot asked, the boot time unknown: waits to read it", rebootAfter: ago(time.Hour),
			wantPhase: upgradev1.MachinePhasePending, wantMessage: `waiting to read when node "n-0" last booted: a reboot is asked for nodes booted at or before 2026-12-04T11:00:00Z`,
		},
		{
			name: "booted after the reboot asked: done", rebootAfter: ago(time.Hour), bootTime: ago(time.Minute), wantSettled: true,
			wantPhase: upgradev1.MachinePhaseCompleted, wantMessage: "already runs v1.13.1 and booted at 2026-12-04T11:59:00Z, after the reboot asked for at 2026-12-04T11:00:00Z",
		},
		{
			name: "booted in the second the reboot was asked: rebooted", rebootAfter: ago(time.Hour), bootTime: ago(time.Hour), wantSettled: true,
			wantPhase: upgradev1.MachinePhasePending, wantAction: upgradev1.MachineActionReboot,
		},
		{
			name: "booted before the reboot asked: rebooted", rebootAfter: ago(time.Hour), bootTime: ago(2 * time.Hour), wantSettled: true,
			wantPhase: upgradev1.MachinePhasePending, wantAction: upgradev1.MachineActionReboot,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := pending.DeepCopy()
			st.RebootAfter, st.BootTime = tt.rebootAfter, tt.bootTime
			g.Expect(SettleOnTarget(t0, st, "v1.13.1")).To(Equal(tt.wantSettled))
			g.Expect(st.Phase).To(Equal(tt.wantPhase))
			g.Expect(st.Action).To(Equal(tt.wantAction))
			if tt.wantMessage == "" {
				g.Expect(st.Message).To(BeEmpty(), "a Machine to reboot may start")
			} else {
				g.Expect(st.Message).To(HavePrefix(tt.wantMessage))
			}
			if st.Phase == upgradev1.MachinePhaseCompleted {
				g.Expect(st.CompletionTime).To(Equal(ptrTime(t0)))
			}
		})
	}
}

func TestNewerReboot(t *testing.T) {
	g := NewWithT(t)
	answered := &upgradev1.MachineUpgradeStatus{RebootAfter: ago(time.Hour)}
	g.Expect(NewerReboot(answered, nil)).To(BeFalse())
	g.Expect(NewerReboot(answered, ago(time.Hour))).To(BeFalse(), "the reboot the record answered")
	g.Expect(NewerReboot(answered, ago(2*time.Hour))).To(BeFalse())
	g.Expect(NewerReboot(answered, ago(time.Minute))).To(BeTrue())
	g.Expect(NewerReboot(&upgradev1.MachineUpgradeStatus{}, ago(time.Hour))).To(BeTrue(), "a record made before any reboot was asked")
}

// TestStepsOfAReboot runs the steps of a Machine whose node is only
// rebooted: the steps of an upgrade, with no install.
func TestStepsOfAReboot(t *testing.T) {
	reboot := func(phase upgradev1.MachinePhase, point upgradev1.HoldPoint) upgradev1.MachineUpgradeStatus {
		st := machineRecord(phase, point)
		st.FromVersion, st.TargetVersion, st.Action, st.RebootAfter = "v1.13.1", "v1.13.1", upgradev1.MachineActionReboot, ago(time.Hour)
		return st
	}
	drained := func(version string) func(w *Observation) {
		return func(w *Observation) {
			w.Drain = &DrainPass{Reachable: true, Drained: true, Version: version, BootID: "boot-2"}
		}
	}
	tests := []stepCase{{
		name:   "drained, it goes to its pre-reboot point with nothing installed",
		record: reboot(upgradev1.MachinePhaseDraining, ""),
		world:  drained("v1.13.1"),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
			g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreReboot))
			g.Expect(st.BootID).To(Equal("boot-2"))
			g.Expect(st.InstallerImage).To(BeEmpty())
			g.Expect(d.Intent).To(Equal(IntentNone))
		},
	}, {
		name:   "drained on another version than its Machine said, it is upgraded instead",
		record: reboot(upgradev1.MachinePhaseDraining, ""),
		world:  drained("v1.13.0"),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, _ Decision) {
			g.Expect(st.Action).To(Equal(upgradev1.MachineActionUpgrade))
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
			g.Expect(st.InstallerImage).To(ContainSubstring("v1.13.1"))
		},
	}, {
		name: "an upgrade whose node turns out to run the target is rebooted when a reboot is asked",
		record: with(reboot(upgradev1.MachinePhaseDraining, ""), func(st *upgradev1.MachineUpgradeStatus) {
			st.Action, st.FromVersion = upgradev1.MachineActionUpgrade, "v1.13.0"
		}),
		world: drained("v1.13.1"),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, _ Decision) {
			g.Expect(st.Action).To(Equal(upgradev1.MachineActionReboot))
			g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreReboot))
		},
	}, {
		name:   "past its pre-reboot point, it is rebooted with a Reboot call, even before Talos 1.13",
		record: with(reboot(upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot), func(st *upgradev1.MachineUpgradeStatus) { st.FromVersion, st.TargetVersion = "v1.12.4", "v1.12.4" }),
		world:  func(w *Observation) { w.Held = &HoldsRead{Point: upgradev1.HoldPointPreReboot} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
			g.Expect(d.Intent).To(Equal(IntentReboot))
			g.Expect(st.UpgradeRequestedTime).To(BeNil(), "no upgrade call")
		},
	}, {
		name: "a lost Reboot call of a node before Talos 1.13 is asked for again",
		record: with(reboot(upgradev1.MachinePhaseRebooting, ""), func(st *upgradev1.MachineUpgradeStatus) {
			st.FromVersion, st.TargetVersion, st.RebootRequestedTime = "v1.12.4", "v1.12.4", ago(5*time.Minute)
		}),
		world: func(w *Observation) { w.Boot = &BootRead{Version: "v1.12.4", BootID: "boot-1"} },
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Reboot).To(Equal(RebootAgain))
		},
	}, {
		name:   "back on a new boot and the same version, it is verified",
		record: reboot(upgradev1.MachinePhaseRebooting, ""),
		world:  func(w *Observation) { w.Boot = &BootRead{Version: "v1.13.1", BootID: "boot-2"} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, _ Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
		},
	}, {
		name:   "back on another version, it fails",
		record: reboot(upgradev1.MachinePhaseRebooting, ""),
		world:  func(w *Observation) { w.Boot = &BootRead{Version: "v1.13.0", BootID: "boot-2"} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, `node "n-0" came back on v1.13.0 after its reboot, but ran v1.13.1 before it`)
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld()
			if tc.world != nil {
				tc.world(w)
			}
			st := tc.record.DeepCopy()
			d := Decide(KindOf(st.Action), w, st)
			tc.want(g, st, d)
		})
	}
}
