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
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// ClusterValidator checks one plan against many Clusters: Validate gives
// what ValidateForCluster gives for each, and Path what PathForCluster
// gives. It judges every distinct Talos version, Kubernetes version and set
// of them once: a policy's webhook checks its plan against every Cluster
// that selects it, and a fleet of 1,000 Clusters of 10 Machines runs a
// handful of versions, not 10,000 (parsing them is most of the cost).
//
// A ClusterValidator is for one plan and one admission or preflight; it is
// not safe for concurrent use.
type ClusterValidator struct {
	plan    *upgradev1.UpgradePlan
	fldPath *field.Path
	// known is false when the target is not a version Tollgate knows:
	// Validate reports it, and the Cluster checks are skipped.
	known bool

	// osImages is the canonical Talos version of each osImage seen, "" when
	// it carries none.
	osImages map[string]string
	// steps is the verdict of the step from each canonical running version
	// to the target.
	steps map[string]error
	// kubernetes is the verdict of the target on each Kubernetes version.
	kubernetes map[string]error
	// paths is the Auto path of each set of running and Kubernetes versions.
	paths map[string]pathResult
}

type pathResult struct {
	hops []string
	err  error
}

// NewClusterValidator returns a ClusterValidator of the plan p, whose
// messages name fields under fldPath, the path of the plan (as for
// Validate).
func NewClusterValidator(p *upgradev1.UpgradePlan, fldPath *field.Path) *ClusterValidator {
	return &ClusterValidator{
		plan:       p,
		fldPath:    fldPath,
		known:      talos.CheckKnown(p.TalosVersion) == nil,
		osImages:   map[string]string{},
		steps:      map[string]error{},
		kubernetes: map[string]error{},
		paths:      map[string]pathResult{},
	}
}

// Validate checks the plan against a Cluster and its Machines, as
// ValidateForCluster does: one error for each distinct Talos version the
// target cannot be installed over, naming its Machines, and one for each
// Kubernetes version the target does not support; with a kubernetesVersion,
// what ValidateKubernetes says instead.
func (v *ClusterValidator) Validate(c *ClusterVersions) field.ErrorList {
	if !v.known {
		return nil // Validate reports it.
	}
	path := v.fldPath.Child("talosVersion")
	var allErrs field.ErrorList
	// The Machines of each refused running version; several OS images may
	// carry one version. Nothing is allocated for a Cluster that passes.
	var refused []string
	var byVersion map[string][]string
	for _, img := range c.OSImages {
		running := v.runningVersion(img.OSImage)
		if running == "" {
			continue // Not known yet: the controller reads it from the node.
		}
		err := v.step(running)
		if err == nil || (errors.Is(err, talos.ErrUnsupportedUpgradePath) && v.plan.UpgradePath == upgradev1.UpgradePathAuto) {
			continue // Auto: the path goes through the minors in between (PathForCluster).
		}
		if byVersion == nil {
			byVersion = map[string][]string{}
		}
		if _, ok := byVersion[running]; !ok {
			refused = append(refused, running)
		}
		byVersion[running] = append(byVersion[running], img.Machines...)
	}
	slices.SortFunc(refused, func(a, b string) int {
		c, _ := talos.CompareVersions(a, b) // Both canonical.
		return c
	})
	for _, running := range refused {
		err := v.step(running)
		hint := ""
		if errors.Is(err, talos.ErrUnsupportedUpgradePath) {
			hint = ", or set upgradePath: Auto to go through the minors in between"
		}
		allErrs = append(allErrs, field.Invalid(path, v.plan.TalosVersion,
			fmt.Sprintf("Cluster %q, %s on %s: %v%s", c.Name, describeMachines(byVersion[running]), running, err, hint)))
	}
	if v.plan.KubernetesVersion != "" {
		// The Kubernetes version changes too: every state on the way is
		// checked by the joint plan (talos.PlanVersions), the ends here.
		return append(allErrs, v.ValidateKubernetes(c)...)
	}
	for _, k8s := range c.Kubernetes {
		if err := v.supports(k8s); err != nil {
			allErrs = append(allErrs, field.Invalid(path, v.plan.TalosVersion,
				fmt.Sprintf("Cluster %q runs Kubernetes %s: %v", c.Name, k8s, err)))
		}
	}
	return allErrs
}

// Path returns the Auto upgrade path of a Cluster through the available
// releases, as PathForCluster does with the versions its Machines report.
func (v *ClusterValidator) Path(c *ClusterVersions, available []string, repository string) ([]string, error) {
	in := v.pathInput(c, repository)
	key := pathKey(in)
	if res, ok := v.paths[key]; ok {
		return res.hops, res.err
	}
	in.Available = available
	hops, err := talos.PlanPath(in)
	v.paths[key] = pathResult{hops: hops, err: err}
	return hops, err
}

// PathPossible reports what talos.CheckPathPossible says of a Cluster: why
// no Auto path could exist whatever the releases, or nil.
func (v *ClusterValidator) PathPossible(c *ClusterVersions, repository string) error {
	in := v.pathInput(c, repository)
	key := "possible\x00" + pathKey(in)
	if res, ok := v.paths[key]; ok {
		return res.err
	}
	err := talos.CheckPathPossible(in)
	v.paths[key] = pathResult{err: err}
	return err
}

// pathInput is the input of the path of a Cluster, without the releases.
func (v *ClusterValidator) pathInput(c *ClusterVersions, repository string) talos.PathInput {
	return talos.PathInput{From: c.TalosVersions(), Target: v.plan.TalosVersion, Kubernetes: c.Kubernetes, Repository: repository}
}

// pathKey identifies the versions a path depends on.
func pathKey(in talos.PathInput) string {
	return strings.Join(in.From, ",") + "\x00" + strings.Join(in.Kubernetes, ",")
}

// runningVersion returns the canonical Talos version of a node's OS image,
// or "" when it carries none.
func (v *ClusterValidator) runningVersion(osImage string) string {
	if running, ok := v.osImages[osImage]; ok {
		return running
	}
	running, err := talos.CanonicalVersion(talos.VersionFromOSImage(osImage))
	if err != nil {
		running = ""
	}
	v.osImages[osImage] = running
	return running
}

// step returns the verdict of the step from running to the target.
func (v *ClusterValidator) step(running string) error {
	if err, ok := v.steps[running]; ok {
		return err
	}
	err := talos.CheckUpgradeStep(running, v.plan.TalosVersion, v.plan.AllowDowngrade)
	v.steps[running] = err
	return err
}

// supports returns the verdict of the target on a Kubernetes version.
func (v *ClusterValidator) supports(k8s string) error {
	if err, ok := v.kubernetes[k8s]; ok {
		return err
	}
	err := talos.CheckKubernetesSupported(v.plan.TalosVersion, k8s)
	v.kubernetes[k8s] = err
	return err
}
