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

package templates

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestControlPlaneTemplate finds the InfraMachine template of a control
// plane in each contract's field.
func TestControlPlaneTemplate(t *testing.T) {
	for _, tc := range []struct {
		name              string
		spec              map[string]any
		group, kind, tmpl string
		ok                bool
	}{
		{
			name:  "v1beta2 contract",
			spec:  map[string]any{"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "TalosSimMachineTemplate", "name": "cp"}}}},
			group: "infrastructure.cluster.x-k8s.io", kind: "TalosSimMachineTemplate", tmpl: "cp", ok: true,
		},
		{
			name:  "v1beta1 contract",
			spec:  map[string]any{"machineTemplate": map[string]any{"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AWSMachineTemplate", "name": "cp"}}},
			group: "infrastructure.cluster.x-k8s.io", kind: "AWSMachineTemplate", tmpl: "cp", ok: true,
		},
		{
			name:  "TalosControlPlane v1alpha3",
			spec:  map[string]any{"infrastructureTemplate": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "TalosSimMachineTemplate", "name": "cp"}},
			group: "infrastructure.cluster.x-k8s.io", kind: "TalosSimMachineTemplate", tmpl: "cp", ok: true,
		},
		{name: "no template", spec: map[string]any{"replicas": int64(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			group, kind, name, ok := ControlPlaneTemplate(&unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}})
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect([]string{group, kind, name}).To(Equal([]string{tc.group, tc.kind, tc.tmpl}))
		})
	}
}

// countingMapper counts the lookups that reach a RESTMapper.
type countingMapper struct {
	meta.RESTMapper
	lookups int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.lookups++
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// TestKindCache: a kind no CRD serves is asked about once a minute, not in
// every reconcile; a kind that is served is asked about every time (the
// RESTMapper caches it), and one served later is found once the minute is
// over.
func TestKindCache(t *testing.T) {
	g := NewWithT(t)
	known := schema.GroupKind{Group: "infrastructure.cluster.x-k8s.io", Kind: "TalosSimMachineTemplate"}
	missing := schema.GroupKind{Group: "controlplane.cluster.x-k8s.io", Kind: "TalosControlPlane"}
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: known.Group, Version: "v1alpha1"}, {Group: missing.Group, Version: "v1alpha3"}})
	rm.Add(known.WithVersion("v1alpha1"), meta.RESTScopeNamespace)
	mapper := &countingMapper{RESTMapper: rm}
	var c KindCache
	now := time.Now()

	for range 3 {
		_, err := c.mapping(mapper, missing, now)
		g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "%v", err)
	}
	g.Expect(mapper.lookups).To(Equal(1), "asked once within the minute")
	m, err := c.mapping(mapper, known, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.GroupVersionKind.Version).To(Equal("v1alpha1"))

	rm.Add(missing.WithVersion("v1alpha3"), meta.RESTScopeNamespace)
	_, err = c.mapping(mapper, missing, now.Add(30*time.Second))
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "still remembered as unknown")
	m, err = c.mapping(mapper, missing, now.Add(unknownKindTTL+time.Second))
	g.Expect(err).NotTo(HaveOccurred(), "installed since")
	g.Expect(m.GroupVersionKind.Version).To(Equal("v1alpha3"))
}
