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

package webhooks_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/webhooks"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

// controlPlanes is an ObjectReader holding control-plane objects by name.
type controlPlanes map[string]*unstructured.Unstructured

func (c controlPlanes) Get(_ context.Context, group, kind, _, name string) (*unstructured.Unstructured, error) {
	if obj, ok := c[name]; ok && obj.GetKind() == kind {
		return obj, nil
	}
	return nil, fmt.Errorf("reading %s %s: %w", kind, name, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: kind}, name))
}

// TestControlPlaneDeclaresAnotherVersion: the policy webhook warns when a
// Cluster's control-plane object declares another Talos version than the
// policy's target, as it does for a MachineDeployment; a control plane that
// declares the target, or cannot be read yet, adds no warning.
func TestControlPlaneDeclaresAnotherVersion(t *testing.T) {
	controlPlane := func(declared string) *unstructured.Unstructured {
		cp := &unstructured.Unstructured{}
		cp.SetAPIVersion("controlplane.cluster.x-k8s.io/v1alpha3")
		cp.SetKind("TalosControlPlane")
		cp.SetNamespace(corpus.Namespace)
		cp.SetName("gpu-1-cp")
		if declared != "" {
			cp.SetAnnotations(map[string]string{upgradev1.DesiredTalosVersionAnnotation: declared})
		}
		return cp
	}
	const warning = `TalosControlPlane gpu-1-cp of Cluster gpu-1 declares Talos "v1.12.4" in metadata.annotations[upgrade.tollgate.dev/desired-talos-version]: it wins over spec.talosVersion v1.13.0 for its Machines`
	for _, tc := range []struct {
		name   string
		read   controlPlanes
		warned bool
	}{
		{name: "another version", read: controlPlanes{"gpu-1-cp": controlPlane("v1.12.4")}, warned: true},
		{name: "the policy's target", read: controlPlanes{"gpu-1-cp": controlPlane(" v1.13.0 ")}},
		{name: "nothing declared", read: controlPlanes{"gpu-1-cp": controlPlane("")}},
		{name: "not created yet", read: controlPlanes{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			world := corpus.HACluster("gpu-1", "fleet", "v1.12.4")
			cluster := world[0].(*clusterv1.Cluster)
			cluster.Spec.ControlPlaneRef = clusterv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "TalosControlPlane", Name: "gpu-1-cp"}
			c := indexed(fake.NewClientBuilder().WithScheme(scheme)).WithObjects(world...).Build()
			w := &webhooks.TalosUpgradePolicy{Client: c, ControlPlanes: tc.read}
			p := corpus.Policy("fleet")
			p.Spec.TalosVersion = "v1.13.0"
			warnings, err := w.ValidateCreate(context.Background(), p)
			g.Expect(err).NotTo(HaveOccurred())
			if tc.warned {
				g.Expect(warnings).To(ContainElement(warning))
			} else {
				g.Expect(warnings).NotTo(ContainElement(ContainSubstring("TalosControlPlane")))
			}
		})
	}
}
