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

package talosupgrade

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestTemplatesCondition says which templates of a Cluster's new Machines
// boot another version than the target, and what to change.
func TestTemplatesCondition(t *testing.T) {
	onTarget := machineTemplate{owner: "MachineDeployment alpha-md-0", ref: "TalosSimMachineTemplate md-0-v1-13", image: "ghcr.io/siderolabs/installer:v1.13.0", version: "v1.13.0"}
	old := machineTemplate{owner: "MachineDeployment alpha-md-1", ref: "TalosSimMachineTemplate md-1", image: "ghcr.io/siderolabs/installer:v1.12.4", version: "v1.12.4"}
	unknown := machineTemplate{owner: "TalosControlPlane alpha-cp", ref: "AWSMachineTemplate cp", err: errors.New("tollgate knows no field of AWSMachineTemplate that names a Talos version")}
	for _, tc := range []struct {
		name      string
		templates []machineTemplate
		status    metav1.ConditionStatus
		reason    string
		message   []string
	}{
		{name: "no template", templates: []machineTemplate{}, status: metav1.ConditionTrue, reason: upgradev1.TemplatesOnTargetReason},
		{name: "every template on target", templates: []machineTemplate{onTarget, onTarget}, status: metav1.ConditionTrue, reason: upgradev1.TemplatesOnTargetReason},
		{name: "the same version spelled otherwise", templates: []machineTemplate{{owner: "x", version: "1.13.0"}}, status: metav1.ConditionTrue, reason: upgradev1.TemplatesOnTargetReason},
		{
			name: "a template on another version", templates: []machineTemplate{onTarget, old, unknown},
			status: metav1.ConditionFalse, reason: upgradev1.TemplatesDriftedReason,
			message: []string{"MachineDeployment alpha-md-1 creates Machines from TalosSimMachineTemplate md-1, which boots v1.12.4 (ghcr.io/siderolabs/installer:v1.12.4): point it at a template whose image installs v1.13.0", "Tollgate does not change templates"},
		},
		{
			name: "a template whose Talos cannot be told", templates: []machineTemplate{onTarget, unknown},
			status: metav1.ConditionUnknown, reason: upgradev1.TemplatesUnknownReason,
			message: []string{"TalosControlPlane alpha-cp: tollgate knows no field of AWSMachineTemplate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := templatesCondition("v1.13.0", tc.templates)
			g.Expect(c.Type).To(Equal(upgradev1.TemplatesOnTargetCondition))
			g.Expect(c.Status).To(Equal(tc.status))
			g.Expect(c.Reason).To(Equal(tc.reason))
			for _, m := range tc.message {
				g.Expect(c.Message).To(ContainSubstring(m))
			}
		})
	}
}

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
			group, kind, name, ok := controlPlaneTemplate(&unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}})
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect([]string{group, kind, name}).To(Equal([]string{tc.group, tc.kind, tc.tmpl}))
		})
	}
}
