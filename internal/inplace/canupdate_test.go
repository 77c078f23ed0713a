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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
)

func machineSet(version string) clusterv1.MachineSet {
	return clusterv1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0-abcde"},
		Spec: clusterv1.MachineSetSpec{
			ClusterName: "alpha",
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: "alpha",
				Version:     version,
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrastructureGroup, Kind: "TalosSimMachineTemplate", Name: "alpha-md-0",
				},
			}},
		},
	}
}

func raw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

func simTemplate(image string) runtime.RawExtension {
	return raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TalosSimMachineTemplate","metadata":{"name":"alpha-md-0"},"spec":{"template":{"spec":{"image":"` + image + `"}}}}`)
}

const talosConfigTemplate = `{"apiVersion":"bootstrap.cluster.x-k8s.io/v1alpha3","kind":"TalosConfigTemplate","metadata":{"name":"alpha-md-0"},"spec":{"template":{"spec":{"generateType":"worker","talosVersion":"v1.12"}}}}`

// TestCanUpdateMachineSet answers the requests CAPI's MachineDeployment
// controller sends: the Talos image of the infrastructure template and the
// next Kubernetes version of the Machine template are made in place, what is
// not claimed (a skip of a Kubernetes minor or a downgrade, the bootstrap
// config, an image of unknown version, another provider) gets no patch, and
// a request that cannot be read is a Failure that says why.
func TestCanUpdateMachineSet(t *testing.T) {
	for _, tc := range []struct {
		name             string
		current, desired runtimehooksv1.CanUpdateMachineSetRequestObjects
		wantMachineSet   string
		wantInfra        string
		wantFailure      string
	}{
		{
			name:      "a new Talos image is made in place",
			current:   runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4"), BootstrapConfigTemplate: raw(talosConfigTemplate)},
			desired:   runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.13.0"), BootstrapConfigTemplate: raw(talosConfigTemplate)},
			wantInfra: `[{"op":"replace","path":"/spec/template/spec/image","value":"ghcr.io/siderolabs/installer:v1.13.0"}]`,
		},
		{
			name:           "the next Kubernetes minor is made in place",
			current:        runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:        runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.36.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			wantMachineSet: `[{"op":"replace","path":"/spec/template/spec/version","value":"v1.36.0"}]`,
		},
		{
			name:           "a Kubernetes patch release with a new Talos image, both in place",
			current:        runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:        runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.2"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.13.0")},
			wantMachineSet: `[{"op":"replace","path":"/spec/template/spec/version","value":"v1.35.2"}]`,
			wantInfra:      `[{"op":"replace","path":"/spec/template/spec/image","value":"ghcr.io/siderolabs/installer:v1.13.0"}]`,
		},
		{
			name:    "a skip of a Kubernetes minor is left to CAPI",
			current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.37.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
		},
		{
			name:    "a Kubernetes downgrade is left to CAPI",
			current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.2"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
		},
		{
			name:    "a Kubernetes version set where there was none is left to CAPI",
			current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet(""), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
		},
		{
			name:    "the bootstrap config is left to CAPI",
			current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4"), BootstrapConfigTemplate: raw(talosConfigTemplate)},
			desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4"),
				BootstrapConfigTemplate: raw(`{"apiVersion":"bootstrap.cluster.x-k8s.io/v1alpha3","kind":"TalosConfigTemplate","spec":{"template":{"spec":{"generateType":"worker","talosVersion":"v1.13"}}}}`)},
		},
		{
			name:    "an image of unknown version is left to CAPI",
			current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:latest")},
		},
		{
			name:    "another provider's template is left to CAPI",
			current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachineTemplate","spec":{"template":{"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4"}}}}`)},
			desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachineTemplate","spec":{"template":{"spec":{"image":"ghcr.io/siderolabs/installer:v1.13.0"}}}}`)},
		},
		{
			name:        "a template that is not JSON is a Failure",
			current:     runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:     runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"kind":`)},
			wantFailure: "reading the desired InfrastructureMachineTemplate",
		},
		{
			name:        "a template without a kind is a Failure",
			current:     runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:     runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"spec":{}}`)},
			wantFailure: "no apiVersion and kind",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			req := &runtimehooksv1.CanUpdateMachineSetRequest{Current: tc.current, Desired: tc.desired}
			resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
			DefaultClaims().CanUpdateMachineSet(context.Background(), req, resp)
			if tc.wantFailure != "" {
				g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusFailure))
				g.Expect(resp.Message).To(ContainSubstring(tc.wantFailure))
				return
			}
			g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusSuccess))
			if tc.wantMachineSet == "" {
				g.Expect(resp.MachineSetPatch.IsDefined()).To(BeFalse())
			} else {
				g.Expect(resp.MachineSetPatch.PatchType).To(Equal(runtimehooksv1.JSONPatchType))
				g.Expect(resp.MachineSetPatch.Patch).To(MatchJSON(tc.wantMachineSet))
			}
			if tc.wantInfra == "" {
				g.Expect(resp.InfrastructureMachineTemplatePatch.IsDefined()).To(BeFalse())
			} else {
				g.Expect(resp.InfrastructureMachineTemplatePatch.PatchType).To(Equal(runtimehooksv1.JSONPatchType))
				g.Expect(resp.InfrastructureMachineTemplatePatch.Patch).To(MatchJSON(tc.wantInfra))
			}
			g.Expect(resp.BootstrapConfigTemplatePatch.IsDefined()).To(BeFalse(), "no field of the bootstrap config is claimed")
		})
	}
}

