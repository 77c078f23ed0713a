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
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talosimage"
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

func cloudTemplate(image, declared string) runtime.RawExtension {
	meta := `{"name":"alpha-md-0-` + image + `"}`
	if declared != "" {
		meta = `{"name":"alpha-md-0-` + image + `","annotations":{"` + talosimage.VersionAnnotation + `":"` + declared + `"}}`
	}
	return raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TalosSimCloudMachineTemplate","metadata":` + meta + `,"spec":{"template":{"spec":{"imageID":"` + image + `"}}}}`)
}

const talosConfigTemplate = `{"apiVersion":"bootstrap.cluster.x-k8s.io/v1alpha3","kind":"TalosConfigTemplate","metadata":{"name":"alpha-md-0"},"spec":{"template":{"spec":{"generateType":"worker","talosVersion":"v1.12"}}}}`

// TestFieldsPass decides which changes of a CanUpdateMachineSet request are
// made of fields Tollgate claims: the image of an infrastructure template
// Tollgate knows the image field of (whatever the image: what it boots is
// judged with the world), the next Kubernetes version of the Machine
// template; what else changes (a skip of a Kubernetes minor or a downgrade,
// the bootstrap config, another field, an unknown provider's image) is
// named, and CAPI replaces the Machines for it.
func TestFieldsPass(t *testing.T) {
	for _, tc := range []struct {
		name             string
		current, desired runtimehooksv1.CanUpdateMachineSetRequestObjects
		wantMachineSet   string
		wantInfra        string
		wantTalos        bool
		wantKubernetes   string
		wantUnclaimed    []string
	}{
		{
			name:      "a new Talos image",
			current:   runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4"), BootstrapConfigTemplate: raw(talosConfigTemplate)},
			desired:   runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.13.0"), BootstrapConfigTemplate: raw(talosConfigTemplate)},
			wantInfra: `[{"op":"replace","path":"/spec/template/spec/image","value":"ghcr.io/siderolabs/installer:v1.13.0"}]`,
			wantTalos: true,
		},
		{
			name:      "a cloud provider's opaque image",
			current:   runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: cloudTemplate("ami-1", "")},
			desired:   runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: cloudTemplate("ami-2", "v1.13.0")},
			wantInfra: `[{"op":"replace","path":"/spec/template/spec/imageID","value":"ami-2"}]`,
			wantTalos: true,
		},
		{
			name:           "the next Kubernetes minor, with any provider",
			current:        runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AcmeMachineTemplate","spec":{"template":{"spec":{"disk":"d1"}}}}`)},
			desired:        runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.36.0"), InfrastructureMachineTemplate: raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AcmeMachineTemplate","spec":{"template":{"spec":{"disk":"d1"}}}}`)},
			wantMachineSet: `[{"op":"replace","path":"/spec/template/spec/version","value":"v1.36.0"}]`,
			wantKubernetes: "v1.36.0",
		},
		{
			name:           "a Kubernetes patch release with a new Talos image",
			current:        runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:        runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.2"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.13.0")},
			wantMachineSet: `[{"op":"replace","path":"/spec/template/spec/version","value":"v1.35.2"}]`,
			wantInfra:      `[{"op":"replace","path":"/spec/template/spec/image","value":"ghcr.io/siderolabs/installer:v1.13.0"}]`,
			wantTalos:      true,
			wantKubernetes: "v1.35.2",
		},
		{
			name:          "a skip of a Kubernetes minor",
			current:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.37.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			wantUnclaimed: []string{"MachineSet spec.template.spec.version"},
		},
		{
			name:          "a Kubernetes downgrade",
			current:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.2"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			wantUnclaimed: []string{"MachineSet spec.template.spec.version"},
		},
		{
			name:          "a Kubernetes version set where there was none",
			current:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet(""), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			wantUnclaimed: []string{"MachineSet spec.template.spec.version"},
		},
		{
			name:    "the bootstrap config",
			current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4"), BootstrapConfigTemplate: raw(talosConfigTemplate)},
			desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4"),
				BootstrapConfigTemplate: raw(`{"apiVersion":"bootstrap.cluster.x-k8s.io/v1alpha3","kind":"TalosConfigTemplate","spec":{"template":{"spec":{"generateType":"worker","talosVersion":"v1.13"}}}}`)},
			wantUnclaimed: []string{"TalosConfigTemplate spec.template.spec.talosVersion"},
		},
		{
			name:          "another field of the infrastructure template",
			current:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachineTemplate","spec":{"template":{"spec":{"ami":{"id":"ami-1"},"instanceType":"m5.large"}}}}`)},
			desired:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachineTemplate","spec":{"template":{"spec":{"ami":{"id":"ami-2"},"instanceType":"m5.xlarge"}}}}`)},
			wantUnclaimed: []string{"AWSMachineTemplate spec.template.spec.instanceType"},
		},
		{
			name:          "an image field of a provider Tollgate does not know",
			current:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AcmeMachineTemplate","spec":{"template":{"spec":{"disk":"ghcr.io/siderolabs/installer:v1.12.4"}}}}`)},
			desired:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AcmeMachineTemplate","spec":{"template":{"spec":{"disk":"ghcr.io/siderolabs/installer:v1.13.0"}}}}`)},
			wantUnclaimed: []string{"AcmeMachineTemplate spec.template.spec.disk"},
		},
		{
			name:          "another provider",
			current:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			desired:       runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: cloudTemplate("ami-2", "v1.13.0")},
			wantUnclaimed: []string{"the kind of the template changes to TalosSimCloudMachineTemplate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := DefaultClaims().machineSetProposal(&runtimehooksv1.CanUpdateMachineSetRequest{Current: tc.current, Desired: tc.desired})
			g.Expect(err).NotTo(HaveOccurred())
			fv, err := fieldsPass(p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fv.unclaimed).To(Equal(tc.wantUnclaimed))
			if tc.wantUnclaimed != nil {
				return
			}
			g.Expect(fv.talosImage).To(Equal(tc.wantTalos))
			g.Expect(fv.kubernetes).To(Equal(tc.wantKubernetes))
			expectPatch(g, fv.patches[machineObject], tc.wantMachineSet)
			expectPatch(g, fv.patches[infraObject], tc.wantInfra)
			if len(fv.patches) > bootstrapObject {
				g.Expect(fv.patches[bootstrapObject]).To(BeNil())
			}
		})
	}
}

