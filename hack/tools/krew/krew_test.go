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
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// repoRoot is the module's root, two levels up from this package.
var repoRoot = filepath.Join("..", "..", "..")

// created is the time of the test's archives.
var created = time.Date(2026, time.March, 14, 22, 30, 0, 0, time.UTC)

// validate checks a manifest the way krew's index validation does
// (sigs.k8s.io/krew/pkg/index/validation.ValidatePlugin, mirrored here so
// that the tool needs no krew dependency): apiVersion, kind, a safe name, a
// short description, a semantic version, and per platform a URI, a sha256,
// a bin, files and an os/arch selector.
func validate(g Gomega, data []byte) krewPlugin {
	var p krewPlugin
	g.Expect(yaml.UnmarshalStrict(data, &p)).To(Succeed())
	g.Expect(p.APIVersion).To(Equal("krew.googlecontainertools.github.com/v1alpha2"))
	g.Expect(p.Kind).To(Equal("Plugin"))
	g.Expect(p.Metadata.Name).To(MatchRegexp(`^[\w-]+$`))
	g.Expect(p.Spec.ShortDescription).NotTo(BeEmpty())
	g.Expect(p.Spec.Version).To(MatchRegexp(semver.String()))
	g.Expect(p.Spec.Platforms).NotTo(BeEmpty())
	for _, pl := range p.Spec.Platforms {
		g.Expect(pl.URI).NotTo(BeEmpty())
		g.Expect(pl.SHA256).To(MatchRegexp(`^[a-f0-9]{64}$`))
		g.Expect(pl.Bin).NotTo(BeEmpty())
		g.Expect(pl.Files).NotTo(BeEmpty())
		g.Expect(pl.Selector.MatchLabels).To(HaveLen(2))
		g.Expect(pl.Selector.MatchLabels).To(HaveKey("os"))
		g.Expect(pl.Selector.MatchLabels).To(HaveKey("arch"))
	}
	return p
}

// TestManifest writes the manifest of stand-in archives for the release
// platforms: valid for krew, each platform's URI and sum those of its
// archive.
func TestManifest(t *testing.T) {
	g := NewWithT(t)
	platforms, err := parsePlatforms(releasePlatforms)
	g.Expect(err).NotTo(HaveOccurred())
	archives := make([]packed, 0, len(platforms))
	sums := map[string]string{}
	for _, p := range platforms {
		a, err := pack([]byte("stand-in binary for "+p.String()), created)
		g.Expect(err).NotTo(HaveOccurred())
		archives = append(archives, packed{platform: p, sha256: sum(a)})
		sums[p.String()] = sum(a)
	}
	data, err := manifest("v0.1.0", "https://github.com/tollgate-dev/tollgate/releases/download/v0.1.0", archives)
	g.Expect(err).NotTo(HaveOccurred())
	m := validate(g, data)
	g.Expect(m.Metadata.Name).To(Equal("tollgate"), "kubectl krew install tollgate")
	g.Expect(m.Spec.Version).To(Equal("v0.1.0"))
	g.Expect(m.Spec.Platforms).To(HaveLen(4))
	for _, pl := range m.Spec.Platforms {
		p := platform{os: pl.Selector.MatchLabels["os"], arch: pl.Selector.MatchLabels["arch"]}
		g.Expect(pl.URI).To(Equal("https://github.com/tollgate-dev/tollgate/releases/download/v0.1.0/kubectl-tollgate_" + p.os + "_" + p.arch + ".tar.gz"))
		g.Expect(pl.SHA256).To(Equal(sums[p.String()]))
		g.Expect(pl.Bin).To(Equal("kubectl-tollgate"))
		g.Expect(pl.Files).To(Equal([]krewFile{{From: "kubectl-tollgate", To: "."}}))
	}
	_, err = manifest("abc1234-dirty", "https://example.invalid", archives)
	g.Expect(err).To(MatchError(ContainSubstring("krew needs a semantic version")))
}

