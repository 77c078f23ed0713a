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

package rolloutview

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func TestDurations(t *testing.T) {
	g := NewWithT(t)
	spans := []span{{"Pending", t0}, {"Draining", t0.Add(time.Second)}, {"Rebooting", t0.Add(3 * time.Second)}, {"Completed", t0.Add(6 * time.Second)}}
	d := durations(spans, t0.Add(time.Minute))
	g.Expect(d).To(Equal(map[string]time.Duration{"Pending": time.Second, "Draining": 2 * time.Second, "Rebooting": 3 * time.Second}))
}

// TestSummaryWatchedFromTheStart times every phase as the watch saw it.
func TestSummaryWatchedFromTheStart(t *testing.T) {
	g := NewWithT(t)
	tl := NewTimeline()
	cp := upgradev1.MachineRoleControlPlane
	for i, phase := range []upgradev1.MachinePhase{upgradev1.MachinePhasePending, upgradev1.MachinePhaseDraining, upgradev1.MachinePhaseRebooting, upgradev1.MachinePhaseCompleted} {
		rollout := upgradev1.UpgradePhaseInProgress
		if phase == upgradev1.MachinePhaseCompleted {
			rollout = upgradev1.UpgradePhaseCompleted
		}
		tl.Observe(newUpgrade("alpha", rollout, []upgradev1.MachineUpgradeStatus{machine("alpha-cp-0", cp, phase)}), t0.Add(time.Duration(i)*1500*time.Millisecond))
	}
	tl.End(t0.Add(4500 * time.Millisecond))
	var out bytes.Buffer
	WriteSummary(&out, newUpgrade("alpha", upgradev1.UpgradePhaseCompleted, []upgradev1.MachineUpgradeStatus{machine("alpha-cp-0", cp, upgradev1.MachinePhaseCompleted)}), tl)
	g.Expect(out.String()).To(HavePrefix("Rollout Completed: 1/1 Machines of Cluster fleet/alpha on Talos v1.13.0 in 4.5s\n\n"))
	g.Expect(out.String()).To(MatchRegexp(`MACHINE\s+ROLE\s+FROM -> TO\s+RESULT\s+HOLDS\+HOOKS\s+DRAIN\s+UPGRADE\s+REBOOT\s+VERIFY\s+TOTAL\n`))
	g.Expect(out.String()).To(MatchRegexp(`alpha-cp-0\s+control plane\s+v1.12.4 -> v1.13.0\s+Completed\s+0.0s\s+1.5s\s+0.0s\s+1.5s\s+0.0s\s+3.0s\n`))
	g.Expect(out.String()).NotTo(ContainSubstring("whole seconds"))
}

// TestSummaryJoinedLate times the Machines the watch did not see start
// from their status, and says so.
func TestSummaryJoinedLate(t *testing.T) {
	g := NewWithT(t)
	m := machine("alpha-w-0", upgradev1.MachineRoleWorker, upgradev1.MachinePhaseCompleted, func(m *upgradev1.MachineUpgradeStatus) {
		m.StartTime, m.CompletionTime = ago(2*time.Minute), ago(time.Minute)
		m.PhaseDurations = []upgradev1.PhaseDuration{{Phase: upgradev1.MachinePhaseDraining, Seconds: 12}, {Phase: upgradev1.MachinePhaseRebooting, Seconds: 40}}
	})
	u := newUpgrade("alpha", upgradev1.UpgradePhaseCompleted, []upgradev1.MachineUpgradeStatus{m}, func(u *upgradev1.TalosUpgrade) {
		u.Status.StartTime, u.Status.CompletionTime = ago(2*time.Minute), ago(time.Minute)
	})
	tl := NewTimeline()
	tl.Observe(u, t0)
	tl.End(t0)
	var out bytes.Buffer
	WriteSummary(&out, u, tl)
	g.Expect(out.String()).To(HavePrefix("Rollout Completed: 1/1 Machines of Cluster fleet/alpha on Talos v1.13.0 in 1m00s\n"))
	g.Expect(out.String()).To(MatchRegexp(`alpha-w-0\s+worker\s+v1.12.4 -> v1.13.0\s+Completed\s+0.0s\s+12.0s\s+0.0s\s+40.0s\s+0.0s\s+1m00s\n`))
	g.Expect(out.String()).To(ContainSubstring("Times in whole seconds are from status.machines[].phaseDurations"))
}