func expectPatch(g Gomega, got []byte, want string) {
	if want == "" {
		g.Expect(got).To(BeNil())
		return
	}
	g.Expect(got).To(MatchJSON(want))
}

// TestJudge decides, once the fields are claimed, whether Tollgate will
// finish the update with the Cluster's policy, from what the apiserver
// holds; every "no" says why.
func TestJudge(t *testing.T) {
	capi := &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "capi"}, Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
		TargetFrom: upgradev1.TargetFromCAPI,
		Installer:  upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "ghcr.io/siderolabs/installer"},
	}}}
	own := &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "own"}, Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
		TalosVersion: "v1.13.0", KubernetesVersion: "v1.36.0",
		Installer: upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "ghcr.io/siderolabs/installer"},
	}}}
	ready := func(p *upgradev1.TalosUpgradePolicy) world { return world{cluster: "alpha", optedIn: true, policy: p} }
	image := func(from, to string) proposal {
		p, err := DefaultClaims().machineSetProposal(&runtimehooksv1.CanUpdateMachineSetRequest{
			Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate(from)},
			Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate(to)},
		})
		if err != nil {
			panic(err)
		}
		return p
	}
	cloud := func(declared string) proposal {
		p, err := DefaultClaims().machineSetProposal(&runtimehooksv1.CanUpdateMachineSetRequest{
			Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: cloudTemplate("ami-1", "v1.12.4")},
			Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: cloudTemplate("ami-2", declared)},
		})
		if err != nil {
			panic(err)
		}
		return p
	}
	const v1124, v1130 = "ghcr.io/siderolabs/installer:v1.12.4", "ghcr.io/siderolabs/installer:v1.13.0"
	talosChange := fieldsVerdict{claimed: 1, talosImage: true}
	kubernetesChange := fieldsVerdict{claimed: 1, kubernetes: "v1.36.0"}
	for _, tc := range []struct {
		name   string
		p      proposal
		fv     fieldsVerdict
		w      world
		wantNo string
	}{
		{name: "CAPI's image, from the policy's repository", p: image(v1124, v1130), fv: talosChange, w: ready(capi)},
		{name: "an opaque image the template declares", p: cloud("v1.13.0"), fv: talosChange, w: ready(capi)},
		{name: "an opaque image the template does not declare", p: cloud(""), fv: talosChange, w: ready(capi),
			wantNo: `spec.template.spec.imageID "ami-2" names no Talos version (an opaque image); write the version its template boots in the template's annotation upgrade.tollgate.dev/talos-version`},
		{name: "an image from a mirror the policy does not install from", p: image(v1124, "mirror.example/siderolabs/installer:v1.13.0"), fv: talosChange, w: ready(capi),
			wantNo: `image "mirror.example/siderolabs/installer:v1.13.0" is not from the policy's installer`},
		{name: "a downgrade", p: image(v1130, v1124), fv: talosChange, w: ready(capi), wantNo: "downgrade"},
		{name: "the policy's own target", p: image(v1124, v1130), fv: talosChange, w: ready(own)},
		{name: "another version than the policy's own target", p: image(v1124, "ghcr.io/siderolabs/installer:v1.13.1"), fv: talosChange, w: ready(own),
			wantNo: "TalosSimMachineTemplate spec.template.spec.image boots v1.13.1, TalosUpgradePolicy own (targetFrom: Policy) rolls out v1.13.0"},
		{name: "the policy's rollout target wins over its spec", p: image(v1124, "ghcr.io/siderolabs/installer:v1.13.1"), fv: talosChange,
			w: world{cluster: "alpha", optedIn: true, policy: own, upgrade: &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.1"}}}}},
		{name: "a Kubernetes version with CAPI's targets", p: image(v1124, v1124), fv: kubernetesChange, w: ready(capi)},
		{name: "the policy's own Kubernetes target", p: image(v1124, v1124), fv: kubernetesChange, w: ready(own)},
		{name: "another Kubernetes version than the policy's", p: image(v1124, v1124), fv: fieldsVerdict{claimed: 1, kubernetes: "v1.35.2"}, w: ready(own),
			wantNo: "the MachineSet asks for Kubernetes v1.35.2, TalosUpgradePolicy own (targetFrom: Policy) for v1.36.0"},
		{name: "no Cluster", p: image(v1124, v1130), fv: talosChange, w: world{}, wantNo: "Cluster fleet/alpha of MachineSet fleet/alpha-md-0-abcde does not exist"},
		{name: "a namespace that does not opt in", p: image(v1124, v1130), fv: talosChange, w: world{cluster: "alpha"}, wantNo: "namespace fleet does not opt in"},
		{name: "a Cluster no policy selects", p: image(v1124, v1130), fv: talosChange, w: world{cluster: "alpha", optedIn: true},
			wantNo: "Cluster alpha is not selected by a TalosUpgradePolicy"},
		{name: "a world that cannot be read", p: image(v1124, v1130), fv: talosChange, w: world{err: errors.New("the apiserver is away")},
			wantNo: "cannot tell whether Tollgate finishes the update: the apiserver is away"},
		{name: "a provider that refuses the change", p: image(v1124, v1130), fv: talosChange,
			w: world{cluster: "alpha", optedIn: true, policy: capi, refused: []string{"the provider refuses the change of TalosSimCloudMachine x"}}, wantNo: "the provider refuses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			no := judge(tc.p, tc.fv, tc.w)
			if tc.wantNo == "" {
				g.Expect(no).To(BeEmpty())
				return
			}
			g.Expect(no).To(ContainElement(ContainSubstring(tc.wantNo)))
		})
	}
}

