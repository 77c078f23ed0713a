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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestPathFrom asks which versions an Auto path to the rollout's target
// starts from: those of the pending Machines that go to it, not those
// already on it, started or completed, nor those of the Machines an object
// moves to the version it declares (which follow that object's path). With
// none, no path is planned: a rollout whose only installs are declared ones
// plans no path of the Cluster to the version its Machines already run.
func TestPathFrom(t *testing.T) {
	type machine struct {
		name, md, version string
		phase             upgradev1.MachinePhase
	}
	tests := []struct {
		name     string
		machines []machine
		want     []string
	}{
		{
			name: "the pending Machines that go to the target",
			machines: []machine{
				{"cp-0", "control-plane", "v1.11.5", upgradev1.MachinePhasePending},
				{"a-0", "md-a", "v1.10.3", upgradev1.MachinePhasePending},
			},
			want: []string{"v1.11.5", "v1.10.3"},
		},
		{
			name: "not those on the target, nor those started or completed",
			machines: []machine{
				{"cp-0", "control-plane", "v1.13.0", upgradev1.MachinePhasePending},
				{"a-0", "md-a", "v1.10.3", upgradev1.MachinePhaseCompleted},
				{"a-1", "md-a", "v1.11.5", upgradev1.MachinePhaseDraining},
				{"a-2", "md-a", "v1.12.4", upgradev1.MachinePhasePending},
			},
			want: []string{"v1.12.4"},
		},
		{
			name: "none when the only installs are those of a declared version",
			machines: []machine{
				{"cp-0", "control-plane", "v1.13.0", upgradev1.MachinePhasePending},
				{"gpu-0", "md-gpu", "v1.10.3", upgradev1.MachinePhasePending},
				{"gpu-1", "md-gpu", "v1.10.3", upgradev1.MachinePhasePending},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}
			u.Spec.TalosVersion = "v1.13.0"
			u.Spec.UpgradePath = upgradev1.UpgradePathAuto
			cluster := targetsCluster()
			r := &Rollout{Upgrade: u, Cluster: cluster, Machines: map[string]*clusterv1.Machine{},
				Declared: DeclaredBy(cluster, nil, []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.12.4"), targetsDeployment("md-a", "")})}
			for _, m := range tt.machines {
				r.Machines[m.name] = targetsMachine(m.name, m.md, m.version, nil)
				u.Status.Machines = append(u.Status.Machines, upgradev1.MachineUpgradeStatus{Machine: m.name, Phase: m.phase, FromVersion: m.version})
			}
			// A record whose Machine is gone starts nothing.
			u.Status.Machines = append(u.Status.Machines, upgradev1.MachineUpgradeStatus{Machine: "gone", Phase: upgradev1.MachinePhasePending, FromVersion: "v1.9.0"})
			g.Expect(r.PathFrom()).To(Equal(tt.want))
		})
	}
}
