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
	"encoding/json"
	"fmt"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

func obj(spec string) map[string]any {
	m := map[string]any{}
	if err := json.Unmarshal([]byte(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TalosSimMachine","metadata":{"name":"m"}`+spec+`}`), &m); err != nil {
		panic(err) // The test's own literals.
	}
	return m
}

// TestPatch checks the decisions of Patch: only claimed fields that change
// get an operation, a value Tollgate cannot apply is refused with the reason,
// and the patch applied to current gives desired's claimed fields and
// nothing else.
func TestPatch(t *testing.T) {
	// A field whose Check takes installer images only, as a field's Check
	// refuses a value Tollgate cannot apply.
	installer := Field{Path: []string{"image"}, Check: func(_, desired any) error {
		ref, ok := desired.(string)
		if !ok {
			return fmt.Errorf("want an installer image, got %T %v", desired, desired)
		}
		_, err := talos.InstallerVersion(ref)
		return err
	}}
	image := []Field{installer, {Path: []string{"nested", "deep", "value"}}}
	for _, tc := range []struct {
		name             string
		base             []string
		current, desired string
		wantOps          int
		wantRefused      []string
		// want is current with the patch applied, when it differs from
		// desired (unclaimed changes stay with CAPI).
		want string
	}{
		{
			name:    "nothing changes",
			base:    []string{"spec"},
			current: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4"}`,
			desired: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4"}`,
		},
		{
			name:    "the Talos image changes",
			base:    []string{"spec"},
			current: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4","providerID":"talossim://a"}`,
			desired: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.13.0","providerID":"talossim://a"}`,
			wantOps: 1,
		},
		{
			name:    "a template's image changes",
			base:    []string{"spec", "template", "spec"},
			current: `,"spec":{"template":{"spec":{"image":"factory.talos.dev/installer/abc:v1.12.4"}}}`,
			desired: `,"spec":{"template":{"spec":{"image":"factory.talos.dev/installer/abc:v1.13.0"}}}`,
			wantOps: 1,
		},
		{
			name:    "an unclaimed field changes with the image: only the image is patched",
			base:    []string{"spec"},
			current: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4","cpus":2}`,
			desired: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.13.0","cpus":4}`,
			wantOps: 1,
			want:    `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.13.0","cpus":2}`,
		},
		{
			name:        "an image whose version cannot be known is left to CAPI",
			base:        []string{"spec"},
			current:     `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4"}`,
			desired:     `,"spec":{"image":"ghcr.io/siderolabs/installer:latest"}`,
			wantRefused: []string{"spec.image: "},
			want:        `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4"}`,
		},
		{
			name:        "a removed image is left to CAPI",
			base:        []string{"spec"},
			current:     `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4"}`,
			desired:     `,"spec":{}`,
			wantRefused: []string{"spec.image: want an installer image"},
			want:        `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4"}`,
		},
		{
			name:    "a field new in desired is added below its deepest present parent, alone",
			base:    []string{"spec"},
			current: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4"}`,
			desired: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4","nested":{"other":1,"deep":{"value":"x"}}}`,
			wantOps: 1,
			want:    `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.12.4","nested":{"deep":{"value":"x"}}}`,
		},
		{
			name:    "a field removed in desired is removed",
			base:    []string{"spec"},
			current: `,"spec":{"nested":{"deep":{"value":"x"}}}`,
			desired: `,"spec":{"nested":{"deep":{}}}`,
			wantOps: 1,
		},
		{
			name:    "no spec at all in current",
			base:    []string{"spec"},
			current: ``,
			desired: `,"spec":{"image":"ghcr.io/siderolabs/installer:v1.13.0"}`,
			wantOps: 1,
		},
		{
			name:    "a spec field of another type than the path expects is replaced whole",
			base:    []string{"spec"},
			current: `,"spec":{"nested":"a string"}`,
			desired: `,"spec":{"nested":{"deep":{"value":"x"}}}`,
			wantOps: 1,
			want:    `,"spec":{"nested":{"deep":{"value":"x"}}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			current, desired := obj(tc.current), obj(tc.desired)
			d := Patch(image, tc.base, current, desired)
			g.Expect(d.Operations).To(HaveLen(tc.wantOps))
			g.Expect(d.Refused).To(HaveLen(len(tc.wantRefused)))
			for i, r := range tc.wantRefused {
				g.Expect(d.Refused[i]).To(HavePrefix(r))
			}
			patch, err := JSONPatch(d.Operations)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := json.Marshal(current)
			g.Expect(err).NotTo(HaveOccurred())
			if patch != nil {
				p, err := jsonpatchapply.DecodePatch(patch)
				g.Expect(err).NotTo(HaveOccurred())
				got, err = p.Apply(got)
				g.Expect(err).NotTo(HaveOccurred(), "patch %s", patch)
			}
			want := tc.desired
			if tc.want != "" {
				want = tc.want
			}
			wantJSON, err := json.Marshal(obj(want))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(MatchJSON(wantJSON), "patch %s", patch)
		})
	}
}

func TestPointerEscapes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(pointer([]string{"metadata", "annotations", "a/b~c"})).To(Equal("/metadata/annotations/a~1b~0c"))
}

func TestForKind(t *testing.T) {
	g := NewWithT(t)
	claims := DefaultClaims()
	machine := schema.GroupKind{Group: infrastructureGroup, Kind: "TalosSimMachine"}
	template := schema.GroupKind{Group: infrastructureGroup, Kind: "TalosSimMachineTemplate"}

	fields, base := ForKind(claims.Infrastructure, machine, false)
	g.Expect(fields).To(HaveLen(1))
	g.Expect(base).To(Equal([]string{"spec"}))
	fields, base = ForKind(claims.Infrastructure, template, true)
	g.Expect(fields).To(HaveLen(1))
	g.Expect(base).To(Equal([]string{"spec", "template", "spec"}))

	// A template named otherwise, or another provider's kind, claims nothing.
	fields, _ = ForKind(claims.Infrastructure, machine, true)
	g.Expect(fields).To(BeEmpty())
	fields, _ = ForKind(claims.Infrastructure, schema.GroupKind{Group: infrastructureGroup, Kind: "AcmeMachineTemplate"}, true)
	g.Expect(fields).To(BeEmpty())
	fields, _ = ForKind(claims.Infrastructure, schema.GroupKind{Group: infrastructureGroup, Kind: "AWSMachineTemplate"}, true)
	g.Expect(fields).To(ConsistOf(HaveField("Path", []string{"ami"})), "a real provider's image field")
}