// TestCanUpdateAnswers: a request that cannot be read is a Failure that
// says why, and touches nothing; a change Tollgate does not claim is
// answered "no" (Success without patches) before the world is read.
func TestCanUpdateAnswers(t *testing.T) {
	g := NewWithT(t)
	e := &Extension{} // No client: nothing here reads the world.
	ctx := context.Background()
	for _, tc := range []struct {
		desired     runtime.RawExtension
		wantFailure string
	}{
		{desired: raw(`{"kind":`), wantFailure: "reading the desired InfrastructureMachineTemplate"},
		{desired: raw(`{"spec":{}}`), wantFailure: "no apiVersion and kind"},
	} {
		resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
		e.CanUpdateMachineSet(ctx, &runtimehooksv1.CanUpdateMachineSetRequest{
			Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
			Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: tc.desired},
		}, resp)
		g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusFailure))
		g.Expect(resp.Message).To(ContainSubstring(tc.wantFailure))
	}

	resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
	e.CanUpdateMachineSet(ctx, &runtimehooksv1.CanUpdateMachineSetRequest{
		Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4"), BootstrapConfigTemplate: raw(talosConfigTemplate)},
		Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.37.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.13.0")},
	}, resp)
	g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusSuccess))
	g.Expect(resp.MachineSetPatch.IsDefined()).To(BeFalse())
	g.Expect(resp.InfrastructureMachineTemplatePatch.IsDefined()).To(BeFalse())
	g.Expect(resp.Message).To(ContainSubstring("the bootstrap config template is added or removed"))

	resp = &runtimehooksv1.CanUpdateMachineSetResponse{}
	e.CanUpdateMachineSet(ctx, &runtimehooksv1.CanUpdateMachineSetRequest{
		Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.35.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.12.4")},
		Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: machineSet("v1.37.0"), InfrastructureMachineTemplate: simTemplate("ghcr.io/siderolabs/installer:v1.13.0")},
	}, resp)
	g.Expect(resp.Status).To(Equal(runtimehooksv1.ResponseStatusSuccess))
	g.Expect(resp.InfrastructureMachineTemplatePatch.IsDefined()).To(BeFalse(), "no partial claim: all or nothing")
	g.Expect(resp.Message).To(ContainSubstring("MachineSet spec.template.spec.version"))
}

