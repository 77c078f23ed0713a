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
				g.Expect(v.Validate(c.cluster, c.machines)).To(Equal(want), "Cluster %s", c.cluster.Name)
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
		hops, err := v.Path(c.cluster, c.machines, available, "ghcr.io/siderolabs/installer")
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
// validator for the fleet, against ValidateForCluster for each Cluster.
func BenchmarkPolicyAgainstFleet(b *testing.B) {
	clusters := fleet(1000, []string{"v1.12.4", "v1.12.6", "v1.13.0"}, []string{"v1.34.1", "v1.35.2"})
	p := upgradev1.UpgradePlan{TalosVersion: "v1.13.1"}
	b.Run("validator", func(b *testing.B) {
		for range b.N {
			v := plan.NewClusterValidator(&p, field.NewPath("spec"))
			for _, c := range clusters {
				_ = v.Validate(c.cluster, c.machines)
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
