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
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// pendingConfig is the config part of a record whose node does not run its
// template's patches yet.
func pendingConfig() *upgradev1.MachineConfigStatus {
	return &upgradev1.MachineConfigStatus{Source: "TalosConfigTemplate alpha-md-0", Hash: "h1", State: upgradev1.MachineConfigPending}
}

func TestSettleOnTargetWithConfig(t *testing.T) {
	tests := []struct {
		name        string
		config      *upgradev1.MachineConfigStatus
		rebootAfter *metav1.Time
		bootTime    *metav1.Time
		wantSettled bool
		wantPhase   upgradev1.MachinePhase
		wantAction  upgradev1.MachineAction
		wantMessage string
	}{
		{
			name: "patches not read yet: waits to read the node", config: &upgradev1.MachineConfigStatus{Source: "TalosConfigTemplate alpha-md-0", Hash: "h1", State: upgradev1.MachineConfigUnknown},
			wantPhase: upgradev1.MachinePhasePending, wantMessage: `waiting to read the machine configuration of node "n-0": the patches of TalosConfigTemplate alpha-md-0 changed`,
		},
		{
			name: "the node runs them: done", config: &upgradev1.MachineConfigStatus{Source: "TalosConfigTemplate alpha-md-0", Hash: "h1", State: upgradev1.MachineConfigConverged},
			wantSettled: true, wantPhase: upgradev1.MachinePhaseCompleted, wantMessage: "already runs v1.13.1 and runs the patches of TalosConfigTemplate alpha-md-0",
		},
		{
			name: "the node does not run them: configured", config: pendingConfig(),
			wantSettled: true, wantPhase: upgradev1.MachinePhasePending, wantAction: upgradev1.MachineActionConfigure,
		},
		{
			name: "a reboot asked too: configured (and rebooted by the configure kind)", config: pendingConfig(), rebootAfter: ago(time.Hour), bootTime: ago(2 * time.Hour),
			wantSettled: true, wantPhase: upgradev1.MachinePhasePending, wantAction: upgradev1.MachineActionConfigure,
		},
		{
			name: "refused patches: done, the condition says why", config: &upgradev1.MachineConfigStatus{Source: "TalosConfigTemplate alpha-md-0", Hash: "h1", State: upgradev1.MachineConfigRefused, Message: "changes cluster.ca"},
			wantSettled: true, wantPhase: upgradev1.MachinePhaseCompleted, wantMessage: "already runs v1.13.1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := &upgradev1.MachineUpgradeStatus{Machine: "m-0", Node: "n-0", FromVersion: "v1.13.1", TargetVersion: "v1.13.1", Phase: upgradev1.MachinePhasePending,
				Config: tt.config, RebootAfter: tt.rebootAfter, BootTime: tt.bootTime}
			g.Expect(SettleOnTarget(t0, st, "v1.13.1")).To(Equal(tt.wantSettled))
			g.Expect(st.Phase).To(Equal(tt.wantPhase))
			g.Expect(st.Action).To(Equal(tt.wantAction))
			if tt.wantMessage == "" {
				g.Expect(st.Message).To(BeEmpty())
			} else {
				g.Expect(st.Message).To(Equal(tt.wantMessage))
			}
		})
	}
}

