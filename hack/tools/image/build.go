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

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tollgate-dev/tollgate/hack/tools/internal/release"
)

// options are the flags of the command.
type options struct {
	// version is the manager's version (main.version) and the image's.
	version string
	// platforms are the platforms of the index, in its order.
	platforms []v1.Platform
	// source is the directory of the manager's main package.
	source string
	// created is the time of every file and of every image config.
	created time.Time
	// out is the OCI image layout directory to write; none when empty.
	out string
	// push is the image reference to push to; none when empty.
	push string
}

// run builds the manager for every platform, assembles the index, writes or
// pushes it, and returns its digest.
func run(ctx context.Context, o options) (v1.Hash, error) {
	if o.version == "" || strings.ContainsAny(o.version, " \t\n'\"") {
		return v1.Hash{}, fmt.Errorf("--version %q: want a version such as v0.1.0, without spaces or quotes", o.version)
	}
	var ref name.Reference
	if o.push != "" {
		var err error
		if ref, err = name.ParseReference(o.push); err != nil {
			return v1.Hash{}, fmt.Errorf("--push %q: %w", o.push, err)
		}
	}
	if o.out != "" {
		if err := release.CheckEmpty(o.out); err != nil {
			return v1.Hash{}, err
		}
	}

	dir, err := os.MkdirTemp("", "tollgate-image-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binaries := make([]managerBinary, 0, len(o.platforms))
	for _, p := range o.platforms {
		bin := managerBinary{platform: p, path: filepath.Join(dir, p.OS+"-"+p.Architecture, "manager")}
		fmt.Fprintf(os.Stderr, "Building the manager %s for %s\n", o.version, p)
		if err := release.Build(ctx, o.source, ".", bin.path, p.OS, p.Architecture, o.version); err != nil {
			return v1.Hash{}, err
		}
		binaries = append(binaries, bin)
	}
	idx, err := newIndex(binaries, o.version, o.created)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("computing the digest of the index: %w", err)
	}

	if o.out != "" {
		if err := writeLayout(o.out, idx, o.version); err != nil {
			return v1.Hash{}, err
		}
		fmt.Fprintf(os.Stderr, "Wrote the OCI image layout %s\n", o.out)
	}
	if ref != nil {
		err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			return v1.Hash{}, fmt.Errorf("pushing the image to %q: %w", ref, err)
		}
		fmt.Fprintf(os.Stderr, "Pushed %s\n", ref)
	}
	return digest, nil
}

// parsePlatforms parses a comma-separated list of linux/<arch> platforms.
func parsePlatforms(s string) ([]v1.Platform, error) {
	var platforms []v1.Platform
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		p, err := v1.ParsePlatform(part)
		if err != nil || p.OS != "linux" || p.Architecture == "" || p.Variant != "" || p.OSVersion != "" {
			return nil, fmt.Errorf("platform %q: want linux/<arch>, for example linux/arm64", part)
		}
		if seen[p.String()] {
			return nil, fmt.Errorf("platform %q is listed twice", part)
		}
		seen[p.String()] = true
		platforms = append(platforms, *p)
	}
	return platforms, nil
}

// writeLayout writes idx into a new OCI image layout at dir, its
// index.json naming it by version (org.opencontainers.image.ref.name), so
// that for example `skopeo copy oci:DIR:VERSION docker://...` finds it.
func writeLayout(dir string, idx v1.ImageIndex, version string) error {
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": version,
		}))
	}
	if err != nil {
		return fmt.Errorf("writing the OCI image layout %q: %w", dir, err)
	}
	return nil
}
