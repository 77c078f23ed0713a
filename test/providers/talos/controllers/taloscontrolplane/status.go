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

package taloscontrolplane

import (
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"

	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

// setStatus writes the contract's status of s's TalosControlPlane from its
// Machines.
func setStatus(s *scope) {
	st := &s.tcp.Status
	st.Selector = labels.SelectorFromSet(machineLabels(s.tcp, s.cluster)).String()

	if s.machines == nil {
		// The Machines could not be read: keep what was known.
		return
	}

	var ready int32

	for _, m := range s.machines {
		if m.Status.NodeRef.IsDefined() {
			st.Initialized = true
		}

		if m.Status.NodeRef.IsDefined() && conditions.IsTrue(m, clusterv1.ReadyCondition) {
			ready++
		}
	}

	st.Replicas = int32(len(s.machines)) //nolint:gosec // a handful of Machines.
	st.ReadyReplicas = ready
	st.UnavailableReplicas = st.Replicas - ready
	st.Ready = ready > 0
	st.Version = lowestVersion(s.machines)

	if st.Ready {
		v1beta1conditions.MarkTrue(s.tcp, controlplanev1.AvailableCondition)
	} else {
		v1beta1conditions.MarkFalse(s.tcp, controlplanev1.AvailableCondition, controlplanev1.NoReadyMachinesReason, clusterv1.ConditionSeverityInfo,
			"No control-plane Machine is Ready (%d of them)", st.Replicas)
	}
}

// lowestVersion is the lowest spec.version of the Machines, nil when none
// has one that parses.
func lowestVersion(machines map[string]*clusterv1.Machine) *string {
	var (
		lowest *version.Version
		raw    string
	)

	for _, m := range machines {
		v, err := version.ParseGeneric(m.Spec.Version)
		if err != nil {
			continue
		}

		if lowest == nil || v.LessThan(lowest) {
			lowest, raw = v, m.Spec.Version
		}
	}

	if lowest == nil {
		return nil
	}

	return ptr.To(raw)
}

// byAge returns the Machines oldest first.
func byAge(machines map[string]*clusterv1.Machine) []*clusterv1.Machine {
	out := make([]*clusterv1.Machine, 0, len(machines))
	for _, m := range machines {
		out = append(out, m)
	}

	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) {
			return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
		}

		return out[i].Name < out[j].Name
	})

	return out
}
