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

package plan_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// fleetCluster is a Cluster of a fleet with its Machines.
type fleetCluster struct {
	cluster  *clusterv1.Cluster
	machines []clusterv1.Machine
}

// fleet returns n Clusters, each of 3 control-plane and 7 worker Machines;
// every versions-th Cluster is on the same Talos and Kubernetes versions
// (taken in turn from talos and k8s).
func fleet(n int, talos, k8s []string) []fleetCluster {
	out := make([]fleetCluster, 0, n)
	for i := range n {
		c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", i)}}
		tv, kv := talos[i%len(talos)], k8s[i%len(k8s)]
		var ms []clusterv1.Machine
		for j := range 10 {
			ms = append(ms, newMachine(fmt.Sprintf("c-%d-m-%d", i, j), j < 3, tv, kv))
		}
		out = append(out, fleetCluster{cluster: c, machines: ms})
	}
	return out
}

// TestClusterValidatorMatchesValidateForCluster checks that one validator
// over many Clusters, which judges each version once, says of each Cluster
// exactly what ValidateForCluster says of it alone: its own name and
// Machines in every message, whichever Cluster met the version first.
func TestClusterValidatorMatchesValidateForCluster(t *testing.T) {
	plans := []upgradev1.UpgradePlan{
		{TalosVersion: "v1.13.0"},
		{TalosVersion: "v1.12.0"},
		{TalosVersion: "v1.12.4", AllowDowngrade: true},
		{TalosVersion: "v1.13.0", UpgradePath: upgradev1.UpgradePathAuto},
		{TalosVersion: "latest"},
	}
	clusters := fleet(12, []string{"v1.12.4", "v1.9.5", "v1.13.0", "1.12.4"}, []string{"v1.35.2", "v1.36.0", "v1.32.3"})
	// One Cluster whose Machines run different versions, one whose
	// Machines report none yet.
	mixed := fleet(1, []string{"v1.12.4"}, []string{"v1.33.0"})[0]
	mixed.machines = append(mixed.machines, newMachine("old", false, "v1.8.0", "v1.33.0"))
	clusters = append(clusters, mixed, fleetCluster{
		cluster:  &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "new"}},
		machines: []clusterv1.Machine{{ObjectMeta: metav1.ObjectMeta{Name: "new-0"}}},
	})
	for _, p := range plans {
		t.Run(p.TalosVersion+string(p.UpgradePath), func(t *testing.T) {
			g := NewWithT(t)
			v := plan.NewClusterValidator(&p, field.NewPath("spec"))
			refused := 0
			for _, c := range clusters {
				want := plan.ValidateForCluster(&p, c.cluster, c.machines, field.NewPath("spec"))
				versions := plan.VersionsOf(c.cluster, c.machines)
				g.Expect(v.Validate(&versions)).To(Equal(want), "Cluster %s", c.cluster.Name)
				for _, e := range want {
					g.Expect(e.Detail).To(ContainSubstring(fmt.Sprintf("Cluster %q", c.cluster.Name)))
				}
				if len(want) > 0 {
					refused++
				}
			}
			if p.TalosVersion != "latest" && p.UpgradePath != upgradev1.UpgradePathAuto {
				g.Expect(refused).To(BeNumerically(">", 0), "the fleet has Clusters no plan can take in one step")
			}
		})
	}
}

// TestClusterValidatorPaths checks that the Auto paths of Clusters on the
// same versions are planned once and equal PathForCluster's.
func TestClusterValidatorPaths(t *testing.T) {
	g := NewWithT(t)
	p := upgradev1.UpgradePlan{TalosVersion: "v1.13.0", UpgradePath: upgradev1.UpgradePathAuto}
	available := []string{"v1.10.3", "v1.11.5", "v1.12.6", "v1.13.0"}
	v := plan.NewClusterValidator(&p, field.NewPath("spec"))
	for _, c := range fleet(9, []string{"v1.11.2", "v1.12.4", "v1.9.5"}, []string{"v1.33.0"}) {
		wantHops, wantErr := plan.PathForCluster(&p, c.cluster, c.machines, plan.MachineVersions(c.machines), available, "ghcr.io/siderolabs/installer")
		versions := plan.VersionsOf(c.cluster, c.machines)
		hops, err := v.Path(&versions, available, "ghcr.io/siderolabs/installer")
		g.Expect(hops).To(Equal(wantHops), "Cluster %s", c.cluster.Name)
		if wantErr != nil {
			g.Expect(err).To(MatchError(wantErr.Error()))
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
}

// BenchmarkPolicyAgainstFleet is the per-Cluster work of the policy
// webhook over 1,000 Clusters of 10 Machines on a few versions: one
// validator for the fleet over the versions an index keeps of each Cluster,
// against ValidateForCluster for each Cluster and its Machines.
func BenchmarkPolicyAgainstFleet(b *testing.B) {
	clusters := fleet(1000, []string{"v1.12.4", "v1.12.6", "v1.13.0"}, []string{"v1.34.1", "v1.35.2"})
	versions := make([]plan.ClusterVersions, 0, len(clusters))
	for _, c := range clusters {
		versions = append(versions, plan.VersionsOf(c.cluster, c.machines))
	}
	p := upgradev1.UpgradePlan{TalosVersion: "v1.13.1"}
	b.Run("validator", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			v := plan.NewClusterValidator(&p, field.NewPath("spec"))
			for i := range versions {
				_ = v.Validate(&versions[i])
				_ = plan.ClusterWarnings(&versions[i])
			}
		}
	})
	b.Run("each", func(b *testing.B) {
		for range b.N {
			for _, c := range clusters {
				_ = plan.ValidateForCluster(&p, c.cluster, c.machines, field.NewPath("spec"))
			}
		}
	})
}