// TestPack is reproducible and holds the one executable file.
func TestPack(t *testing.T) {
	g := NewWithT(t)
	a, err := pack([]byte("#!/bin/sh\n"), created)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := pack([]byte("#!/bin/sh\n"), created)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(Equal(b), "the same binary and time give the same bytes")
	c, err := pack([]byte("#!/bin/sh\n"), created.Add(time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).NotTo(Equal(a), "the time is the archived file's")
	files := untar(g, a)
	g.Expect(files).To(HaveLen(1))
	g.Expect(files["kubectl-tollgate"].mode).To(Equal(int64(0o755)))
	g.Expect(files["kubectl-tollgate"].data).To(Equal("#!/bin/sh\n"))
}

func TestKrewVersion(t *testing.T) {
	g := NewWithT(t)
	g.Expect(krewVersion("v0.1.0")).To(Equal("v0.1.0"))
	g.Expect(krewVersion("v1.2.3-rc.1")).To(Equal("v1.2.3-rc.1"))
	g.Expect(krewVersion("v0.1.0-3-gabc1234-dirty")).To(Equal("v0.1.0-3-gabc1234-dirty"))
	g.Expect(krewVersion("abc1234-dirty")).To(Equal("v0.0.0-abc1234-dirty"))
	g.Expect(krewVersion("dev")).To(MatchRegexp(semver.String()))
}

func TestParsePlatforms(t *testing.T) {
	g := NewWithT(t)
	ps, err := parsePlatforms("linux/amd64, darwin/arm64")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ps).To(Equal([]platform{{"linux", "amd64"}, {"darwin", "arm64"}}))
	for _, bad := range []string{"windows/amd64", "linux", "linux/386", "linux/amd64,linux/amd64"} {
		_, err := parsePlatforms(bad)
		g.Expect(err).To(HaveOccurred(), bad)
	}
}

// TestReleasePlatforms checks that the Makefile builds the release
// platforms, the command's default.
func TestReleasePlatforms(t *testing.T) {
	g := NewWithT(t)
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(makefile)).To(MatchRegexp(`(?m)^PLUGIN_PLATFORMS \?= %s$`, regexp.QuoteMeta(releasePlatforms)))
}

// TestRun builds the plugin for the host's platform (the others
// cross-compile the same code), and the archive's binary runs and says its
// version.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no plugin for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	g := NewWithT(t)
	out := filepath.Join(t.TempDir(), "plugin")
	host := platform{os: runtime.GOOS, arch: runtime.GOARCH}
	path, err := run(context.Background(), options{
		version: "v0.1.0", source: filepath.Join(repoRoot, "cmd", "kubectl-tollgate"), out: out,
		platforms: []platform{host}, created: created,
	})
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	m := validate(g, data)
	g.Expect(m.Spec.Platforms).To(HaveLen(1))
	g.Expect(m.Spec.Platforms[0].URI).To(Equal("https://github.com/tollgate-dev/tollgate/releases/download/v0.1.0/" + host.archive()))
	archive, err := os.ReadFile(filepath.Join(out, host.archive()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Spec.Platforms[0].SHA256).To(Equal(sum(archive)))
	bin := filepath.Join(t.TempDir(), "kubectl-tollgate")
	g.Expect(os.WriteFile(bin, []byte(untar(g, archive)["kubectl-tollgate"].data), 0o755)).To(Succeed()) //nolint:gosec // An executable under test.
	version, err := exec.Command(bin, "version").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(version))
	g.Expect(string(version)).To(Equal("kubectl-tollgate v0.1.0\n"))

	_, err = run(context.Background(), options{version: "v0.1.0", out: out, platforms: []platform{host}})
	g.Expect(err).To(MatchError(ContainSubstring("is not empty")), "old archives are not mixed with new ones")
}

type untarred struct {
	mode int64
	data string
}

func untar(g Gomega, archive []byte) map[string]untarred {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(zr)
	files := map[string]untarred{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		g.Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		files[hdr.Name] = untarred{mode: hdr.Mode, data: string(data)}
	}
}
