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

package webhooks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// listTimeout bounds the listing of the installer releases during an
// admission, well within the webhook's own timeout.
const listTimeout = 4 * time.Second

// explainPaths plans the Auto upgrade path of every selected Cluster, as the
// controller's preflight will: a warning shows the path each would take, an
// error why there is none (naming the missing minor). When the releases
// cannot be listed now the policy is admitted with a warning: the
// controller plans the path at its preflight, and says why it waits.
func explainPaths(ctx context.Context, secrets client.Reader, releases *talos.ReleaseLister, validator *plan.ClusterValidator, p *upgradev1.TalosUpgradePolicy, clusters []plan.ClusterVersions, fldPath *field.Path) (field.ErrorList, []string) {
	if p.Spec.UpgradePath != upgradev1.UpgradePathAuto || p.Spec.KubernetesVersion != "" || p.KeepsTalos() || len(clusters) == 0 {
		return nil, nil // A Kubernetes target plans both (explainVersions); a policy that keeps the Talos plans no Talos path.
	}
	repo, err := talos.ReleaseRepository(p.Spec.Installer)
	if err != nil {
		return nil, nil // Validate reports the installer.
	}
	keychain, err := pullKeychain(ctx, secrets, p)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: the upgrade paths cannot be planned now (%v); the controller plans them at the preflight", fldPath.Child("upgradePath"), err)}
	}
	listCtx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	available, err := releases.List(listCtx, repo, keychain)
	if err != nil {
		// What does not depend on the releases is refused now.
		var allErrs field.ErrorList
		for i := range clusters {
			if err := validator.PathPossible(&clusters[i], repo); err != nil {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("talosVersion"), p.Spec.TalosVersion, fmt.Sprintf("Cluster %q: %v", clusters[i].Name, err)))
			}
		}
		return allErrs, []string{fmt.Sprintf("%s: the releases of %s cannot be listed now (%v); the controller plans the upgrade paths at the preflight", fldPath.Child("upgradePath"), repo, err)}
	}
	var allErrs field.ErrorList
	var paths []string
	for i := range clusters {
		hops, err := validator.Path(&clusters[i], available, repo)
		switch {
		case err != nil:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("talosVersion"), p.Spec.TalosVersion, fmt.Sprintf("Cluster %q: %v", clusters[i].Name, err)))
		case len(hops) > 1:
			paths = append(paths, fmt.Sprintf("Cluster %q goes through %s", clusters[i].Name, strings.Join(hops, " → ")))
		}
	}
	return allErrs, summarize(paths, "more Clusters go through intermediate versions")
}

// explainVersions plans the path of every selected Cluster of a policy with
// a Kubernetes target, as the controller's preflight will
// (plan.KubernetesPath): a warning shows the hops each goes through, an
// error why one has none (a Kubernetes minor in between that kubeletRepo
// has no release of, for an Auto path that skips minors). A Cluster
// ValidateKubernetes refuses is not planned again, and one whose Machines
// run several Talos versions, or versions not known yet, is planned at its
// preflight, which waits for them: a warning says so. When the releases
// cannot be listed now, the policy is admitted with a warning: the
// preflight plans from the kubelet repository the nodes name.
func explainVersions(ctx context.Context, secrets client.Reader, releases *talos.ReleaseLister, kubeletRepo string, validator *plan.ClusterValidator, p *upgradev1.TalosUpgradePolicy, clusters []plan.ClusterVersions, fldPath *field.Path) (field.ErrorList, []string) {
	if p.Spec.KubernetesVersion == "" || len(clusters) == 0 {
		return nil, nil
	}
	var available []string
	var keychain authn.Keychain
	repo := ""
	auto := p.Spec.UpgradePath == upgradev1.UpgradePathAuto
	if auto {
		var err error
		if repo, err = talos.ReleaseRepository(p.Spec.Installer); err != nil {
			return nil, nil // Validate reports the installer.
		}
		keychain, err = pullKeychain(ctx, secrets, p)
		if err == nil && !p.KeepsTalos() {
			listCtx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			available, err = releases.List(listCtx, repo, keychain)
		}
		if err != nil {
			return nil, []string{fmt.Sprintf("%s: the Talos and Kubernetes paths cannot be planned now (%v); the controller plans them at the preflight", fldPath.Child("kubernetesVersion"), err)}
		}
	}
	// The kubelet releases are listed once, for the first Cluster that
	// goes through Kubernetes minors.
	var kubelets *plan.KubeletReleases
	var kubeletErr error
	listKubelets := func() {
		if kubelets != nil || kubeletErr != nil {
			return
		}
		listCtx, cancel := context.WithTimeout(ctx, listTimeout)
		defer cancel()
		versions, err := releases.List(listCtx, kubeletRepo, keychain)
		kubelets, kubeletErr = &plan.KubeletReleases{Versions: versions, Repository: kubeletRepo}, err
	}
	var allErrs field.ErrorList
	var paths, waiting []string
	for i := range clusters {
		c := &clusters[i]
		if len(validator.ValidateKubernetes(c)) > 0 {
			continue // Refused already.
		}
		if len(c.TalosVersions()) != 1 || len(c.Kubernetes) == 0 {
			waiting = append(waiting, fmt.Sprintf("Cluster %q is planned once its Machines run one known Talos version", c.Name))
			continue
		}
		target := &p.Spec.UpgradePlan
		if p.KeepsTalos() {
			// The Cluster keeps the Talos version it runs.
			target = target.DeepCopy()
			target.TalosVersion = c.TalosVersions()[0]
		}
		var through plan.KubeletReleases
		if auto && plan.SkipsKubernetesMinors(target, c) {
			if listKubelets(); kubeletErr != nil {
				waiting = append(waiting, fmt.Sprintf("Cluster %q goes through Kubernetes minors: its preflight plans them", c.Name))
				continue
			}
			through = *kubelets
		}
		hops, err := plan.KubernetesPath(target, c, available, repo, through)
		if err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("kubernetesVersion"), p.Spec.KubernetesVersion, fmt.Sprintf("Cluster %q: %v", c.Name, err)))
			continue
		}
		paths = append(paths, fmt.Sprintf("Cluster %q goes through %s", c.Name, plan.DescribeHops(hops)))
	}
	warnings := summarize(paths, "more Clusters are planned")
	if kubeletErr != nil {
		warnings = append(warnings, fmt.Sprintf("%s: the Kubernetes releases of %s cannot be listed now (%v); the controller plans the Kubernetes minors in between at the preflight, from the kubelet repository the nodes' machine configuration names", fldPath.Child("kubernetesVersion"), kubeletRepo, kubeletErr))
	}
	return allErrs, append(warnings, summarize(waiting, "more Clusters wait")...)
}

// pullKeychain returns the registry credentials of a plan's pull Secret.
func pullKeychain(ctx context.Context, c client.Reader, p *upgradev1.TalosUpgradePolicy) (authn.Keychain, error) {
	ref := p.Spec.Installer.PullSecretRef
	if ref == nil || ref.Name == "" {
		return talos.KeychainFromSecret(nil)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("reading the pull Secret %q: %w", ref.Name, err)
	}
	return talos.KeychainFromSecret(secret)
}
