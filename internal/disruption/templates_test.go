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

package disruption

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestTemplatesCondition says which templates of a Cluster's new Machines
// boot another version than the target, and what to change.
func TestTemplatesCondition(t *testing.T) {
	onTarget := MachineTemplate{Owner: "MachineDeployment alpha-md-0", Ref: "TalosSimMachineTemplate md-0-v1-13", Image: "ghcr.io/siderolabs/installer:v1.13.0", Version: "v1.13.0"}
	old := MachineTemplate{Owner: "MachineDeployment alpha-md-1", Ref: "TalosSimMachineTemplate md-1", Image: "ghcr.io/siderolabs/installer:v1.12.4", Version: "v1.12.4"}
	unknown := MachineTemplate{Owner: "TalosControlPlane alpha-cp", Ref: "AWSMachineTemplate cp", Err: errors.New("tollgate knows no field of AWSMachineTemplate that names a Talos version")}
	ami := MachineTemplate{Owner: "MachineDeployment alpha-gpu", Ref: "AWSMachineTemplate gpu-v1-12", Image: "ami-0abc", Field: "spec.template.spec.ami", RefField: "spec.template.spec.infrastructureRef", Version: "v1.12.4"}
	for _, tc := range []struct {
		name      string
		templates []MachineTemplate
		declared  map[string]string
		status    metav1.ConditionStatus
		reason    string
		message   []string
	}{
		{name: "no template", templates: []MachineTemplate{}, status: metav1.ConditionTrue, reason: upgradev1.TemplatesOnTargetReason},
		{name: "every template on target", templates: []MachineTemplate{onTarget, onTarget}, status: metav1.ConditionTrue, reason: upgradev1.TemplatesOnTargetReason},
		{name: "the same version spelled otherwise", templates: []MachineTemplate{{Owner: "x", Version: "1.13.0"}}, status: metav1.ConditionTrue, reason: upgradev1.TemplatesOnTargetReason},
		{
			name: "a template on another version", templates: []MachineTemplate{onTarget, old, unknown},
			status: metav1.ConditionFalse, reason: upgradev1.TemplatesDriftedReason,
			message: []string{"MachineDeployment alpha-md-1 creates Machines from TalosSimMachineTemplate md-1, which boots v1.12.4 (ghcr.io/siderolabs/installer:v1.12.4): point it at a template whose image installs v1.13.0", "Tollgate does not change templates"},
		},
		{
			name:      "the fields to change are named",
			templates: []MachineTemplate{ami},
			status:    metav1.ConditionFalse, reason: upgradev1.TemplatesDriftedReason,
			message: []string{"MachineDeployment alpha-gpu creates Machines from AWSMachineTemplate gpu-v1-12, which boots v1.12.4 (ami-0abc): point it at a template whose image installs v1.13.0 (a new template whose spec.template.spec.ami names it, and MachineDeployment alpha-gpu's spec.template.spec.infrastructureRef pointing at it)"},
		},
		{
			name: "a template on the version its owner declares", templates: []MachineTemplate{onTarget, ami},
			declared: map[string]string{"MachineDeployment alpha-gpu": "v1.12.4"},
			status:   metav1.ConditionTrue, reason: upgradev1.TemplatesOnTargetReason,
		},
		{
			name: "a template behind the version its owner declares", templates: []MachineTemplate{onTarget, ami},
			declared: map[string]string{"MachineDeployment alpha-gpu": "v1.12.5"},
			status:   metav1.ConditionFalse, reason: upgradev1.TemplatesDriftedReason,
			message: []string{"which boots v1.12.4 (ami-0abc): point it at a template whose image installs v1.12.5", "another version than their target (v1.13.0, or the version their owner declares)"},
		},
		{
			name: "a template whose Talos cannot be told", templates: []MachineTemplate{onTarget, unknown},
			status: metav1.ConditionUnknown, reason: upgradev1.TemplatesUnknownReason,
			message: []string{"TalosControlPlane alpha-cp: tollgate knows no field of AWSMachineTemplate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := TemplatesCondition("v1.13.0", tc.declared, tc.templates)
			g.Expect(c.Type).To(Equal(upgradev1.TemplatesOnTargetCondition))
			g.Expect(c.Status).To(Equal(tc.status))
			g.Expect(c.Reason).To(Equal(tc.reason))
			for _, m := range tc.message {
				g.Expect(c.Message).To(ContainSubstring(m))
			}
		})
	}
}
