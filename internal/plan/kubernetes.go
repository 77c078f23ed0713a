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
	"maps"
	"slices"
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
// ahead of with upgradePath Direct (one minor per policy target; Auto plans
// through the minors in between, whose releases KubernetesPath is given) or
// in another major version, and for each Talos version the Cluster ends on
// that does not support the target (the plan's talosVersion, or what the
// Cluster runs when the plan keeps it). Nothing is checked without a
// kubernetesVersion.
func (v *ClusterValidator) ValidateKubernetes(c *ClusterVersions) field.ErrorList {
	target := v.plan.KubernetesVersion
	if target == "" {
		return nil
	}
	path := v.fldPath.Child("kubernetesVersion")
	invalid := func(format string, args ...any) *field.Error {
		return field.Invalid(path, target, fmt.Sprintf("Cluster %q ", c.Name)+fmt.Sprintf(format, args...))
	}
	auto := v.plan.UpgradePath == upgradev1.UpgradePathAuto
	var allErrs field.ErrorList
	for _, running := range c.Kubernetes {
		err := talos.CheckKubernetesStep(running, target, false)
		switch {
		case err == nil:
		case errors.Is(err, talos.ErrDowngradeNotAllowed):
			allErrs = append(allErrs, invalid("runs or is asked to run Kubernetes %s, newer than the target: Kubernetes is never downgraded; choose %s or newer", running, running))
		case skipsMinors(running, target) && auto:
			// The path goes through the minors in between (KubernetesPath).
		case skipsMinors(running, target):
			allErrs = append(allErrs, invalid("runs Kubernetes %s: %v; or set upgradePath: Auto for Tollgate to plan through the minors in between, one minor per step, with the releases of the nodes' kubelet repository", running, err))
		default:
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

// ValidateTargets checks what can be judged of the plan's kubernetesVersion
// without a Cluster: that a Talos version this build knows supports it and,
// when the plan names a known talosVersion too, that the Talos target
// supports it, since every Cluster of the plan ends on the two, whatever it
// runs and whatever path it takes. Nothing is checked without a
// kubernetesVersion, nor with targetFrom CAPI (ValidateRules refuses a
// kubernetesVersion there). The webhooks judge with it the plans users
// write (a policy, a TalosUpgrade made by hand): a plan a Tollgate
// controller made for a policy with kubernetesVersion alone names the Talos
// its Cluster runs, a pair the rollout's preflight judges with the Cluster.
func ValidateTargets(p *upgradev1.UpgradePlan, fldPath *field.Path) field.ErrorList {
	if p.KubernetesVersion == "" || p.CAPIDriven() {
		return nil
	}
	if _, err := talos.ParseVersion(p.KubernetesVersion); err != nil {
		return nil // ValidateRules reports it.
	}
	path := fldPath.Child("kubernetesVersion")
	if p.TalosVersion != "" && talos.CheckKnown(p.TalosVersion) == nil {
		if err := talos.CheckTargets(p.TalosVersion, p.KubernetesVersion); err != nil {
			return field.ErrorList{field.Invalid(path, p.KubernetesVersion, err.Error())}
		}
		return nil
	}
	if err := talos.CheckKubernetesKnown(p.KubernetesVersion); err != nil {
		return field.ErrorList{field.Invalid(path, p.KubernetesVersion, err.Error())}
	}
	return nil
}

// trimAdvice drops the generic advice of a compatibility error, which the
// messages above replace with their own.
func trimAdvice(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "; upgrade Kubernetes first")
	return msg
}

// KubeletReleases are the Kubernetes releases a path may go through: the
// stable releases of the repository of the nodes' kubelet image, whose tags
// are the versions a kubelet can move to (ImagePatches keeps the
// repository).
type KubeletReleases struct {
	// Versions are the stable releases, as talos.StableReleases returns
	// them.
	Versions []string
	// Repository is the repository they were listed from, for messages.
	Repository string
}

// CommonKubeletReleases returns the releases every repository of
// byRepository lists (the stable releases of the kubelet repository of each
// node of a Cluster, by repository): a Kubernetes version the path goes
// through must be one every node's kubelet can move to. Their repositories
// are named, sorted, for messages.
func CommonKubeletReleases(byRepository map[string][]string) KubeletReleases {
	repos := slices.Sorted(maps.Keys(byRepository))
	if len(repos) == 0 {
		return KubeletReleases{}
	}
	common := slices.Clone(byRepository[repos[0]])
	for _, repo := range repos[1:] {
		common = slices.DeleteFunc(common, func(v string) bool { return !slices.Contains(byRepository[repo], v) })
	}
	return KubeletReleases{Versions: common, Repository: strings.Join(repos, " and ")}
}

// SkipsKubernetesMinors reports whether plan p takes Cluster c more than one
// Kubernetes minor ahead of the oldest version it runs or is asked to run:
// its path then goes through the minors in between, and KubernetesPath
// needs the kubelet repository's releases.
func SkipsKubernetesMinors(p *upgradev1.UpgradePlan, c *ClusterVersions) bool {
	return p.KubernetesVersion != "" && len(c.Kubernetes) > 0 && skipsMinors(oldestKubernetes(c), p.KubernetesVersion)
}

// skipsMinors reports whether Kubernetes target is more than one minor
// ahead of running, in the same major version.
func skipsMinors(running, target string) bool {
	from, err1 := talos.ParseVersion(running)
	to, err2 := talos.ParseVersion(target)
	return err1 == nil && err2 == nil && from.Major() == to.Major() && to.Minor() > from.Minor()+1
}

// oldestKubernetes returns the oldest Kubernetes version Cluster c runs or
// is asked to run; c runs one at least.
func oldestKubernetes(c *ClusterVersions) string {
	oldest := c.Kubernetes[0]
	for _, v := range c.Kubernetes[1:] {
		if cmp, err := talos.CompareVersions(v, oldest); err == nil && cmp < 0 {
			oldest = v
		}
	}
	return oldest
}

// KubernetesPath plans the path of plan p, which has a Kubernetes target,
// for Cluster c: the hops talos.PlanVersions plans from the one Talos
// version its Machines run and the oldest Kubernetes version it runs or is
// asked to run, through available (the installer repository's stable
// releases; the Talos target alone for a Direct path) and, with upgradePath
// Auto, the newest patch kubelets lists of every Kubernetes minor in between
// (SkipsKubernetesMinors; a Direct path moves one minor), each hop that
// changes Kubernetes preceded by a hop of its control plane on the Talos
// version before it. A Cluster that runs both targets gets one hop on
// them, where its records settle. A Cluster whose Machines run several
// Talos versions up to the Talos target (its Talos rollout under way when
// the Kubernetes target came) first finishes it, in a hop to the Talos
// target that changes no Kubernetes. It refuses a Cluster whose Machines run
// a Talos version newer than the target, or whose versions are not known
// yet, a Direct
// path that skips a minor, and a minor in between kubelets has no release
// of, naming it.
func KubernetesPath(p *upgradev1.UpgradePlan, c *ClusterVersions, available []string, repository string, kubelets KubeletReleases) ([]upgradev1.UpgradeHop, error) {
	running := c.TalosVersions()
	finishTalos := false
	switch {
	case len(running) == 0 || len(c.Kubernetes) == 0:
		return nil, fmt.Errorf("the Talos and Kubernetes versions of Cluster %s are not known yet (the Machines' status.nodeInfo)", c.Name)
	case len(running) > 1 && !upTo(running, p.TalosVersion):
		return nil, fmt.Errorf("the Machines of Cluster %s run Talos %s, not all at or below the target %s: a Kubernetes upgrade is planned from one Talos version; finish the Talos upgrade first (a policy with talosVersion only)", c.Name, strings.Join(running, ", "), p.TalosVersion)
	case len(running) > 1:
		// A Talos rollout under way (a Kubernetes target set mid-rollout):
		// its Machines finish it first, in a hop that changes no Kubernetes,
		// and the rest is planned from the Talos target.
		finishTalos, running = true, []string{p.TalosVersion}
	}
	oldest := oldestKubernetes(c)
	auto := p.UpgradePath == upgradev1.UpgradePathAuto
	if !auto && skipsMinors(oldest, p.KubernetesVersion) {
		return nil, fmt.Errorf("%w: Cluster %s runs Kubernetes %s, and upgradePath Direct moves Kubernetes one minor per policy target; choose the next minor, or set upgradePath: Auto for Tollgate to plan through the minors in between",
			talos.ErrNoUpgradePath, c.Name, oldest)
	}
	if !auto || len(available) == 0 {
		available = []string{p.TalosVersion}
	}
	availableKubernetes := []string{p.KubernetesVersion}
	if auto {
		availableKubernetes = append(availableKubernetes, kubelets.Versions...)
	}
	hops, err := talos.PlanVersions(talos.VersionsInput{
		Talos: running[0], Kubernetes: oldest,
		TargetTalos: p.TalosVersion, TargetKubernetes: p.KubernetesVersion,
		Available: available, AvailableKubernetes: availableKubernetes, Repository: repository,
		KubernetesRepository: kubelets.Repository,
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
	if finishTalos {
		out = append([]upgradev1.UpgradeHop{{Version: p.TalosVersion, Stage: upgradev1.HopStageNodes}}, out...)
	}
	return out, nil
}

// upTo reports whether every version of running is target or older.
func upTo(running []string, target string) bool {
	for _, v := range running {
		if c, err := talos.CompareVersions(v, target); err != nil || c > 0 {
			return false
		}
	}
	return true
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
