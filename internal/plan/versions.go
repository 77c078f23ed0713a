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
	"cmp"
	"slices"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

// ClusterVersions is what the rules of a plan read of a Cluster and its
// Machines: the Talos and Kubernetes versions they run and the size of the
// control plane. It is small and made once per change of the Cluster or one
// of its Machines, so that an index (package inventory) can keep one for
// every Cluster of a fleet and a policy's webhook judge 1,000 Clusters
// without reading their 10,000 Machines. VersionsOf makes one from the
// objects.
//
// A ClusterVersions is shared by whoever reads it: never change it.
type ClusterVersions struct {
	// Name is the name of the Cluster; "" when its Machines were read
	// without it.
	Name string
	// OSImages are the distinct OS images the Machines' nodes report
	// (status.nodeInfo.osImage), sorted, each with the Machines that report
	// it. Machines whose node is not known yet are left out.
	OSImages []OSImageMachines
	// Kubernetes are the distinct Kubernetes versions the Cluster runs or is
	// asked to run: its topology's, its control-plane Machines'
	// spec.version and every node's kubelet version, sorted.
	Kubernetes []string
	// ControlPlaneMachines is the number of the Cluster's control-plane
	// Machines.
	ControlPlaneMachines int
	// SingleControlPlane is true when the Cluster has one control-plane
	// Machine, or its topology asks for one.
	SingleControlPlane bool
}

// OSImageMachines are the Machines whose nodes report one OS image.
type OSImageMachines struct {
	// OSImage is the node's status.nodeInfo.osImage, for example
	// "Talos (v1.12.4)".
	OSImage string
	// Machines are the names of the Machines, sorted.
	Machines []string
}

// VersionsOf returns the versions of a Cluster and its Machines. cluster
// may be nil when only the Machines are known.
func VersionsOf(cluster *clusterv1.Cluster, machines []clusterv1.Machine) ClusterVersions {
	ptrs := make([]*clusterv1.Machine, len(machines))
	for i := range machines {
		ptrs[i] = &machines[i]
	}
	return NewClusterVersions(cluster, ptrs)
}

// NewClusterVersions returns the versions of a Cluster and its Machines, as
// VersionsOf does, from pointers to the Machines (an index holds those of
// its cache).
func NewClusterVersions(cluster *clusterv1.Cluster, machines []*clusterv1.Machine) ClusterVersions {
	var v ClusterVersions
	var kubernetes []string
	if cluster != nil {
		v.Name = cluster.Name
		if cluster.Spec.Topology.Version != "" {
			kubernetes = append(kubernetes, cluster.Spec.Topology.Version)
		}
		if r := cluster.Spec.Topology.ControlPlane.Replicas; r != nil && *r == 1 {
			v.SingleControlPlane = true
		}
	}
	var images map[string][]string
	for _, m := range machines {
		if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
			v.ControlPlaneMachines++
			if m.Spec.Version != "" {
				kubernetes = append(kubernetes, m.Spec.Version)
			}
		}
		info := m.Status.NodeInfo
		if info == nil {
			continue
		}
		if info.KubeletVersion != "" {
			kubernetes = append(kubernetes, info.KubeletVersion)
		}
		if info.OSImage != "" {
			if images == nil {
				images = map[string][]string{}
			}
			images[info.OSImage] = append(images[info.OSImage], m.Name)
		}
	}
	if v.ControlPlaneMachines == 1 {
		v.SingleControlPlane = true
	}
	slices.Sort(kubernetes)
	v.Kubernetes = slices.Clip(slices.Compact(kubernetes))
	v.OSImages = make([]OSImageMachines, 0, len(images))
	for image, names := range images {
		slices.Sort(names)
		v.OSImages = append(v.OSImages, OSImageMachines{OSImage: image, Machines: names})
	}
	slices.SortFunc(v.OSImages, func(a, b OSImageMachines) int { return cmp.Compare(a.OSImage, b.OSImage) })
	return v
}

// TalosVersions returns the distinct Talos versions the Machines report
// (see talos.VersionFromOSImage), sorted as strings; OS images without one
// are left out.
func (v *ClusterVersions) TalosVersions() []string {
	var out []string
	for _, img := range v.OSImages {
		if version := talos.VersionFromOSImage(img.OSImage); version != "" {
			out = append(out, version)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
