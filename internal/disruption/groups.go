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
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// This file says which rollout group a Machine is of, and in which order
// the groups go.

// GroupOf returns the rollout group of m: the control plane's, else the
// first group of rollout.order whose selector matches, else its
// MachineDeployment's.
func GroupOf(spec *upgradev1.TalosUpgradeSpec, m *clusterv1.Machine) string {
	if IsControlPlane(m) {
		return ControlPlaneGroup
	}
	for _, g := range spec.Rollout.Order {
		sel, err := metav1.LabelSelectorAsSelector(&g.Selector)
		if err == nil && sel.Matches(labels.Set(m.Labels)) {
			return g.Name
		}
	}
	if md := m.Labels[clusterv1.MachineDeploymentNameLabel]; md != "" {
		return "md/" + md
	}
	return "workers"
}

// IsControlPlane reports whether m is a control-plane Machine.
func IsControlPlane(m *clusterv1.Machine) bool {
	_, ok := m.Labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

// groupRank orders groups: control plane, then rollout.order, then the rest
// by name.
func groupRank(spec *upgradev1.TalosUpgradeSpec, group string) int {
	if group == ControlPlaneGroup {
		return 0
	}
	for i, g := range spec.Rollout.Order {
		if g.Name == group {
			return 1 + i
		}
	}
	return 1 + len(spec.Rollout.Order)
}

// SortRecords orders Machine records the way they are disrupted.
func SortRecords(spec *upgradev1.TalosUpgradeSpec, records []upgradev1.MachineUpgradeStatus) {
	sort.SliceStable(records, func(i, j int) bool {
		a, b := records[i], records[j]
		ra, rb := groupRank(spec, a.Group), groupRank(spec, b.Group)
		if ra != rb {
			return ra < rb
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Machine < b.Machine
	})
}
