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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func heldRollout(blocked string) *Rollout {
	u := newUpgrade("alpha", upgradev1.UpgradePhaseInProgress, []upgradev1.MachineUpgradeStatus{
		machine("alpha-cp-0", upgradev1.MachineRoleControlPlane, upgradev1.MachinePhasePending, heldAt(upgradev1.HoldPointPreDrain, "backup-operator")),
	}, blockedBy(blocked))
	u.Namespace = "tollgate-demo"
	return &Rollout{Namespace: "tollgate-demo", Cluster: "alpha", Upgrade: u}
}

// TestLiveLineMode prints a line per change, and nothing for a repeat or a
// blocker that clears.
func TestLiveLineMode(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	live := NewLive(&out, LiveOptions{Start: t0})
	tl := NewTimeline()
	steps := []*Rollout{
		heldRollout(`machine "alpha-cp-0" held by "backup-operator"`),
		heldRollout(`machine "alpha-cp-0" held by "backup-operator"`),
		heldRollout(""),
	}
	for i, r := range steps {
		now := t0.Add(time.Duration(i) * time.Second)
		tl.Observe(r.Upgrade, now)
		live.Render(r, tl, now)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(HaveLen(3), out.String())
	g.Expect(lines[0]).To(HavePrefix("[  0.0s] Cluster tollgate-demo/alpha  v1.12.4 -> v1.13.0  InProgress"))
	g.Expect(lines[1]).To(ContainSubstring(`blocked by: machine "alpha-cp-0" held by "backup-operator"`))
	g.Expect(lines[2]).To(MatchRegexp(`alpha-cp-0\s+control plane\s+WaitingForHold:preDrain\s+\[#\.+\]\s+held at preDrain by "backup-operator"`))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"), "no escape sequence in line mode")
}

// TestLiveRedraw redraws the frame in place, coloured only when asked.
func TestLiveRedraw(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	live := NewLive(&out, LiveOptions{Redraw: true, Start: t0})
	tl := NewTimeline()
	r := heldRollout("")
	live.Render(r, tl, t0)
	first := out.Len()
	live.Render(r, tl, t0.Add(time.Second))
	g.Expect(out.String()[first:]).To(HavePrefix("\x1b[3A\r"), "moves up over the 3 lines of the previous frame")
	g.Expect(out.String()).To(ContainSubstring("blocked by: -"))
	g.Expect(out.String()).NotTo(ContainSubstring(bold), "no colour unless asked")

	out.Reset()
	live = NewLive(&out, LiveOptions{Redraw: true, Color: true, Start: t0})
	live.Render(r, tl, t0)
	g.Expect(out.String()).To(ContainSubstring(bold + "Cluster tollgate-demo/alpha"))
	live.Finish()
	live.Render(r, tl, t0)
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b[3A"), "a finished frame stays on screen")
}

// TestLiveHoldsAhead shows the holds present on a Machine the rollout has
// not reached, and drops those of the points it passed.
func TestLiveHoldsAhead(t *testing.T) {
	g := NewWithT(t)
	u := newUpgrade("alpha", upgradev1.UpgradePhaseInProgress, []upgradev1.MachineUpgradeStatus{
		machine("alpha-w-0", upgradev1.MachineRoleWorker, upgradev1.MachinePhasePending),
		machine("alpha-w-1", upgradev1.MachineRoleWorker, upgradev1.MachinePhaseRebooting),
	})
	r := &Rollout{Namespace: "fleet", Cluster: "alpha", Upgrade: u, Holds: map[string][]Hold{
		"alpha-w-0": {{Point: upgradev1.HoldPointPreDrain, Owner: "backup-operator"}},
		"alpha-w-1": {{Point: upgradev1.HoldPointPreDrain, Owner: "backup-operator"}, {Point: upgradev1.HoldPointPostUpgrade, Owner: "smoke-test"}},
	}}
	var out bytes.Buffer
	WriteFrame(&out, r, NewTimeline(), t0, t0, false)
	g.Expect(out.String()).To(MatchRegexp(`alpha-w-0 .*Pending .*holds: preDrain by backup-operator\n`))
	g.Expect(out.String()).To(MatchRegexp(`alpha-w-1 .*Rebooting .*holds: postUpgrade by smoke-test\n`))
}

// TestWriteFrameWaiting says what it waits for before the rollout exists.
func TestWriteFrameWaiting(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	WriteFrame(&out, &Rollout{Namespace: "fleet", Cluster: "alpha"}, NewTimeline(), t0, t0.Add(2*time.Second), false)
	g.Expect(out.String()).To(Equal("Waiting for the policy controller to create TalosUpgrade fleet/alpha  2.0s\n"))
}

func TestFormat(t *testing.T) {
	g := NewWithT(t)
	g.Expect(FormatDuration(1500 * time.Millisecond)).To(Equal("1.5s"))
	g.Expect(FormatDuration(62 * time.Second)).To(Equal("1m02s"))
	g.Expect(bar(1, 4, 8)).To(Equal("[##......]"))
	g.Expect(bar(1, 0, 4)).To(Equal("[....]"))
	g.Expect(formatAge(t0.Add(-90*time.Second), t0)).To(Equal("1m"))
	g.Expect(formatAge(t0.Add(-50*time.Hour), t0)).To(Equal("2d"))
	g.Expect(Plural(1, "run")).To(Equal("1 run"))
}

func TestBypassText(t *testing.T) {
	g := NewWithT(t)
	g.Expect(BypassText(nil)).To(BeEmpty())
	g.Expect(BypassText(&upgradev1.BypassSpec{Reason: "no gate"})).To(BeEmpty())
	g.Expect(BypassText(&upgradev1.BypassSpec{
		HealthChecks: true, MaintenanceWindows: true, HoldOwners: []string{"b", "a"},
		Machines: []upgradev1.MachineBypass{{Machine: "cp-0", Hook: "noout", Action: upgradev1.HookBypassRetry}},
		Reason:   "INC-1", RequestedBy: "alice",
	})).To(Equal(`health checks, maintenance windows, holds of a, b, hook noout of cp-0 (Retry); by alice: "INC-1"`))
}
