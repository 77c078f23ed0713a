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

package talosimage

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

var schematic = strings.Repeat("ab", 32)

func TestParseValue(t *testing.T) {
	tests := []struct {
		value        string
		version, sch string
		source       Source
		ok           bool
	}{
		{value: "ghcr.io/siderolabs/installer:v1.13.0", version: "v1.13.0", source: SourceInstaller, ok: true},
		{value: "ghcr.io/siderolabs/installer:1.13.0", version: "v1.13.0", source: SourceInstaller, ok: true},
		{value: "registry.example.com/talos/installer:v1.13.0-beta.1", version: "v1.13.0-beta.1", source: SourceInstaller, ok: true},
		{value: "factory.talos.dev/metal-installer/" + schematic + ":v1.13.0", version: "v1.13.0", sch: schematic, source: SourceInstaller, ok: true},
		{value: "https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst", version: "v1.13.0", sch: schematic, source: SourceURL, ok: true},
		{value: "https://factory.example.com/image/" + schematic + "/v1.12.4/nocloud-amd64.raw.xz", version: "v1.12.4", sch: schematic, source: SourceURL, ok: true},
		{value: "https://pxe.factory.talos.dev/pxe/" + schematic + "/v1.13.0/metal-amd64", version: "v1.13.0", sch: schematic, source: SourceURL, ok: true},
		{value: "https://github.com/siderolabs/talos/releases/download/v1.13.0/metal-amd64.raw.zst", version: "v1.13.0", source: SourceURL, ok: true},
		{value: "talos-v1.13.0-amd64", version: "v1.13.0", source: SourceName, ok: true},
		{value: "talos-1.13.0", version: "v1.13.0", source: SourceName, ok: true},
		{value: "Talos_v1.13.0", version: "v1.13.0", source: SourceName, ok: true},
		{value: "talos-v1-13-0-amd64", version: "v1.13.0", source: SourceName, ok: true},
		{value: "talos-v1.13.0-beta.1-amd64", version: "v1.13.0-beta.1", source: SourceName, ok: true},
		{value: "projects/p/global/images/talos-v1-12-4", version: "v1.12.4", source: SourceName, ok: true},

		{value: "ami-0a1b2c3d4e5f67890"},
		{value: "104"},
		{value: "8f1c3e7a-0b5d-4c1e-9a2f-1e2d3c4b5a69"},
		{value: "ubuntu-2204-kube-v1.31.0", ok: false},
		{value: "https://example.com/images/v1.13.0/disk.raw"},
		{value: "ghcr.io/siderolabs/installer:latest"},
		{value: "ghcr.io/siderolabs/installer@sha256:" + strings.Repeat("0", 64)},
		{value: ""},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			g := NewWithT(t)
			version, sch, source, ok := ParseValue(tt.value)
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(version).To(Equal(tt.version))
			g.Expect(sch).To(Equal(tt.sch))
			g.Expect(source).To(Equal(tt.source))
		})
	}
}

// obj builds an InfraMachine (template when tmpl) of kind with spec and
// annotations.
func obj(kind string, tmpl bool, spec map[string]any, annotations map[string]any) map[string]any {
	o := map[string]any{"apiVersion": InfrastructureGroup + "/v1beta2", "kind": kind}
	if tmpl {
		o["kind"] = kind + "Template"
		o["spec"] = map[string]any{"template": map[string]any{"spec": spec}}
	} else {
		o["spec"] = spec
	}
	if annotations != nil {
		o["metadata"] = map[string]any{"annotations": annotations}
	}
	return o
}

