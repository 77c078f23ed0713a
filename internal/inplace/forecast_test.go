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

package inplace

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func forecastTemplates(kind, image, version, talosVersion string) Templates {
	t := Templates{
		Machine: clusterv1.MachineSpec{
			ClusterName: "alpha",
			Version:     version,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: "bootstrap.cluster.x-k8s.io", Kind: "TalosConfigTemplate", Name: "alpha-md-0-" + talosVersion,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrastructureGroup, Kind: kind, Name: "alpha-md-0-" + image},
		},
		Infrastructure: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": kind,
			"metadata": map[string]any{"name": "alpha-md-0-" + image},
			"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"image": image, "cpus": int64(2)}}},
		},
	}
	if talosVersion != "" {
		t.Bootstrap = map[string]any{
			"apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha3", "kind": "TalosConfigTemplate",
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"generateType": "worker", "talosVersion": talosVersion}}},
		}
	}
	return t
}

// TestUnclaimed forecasts CAPI's rollout planner: a change of the Talos
// image alone (and of what CAPI leaves out of its comparison) is handed to
// Tollgate; every other change, or an image Tollgate cannot install, is
// named, and CAPI replaces the Machines for it.
func TestUnclaimed(t *testing.T) {
	const (
		v1124 = "ghcr.io/siderolabs/installer:v1.12.4"
		v1130 = "ghcr.io/siderolabs/installer:v1.13.0"
	)
	current := forecastTemplates("TalosSimMachineTemplate", v1124, "v1.35.0", "v1.12")
	for _, tc := range []struct {
		name    string
		desired func() Templates
		want    []string
	}{
		{"nothing changes", func() Templates { return current }, nil},
		{"the Talos image", func() Templates { return forecastTemplates("TalosSimMachineTemplate", v1130, "v1.35.0", "v1.12") }, nil},
		{"what CAPI changes itself", func() Templates {
			d := forecastTemplates("TalosSimMachineTemplate", v1130, "v1.35.0", "v1.12")
			d.Machine.MinReadySeconds = ptr.To[int32](30)
			d.Machine.Deletion.NodeDrainTimeoutSeconds = ptr.To[int32](600)
			d.Machine.ProviderID = "sim://x"
			return d
		}, nil},
		{"another field of the InfraMachine template", func() Templates {
			d := forecastTemplates("TalosSimMachineTemplate", v1130, "v1.35.0", "v1.12")
			d.Infrastructure["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["cpus"] = int64(4)
			return d
		}, []string{"TalosSimMachineTemplate spec.template.spec.cpus"}},
		{"the next Kubernetes minor", func() Templates { return forecastTemplates("TalosSimMachineTemplate", v1124, "v1.36.0", "v1.12") }, nil},
		{"a skip of a Kubernetes minor", func() Templates { return forecastTemplates("TalosSimMachineTemplate", v1124, "v1.37.0", "v1.12") },
			[]string{"MachineSet spec.template.spec.version"}},
		{"the bootstrap config", func() Templates { return forecastTemplates("TalosSimMachineTemplate", v1130, "v1.35.0", "v1.13") },
			[]string{"TalosConfigTemplate spec.template.spec.talosVersion"}},
		{"an image that is not a Talos version", func() Templates {
			return forecastTemplates("TalosSimMachineTemplate", "ghcr.io/siderolabs/installer:latest", "v1.35.0", "v1.12")
		}, []string{"TalosSimMachineTemplate spec.template.spec.image"}},
		{"another provider's template", func() Templates { return forecastTemplates("OtherMachineTemplate", v1124, "v1.35.0", "v1.12") },
			[]string{"the kind of the template changes to OtherMachineTemplate"}},
		{"the bootstrap template removed", func() Templates { return forecastTemplates("TalosSimMachineTemplate", v1130, "v1.35.0", "") },
			[]string{"the bootstrap config template is added or removed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := DefaultClaims().Unclaimed(context.Background(), current, tc.desired())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}

	t.Run("a provider Tollgate does not claim", func(t *testing.T) {
		g := NewWithT(t)
		other := forecastTemplates("OtherMachineTemplate", v1124, "v1.35.0", "v1.12")
		got, err := DefaultClaims().Unclaimed(context.Background(), other, forecastTemplates("OtherMachineTemplate", v1130, "v1.35.0", "v1.12"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal([]string{"OtherMachineTemplate spec.template.spec.image"}))
	})
}
