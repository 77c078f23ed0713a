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
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// minCheckInterval is the shortest checkInterval of a policy that follows
// releases: a registry is not a thing to poll.
const minCheckInterval = time.Minute

// validateFollow checks the follow rules of a policy: it names talosVersion
// or follows releases, not both and not neither; allow is known; the check
// interval is at least minCheckInterval and the minimum release age is not
// negative; the installer source is one whose releases can be listed; and
// allowDowngrade is not set, so that the preflight still refuses to
// downgrade a Cluster that runs ahead of the followed target.
func validateFollow(p *upgradev1.TalosUpgradePolicy, specPath *field.Path) (field.ErrorList, []string) {
	f := p.Spec.Follow
	fldPath := specPath.Child("follow")
	var allErrs field.ErrorList
	var warnings []string
	if p.Spec.TalosVersion != "" {
		allErrs = append(allErrs, field.Forbidden(fldPath,
			"must not be set with talosVersion: a policy names its target or follows the releases of its installer repository, not both; remove talosVersion to follow releases, or follow to pin a version"))
	}
	switch f.Allow {
	case upgradev1.FollowAllowPatch, upgradev1.FollowAllowMinor:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("allow"), f.Allow,
			[]string{string(upgradev1.FollowAllowPatch), string(upgradev1.FollowAllowMinor)}))
	}
	if f.CheckInterval != nil && f.CheckInterval.Duration < minCheckInterval {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("checkInterval"), f.CheckInterval.Duration.String(),
			fmt.Sprintf("must be at least %s: the repository's tags are listed this often; leave it unset for 1h", minCheckInterval)))
	}
	if f.MinReleaseAge != nil && f.MinReleaseAge.Duration < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("minReleaseAge"), f.MinReleaseAge.Duration.String(),
			"must not be negative: a release becomes the target once it is this old; 0 takes it as soon as it is seen"))
	}
	if repo, err := talos.ReleaseRepository(p.Spec.Installer); err != nil {
		allErrs = append(allErrs, field.Invalid(specPath.Child("installer"), p.Spec.Installer.Source,
			fmt.Sprintf("cannot follow releases: %v", err)))
	} else {
		warnings = append(warnings, fmt.Sprintf(
			"spec.follow: the target is chosen from the stable tags of %s (allow: %s); each rollout's preflight checks its Cluster against the version chosen, and status.follow shows what was seen and what is next",
			repo, f.Allow))
	}
	if p.Spec.AllowDowngrade {
		allErrs = append(allErrs, field.Invalid(specPath.Child("allowDowngrade"), p.Spec.AllowDowngrade,
			"must not be true with follow: it would turn off the preflight's refusal to downgrade a Cluster that runs ahead of the fleet to the followed target; remove it, or name talosVersion instead of follow to downgrade on purpose"))
	}
	if p.Spec.AllowPrerelease {
		warnings = append(warnings, "spec.allowPrerelease has no effect with spec.follow: only stable releases are followed")
	}
	return allErrs, warnings
}
