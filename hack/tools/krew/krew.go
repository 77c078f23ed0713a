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
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/hack/tools/internal/release"
)

// binary is the plugin's file name: kubectl runs kubectl-tollgate for
// kubectl tollgate.
const binary = "kubectl-tollgate"

// options are the command line.
type options struct {
	version, source, url, out string
	platforms                 []platform
	// created is the time of the archived files.
	created time.Time
}

// platform is an <os>/<arch> the plugin is built for.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// archive is the file name of the platform's archive.
func (p platform) archive() string {
	return fmt.Sprintf("%s_%s_%s.tar.gz", binary, p.os, p.arch)
}

// parsePlatforms reads --platforms: linux and darwin, amd64 and arm64, the
// platforms kubectl runs on that the plugin supports.
func parsePlatforms(s string) ([]platform, error) {
	var out []platform
	seen := map[platform]bool{}
	for _, field := range strings.Split(s, ",") {
		osName, arch, ok := strings.Cut(strings.TrimSpace(field), "/")
		p := platform{os: osName, arch: arch}
		switch {
		case !ok || (osName != "linux" && osName != "darwin") || (arch != "amd64" && arch != "arm64"):
			return nil, fmt.Errorf("platform %q is not one of linux/amd64, linux/arm64, darwin/amd64, darwin/arm64", field)
		case seen[p]:
			return nil, fmt.Errorf("platform %q is given twice", field)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

// semver is a version krew accepts: vMAJOR.MINOR.PATCH, with an optional
// pre-release and build.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// krewVersion is the manifest's spec.version for a build version: itself
// when it is a semantic version, v0.0.0-<version> (a pre-release)
// otherwise, such as for the commit git describe gives between tags.
func krewVersion(version string) string {
	if semver.MatchString(version) {
		return version
	}
	return "v0.0.0-" + regexp.MustCompile(`[^0-9A-Za-z.-]+`).ReplaceAllString(version, "-")
}

// run builds and packs the plugin for every platform, writes the manifest
// and returns its path.
func run(ctx context.Context, o options) (string, error) {
	if err := release.CheckEmpty(o.out); err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", o.out, err)
	}
	tmp, err := os.MkdirTemp("", "krew-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	url := o.url
	if url == "" {
		url = "https://github.com/tollgate-dev/tollgate/releases/download/" + o.version
	}
	var archives []packed
	for _, p := range o.platforms {
		bin := filepath.Join(tmp, p.os+"-"+p.arch, binary)
		if err := release.Build(ctx, "", o.source, bin, p.os, p.arch, o.version); err != nil {
			return "", err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return "", err
		}
		a, err := pack(data, o.created)
		if err != nil {
			return "", fmt.Errorf("packing the plugin for %s: %w", p, err)
		}
		if err := os.WriteFile(filepath.Join(o.out, p.archive()), a, 0o644); err != nil { //nolint:gosec // A release asset, world-readable by design.
			return "", err
		}
		archives = append(archives, packed{platform: p, sha256: sum(a)})
	}
	m, err := manifest(krewVersion(o.version), strings.TrimSuffix(url, "/"), archives)
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.out, "tollgate.yaml")
	if err := os.WriteFile(path, m, 0o644); err != nil { //nolint:gosec // A release asset, world-readable by design.
		return "", err
	}
	return path, nil
}

// pack returns the archive of the plugin's binary: a gzipped tar with the
// one file kubectl-tollgate, mode 0755, owned by root and dated created,
// and a gzip header with no name and no time, so that the same binary and
// time give the same bytes.
func pack(bin []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: binary, Mode: 0o755, Size: int64(len(bin)),
		ModTime: created, Uname: "root", Gname: "root", Format: tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// packed is an archive written, for the manifest.
type packed struct {
	platform platform
	sha256   string
}

// The krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2,
// kind Plugin): only the fields the plugin's manifest sets.
type (
	krewPlugin struct {
		APIVersion string       `json:"apiVersion"`
		Kind       string       `json:"kind"`
		Metadata   krewMetadata `json:"metadata"`
		Spec       krewSpec     `json:"spec"`
	}
	krewMetadata struct {
		Name string `json:"name"`
	}
	krewSpec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Caveats          string         `json:"caveats,omitempty"`
		Platforms        []krewPlatform `json:"platforms"`
	}
	krewPlatform struct {
		Selector krewSelector `json:"selector"`
		URI      string       `json:"uri"`
		SHA256   string       `json:"sha256"`
		Files    []krewFile   `json:"files"`
		Bin      string       `json:"bin"`
	}
	krewSelector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	}
	krewFile struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
)

// The texts of the manifest.
const (
	homepage         = "https://github.com/tollgate-dev/tollgate"
	shortDescription = "See and steer Tollgate's Talos upgrade rollouts"
	description      = `Tollgate rolls Talos Linux upgrades across Cluster API workload clusters.
This plugin shows its rollouts and sets the controls an operator uses on them:

  kubectl tollgate describe          the fleet as a tree: policies, Clusters,
                                     Machines with phase, holds and blockers
  kubectl tollgate watch CLUSTER     a Cluster's rollout live, then a summary
  kubectl tollgate pause|resume      a rollout, or every rollout of a policy
  kubectl tollgate cancel CLUSTER    end a rollout for good
  kubectl tollgate bypass --reason   proceed past a broken safety gate (health
                                     checks, maintenance windows, a gone hold
                                     owner, a Machine's failed hook); the
                                     admission webhook records who asked
`
	caveats = `The plugin needs Tollgate installed in the management cluster, and RBAC
to read TalosUpgradePolicies, TalosUpgrades, Clusters and Machines (and to
patch TalosUpgrades and TalosUpgradePolicies for pause, resume, cancel and
bypass).
`
)

// manifest returns the krew manifest of the archives, downloaded from url.
func manifest(version, url string, archives []packed) ([]byte, error) {
	if !semver.MatchString(version) {
		return nil, fmt.Errorf("krew needs a semantic version (vX.Y.Z), got %q", version)
	}
	p := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   krewMetadata{Name: "tollgate"},
		Spec: krewSpec{
			Version: version, Homepage: homepage, ShortDescription: shortDescription,
			Description: description, Caveats: caveats,
		},
	}
	for _, a := range archives {
		p.Spec.Platforms = append(p.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": a.platform.os, "arch": a.platform.arch}},
			URI:      url + "/" + a.platform.archive(),
			SHA256:   a.sha256,
			Files:    []krewFile{{From: binary, To: "."}},
			Bin:      binary,
		})
	}
	return yaml.Marshal(p)
}
