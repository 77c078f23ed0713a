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
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// TestDesired applies patches to running configurations as CABPT applies
// them to generated ones.
func TestDesired(t *testing.T) {
	singleDoc := generated(t, machine.TypeWorker, "v1.11")
	for _, tc := range []struct {
		name    string
		running []byte
		p       Patches
		// check inspects the desired configuration.
		check func(g Gomega, desired []byte)
		// wantErr is what the error says; empty for no error.
		wantErr []string
		is      error
	}{
		{
			name:    "no patches: the running configuration, without comments",
			running: worker(t),
			check: func(g Gomega, desired []byte) {
				g.Expect(string(desired)).NotTo(ContainSubstring("#"))
				g.Expect(string(worker(t))).To(ContainSubstring("#"))
			},
		},
		{
			name:    "a strategic patch",
			running: worker(t),
			p:       Patches{StrategicPatches: []string{sysctlPatch}},
			check: func(g Gomega, desired []byte) {
				g.Expect(sysctls(g, desired)).To(HaveKeyWithValue("net.core.somaxconn", "65535"))
			},
		},
		{
			name:    "configPatches, then strategicPatches over them, as CABPT",
			running: singleDoc,
			p: Patches{
				ConfigPatches:    []Operation{{Op: "add", Path: "/machine/sysctls", Value: json.RawMessage(`{"a":"json","b":"json"}`)}},
				StrategicPatches: []string{"machine:\n  sysctls:\n    b: strategic\n"},
			},
			check: func(g Gomega, desired []byte) {
				g.Expect(sysctls(g, desired)).To(Equal(map[string]string{"a": "json", "b": "strategic"}))
			},
		},
		{
			name:    "a JSON patch written as a strategic patch, which LoadPatch reads",
			running: singleDoc,
			p:       Patches{StrategicPatches: []string{"- op: add\n  path: /machine/sysctls\n  value: {c: yaml}\n"}},
			check: func(g Gomega, desired []byte) {
				g.Expect(sysctls(g, desired)).To(HaveKeyWithValue("c", "yaml"))
			},
		},
		{
			name:    "list items a patch appends are not repeated on a node that has them",
			running: withStrategic(t, controlPlane(t), "machine:\n  certSANs: [tollgate.example]\ncluster:\n  apiServer:\n    certSANs: [api.example]\n"),
			p:       Patches{StrategicPatches: []string{"machine:\n  certSANs: [tollgate.example, second.example]\ncluster:\n  apiServer:\n    certSANs: [api.example]\n"}},
			check: func(g Gomega, desired []byte) {
				cfg, err := configloader.NewFromBytes(desired)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cfg.RawV1Alpha1().MachineConfig.MachineCertSANs).To(Equal([]string{"tollgate.example", "second.example"}))
				g.Expect(cfg.RawV1Alpha1().ClusterConfig.APIServerConfig.CertSANs).To(Equal([]string{"api.example"}))
			},
		},
		{
			name:    "configPatches on a configuration of several documents, which CABPT cannot patch either",
			running: worker(t),
			p:       Patches{Source: "TalosConfigTemplate fleet/a spec.template.spec", ConfigPatches: []Operation{{Op: "add", Path: "/machine/sysctls", Value: json.RawMessage(`{}`)}}},
			wantErr: []string{"TalosConfigTemplate fleet/a spec.template.spec configPatches does not apply", "write the patch as a strategic merge patch"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "a JSON patch whose path is not in the configuration",
			running: singleDoc,
			p:       Patches{Source: "s", ConfigPatches: []Operation{{Op: "replace", Path: "/machine/nothing/here", Value: json.RawMessage(`1`)}}},
			wantErr: []string{"s configPatches does not apply to the node's configuration"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "a strategic patch that does not load",
			running: worker(t),
			p:       Patches{Source: "s", StrategicPatches: []string{sysctlPatch, "machine:\n  sysctl: {}\n"}},
			wantErr: []string{"s strategicPatches[1]: does not load"},
			is:      ErrMalformedPatches,
		},
		{
			name:    "a JSON patch that removes a list item by index",
			running: withStrategic(t, singleDoc, "machine:\n  certSANs: [a.example, b.example, c.example]\n"),
			p:       Patches{Source: "s", ConfigPatches: []Operation{{Op: "remove", Path: "/machine/certSANs/0"}}},
			wantErr: []string{"s configPatches changes the configuration again each time it applies"},
			is:      ErrNotIdempotent,
		},
		{
			name:    "a JSON patch that inserts at the start of a list is idempotent once repeats go",
			running: withStrategic(t, singleDoc, "machine:\n  certSANs: [a.example]\n"),
			p:       Patches{ConfigPatches: []Operation{{Op: "add", Path: "/machine/certSANs/0", Value: json.RawMessage(`"first.example"`)}}},
			check: func(g Gomega, desired []byte) {
				cfg, err := configloader.NewFromBytes(desired)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cfg.RawV1Alpha1().MachineConfig.MachineCertSANs).To(Equal([]string{"first.example", "a.example"}))
			},
		},
		{
			name:    "a strategic patch that deletes a whole document",
			running: worker(t),
			p:       Patches{Source: "s", StrategicPatches: []string{"apiVersion: v1alpha1\nkind: HostnameConfig\n$patch: delete\n"}},
			wantErr: []string{"s strategicPatches[0]", "a whole document deleted"},
			is:      ErrNotIdempotent,
		},
		{
			name:    "a running configuration that does not load",
			running: []byte("machine: [\n"),
			wantErr: []string{"the running configuration"},
			is:      ErrInvalidConfig,
		},
		{
			name:    "no running configuration",
			wantErr: []string{"the running configuration: config not found"},
			is:      ErrInvalidConfig,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			desired, err := Desired(tc.running, tc.p)
			if len(tc.wantErr) > 0 {
				g.Expect(err).To(MatchError(tc.is))
				for _, s := range tc.wantErr {
					g.Expect(err.Error()).To(ContainSubstring(s))
				}
				converged, cerr := Converged(tc.running, tc.p)
				g.Expect(cerr).To(MatchError(tc.is))
				g.Expect(converged).To(BeFalse())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tc.check(g, desired)
			// What Desired returns is what the node should run: applying the
			// patches again changes nothing.
			converged, err := Converged(desired, tc.p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(converged).To(BeTrue())
		})
	}
}

// TestConverged tells a node that runs the patches from one that does not,
// whatever the running configuration's formatting.
func TestConverged(t *testing.T) {
	patched := withStrategic(t, worker(t), sysctlPatch, "machine:\n  certSANs: [tollgate.example]\n")
	p := Patches{StrategicPatches: []string{sysctlPatch, "machine:\n  certSANs: [tollgate.example]\n"}}
	for _, tc := range []struct {
		name    string
		running []byte
		p       Patches
		want    bool
	}{
		{name: "the node runs them", running: patched, p: p, want: true},
		{name: "the node runs them, its configuration with comments", running: withComments(t, patched), p: p, want: true},
		{name: "the node runs them, its keys in another order", running: reversedTopLevel(t, patched), p: p, want: true},
		{name: "the node does not run them yet", running: worker(t), p: p, want: false},
		{name: "a patch's value changed", running: patched, p: Patches{StrategicPatches: []string{strings.Replace(sysctlPatch, "65535", "4096", 1)}}, want: false},
		{name: "no patches", running: worker(t), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			converged, err := Converged(tc.running, tc.p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(converged).To(Equal(tc.want))
		})
	}
}

// sysctls returns machine.sysctls of data.
func sysctls(g Gomega, data []byte) map[string]string {
	cfg, err := configloader.NewFromBytes(data)
	g.Expect(err).NotTo(HaveOccurred())
	return cfg.RawV1Alpha1().MachineConfig.MachineSysctls
}

// withComments returns data with comments on its own lines and after its
// values, re-indented nowhere: what a user's hand-edited file looks like.
func withComments(t *testing.T, data []byte) []byte {
	t.Helper()
	lines := strings.Split(string(data), "\n")
	out := make([]string, 0, 2*len(lines))
	for _, l := range lines {
		if strings.HasSuffix(l, ":") || l == "" || l == "---" {
			out = append(out, l)
			continue
		}
		out = append(out, "# a comment", l+" # trailing")
	}
	return []byte(strings.Join(out, "\n"))
}

// reversedTopLevel returns data with the top-level keys of its first
// document in reverse order.
func reversedTopLevel(t *testing.T, data []byte) []byte {
	t.Helper()
	first, rest, _ := strings.Cut(string(data), "\n---\n")
	var blocks []string
	for _, l := range strings.Split(strings.TrimSuffix(first, "\n"), "\n") {
		if !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "-") {
			blocks = append(blocks, l)
			continue
		}
		blocks[len(blocks)-1] += "\n" + l
	}
	slices.Reverse(blocks)
	out := strings.Join(blocks, "\n") + "\n"
	if rest != "" {
		out += "---\n" + rest
	}
	if out == string(data) {
		t.Fatal("the fixture did not change")
	}
	return []byte(out)
}
