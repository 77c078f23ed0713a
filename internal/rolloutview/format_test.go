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
	"testing"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func TestMachineVersion(t *testing.T) {
	kubelet := func(state upgradev1.MachineConfigState) *upgradev1.MachineKubernetesStatus {
		return &upgradev1.MachineKubernetesStatus{Part: upgradev1.KubernetesPartKubelet, Version: "v1.36.0", State: state}
	}
	tests := []struct {
		name string
		st   upgradev1.MachineUpgradeStatus
		want string
	}{
		{"an upgrade", upgradev1.MachineUpgradeStatus{FromVersion: "v1.12.4", TargetVersion: "v1.13.0"}, "v1.12.4 -> v1.13.0"},
		{"a reboot", upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionReboot, FromVersion: "v1.13.0", TargetVersion: "v1.13.0"}, "v1.13.0 (reboot)"},
		{"a configuration change", upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionConfigure, FromVersion: "v1.13.0"}, "v1.13.0 (configure)"},
		{
			"the Kubernetes control plane",
			upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionKubernetes, FromVersion: "v1.13.0", Kubernetes: &upgradev1.MachineKubernetesStatus{Part: upgradev1.KubernetesPartControlPlane, Version: "v1.36.0"}},
			"v1.13.0 (controlplane v1.36.0)",
		},
		{"a kubelet", upgradev1.MachineUpgradeStatus{Action: upgradev1.MachineActionKubernetes, FromVersion: "v1.13.0", Kubernetes: kubelet(upgradev1.MachineConfigPending)}, "v1.13.0 (kubelet v1.36.0)"},
		{"an upgrade with its kubelet", upgradev1.MachineUpgradeStatus{FromVersion: "v1.12.4", TargetVersion: "v1.13.0", Kubernetes: kubelet(upgradev1.MachineConfigUnknown)}, "v1.12.4 -> v1.13.0 (kubelet v1.36.0)"},
		{"an upgrade whose kubelet runs the version", upgradev1.MachineUpgradeStatus{FromVersion: "v1.12.4", TargetVersion: "v1.13.0", Kubernetes: kubelet(upgradev1.MachineConfigConverged)}, "v1.12.4 -> v1.13.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(machineVersion(&tt.st)).To(Equal(tt.want))
		})
	}
}