// TestStepsOfAConfigChange runs the steps of a Machine whose node is
// configured, and of one whose node is upgraded and configured at once.
func TestStepsOfAConfigChange(t *testing.T) {
	configuring := func(phase upgradev1.MachinePhase, point upgradev1.HoldPoint) upgradev1.MachineUpgradeStatus {
		st := machineRecord(phase, point)
		st.FromVersion, st.TargetVersion, st.Action, st.Config = "v1.13.1", "v1.13.1", upgradev1.MachineActionConfigure, pendingConfig()
		return st
	}
	upgrading := func(phase upgradev1.MachinePhase) upgradev1.MachineUpgradeStatus {
		st := machineRecord(phase, "")
		st.InstallerImage, st.Config = "ghcr.io/siderolabs/installer:v1.13.1", pendingConfig()
		return st
	}
	applied := func(a ApplyRead) func(w *Observation) { return func(w *Observation) { w.Apply = &a } }
	tests := []stepCase{{
		name:   "drained, it applies the configuration",
		record: configuring(upgradev1.MachinePhaseDraining, ""),
		world: func(w *Observation) {
			w.Drain = &DrainPass{Reachable: true, Drained: true, Version: "v1.13.1", BootID: "boot-2"}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, _ Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
			g.Expect(st.Message).To(Equal("applying the machine configuration of TalosConfigTemplate alpha-md-0"))
		},
	}, {
		name:   "the intent is written ahead of the apply",
		record: configuring(upgradev1.MachinePhaseUpgrading, ""),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentApplyConfig))
			g.Expect(st.Config.AppliedTime).To(Equal(ptrTime(t0)))
		},
	}, {
		name:   "applied without a reboot, it is verified: no reboot",
		record: configuring(upgradev1.MachinePhaseUpgrading, ""),
		world:  applied(ApplyRead{State: upgradev1.MachineConfigApplied, Hash: "h1"}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
			g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigApplied))
			g.Expect(reasons(d)).To(ConsistOf("MachineConfigApplied"))
		},
	}, {
		name: "applied without a reboot and a reboot asked: rebooted",
		record: with(configuring(upgradev1.MachinePhaseUpgrading, ""), func(st *upgradev1.MachineUpgradeStatus) {
			st.RebootAfter, st.BootTime = ago(time.Hour), ago(2*time.Hour)
		}),
		world: applied(ApplyRead{State: upgradev1.MachineConfigApplied, Hash: "h1"}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, _ Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
			g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreReboot))
		},
	}, {
		name:   "staged because Talos needs a reboot: to the pre-reboot point",
		record: configuring(upgradev1.MachinePhaseUpgrading, ""),
		world:  applied(ApplyRead{Staged: true, Hash: "h1"}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
			g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreReboot))
			g.Expect(st.Config.RebootRequired).To(BeTrue())
			g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigPending), "proven only once the node is back")
			g.Expect(reasons(d)).To(ConsistOf("MachineConfigStaged"))
		},
	}, {
		name:   "refused by the node: the Machine fails",
		record: configuring(upgradev1.MachinePhaseUpgrading, ""),
		world:  applied(ApplyRead{Err: fmt.Errorf("applying: %w: unknown keys found", talos.ErrInvalidConfig)}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, `node "n-0" refused the machine configuration of TalosConfigTemplate alpha-md-0`)
		},
	}, {
		name:   "a change that cannot be made in place is not applied; the Machine goes on",
		record: configuring(upgradev1.MachinePhaseUpgrading, ""),
		world:  applied(ApplyRead{Refused: "changes cluster.ca"}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigRefused))
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
			g.Expect(reasons(d)).To(ConsistOf("MachineConfigRefused"))
		},
	}, {
		name:   "a node that does not answer is asked again until nodeUnreachableTimeout",
		record: configuring(upgradev1.MachinePhaseUpgrading, ""),
		world:  applied(ApplyRead{Err: errors.New("connection refused")}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
			g.Expect(st.UnreachableSince).To(Equal(ptrTime(t0)))
			g.Expect(d.Retrying).To(HaveOccurred())
		},
	}, {
		name:   "a node that does not answer past nodeUnreachableTimeout fails the Machine",
		record: with(configuring(upgradev1.MachinePhaseUpgrading, ""), func(st *upgradev1.MachineUpgradeStatus) { st.UnreachableSince = ago(time.Hour) }),
		world:  applied(ApplyRead{Err: fmt.Errorf("machine config: %w: connection refused", talos.ErrUnreachable)}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, `the Talos API of node "n-0" has not answered for 1h0m0s`)
		},
	}, {
		name:   "a node not dialed (its talosconfig Secret not read) is an error of the management cluster: applied again, its silence not started",
		record: configuring(upgradev1.MachinePhaseUpgrading, ""),
		world:  applied(ApplyRead{Err: errNotDialed}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			notBlamed(g, configuring(upgradev1.MachinePhaseUpgrading, ""), st, d)
			g.Expect(st.UnreachableSince).To(BeNil())
			g.Expect(st.Config.State).To(Equal(pendingConfig().State), "nothing was applied")
		},
	}, {
		name:   "the same past nodeUnreachableTimeout: the Machine does not fail, its silence is not advanced",
		record: with(configuring(upgradev1.MachinePhaseUpgrading, ""), func(st *upgradev1.MachineUpgradeStatus) { st.UnreachableSince = ago(time.Hour) }),
		world:  applied(ApplyRead{Err: errNotDialed}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			notBlamed(g, with(configuring(upgradev1.MachinePhaseUpgrading, ""), func(st *upgradev1.MachineUpgradeStatus) { st.UnreachableSince = ago(time.Hour) }), st, d)
		},
	}, {
		name:   "the same while staging before an install",
		record: upgrading(upgradev1.MachinePhaseUpgrading),
		world:  applied(ApplyRead{Err: errNotDialed}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			notBlamed(g, upgrading(upgradev1.MachinePhaseUpgrading), st, d)
			g.Expect(st.UpgradeRequestedTime).To(BeNil(), "not installed before the configuration is staged")
		},
	}, {
		name:   "back with the staged configuration: verified",
		record: with(configuring(upgradev1.MachinePhaseRebooting, ""), func(st *upgradev1.MachineUpgradeStatus) { st.Config.RebootRequired = true }),
		world: func(w *Observation) {
			w.Boot = &BootRead{Version: "v1.13.1", BootID: "boot-2", Config: upgradev1.MachineConfigConverged}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, _ Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
			g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigApplied))
		},
	}, {
		name:   "back without the staged configuration: fails",
		record: with(configuring(upgradev1.MachinePhaseRebooting, ""), func(st *upgradev1.MachineUpgradeStatus) { st.Config.RebootRequired = true }),
		world: func(w *Observation) {
			w.Boot = &BootRead{Version: "v1.13.1", BootID: "boot-2", Config: upgradev1.MachineConfigPending, ConfigMessage: "it does not run them"}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "came back without the machine configuration of TalosConfigTemplate alpha-md-0 staged for its boot (it does not run them)")
		},
	}, {
		name:   "an upgrade stages the configuration before its install",
		record: upgrading(upgradev1.MachinePhaseUpgrading),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentStageConfig))
			g.Expect(st.UpgradeRequestedTime).To(BeNil(), "not installed yet")
		},
	}, {
		name:   "staged, the upgrade installs",
		record: with(upgrading(upgradev1.MachinePhaseUpgrading), func(st *upgradev1.MachineUpgradeStatus) { st.Config.State = upgradev1.MachineConfigUnknown }),
		world:  applied(ApplyRead{Staged: true, Hash: "h1"}),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentInstall))
			g.Expect(st.Config.RebootRequired).To(BeTrue())
			g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigPending), "proven once the node is back")
		},
	}, {
		name: "the upgraded node is back on the target with the configuration: verified, one reboot for both",
		record: with(upgrading(upgradev1.MachinePhaseRebooting), func(st *upgradev1.MachineUpgradeStatus) {
			st.Config.RebootRequired, st.UpgradeRequestedTime, st.RebootRequestedTime = true, ago(2*time.Minute), ago(10*time.Second)
		}),
		world: func(w *Observation) {
			w.Boot = &BootRead{Version: "v1.13.1", BootID: "boot-2", Config: upgradev1.MachineConfigConverged}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, _ Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
			g.Expect(st.Config.State).To(Equal(upgradev1.MachineConfigApplied))
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
