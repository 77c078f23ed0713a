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

package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func upgradeWith(phase upgradev1.UpgradePhase, blockedBy string, machines ...upgradev1.MachineUpgradeStatus) *upgradev1.TalosUpgrade {
	return &upgradev1.TalosUpgrade{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: clusterName},
		Spec:       upgradev1.TalosUpgradeSpec{ClusterName: clusterName, UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}},
		Status: upgradev1.TalosUpgradeStatus{
			Phase: phase, BlockedBy: blockedBy, Machines: machines,
			TotalMachines: int32(len(machines)), Progress: "0/1",
		},
	}
}

func held(by string) upgradev1.MachineUpgradeStatus {
	return upgradev1.MachineUpgradeStatus{
		Machine: "alpha-cp-0", Role: upgradev1.MachineRoleControlPlane, FromVersion: "v1.12.4", TargetVersion: "v1.13.0",
		Phase: upgradev1.MachinePhaseWaitingForHold, HoldPoint: upgradev1.HoldPointPreDrain,
		HeldBy: []string{by}, Message: `held at preDrain by "` + by + `"`,
	}
}

// TestRendererLineMode prints a line per change, and nothing for a repeat
// or a blocker that clears.
func TestRendererLineMode(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	start := time.Now()
	r := newRenderer(&out, false, start)
	tl := newTimeline()
	steps := []*upgradev1.TalosUpgrade{
		upgradeWith(upgradev1.UpgradePhaseInProgress, `machine "alpha-cp-0" held by "backup-operator"`, held("backup-operator")),
		upgradeWith(upgradev1.UpgradePhaseInProgress, `machine "alpha-cp-0" held by "backup-operator"`, held("backup-operator")),
		upgradeWith(upgradev1.UpgradePhaseInProgress, "", held("backup-operator")),
	}
	for i, u := range steps {
		now := start.Add(time.Duration(i) * time.Second)
		tl.observe(u, now)
		r.render(u, tl, now)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(HaveLen(3), out.String())
	g.Expect(lines[0]).To(ContainSubstring("Cluster tollgate-demo/alpha  v1.12.4 -> v1.13.0  InProgress"))
	g.Expect(lines[1]).To(ContainSubstring(`blocked by: machine "alpha-cp-0" held by "backup-operator"`))
	g.Expect(lines[2]).To(MatchRegexp(`alpha-cp-0\s+control plane\s+WaitingForHold:preDrain\s+\[#\.+\]\s+0\.0s\s+held at preDrain by "backup-operator"`))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"), "no escape sequence in line mode")
}

// TestRendererTerminal redraws the frame in place.
func TestRendererTerminal(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	start := time.Now()
	r := newRenderer(&out, true, start)
	tl := newTimeline()
	u := upgradeWith(upgradev1.UpgradePhaseInProgress, "", held("backup-operator"))
	r.render(u, tl, start)
	first := out.Len()
	r.render(u, tl, start.Add(time.Second))
	g.Expect(out.String()[first:]).To(HavePrefix("\x1b[3A\r"), "moves up over the 3 lines of the previous frame")
	g.Expect(out.String()).To(ContainSubstring("blocked by: -"))
}

func TestDurations(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Now()
	spans := []span{{"Pending", t0}, {"Draining", t0.Add(time.Second)}, {"Rebooting", t0.Add(3 * time.Second)}, {"Completed", t0.Add(6 * time.Second)}}
	d := durations(spans, t0.Add(time.Minute))
	g.Expect(d).To(Equal(map[string]time.Duration{"Pending": time.Second, "Draining": 2 * time.Second, "Rebooting": 3 * time.Second}))
	g.Expect(formatDuration(1500 * time.Millisecond)).To(Equal("1.5s"))
	g.Expect(formatDuration(62 * time.Second)).To(Equal("1m02s"))
	g.Expect(bar(1, 4, 8)).To(Equal("[##......]"))
}
