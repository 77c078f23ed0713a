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
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// A rollout driven by a policy changes the nodes, not the templates their
// Machines come from, which live in the users' Git: Tollgate never writes
// them, and says with the TemplatesOnTarget condition which ones boot
// another version than the target, so that new Machines (a scale-up, a
// remediation) are not upgraded once more.

// MachineTemplate is one template new Machines of the Cluster come from.
type MachineTemplate struct {
	// Owner is what creates Machines from it, for example
	// "MachineDeployment alpha-md-0".
	Owner string
	// Ref is the template's kind and name.
	Ref string
	// Image and Version are the Talos image it names and the version that
	// image installs, Field the path of the image field in the template
	// ("" when its kind's field is not known); Err says why they could not
	// be read.
	Image, Version, Field string
	Err                   error
	// RefField is where Owner names the template, for example
	// "spec.template.spec.infrastructureRef" of a MachineDeployment.
	RefField string
}

// TemplatesCondition is the TemplatesOnTarget condition for templates and
// the rollout's target, or the version the template's owner declares
// (declared, by owner as Owner.String names it): True when every template
// boots its owner's target, False naming those that boot another version
// and what to change, Unknown naming those whose Talos cannot be told.
func TemplatesCondition(target string, declared map[string]string, templates []MachineTemplate) metav1.Condition {
	var drifted, unknown []string
	for _, t := range templates {
		want := target
		if v, ok := declared[t.Owner]; ok {
			want = v
		}
		switch {
		case t.Err != nil:
			unknown = append(unknown, fmt.Sprintf("%s: %v", t.Owner, t.Err))
		case !talos.SameVersion(t.Version, want):
			drifted = append(drifted, fmt.Sprintf("%s creates Machines from %s, which boots %s (%s): point it at a template whose image installs %s%s",
				t.Owner, t.Ref, t.Version, t.Image, want, t.how()))
		}
	}
	slices.Sort(drifted)
	slices.Sort(unknown)
	than := target
	if len(declared) > 0 {
		than = "their target (" + target + ", or the version their owner declares)"
	}
	switch {
	case len(drifted) > 0:
		return metav1.Condition{Type: upgradev1.TemplatesOnTargetCondition, Status: metav1.ConditionFalse, Reason: upgradev1.TemplatesDriftedReason,
			Message: "new Machines (a scale-up, a remediation) boot another version than " + than + " and are upgraded once more; Tollgate does not change templates: " + strings.Join(drifted, "; ")}
	case len(unknown) > 0:
		return metav1.Condition{Type: upgradev1.TemplatesOnTargetCondition, Status: metav1.ConditionUnknown, Reason: upgradev1.TemplatesUnknownReason,
			Message: "cannot tell which Talos new Machines boot: " + strings.Join(unknown, "; ")}
	}
	return metav1.Condition{Type: upgradev1.TemplatesOnTargetCondition, Status: metav1.ConditionTrue, Reason: upgradev1.TemplatesOnTargetReason}
}

// how says which fields to change so that the template's owner makes
// Machines that boot another version: a new template (templates are
// immutable for most providers) whose image field names it, and the
// owner's reference to it.
func (t MachineTemplate) how() string {
	switch {
	case t.Field != "" && t.RefField != "":
		return fmt.Sprintf(" (a new template whose %s names it, and %s's %s pointing at it)", t.Field, t.Owner, t.RefField)
	case t.Field != "":
		return fmt.Sprintf(" (a new template whose %s names it)", t.Field)
	}
	return ""
}
