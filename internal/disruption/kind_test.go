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

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestKindsSayWhatTheyDid: each kind completes a Machine with its own words,
// in the record's message, the event's reason and action: no reboot is
// "upgraded from v1.13.0 to v1.13.0", and no configuration change fails as
// an upgrade.
func TestKindsSayWhatTheyDid(t *testing.T) {
	released := func(action upgradev1.MachineAction, change func(st *upgradev1.MachineUpgradeStatus)) upgradev1.MachineUpgradeStatus {
		st := machineRecord(upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPostUpgrade)
		st.Action = action
		if action != upgradev1.MachineActionUpgrade {
			st.FromVersion = st.TargetVersion
		}
		if change != nil {
			change(&st)
		}
		return st
	}
	tests := []struct {
		name    string
		record  upgradev1.MachineUpgradeStatus
		message string
		reason  string
		failed  string
		action  string
	}{
		{name: "an upgrade", record: released(upgradev1.MachineActionUpgrade, nil),
			message: "upgraded from v1.13.0 to v1.13.1", reason: "MachineUpgraded", failed: "MachineUpgradeFailed", action: "Upgrade"},
		{name: "an upgrade of a node found on its target", record: released(upgradev1.MachineActionUpgrade, func(st *upgradev1.MachineUpgradeStatus) { st.FromVersion = "v1.13.1" }),
			message: "runs v1.13.1, which it ran already when it was drained", reason: "MachineUpgraded", failed: "MachineUpgradeFailed", action: "Upgrade"},
		{name: "a reboot", record: released(upgradev1.MachineActionReboot, nil),
			message: "rebooted on v1.13.1", reason: "MachineRebooted", failed: "MachineRebootFailed", action: "Reboot"},
		{name: "a configuration change", record: released(upgradev1.MachineActionConfigure, func(st *upgradev1.MachineUpgradeStatus) {
			st.Config = &upgradev1.MachineConfigStatus{Source: "TalosControlPlane alpha-cp", Hash: "h1", State: upgradev1.MachineConfigApplied}
		}), message: "runs the patches of TalosControlPlane alpha-cp", reason: "MachineConfigured", failed: "MachineConfigurationFailed", action: "Configure"},
		{name: "a configuration change staged for a reboot", record: released(upgradev1.MachineActionConfigure, func(st *upgradev1.MachineUpgradeStatus) {
			st.Config = &upgradev1.MachineConfigStatus{Source: "TalosControlPlane alpha-cp", Hash: "h1", State: upgradev1.MachineConfigApplied, RebootRequired: true}
		}), message: "runs the patches of TalosControlPlane alpha-cp after a reboot on v1.13.1", reason: "MachineConfigured", failed: "MachineConfigurationFailed", action: "Configure"},
		{name: "a Kubernetes change", record: released(upgradev1.MachineActionKubernetes, func(st *upgradev1.MachineUpgradeStatus) {
			st.Kubernetes = &upgradev1.MachineKubernetesStatus{Part: upgradev1.KubernetesPartKubelet, Version: "v1.35.2", State: upgradev1.MachineConfigConverged}
		}), message: "runs kubelet v1.35.2", reason: "MachineKubernetesChanged", failed: "MachineKubernetesChangeFailed", action: "Kubernetes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := tt.record.DeepCopy()
			k := KindOf(st.Action)
			d := Decide(k, newWorld(), st)
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseCompleted))
			g.Expect(st.Message).To(Equal(tt.message))
			g.Expect(d.Events).To(HaveLen(1))
			g.Expect(d.Events[0].Reason).To(Equal(tt.reason))
			g.Expect(d.Events[0].Action).To(Equal(tt.action))
			g.Expect(d.Events[0].Message).To(Equal("Machine m-0 " + tt.message))
			g.Expect(k.Words().Failed).To(Equal(tt.failed))
			g.Expect(string(k.Words().Action)).To(Equal(tt.action))
			g.Expect(k.Words().Hook).To(Equal(tt.action), "the hooks are told the same action")
		})
	}
}
