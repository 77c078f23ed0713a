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
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdsDir holds the providers' real CRDs, outside the repository.
const crdsDir = "../../../shared/testdata/talos-capi-crds"

// TestReadPathsAreTheProvidersFields checks against the providers' real
// CRDs that every served version keeps configPatches (op, path, value) and
// strategicPatches (strings) at the fields Read reads.
func TestReadPathsAreTheProvidersFields(t *testing.T) {
	if _, err := os.Stat(crdsDir); err != nil {
		t.Skipf("SKIPPED: the Talos providers' CRDs are not at %s (%v): Read's field paths are not checked against the real schemas; "+
			"they are kept in ../shared/testdata/talos-capi-crds next to the project in development and CI", crdsDir, err)
	}
	for _, tc := range []struct {
		file string
		path []string
	}{
		{file: "bootstrap.cluster.x-k8s.io_talosconfigtemplates.yaml", path: []string{"spec", "template", "spec"}},
		{file: "bootstrap.cluster.x-k8s.io_talosconfigs.yaml", path: []string{"spec"}},
		{file: "controlplane.cluster.x-k8s.io_taloscontrolplanes.yaml", path: []string{"spec", "controlPlaneConfig", "controlplane"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			g := NewWithT(t)
			data, err := os.ReadFile(filepath.Join(crdsDir, tc.file))
			g.Expect(err).NotTo(HaveOccurred())
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(yaml.Unmarshal(data, crd)).To(Succeed())
			g.Expect(crd.Spec.Versions).NotTo(BeEmpty())
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				s := *v.Schema.OpenAPIV3Schema
				for _, p := range tc.path {
					g.Expect(s.Properties).To(HaveKey(p), "%s %s", v.Name, p)
					s = s.Properties[p]
				}
				g.Expect(s.Properties).To(HaveKey("configPatches"), v.Name)
				ops := s.Properties["configPatches"]
				g.Expect(ops.Type).To(Equal("array"), v.Name)
				fields := []string{}
				for f := range ops.Items.Schema.Properties {
					fields = append(fields, f)
				}
				slices.Sort(fields)
				g.Expect(fields).To(Equal([]string{"op", "path", "value"}), v.Name)
				g.Expect(s.Properties).To(HaveKey("strategicPatches"), v.Name)
				g.Expect(s.Properties["strategicPatches"].Items.Schema.Type).To(Equal("string"), v.Name)
			}
		})
	}
}
