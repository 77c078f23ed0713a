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

package machineconfig

import (
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const sysctlPatch = "machine:\n  sysctls:\n    net.core.somaxconn: \"65535\"\n"

// TestRead reads the patches of each kind at the field the providers keep
// them in, and refuses malformed patches naming the object and the field.
func TestRead(t *testing.T) {
	// mutate returns the object of build with the field at path set to
	// value, as a user might have written it.
	mutate := func(u *unstructured.Unstructured, value any, path ...string) *unstructured.Unstructured {
		if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
			t.Fatalf("setting %v: %v", path, err)
		}
		return u
	}
	templateSpec := []string{"spec", "template", "spec"}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want Patches
		// wantErr is what the error says; empty for no error.
		wantErr []string
		is      error
	}{
		{
			name: "a TalosConfigTemplate's spec.template.spec",
			obj: talosConfigTemplate(t, withConfigPatch("add", "/machine/kubelet/extraArgs", `{"b":"2","a":"1"}`),
				withConfigPatch("remove", "/machine/features/kubePrism", ""), withStrategicPatch(sysctlPatch)),
			want: Patches{
				Source: "TalosConfigTemplate fleet/alpha-md-0 spec.template.spec",
				ConfigPatches: []Operation{
					{Op: "add", Path: "/machine/kubelet/extraArgs", Value: json.RawMessage(`{"a":"1","b":"2"}`)},
					{Op: "remove", Path: "/machine/features/kubePrism", Value: json.RawMessage(`null`)},
				},
				StrategicPatches: []string{sysctlPatch},
			},
		},
		{
			name: "a TalosConfig's spec",
			obj:  talosConfig(t, withStrategicPatch(sysctlPatch)),
			want: Patches{Source: "TalosConfig fleet/alpha-md-0-x7k2p spec", StrategicPatches: []string{sysctlPatch}},
		},
		{
			name: "a TalosControlPlane's spec.controlPlaneConfig.controlplane, not its init",
			obj:  talosControlPlane(t, withStrategicPatch(sysctlPatch)),
			want: Patches{Source: "TalosControlPlane fleet/alpha-cp spec.controlPlaneConfig.controlplane", StrategicPatches: []string{sysctlPatch}},
		},
		{
			name: "no patches",
			obj:  talosConfigTemplate(t),
			want: Patches{Source: "TalosConfigTemplate fleet/alpha-md-0 spec.template.spec"},
		},
		{
			name: "no spec at all",
			obj:  &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "TalosConfigTemplate", "metadata": map[string]any{"name": "t"}}},
			want: Patches{Source: "TalosConfigTemplate t spec.template.spec"},
		},
		{
			name:    "another kind",
			obj:     &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfigTemplate", "metadata": map[string]any{"name": "k"}}},
			wantErr: []string{`KubeadmConfigTemplate "k"`, "TalosConfigTemplate"},
			is:      ErrUnsupportedKind,
		},
		{
			name:    "a TalosConfig of another group",
			obj:     &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "TalosConfig", "metadata": map[string]any{"name": "k"}}},
			wantErr: []string{`TalosConfig "k"`},
			is:      ErrUnsupportedKind,
		},
		{
			name:    "spec.template.spec not an object",
			obj:     mutate(talosConfigTemplate(t), "worker", templateSpec...),
			wantErr: []string{"spec.template.spec: want an object, got a string"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "configPatches not a list",
			obj:     mutate(talosConfigTemplate(t), map[string]any{"op": "add"}, append(templateSpec, "configPatches")...),
			wantErr: []string{"TalosConfigTemplate fleet/alpha-md-0 spec.template.spec.configPatches: want a list of JSON patch operations, got an object"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "an operation not an object",
			obj:     mutate(talosConfigTemplate(t), []any{"add"}, append(templateSpec, "configPatches")...),
			wantErr: []string{"spec.template.spec.configPatches[0]: want an object with op, path and value, got a string"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "an operation with from",
			obj:     mutate(talosConfigTemplate(t), []any{map[string]any{"op": "add", "path": "/a", "from": "/b"}}, append(templateSpec, "configPatches")...),
			wantErr: []string{"configPatches[0]: unknown field \"from\""},
			is:      ErrMalformedPatches,
		},
		{
			name:    "move, which needs from",
			obj:     talosConfigTemplate(t, withConfigPatch("replace", "/a", `1`), withConfigPatch("move", "/machine/a", "")),
			wantErr: []string{"configPatches[1]: op move needs from, which configPatches cannot carry"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "an unknown op",
			obj:     talosConfigTemplate(t, withConfigPatch("merge", "/machine", `{}`)),
			wantErr: []string{"configPatches[0]: op: want add, remove, replace or test"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "no op",
			obj:     mutate(talosConfigTemplate(t), []any{map[string]any{"path": "/a"}}, append(templateSpec, "configPatches")...),
			wantErr: []string{"configPatches[0]: op: want a string, got null"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "a path that is not a JSON pointer",
			obj:     talosConfigTemplate(t, withConfigPatch("add", "machine.sysctls", `{}`)),
			wantErr: []string{"configPatches[0]: path: want a JSON pointer"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "a path that is not a string",
			obj:     mutate(talosConfigTemplate(t), []any{map[string]any{"op": "add", "path": int64(3)}}, append(templateSpec, "configPatches")...),
			wantErr: []string{"configPatches[0]: path: want a string"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "strategicPatches not a list",
			obj:     mutate(talosConfigTemplate(t), sysctlPatch, append(templateSpec, "strategicPatches")...),
			wantErr: []string{"spec.template.spec.strategicPatches: want a list of strings, got a string"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "a strategic patch that is not a string",
			obj:     mutate(talosConfigTemplate(t), []any{map[string]any{"machine": map[string]any{}}}, append(templateSpec, "strategicPatches")...),
			wantErr: []string{"spec.template.spec.strategicPatches[0]: want a string (a YAML strategic merge patch), got an object"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "a strategic patch Talos does not load",
			obj:     talosControlPlane(t, withStrategicPatch(sysctlPatch), withStrategicPatch("machine:\n  sysctl:\n    a: b\n")),
			wantErr: []string{"TalosControlPlane fleet/alpha-cp spec.controlPlaneConfig.controlplane.strategicPatches[1]: does not load", "machine.sysctl"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "a strategic patch that is not YAML",
			obj:     talosConfigTemplate(t, withStrategicPatch("machine: [")),
			wantErr: []string{"strategicPatches[0]: does not load"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "no object",
			wantErr: []string{"no object"},
			is:      ErrUnsupportedKind,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Read(tc.obj)
			if len(tc.wantErr) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tc.want))
				return
			}
			g.Expect(err).To(MatchError(tc.is))
			for _, s := range tc.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
		})
	}
}

// TestReadStrategicPatchIsNotAFileName checks that a strategic patch is
// never taken for a file to read, as configpatcher.LoadPatches would take
// one with no space or newline, or one starting with @.
func TestReadStrategicPatchIsNotAFileName(t *testing.T) {
	for _, patch := range []string{"@/etc/hostname", "/etc/hostname"} {
		g := NewWithT(t)
		_, err := Read(talosConfigTemplate(t, withStrategicPatch(patch)))
		g.Expect(err).To(MatchError(ErrMalformedPatches))
		g.Expect(err.Error()).To(ContainSubstring("strategicPatches[0]: does not load"))
	}
}

// TestPatchesPrintNoPatch checks that a Patches printed by mistake shows
// counts, not what the patches set.
func TestPatchesPrintNoPatch(t *testing.T) {
	g := NewWithT(t)
	p := Patches{Source: "TalosConfig fleet/a spec", ConfigPatches: []Operation{{Op: "add", Path: "/machine/token", Value: json.RawMessage(`"hunter2-password"`)}},
		StrategicPatches: []string{"machine:\n  token: hunter2-password\n"}}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		g.Expect(fmt.Sprintf(format, p)).To(Equal("1 configPatches and 1 strategicPatches of TalosConfig fleet/a spec"), format)
	}
}

// TestHash checks that the hash changes with what the patches do, and not
// with how they are written.
func TestHash(t *testing.T) {
	base := Patches{
		Source:           "TalosConfigTemplate fleet/a spec.template.spec",
		ConfigPatches:    []Operation{{Op: "add", Path: "/machine/kubelet/extraArgs", Value: json.RawMessage(`{"a":"1","b":2}`)}},
		StrategicPatches: []string{"machine:\n  sysctls:\n    a: \"1\"\n    b: \"2\"\n  certSANs: [x, y]\n"},
	}
	with := func(change func(p *Patches)) Patches {
		p := base
		p.ConfigPatches = append([]Operation{}, base.ConfigPatches...)
		p.StrategicPatches = append([]string{}, base.StrategicPatches...)
		change(&p)
		return p
	}
	for _, tc := range []struct {
		name string
		p    Patches
		same bool
	}{
		{name: "another source", same: true, p: with(func(p *Patches) { p.Source = "TalosConfigTemplate fleet/b spec.template.spec" })},
		{name: "JSON keys reordered, spaces", same: true, p: with(func(p *Patches) { p.ConfigPatches[0].Value = json.RawMessage(`{ "b": 2, "a": "1" }`) })},
		{name: "YAML keys reordered, comments, quoting, flow style", same: true, p: with(func(p *Patches) {
			p.StrategicPatches[0] = "# the workers' tuning\nmachine:\n  certSANs:\n  - 'x'\n  - y # second\n  sysctls: {b: '2', a: \"1\"}\n"
		})},
		{name: "an anchor instead of a repeat", same: true, p: with(func(p *Patches) {
			p.StrategicPatches[0] = "machine:\n  sysctls:\n    a: &one \"1\"\n    b: \"2\"\n  certSANs: [x, y]\n"
		})},
		{name: "a value changed", p: with(func(p *Patches) { p.ConfigPatches[0].Value = json.RawMessage(`{"a":"1","b":3}`) })},
		{name: "a string where a number was", p: with(func(p *Patches) { p.ConfigPatches[0].Value = json.RawMessage(`{"a":"1","b":"2"}`) })},
		{name: "a YAML number where a string was", p: with(func(p *Patches) {
			p.StrategicPatches[0] = "machine:\n  sysctls:\n    a: 1\n    b: \"2\"\n  certSANs: [x, y]\n"
		})},
		{name: "a list reordered", p: with(func(p *Patches) {
			p.StrategicPatches[0] = "machine:\n  sysctls:\n    a: \"1\"\n    b: \"2\"\n  certSANs: [y, x]\n"
		})},
		{name: "another op", p: with(func(p *Patches) { p.ConfigPatches[0].Op = "replace" })},
		{name: "another path", p: with(func(p *Patches) { p.ConfigPatches[0].Path = "/machine/kubelet/extraConfig" })},
		{name: "a patch added", p: with(func(p *Patches) { p.StrategicPatches = append(p.StrategicPatches, sysctlPatch) })},
		{name: "patches reordered", p: with(func(p *Patches) { p.StrategicPatches = []string{sysctlPatch, p.StrategicPatches[0]} })},
		{name: "no patches", p: Patches{Source: base.Source}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.p.Hash()).To(HaveLen(64))
			if tc.same {
				g.Expect(tc.p.Hash()).To(Equal(base.Hash()))
			} else {
				g.Expect(tc.p.Hash()).NotTo(Equal(base.Hash()))
			}
		})
	}
}

// TestHashOfAPatchThatExpandsWithoutEnd checks that a strategic patch
// built to expand its aliases without end is hashed, as text, at once.
func TestHashOfAPatchThatExpandsWithoutEnd(t *testing.T) {
	g := NewWithT(t)
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		laughs += fmt.Sprintf("%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	p := Patches{StrategicPatches: []string{laughs}}
	g.Expect(p.Hash()).To(HaveLen(64))
	g.Expect(p.Hash()).NotTo(Equal(Patches{StrategicPatches: []string{laughs + "k: 1\n"}}.Hash()))
}
