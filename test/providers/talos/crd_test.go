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

package talos_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	talosproviders "github.com/tollgate-dev/tollgate/test/providers/talos"
)

// realCRDDirectory holds the real providers' CRDs, beside the repository.
func realCRDDirectory() string {
	return filepath.Join(envtest.RepoRoot(), "..", "shared", "testdata", "talos-capi-crds")
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()

	data, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	crd := &apiextensionsv1.CustomResourceDefinition{}
	NewWithT(t).Expect(yaml.Unmarshal(data, crd)).To(Succeed(), path)

	return crd
}

// schemaFields maps each field path of a schema to its type ("" for a
// schemaless field), with int-or-string and preserve-unknown-fields marked.
func schemaFields(s *apiextensionsv1.JSONSchemaProps, path string, out map[string]string) {
	kind := s.Type
	if s.XIntOrString {
		kind = "int-or-string"
	}

	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && kind == "" {
		kind = "preserve-unknown-fields"
	}

	if path != "" {
		out[path] = kind
	}

	for name, p := range s.Properties {
		if path == "" && name == "metadata" {
			continue
		}

		schemaFields(&p, path+"."+name, out)
	}

	if s.Items != nil && s.Items.Schema != nil {
		schemaFields(s.Items.Schema, path+"[]", out)
	}
}

func versionFields(crd *apiextensionsv1.CustomResourceDefinition, version string) map[string]string {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			out := map[string]string{}
			schemaFields(v.Schema.OpenAPIV3Schema, "", out)

			return out
		}
	}

	return nil
}

// TestCRDsMatchTheRealProviders checks that every field the stand-ins'
// CRDs declare exists, with the same type, in the same version of the real
// providers' CRDs.
func TestCRDsMatchTheRealProviders(t *testing.T) {
	real := realCRDDirectory()
	if _, err := os.Stat(real); err != nil {
		t.Skipf("SKIPPED: %s folder absent; the stand-in CRDs are not checked against the real ones (%v)", real, err)
	}

	ours, err := filepath.Glob(filepath.Join(talosproviders.CRDDirectory(), "*.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(ours).To(HaveLen(3))

	for _, path := range ours {
		t.Run(filepath.Base(path), func(t *testing.T) {
			g := NewWithT(t)

			ourCRD := readCRD(t, path)
			realCRD := readCRD(t, filepath.Join(real, filepath.Base(path)))

			g.Expect(ourCRD.Spec.Group).To(Equal(realCRD.Spec.Group))
			g.Expect(ourCRD.Spec.Names.Kind).To(Equal(realCRD.Spec.Names.Kind))
			g.Expect(ourCRD.Spec.Names.Plural).To(Equal(realCRD.Spec.Names.Plural))
			g.Expect(ourCRD.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/v1beta1", "v1alpha3"), "the contract label")

			for _, v := range ourCRD.Spec.Versions {
				ourFields := versionFields(ourCRD, v.Name)
				realFields := versionFields(realCRD, v.Name)
				g.Expect(realFields).NotTo(BeNil(), "the real CRD has no version %s", v.Name)

				var paths []string
				for p := range ourFields {
					paths = append(paths, p)
				}

				sort.Strings(paths)

				for _, p := range paths {
					realType, ok := realFields[p]
					g.Expect(ok).To(BeTrue(), "%s %s: the real CRD has no field %s", ourCRD.Spec.Names.Kind, v.Name, p)
					g.Expect(ourFields[p]).To(Equal(realType), "%s %s: the type of %s", ourCRD.Spec.Names.Kind, v.Name, p)
				}

				// The fields Tollgate's templates set are there.
				for _, p := range templateFields[ourCRD.Spec.Names.Kind] {
					g.Expect(ourFields).To(HaveKey(p), "%s: a field the templates use", ourCRD.Spec.Names.Kind)
				}

				t.Logf("%s %s: %d fields, all in the real CRD (%s)", ourCRD.Spec.Names.Kind, v.Name, len(paths), strings.Join(paths[:3], ", ")+", ...")
			}
		})
	}
}

// templateFields are the fields templates/cluster-template-talos.yaml and
// Tollgate set or read, per kind.
var templateFields = map[string][]string{
	"TalosConfig":         {".spec.generateType", ".spec.talosVersion", ".status.ready", ".status.dataSecretName"},
	"TalosConfigTemplate": {".spec.template.spec.generateType", ".spec.template.spec.talosVersion"},
	"TalosControlPlane": {
		".spec.version", ".spec.replicas", ".spec.infrastructureTemplate.apiVersion", ".spec.infrastructureTemplate.kind",
		".spec.infrastructureTemplate.name", ".spec.controlPlaneConfig.controlplane.generateType",
		".spec.controlPlaneConfig.controlplane.talosVersion", ".spec.rolloutStrategy.type",
		".spec.rolloutStrategy.rollingUpdate.maxSurge", ".status.initialized", ".status.ready", ".status.selector",
	},
}

// TestTalosControlPlaneHasNoMachineTemplateMetadata checks that no served
// version of the real TalosControlPlane CRD has a spec.machineTemplate, nor
// any field under spec where a user could write labels or annotations for
// its Machines (as KubeadmControlPlane's spec.machineTemplate.metadata,
// which KCP propagates in place): the control plane's desired Talos version
// (issue 41) is written in the TalosControlPlane's own
// metadata.annotations. test/integration/capi's
// TestDesiredVersionAnnotationPropagatesInPlaceWithCAPICore proves the
// workers' half, a MachineDeployment's spec.template.metadata.
func TestTalosControlPlaneHasNoMachineTemplateMetadata(t *testing.T) {
	real := realCRDDirectory()
	if _, err := os.Stat(real); err != nil {
		t.Skipf("SKIPPED: %s folder absent; where the control plane's desired Talos version can be written is not checked against the real TalosControlPlane CRD (%v)", real, err)
	}
	g := NewWithT(t)

	crd := readCRD(t, filepath.Join(real, "controlplane.cluster.x-k8s.io_taloscontrolplanes.yaml"))
	g.Expect(crd.Spec.Names.Kind).To(Equal("TalosControlPlane"))
	served := 0
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		served++
		fields := versionFields(crd, v.Name)
		g.Expect(fields).To(HaveKey(".spec.version"), "TalosControlPlane %s: the schema was read", v.Name)
		for p := range fields {
			if !strings.HasPrefix(p, ".spec.") {
				continue
			}
			g.Expect(p).NotTo(HavePrefix(".spec.machineTemplate"),
				"TalosControlPlane %s has %s: its Machines' metadata may now be declared there; revisit where the control plane's desired Talos version is written", v.Name, p)
			g.Expect(p[strings.LastIndex(p, ".")+1:]).NotTo(BeElementOf("metadata", "labels", "annotations"),
				"TalosControlPlane %s has %s: revisit where the control plane's desired Talos version is written", v.Name, p)
		}
		t.Logf("TalosControlPlane %s: %d fields, no spec.machineTemplate and no metadata, labels or annotations under spec", v.Name, len(fields))
	}
	g.Expect(served).To(BeNumerically(">", 0), "the CRD serves a version")
}
