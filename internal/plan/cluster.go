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

package plan

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// maxNamedMachines is how many Machine names a message lists before it
// summarises the rest.
const maxNamedMachines = 3

// MachineTalosVersion returns the Talos version a Machine's node reports in
// status.nodeInfo.osImage, for example "v1.12.4" for "Talos (v1.12.4)", or ""
// when the node is not known yet or does not run Talos.
func MachineTalosVersion(m *clusterv1.Machine) string {
	if m.Status.NodeInfo == nil {
		return ""
	}
	return talos.VersionFromOSImage(m.Status.NodeInfo.OSImage)
}

// PathForCluster plans the upgrade path of an Auto plan for a Cluster whose
// Machines run the versions from (MachineVersions gives those a Machine
// reports), through the releases available in the installer repository,
// each hop supporting the Cluster's Kubernetes versions (see
// talos.PlanPath).
func PathForCluster(p *upgradev1.UpgradePlan, cluster *clusterv1.Cluster, machines []clusterv1.Machine, from, available []string, repository string) ([]string, error) {
	return talos.PlanPath(talos.PathInput{
		From: from, Target: p.TalosVersion, Kubernetes: VersionsOf(cluster, machines).Kubernetes,
		Available: available, Repository: repository,
	})
}

// MachineVersions returns the Talos versions the Machines report, those
// known.
func MachineVersions(machines []clusterv1.Machine) []string {
	var from []string
	for i := range machines {
		if v := MachineTalosVersion(&machines[i]); v != "" {
			from = append(from, v)
		}
	}
	return from
}

// ValidateForCluster checks the rules of a plan that depend on the Cluster it
// applies to and its Machines: every Machine can go from the Talos version it
// runs to the target in one step (and a downgrade is deliberate), and the
// target supports the Kubernetes version the Cluster runs, by the version
// rules of package talos. Machines whose version is not known yet are
// skipped; the controller reads it from the node.
//
// fldPath is the path of the plan, as for Validate. The controller calls it
// in its preflight, the Cluster and TalosUpgrade webhooks for their Cluster;
// the TalosUpgradePolicy webhook checks every selected Cluster with one
// ClusterValidator, which judges each distinct version once.
func ValidateForCluster(p *upgradev1.UpgradePlan, cluster *clusterv1.Cluster, machines []clusterv1.Machine, fldPath *field.Path) field.ErrorList {
	versions := VersionsOf(cluster, machines)
	return NewClusterValidator(p, fldPath).Validate(&versions)
}

// describeMachines names a few Machines and counts the rest.
func describeMachines(names []string) string {
	slices.Sort(names)
	quoted := make([]string, 0, maxNamedMachines)
	for _, n := range names[:min(len(names), maxNamedMachines)] {
		quoted = append(quoted, fmt.Sprintf("%q", n))
	}
	s := "Machine " + strings.Join(quoted, ", ")
	if len(names) > 1 {
		s = "Machines " + strings.Join(quoted, ", ")
	}
	if extra := len(names) - maxNamedMachines; extra > 0 {
		s += fmt.Sprintf(" and %d more", extra)
	}
	return s
}