// TestCanUpdateMachine answers a control plane provider's request for one
// Machine: the InfraMachine's Talos image is made in place, and the
// Kubernetes version of a worker Machine only.
func TestCanUpdateMachine(t *testing.T) {
	g := NewWithT(t)
	machine := clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-cp-0"}, Spec: clusterv1.MachineSpec{ClusterName: "alpha", Version: "v1.35.0"}}
	sim := func(image string) runtime.RawExtension {
		return raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TalosSimMachine","spec":{"providerID":"talossim://fleet/alpha/alpha-cp-0","image":"` + image + `"}}`)
	}
	req := &runtimehooksv1.CanUpdateMachineRequest{
		Current: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machine, InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.12.4")},
		Desired: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machine, InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.13.0")},
	}
	resp := &runtimehooksv1.CanUpdateMachineResponse{}
	DefaultClaims().CanUpdateMachine(context.Background(), req, resp)
	g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusSuccess))
	g.Expect(resp.MachinePatch.IsDefined()).To(BeFalse())
	g.Expect(resp.BootstrapConfigPatch.IsDefined()).To(BeFalse())
	g.Expect(resp.InfrastructureMachinePatch.Patch).To(MatchJSON(`[{"op":"replace","path":"/spec/image","value":"ghcr.io/siderolabs/installer:v1.13.0"}]`))

	// The Kubernetes version of a control-plane Machine is the control
	// plane's: left to CAPI; a worker's is its kubelet's, made in place.
	newer := machine.DeepCopy()
	newer.Spec.Version = "v1.36.0"
	controlPlane := func(m *clusterv1.Machine) clusterv1.Machine {
		m = m.DeepCopy()
		m.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
		return *m
	}
	req = &runtimehooksv1.CanUpdateMachineRequest{
		Current: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: controlPlane(&machine), InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.13.0")},
		Desired: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: controlPlane(newer), InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.13.0")},
	}
	resp = &runtimehooksv1.CanUpdateMachineResponse{}
	DefaultClaims().CanUpdateMachine(context.Background(), req, resp)
	g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusSuccess))
	g.Expect(resp.MachinePatch.IsDefined()).To(BeFalse(), "a control-plane Machine's version is left to CAPI")
	req.Current.Machine, req.Desired.Machine = machine, *newer
	resp = &runtimehooksv1.CanUpdateMachineResponse{}
	DefaultClaims().CanUpdateMachine(context.Background(), req, resp)
	g.Expect(resp.MachinePatch.Patch).To(MatchJSON(`[{"op":"replace","path":"/spec/version","value":"v1.36.0"}]`))
}
