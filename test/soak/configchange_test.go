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

package soak

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// generatedControlPlaneConfig is the configuration the simulator generates
// for a control-plane node.
func generatedControlPlaneConfig(t *testing.T) []byte {
	t.Helper()
	g := NewWithT(t)
	port, err := envtest.FreePort()
	g.Expect(err).NotTo(HaveOccurred())
	sim, err := talossim.New(talossim.Options{Port: port})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sim.Close() })
	n, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, EtcdCluster: "soak"})
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := n.MachineConfig()
	g.Expect(err).NotTo(HaveOccurred())
	return cfg
}

// TestConfigProblems: invariant 15 at rest finds a node that does not run
// the control plane's patches, unless its rollout stopped or its record
// failed; a node that runs the refused change whatever the rollout's phase,
// taken back or not; and, while the patches are refused, a rollout that
// does not say NotInPlace.
func TestConfigProblems(t *testing.T) {
	g := NewWithT(t)
	base := generatedControlPlaneConfig(t)
	with := func(patches ...string) []byte {
		out, err := machineconfig.Desired(base, machineconfig.Patches{Source: "test", StrategicPatches: patches})
		g.Expect(err).NotTo(HaveOccurred())
		return out
	}
	target := cpConfig{sysctl: 2048, file: 2}
	patches := machineconfig.Patches{Source: "test", StrategicPatches: target.strategicPatches()}
	refused := target
	refused.refused = true
	refusedPatches := machineconfig.Patches{Source: "test", StrategicPatches: refused.strategicPatches()}
	notInPlace := &metav1.Condition{Type: upgradev1.MachineConfigsCondition, Status: metav1.ConditionFalse, Reason: upgradev1.MachineConfigNotInPlaceReason}
	applicable := &metav1.Condition{Type: upgradev1.MachineConfigsCondition, Status: metav1.ConditionTrue, Reason: upgradev1.MachineConfigsApplicableReason}
	node := func(running []byte, exempt string) []cpNode {
		return []cpNode{{machine: "m", node: "n", running: running, exempt: exempt}}
	}
	tests := []struct {
		name     string
		nodes    []cpNode
		patches  machineconfig.Patches
		refused  bool
		stopped  bool
		cond     *metav1.Condition
		problems int
	}{
		{name: "runs the patches", nodes: node(with(sysctlPatch(2048), filePatch(2)), ""), patches: patches, cond: applicable},
		{name: "runs an older sysctl", nodes: node(with(sysctlPatch(1024), filePatch(2)), ""), patches: patches, cond: applicable, problems: 1},
		{name: "has not taken the file", nodes: node(with(sysctlPatch(2048)), ""), patches: patches, cond: applicable, problems: 1},
		{name: "a stopped rollout brings nothing", nodes: node(base, "rollout Paused"), patches: patches, stopped: true},
		{name: "a failed Machine's node", nodes: node(base, "its record is Failed"), patches: patches},
		{name: "refused, not applied and said", nodes: node(base, ""), patches: refusedPatches, refused: true, cond: notInPlace},
		{name: "refused and applied", nodes: node(with(refused.strategicPatches()...), ""), patches: refusedPatches, refused: true, cond: notInPlace, problems: 1},
		{name: "refused and applied, rollout stopped", nodes: node(with(refusedPatch), "rollout Failed"), patches: refusedPatches, refused: true, stopped: true, problems: 1},
		{name: "refused and not said", nodes: node(base, ""), patches: refusedPatches, refused: true, cond: applicable, problems: 1},
		{name: "refused and no condition", nodes: node(base, ""), patches: refusedPatches, refused: true, problems: 1},
		{name: "refused, not said by a stopped rollout", nodes: node(base, "rollout Paused"), patches: refusedPatches, refused: true, stopped: true},
		{name: "taken back, and had been applied", nodes: node(with(refused.strategicPatches()...), ""), patches: patches, cond: applicable, problems: 1},
		{name: "taken back, and had been applied, rollout stopped", nodes: node(with(refusedPatch), "rollout Paused"), patches: patches, stopped: true, problems: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := configProblems(tt.nodes, tt.patches, tt.refused, tt.stopped, tt.cond)
			g.Expect(got).To(HaveLen(tt.problems), "%v", got)
		})
	}
}

// TestExtraConfigBoots: a node boots for a configuration (one staged since
// the boot before, no upgrade since) at most once per change that needs a
// reboot made before the boot; a change Talos applies without a reboot
// gives none, and a configuration staged with an upgrade is the upgrade's
// boot.
func TestExtraConfigBoots(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	changes := func(kinds ...string) cpConfig {
		var cfg cpConfig
		for i, k := range kinds {
			cfg.changes = append(cfg.changes, configChange{kind: k, at: at(5 + 10*i)})
		}
		return cfg
	}
	tests := []struct {
		name     string
		boots    []time.Time
		staged   []int
		upgrades []time.Time
		cfg      cpConfig
		extra    []time.Time
	}{
		{name: "no boot", cfg: changes(faultConfigNoReboot)},
		{name: "one file, one boot", boots: []time.Time{at(8)}, staged: []int{1}, cfg: changes(faultConfigReboot)},
		{name: "one file staged twice before its boot (an apply made again)", boots: []time.Time{at(8)}, staged: []int{2}, cfg: changes(faultConfigReboot)},
		{name: "one file, two boots", boots: []time.Time{at(8), at(12)}, staged: []int{1, 1}, cfg: changes(faultConfigReboot), extra: []time.Time{at(12)}},
		{name: "two files, two boots", boots: []time.Time{at(8), at(18)}, staged: []int{1, 1}, cfg: changes(faultConfigReboot, faultConfigReboot)},
		{name: "a sysctl staged and booted without an upgrade", boots: []time.Time{at(8)}, staged: []int{1}, cfg: changes(faultConfigNoReboot), extra: []time.Time{at(8)}},
		{name: "a sysctl staged with an upgrade", boots: []time.Time{at(8)}, staged: []int{1}, upgrades: []time.Time{at(7)}, cfg: changes(faultConfigNoReboot)},
		{name: "a boot before the change", boots: []time.Time{at(3)}, staged: []int{1}, cfg: changes(faultConfigReboot), extra: []time.Time{at(3)}},
		{name: "a boot with nothing staged is invariant 13's", boots: []time.Time{at(8)}, staged: []int{0}, cfg: changes(faultConfigNoReboot)},
		{name: "a refused change gives no reboot", boots: []time.Time{at(8)}, staged: []int{1}, cfg: changes(faultConfigRefused), extra: []time.Time{at(8)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []time.Time
			for _, b := range extraConfigBoots(bootLog{first: t0, boots: tt.boots, staged: tt.staged}, tt.upgrades, tt.cfg) {
				got = append(got, b.at)
			}
			g.Expect(got).To(Equal(tt.extra))
		})
	}
}