func TestReadTemplate(t *testing.T) {
	declared := map[string]any{VersionAnnotation: "v1.13.0"}
	tests := []struct {
		name    string
		obj     map[string]any
		want    Image
		wantErr string
	}{
		{
			name: "an opaque AMI with the template's word",
			obj:  obj("AWSMachine", true, map[string]any{"ami": map[string]any{"id": "ami-0a1b2c"}}, declared),
			want: Image{Field: "spec.template.spec.ami", Value: "ami-0a1b2c", Version: "v1.13.0", Source: SourceAnnotation},
		},
		{
			name:    "an opaque AMI without it",
			obj:     obj("AWSMachine", true, map[string]any{"ami": map[string]any{"id": "ami-0a1b2c"}}, nil),
			wantErr: `AWSMachine spec.template.spec.ami "ami-0a1b2c" names no Talos version (an opaque image); write the version its template boots in the template's annotation upgrade.tollgate.dev/talos-version`,
		},
		{
			name: "a Metal3 Image Factory URL and its checksum",
			obj: obj("Metal3Machine", true, map[string]any{"image": map[string]any{
				"url":      "https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst",
				"checksum": "https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst.sha512", "checksumType": "sha512", "format": "raw",
			}}, nil),
			want: Image{Field: "spec.template.spec.image", Value: "https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst.sha512, sha512, raw, https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst",
				Version: "v1.13.0", Source: SourceURL, Schematic: schematic},
		},
		{
			name: "a Proxmox template ID with the template's word",
			obj:  obj("ProxmoxMachine", true, map[string]any{"templateID": int64(104), "sourceNode": "pve1"}, declared),
			want: Image{Field: "spec.template.spec.templateID", Value: "104", Version: "v1.13.0", Source: SourceAnnotation},
		},
		{
			name: "Proxmox template tags naming the version",
			obj:  obj("ProxmoxMachine", true, map[string]any{"templateSelector": map[string]any{"matchTags": []any{"talos", "talos-v1.12.4"}}}, nil),
			want: Image{Field: "spec.template.spec.templateSelector", Value: "talos, talos-v1.12.4", Version: "v1.12.4", Source: SourceName},
		},
		{
			name: "a vSphere template name",
			obj:  obj("VSphereMachine", true, map[string]any{"template": "talos-v1.13.0-amd64"}, declared),
			want: Image{Field: "spec.template.spec.template", Value: "talos-v1.13.0-amd64", Version: "v1.13.0", Source: SourceName},
		},
		{
			name:    "an image and a word that disagree",
			obj:     obj("VSphereMachine", true, map[string]any{"template": "talos-v1.12.4"}, declared),
			wantErr: "conflicting Talos versions: VSphereMachine spec.template.spec.template \"talos-v1.12.4\" boots v1.12.4, the template's annotation upgrade.tollgate.dev/talos-version says v1.13.0",
		},
		{
			name: "an installer of the test provider",
			obj:  obj("TalosSimMachine", true, map[string]any{"image": "ghcr.io/siderolabs/installer:v1.12.4"}, nil),
			want: Image{Field: "spec.template.spec.image", Value: "ghcr.io/siderolabs/installer:v1.12.4", Version: "v1.12.4", Source: SourceInstaller, Installer: "ghcr.io/siderolabs/installer:v1.12.4"},
		},
		{
			name: "an unknown kind with the template's word",
			obj:  obj("AcmeMachine", true, map[string]any{"disk": "x"}, declared),
			want: Image{Version: "v1.13.0", Source: SourceAnnotation},
		},
		{
			name:    "an unknown kind without it",
			obj:     obj("AcmeMachine", true, map[string]any{"disk": "x"}, nil),
			wantErr: "unknown kind of InfraMachine AcmeMachine",
		},
		{
			name:    "a word that is no version",
			obj:     obj("AWSMachine", true, map[string]any{"ami": map[string]any{"id": "ami-1"}}, map[string]any{VersionAnnotation: "latest"}),
			wantErr: `annotation upgrade.tollgate.dev/talos-version "latest" is not a Talos version`,
		},
		{
			name:    "no image field",
			obj:     obj("GCPMachine", true, map[string]any{"instanceType": "n1"}, nil),
			wantErr: "GCPMachine has no spec.template.spec.image or spec.template.spec.imageFamily",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ReadTemplate(tt.obj)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestReadInfraMachine(t *testing.T) {
	g := NewWithT(t)
	cloud := obj("TalosSimCloudMachine", false, map[string]any{"imageID": "tsi-abc", "providerID": "talossim://x"}, nil)
	got, err := Read(cloud, "v1.13.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(Image{Field: "spec.imageID", Value: "tsi-abc", Version: "v1.13.0", Source: SourceAnnotation}))
	_, err = Read(cloud, "")
	g.Expect(err).To(MatchError(ErrNoVersion))
	k, ok := KindOf(InfrastructureGroup, "TalosSimCloudMachine")
	g.Expect(ok).To(BeTrue())
	g.Expect(k.Fields).To(Equal([][]string{{"imageID"}}))
	k, _ = KindOf(InfrastructureGroup, "ProxmoxMachine")
	g.Expect(k.Path(obj("ProxmoxMachine", true, map[string]any{"templateID": int64(1)}, nil), true)).To(Equal([]string{"spec", "template", "spec", "templateID"}))
	g.Expect(k.Path(obj("ProxmoxMachine", false, map[string]any{}, nil), false)).To(Equal([]string{"spec", "templateSelector"}))
}
