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

package plan

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

// ValidateKubernetes checks the plan's kubernetesVersion against a Cluster,
// without the releases (the path through them is planned by
// talos.PlanVersions): one error, naming the Cluster, for each Kubernetes
// version the Cluster runs or is asked to run that is newer than the target
// (Kubernetes is never downgraded), that the target is more than one minor
// ahead of (Tollgate lists no Kubernetes releases to go through the minors
// in between), and for each Talos version the Cluster ends on that does not
// support the target (the plan's talosVersion, or what the Cluster runs
// when the plan keeps it). Nothing is checked without a kubernetesVersion.
func (v *ClusterValidator) ValidateKubernetes(c *ClusterVersions) field.ErrorList {
	target := v.plan.KubernetesVersion
	if target == "" {
		return nil
	}
	path := v.fldPath.Child("kubernetesVersion")
	invalid := func(format string, args ...any) *field.Error {
		return field.Invalid(path, target, fmt.Sprintf("Cluster %q ", c.Name)+fmt.Sprintf(format, args...))
	}
	var allErrs field.ErrorList
	for _, running := range c.Kubernetes {
		err := talos.CheckKubernetesStep(running, target, false)
		switch {
		case err == nil:
		case errors.Is(err, talos.ErrDowngradeNotAllowed):
			allErrs = append(allErrs, invalid("runs or is asked to run Kubernetes %s, newer than the target: Kubernetes is never downgraded; choose %s or newer", running, running))
		default:
			// Tollgate knows no Kubernetes release of the minors in between
			// (it lists the Talos installer's releases only): one minor per
			// policy target.
			allErrs = append(allErrs, invalid("runs Kubernetes %s: %v", running, err))
		}
	}
	ends := []string{v.plan.TalosVersion}
	if v.plan.TalosVersion == "" {
		ends = c.TalosVersions()
	}
	for _, t := range ends {
		if err := talos.CheckKubernetesSupported(t, target); err != nil {
			if v.plan.TalosVersion == "" {
				allErrs = append(allErrs, invalid("runs Talos %s, which does not support Kubernetes %s: %v; set talosVersion too, for Tollgate to plan both", t, target, trimAdvice(err)))
				continue
			}
			allErrs = append(allErrs, invalid("would run Talos %s with Kubernetes %s: %v", t, target, trimAdvice(err)))
		}
	}
	return allErrs
}

// trimAdvice drops the generic advice of a compatibility error, which the
// messages above replace with their own.
func trimAdvice(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "; upgrade Kubernetes first")
	return msg
}