// TestVersionsOf checks what the rules read of a Cluster: its distinct OS
// images with their Machines, its Kubernetes versions from the topology,
// the control planes and the kubelets, and whether its control plane is a
// single Machine.
func TestVersionsOf(t *testing.T) {
	one := int32(1)
	topology := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	topology.Spec.Topology.Version = "v1.35.0"
	single := topology.DeepCopy()
	single.Spec.Topology.ControlPlane.Replicas = &one
	unknown := clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "unknown"}}

	tests := []struct {
		name     string
		cluster  *clusterv1.Cluster
		machines []clusterv1.Machine
		want     plan.ClusterVersions
	}{
		{
			name:    "Machines on two images, in any order",
			cluster: topology,
			machines: []clusterv1.Machine{
				newMachine("w-2", false, "v1.12.4", "v1.35.2"), newMachine("cp-0", true, "v1.12.6", "v1.35.2"),
				newMachine("w-1", false, "v1.12.4", "v1.34.1"), unknown, newMachine("cp-1", true, "v1.12.6", "v1.35.2"),
			},
			want: plan.ClusterVersions{
				Name: "c",
				OSImages: []plan.OSImageMachines{
					{OSImage: "Talos (v1.12.4)", Machines: []string{"w-1", "w-2"}},
					{OSImage: "Talos (v1.12.6)", Machines: []string{"cp-0", "cp-1"}},
				},
				Kubernetes:           []string{"v1.34.1", "v1.35.0", "v1.35.2"},
				ControlPlaneMachines: 2,
			},
		},
		{
			name:     "one control-plane Machine",
			cluster:  topology,
			machines: []clusterv1.Machine{newMachine("cp-0", true, "v1.12.6", "v1.35.0")},
			want: plan.ClusterVersions{
				Name: "c", OSImages: []plan.OSImageMachines{{OSImage: "Talos (v1.12.6)", Machines: []string{"cp-0"}}},
				Kubernetes: []string{"v1.35.0"}, ControlPlaneMachines: 1, SingleControlPlane: true,
			},
		},
		{
			name:    "a topology of one control plane, no Machine yet",
			cluster: single,
			want:    plan.ClusterVersions{Name: "c", OSImages: []plan.OSImageMachines{}, Kubernetes: []string{"v1.35.0"}, SingleControlPlane: true},
		},
		{
			name:     "Machines without their Cluster",
			machines: []clusterv1.Machine{unknown},
			want:     plan.ClusterVersions{OSImages: []plan.OSImageMachines{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := plan.VersionsOf(tt.cluster, tt.machines)
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestValidateNamesEveryMachineOfAVersion checks that Machines whose nodes
// report one Talos version in two spellings are refused in one error that
// names them all, and that a Cluster that passes is told nothing.
func TestValidateNamesEveryMachineOfAVersion(t *testing.T) {
	g := NewWithT(t)
	p := upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	ms := []clusterv1.Machine{
		newMachine("a", true, "v1.9.5", "v1.32.3"), newMachine("b", false, "1.9.5", "v1.32.3"),
		newMachine("c", false, "v1.12.4", "v1.32.3"),
	}
	versions := plan.VersionsOf(c, ms)
	errs := plan.NewClusterValidator(&p, field.NewPath("spec")).Validate(&versions)
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Detail).To(HavePrefix(`Cluster "c", Machines "a", "b" on v1.9.5: `))
	g.Expect(errs[0].Detail).To(HaveSuffix("or set upgradePath: Auto to go through the minors in between"))

	passing := plan.VersionsOf(c, ms[2:])
	g.Expect(plan.NewClusterValidator(&p, field.NewPath("spec")).Validate(&passing)).To(BeEmpty())
}
