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

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"

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

// KubernetesPath plans the path of plan p, which has a Kubernetes target,
// for Cluster c: the hops talos.PlanVersions plans from the one Talos
// version its Machines run and the oldest Kubernetes version it runs or is
// asked to run, through available (the installer repository's stable
// releases; the Talos target alone for a Direct path), each hop that
// changes Kubernetes preceded by a hop of its control plane on the Talos
// version before it. A Cluster that runs both targets gets one hop on
// them, where its records settle. It refuses a Cluster whose Machines run
// several Talos versions, or whose versions are not known yet.
func KubernetesPath(p *upgradev1.UpgradePlan, c *ClusterVersions, available []string, repository string) ([]upgradev1.UpgradeHop, error) {
	running := c.TalosVersions()
	switch {
	case len(running) == 0 || len(c.Kubernetes) == 0:
		return nil, fmt.Errorf("the Talos and Kubernetes versions of Cluster %s are not known yet (the Machines' status.nodeInfo)", c.Name)
	case len(running) > 1:
		return nil, fmt.Errorf("the Machines of Cluster %s run Talos %s: a Kubernetes upgrade is planned from one Talos version; finish the Talos upgrade first (a policy with talosVersion only)", c.Name, strings.Join(running, ", "))
	}
	oldest := c.Kubernetes[0]
	for _, v := range c.Kubernetes[1:] {
		if cmp, err := talos.CompareVersions(v, oldest); err == nil && cmp < 0 {
			oldest = v
		}
	}
	if p.UpgradePath != upgradev1.UpgradePathAuto || len(available) == 0 {
		available = []string{p.TalosVersion}
	}
	hops, err := talos.PlanVersions(talos.VersionsInput{
		Talos: running[0], Kubernetes: oldest,
		TargetTalos: p.TalosVersion, TargetKubernetes: p.KubernetesVersion,
		Available: available, AvailableKubernetes: []string{p.KubernetesVersion}, Repository: repository,
	})
	if err != nil {
		return nil, err
	}
	out := make([]upgradev1.UpgradeHop, 0, 2*len(hops))
	before := running[0]
	for _, h := range hops {
		if h.Change != talos.TalosChange {
			out = append(out, upgradev1.UpgradeHop{Version: before, KubernetesVersion: h.Kubernetes, Stage: upgradev1.HopStageKubernetesControlPlane})
		}
		out = append(out, upgradev1.UpgradeHop{Version: h.Talos, KubernetesVersion: h.Kubernetes, Stage: upgradev1.HopStageNodes})
		before = h.Talos
	}
	if len(out) == 0 {
		out = []upgradev1.UpgradeHop{{Version: p.TalosVersion, KubernetesVersion: p.KubernetesVersion, Stage: upgradev1.HopStageNodes}}
	}
	return out, nil
}

// DescribeHops describes hops for a message: "Kubernetes v1.36.0 control
// plane → Talos v1.13.0, kubelets v1.36.0".
func DescribeHops(hops []upgradev1.UpgradeHop) string {
	parts := make([]string, 0, len(hops))
	for _, h := range hops {
		switch {
		case h.Stage == upgradev1.HopStageKubernetesControlPlane:
			parts = append(parts, fmt.Sprintf("Kubernetes %s control plane", h.KubernetesVersion))
		case h.KubernetesVersion != "":
			parts = append(parts, fmt.Sprintf("Talos %s, kubelets %s", h.Version, h.KubernetesVersion))
		default:
			parts = append(parts, h.Version)
		}
	}
	return strings.Join(parts, " → ")
}
