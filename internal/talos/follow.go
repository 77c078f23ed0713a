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

package talos

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// FollowCandidates returns the stable releases (oldest first, as
// StableReleases returns them) that a policy following releases with allow
// may move to from the version from: the later patches of from's minor, and
// for FollowAllowMinor those of the next minor too, never one further. Each
// is a release the compatibility data knows and an upgrade Talos supports
// from from in one step.
func FollowCandidates(allow upgradev1.FollowAllow, from string, releases []string) []string {
	base, err := ParseVersion(from)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range releases {
		v, err := ParseVersion(r)
		if err != nil || !v.GreaterThan(base) || v.Major() != base.Major() {
			continue
		}
		switch {
		case v.Minor() == base.Minor():
		case allow == upgradev1.FollowAllowMinor && v.Minor() == base.Minor()+1:
		default:
			continue
		}
		if CheckKnown(r) != nil || CheckUpgradeStep(from, r, false) != nil {
			continue
		}
		out = append(out, r)
	}
	return out
}

// earliestPlausible is the earliest image creation time taken as a release
// date: reproducible builds stamp their images with the epoch, or with
// nothing.
var earliestPlausible = time.Date(2018, time.January, 1, 0, 0, 0, 0, time.UTC)

// ReleaseCreated returns the creation time the image config of the release
// version of repository records, or the zero time when the registry gives
// none that is plausible (before 2018, or after now). A failure to read it is
// returned: the caller falls back to when it first saw the tag.
func ReleaseCreated(ctx context.Context, repository, version string, keychain authn.Keychain, now time.Time) (time.Time, error) {
	ref, err := name.NewTag(repository + ":" + version)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %q is not a repository: %w", ErrInvalidInstaller, repository, err)
	}
	if keychain == nil {
		keychain = authn.NewMultiKeychain()
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain))
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the image of %s: %w", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the config of %s: %w", ref, err)
	}
	created := cfg.Created.Time
	if created.Before(earliestPlausible) || created.After(now) {
		return time.Time{}, nil
	}
	return created, nil
}