// TestCanUpdateMachineFields reads a control plane provider's request for
// one Machine: the InfraMachine's image is claimed, and the Kubernetes
// version of a worker Machine only.
func TestCanUpdateMachineFields(t *testing.T) {
	g := NewWithT(t)
	machine := clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-cp-0"}, Spec: clusterv1.MachineSpec{ClusterName: "alpha", Version: "v1.35.0"}}
	sim := func(image string) runtime.RawExtension {
		return raw(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TalosSimMachine","spec":{"providerID":"talossim://fleet/alpha/alpha-cp-0","image":"` + image + `"}}`)
	}
	pass := func(req *runtimehooksv1.CanUpdateMachineRequest) fieldsVerdict {
		p, err := DefaultClaims().machineProposal(req)
		g.Expect(err).NotTo(HaveOccurred())
		fv, err := fieldsPass(p)
		g.Expect(err).NotTo(HaveOccurred())
		return fv
	}
	fv := pass(&runtimehooksv1.CanUpdateMachineRequest{
		Current: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machine, InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.12.4")},
		Desired: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machine, InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.13.0")},
	})
	g.Expect(fv.unclaimed).To(BeEmpty())
	g.Expect(fv.patches[machineObject]).To(BeNil())
	g.Expect(fv.patches[infraObject]).To(MatchJSON(`[{"op":"replace","path":"/spec/image","value":"ghcr.io/siderolabs/installer:v1.13.0"}]`))

	// The Kubernetes version of a control-plane Machine is the control
	// plane's: left to CAPI; a worker's is its kubelet's, made in place.
	newer := machine.DeepCopy()
	newer.Spec.Version = "v1.36.0"
	controlPlane := func(m *clusterv1.Machine) clusterv1.Machine {
		m = m.DeepCopy()
		m.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
		return *m
	}
	fv = pass(&runtimehooksv1.CanUpdateMachineRequest{
		Current: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: controlPlane(&machine), InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.13.0")},
		Desired: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: controlPlane(newer), InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.13.0")},
	})
	g.Expect(fv.unclaimed).To(Equal([]string{"Machine spec.version"}), "a control-plane Machine's version is left to CAPI")
	fv = pass(&runtimehooksv1.CanUpdateMachineRequest{
		Current: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machine, InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.13.0")},
		Desired: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: *newer, InfrastructureMachine: sim("ghcr.io/siderolabs/installer:v1.13.0")},
	})
	g.Expect(fv.patches[machineObject]).To(MatchJSON(`[{"op":"replace","path":"/spec/version","value":"v1.36.0"}]`))
	g.Expect(fv.kubernetes).To(Equal("v1.36.0"))
}
