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
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// ErrCannotListReleases is returned when a repository whose tags are
// releases (a policy's installer repository, the nodes' kubelet repository)
// cannot list its tags.
var ErrCannotListReleases = errors.New("cannot list the releases")

// ReleaseRepository returns the repository whose tags are the Talos
// releases an installer spec can install: the repository itself for source
// image, the stock installer for ghcr, and the stock installer too for
// factory: the Image Factory builds any Talos release on demand for any
// schematic, and its releases are those of Talos, which the stock installer
// repository tags. (Its own OCI registry builds images by reference and does
// not list tags.) Air-gapped fleets mirror the installer and use source
// image.
func ReleaseRepository(spec upgradev1.InstallerSpec) (string, error) {
	switch spec.Source {
	case upgradev1.InstallerSourceImage:
		if spec.Repository == "" {
			return "", fmt.Errorf("%w: repository is required when source is %q", ErrInvalidInstaller, spec.Source)
		}
		return spec.Repository, nil
	case upgradev1.InstallerSourceGHCR, upgradev1.InstallerSourceFactory:
		return GHCRInstallerRepository, nil
	}
	return "", fmt.Errorf("%w: unknown source %q, use factory, ghcr or image", ErrInvalidInstaller, spec.Source)
}

// StableReleases returns the tags of tags that are stable Talos releases
// (MAJOR.MINOR.PATCH, no pre-release, no build metadata), oldest first, in
// canonical form.
func StableReleases(tags []string) []string {
	versions := make([]*semver.Version, 0, len(tags))
	for _, t := range tags {
		v, err := ParseVersion(t)
		if err != nil || !isStable(v) {
			continue
		}
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i].LessThan(versions[j]) })
	out := make([]string, 0, len(versions))
	for i, v := range versions {
		if i > 0 && v.Equal(versions[i-1]) {
			continue
		}
		out = append(out, "v"+v.String())
	}
	return out
}

// ReleaseLister lists the stable releases of repositories whose tags are
// versions (installer repositories, whose tags are Talos releases, and
// kubelet repositories, whose tags are Kubernetes releases), with a cache: a
// repository is asked at most once per MinInterval, and its answer is reused
// for TTL; a failed listing is remembered for MinInterval too, so that a
// registry that fails is not hammered. It is safe for concurrent use.
type ReleaseLister struct {
	// TTL is how long a listing is reused; 10 minutes when zero.
	TTL time.Duration
	// MinInterval is the shortest time between two requests to one
	// repository, successful or not; one minute when zero.
	MinInterval time.Duration
	// Now returns the current time; time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]*releaseEntry
}

// releaseEntry is the cached listing of one repository.
type releaseEntry struct {
	at       time.Time
	releases []string
	err      error
}

func (l *ReleaseLister) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// List returns the stable releases of repository, oldest first, listing its
// tags with the credentials of keychain (anonymous when nil) unless a recent
// listing is cached.
func (l *ReleaseLister) List(ctx context.Context, repository string, keychain authn.Keychain) ([]string, error) {
	ttl, minInterval := l.TTL, l.MinInterval
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	if minInterval <= 0 {
		minInterval = time.Minute
	}
	l.mu.Lock()
	if l.entries == nil {
		l.entries = map[string]*releaseEntry{}
	}
	now := l.now()
	if e, ok := l.entries[repository]; ok && (now.Sub(e.at) < minInterval || (e.err == nil && now.Sub(e.at) < ttl)) {
		l.mu.Unlock()
		return e.releases, e.err
	}
	l.mu.Unlock()

	releases, err := listReleases(ctx, repository, keychain)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if e, ok := l.entries[repository]; ok && e.err == nil && now.Sub(e.at) < ttl {
			// A failure does not throw away a listing still fresh enough.
			return e.releases, nil
		}
	}
	l.entries[repository] = &releaseEntry{at: now, releases: releases, err: err}
	return releases, err
}

// listReleases lists the tags of repository.
func listReleases(ctx context.Context, repository string, keychain authn.Keychain) ([]string, error) {
	repo, err := name.NewRepository(repository)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a repository: %w", ErrInvalidInstaller, repository, err)
	}
	if keychain == nil {
		keychain = authn.NewMultiKeychain()
	}
	tags, err := remote.List(repo, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain))
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) {
			switch terr.StatusCode {
			case http.StatusUnauthorized, http.StatusForbidden:
				return nil, fmt.Errorf("%w of %s (HTTP %d): check the pull Secret", ErrCannotListReleases, repository, terr.StatusCode)
			case http.StatusNotFound:
				return nil, fmt.Errorf("%w of %s: the repository does not exist", ErrCannotListReleases, repository)
			}
		}
		return nil, fmt.Errorf("%w of %s: %w", ErrCannotListReleases, repository, err)
	}
	return StableReleases(tags), nil
}
