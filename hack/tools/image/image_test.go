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
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
)

// repoRoot is the module's root, from this package's directory.
const repoRoot = "../../.."

// TestImage runs the command as `make image` and `make image-push` do, for
// the host's release platform only: a cold build of the manager costs about 7
// CPU-minutes, so the index of both release platforms is TestIndex's, from
// stand-in files, and only `make image` cross-compiles. It writes an OCI
// layout and pushes to an in-process registry, then pulls the image back,
// checks the index, the config and the files, and runs the manager
// --version. The command runs as a process of its own, so that compressing
// the layers does not run under -race.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the manager")
	}
	g := NewWithT(t)
	const version = "v9.8.7-image.test"
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	platforms := []v1.Platform{hostPlatform(t)}
	server := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer server.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(server.URL, "http://") + "/tollgate-dev/tollgate-controller:" + version)
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	out := filepath.Join(dir, "layout")

	start := time.Now()
	tool := filepath.Join(dir, "image")
	build, err := exec.CommandContext(t.Context(), "go", "build", "-o", tool, ".").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "building the command: %s", build)
	cmd := exec.CommandContext(t.Context(), tool, "--version", version, "--platforms", platforms[0].String(),
		"--source", repoRoot, "--out", out, "--push", ref.String())
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", created.Unix()))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "%s: %s", cmd, &stderr)
	t.Logf("Built, wrote and pushed the image for %s in %s", platforms[0], time.Since(start).Round(time.Second))
	digest, err := v1.NewHash(strings.TrimSuffix(string(stdout), "\n"))
	g.Expect(err).NotTo(HaveOccurred(), "the command's output is the index's digest: %q", stdout)

	idx, err := remote.Index(ref, remote.WithContext(t.Context()))
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.MediaType).To(Equal(types.OCIImageIndex))
	g.Expect(manifest.Annotations).To(Equal(labels(version)))
	g.Expect(manifest.Manifests).To(HaveLen(len(platforms)))
	for i, desc := range manifest.Manifests {
		g.Expect(desc.MediaType).To(Equal(types.OCIManifestSchema1))
		g.Expect(desc.Platform).To(HaveValue(Equal(platforms[i])))
		img, err := idx.Image(desc.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		checkImage(t, img, platforms[i], version, created)
	}

	// The command printed the pushed index's digest; the OCI layout holds
	// the same index, named by the version.
	g.Expect(idx.Digest()).To(Equal(digest))
	p, err := layout.FromPath(out)
	g.Expect(err).NotTo(HaveOccurred())
	top, err := p.ImageIndex()
	g.Expect(err).NotTo(HaveOccurred())
	topManifest, err := top.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(topManifest.Manifests).To(HaveLen(1))
	g.Expect(topManifest.Manifests[0].Digest).To(Equal(digest))
	g.Expect(topManifest.Manifests[0].Annotations).To(HaveKeyWithValue("org.opencontainers.image.ref.name", version))
}

// checkImage checks the config and files of the image of platform p, and
// runs its manager when p is the host's.
func checkImage(t *testing.T, img v1.Image, p v1.Platform, version string, created time.Time) {
	t.Helper()
	g := NewWithT(t)
	mt, err := img.MediaType()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mt).To(Equal(types.OCIManifestSchema1))
	m, err := img.Manifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Config.MediaType).To(Equal(types.OCIConfigJSON))
	g.Expect(m.Layers).To(HaveLen(2))
	for _, l := range m.Layers {
		g.Expect(l.MediaType).To(Equal(types.OCILayer))
	}

	cf, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cf.OS).To(Equal(p.OS))
	g.Expect(cf.Architecture).To(Equal(p.Architecture))
	g.Expect(cf.Created.Time.Equal(created)).To(BeTrue(), "created %s, want %s", cf.Created, created)
	g.Expect(cf.Config.User).To(Equal("65532:65532"))
	g.Expect(cf.Config.Entrypoint).To(Equal([]string{"/manager"}))
	g.Expect(cf.Config.Cmd).To(BeEmpty())
	g.Expect(cf.Config.WorkingDir).To(Equal("/"))
	g.Expect(cf.Config.Labels).To(Equal(labels(version)))
	g.Expect(cf.History).To(HaveLen(2))

	manager := filepath.Join(t.TempDir(), "manager")
	files := extract(t, img, "manager", manager)
	g.Expect(files).To(HaveLen(9), "every file of the image, and nothing else (no shell)")
	for _, want := range []struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
		content  string
	}{
		{name: "etc", typ: tar.TypeDir, mode: 0o755},
		{name: "etc/group", typ: tar.TypeReg, mode: 0o644, content: "nonroot:x:65532:\n"},
		{name: "etc/nsswitch.conf", typ: tar.TypeReg, mode: 0o644, content: "hosts: files dns\n"},
		{name: "etc/passwd", typ: tar.TypeReg, mode: 0o644, content: "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{name: "home", typ: tar.TypeDir, mode: 0o755},
		{name: "home/nonroot", typ: tar.TypeDir, mode: 0o700, uid: nonroot, gid: nonroot},
		{name: "manager", typ: tar.TypeReg, mode: 0o755},
		{name: "root", typ: tar.TypeDir, mode: 0o700},
		{name: "tmp", typ: tar.TypeDir, mode: 0o1777},
	} {
		f, ok := files[want.name]
		g.Expect(ok).To(BeTrue(), "the image has no %s", want.name)
		g.Expect(f.hdr.Typeflag).To(Equal(want.typ), want.name)
		g.Expect(f.hdr.Mode).To(Equal(want.mode), "the mode of %s: %o", want.name, f.hdr.Mode)
		g.Expect([]int{f.hdr.Uid, f.hdr.Gid}).To(Equal([]int{want.uid, want.gid}), "the owner of %s", want.name)
		g.Expect(f.hdr.ModTime.Equal(created)).To(BeTrue(), "the time of %s: %s", want.name, f.hdr.ModTime)
		g.Expect(f.content).To(ContainSubstring(want.content), want.name)
	}

	checkBinary(t, manager, p, version)
	if p.OS != runtime.GOOS || p.Architecture != runtime.GOARCH {
		t.Logf("Not running the %s manager on this %s/%s host", p, runtime.GOOS, runtime.GOARCH)
	} else {
		g.Expect(os.Chmod(manager, 0o755)).To(Succeed())
		printed, err := exec.CommandContext(t.Context(), manager, "--version").CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "manager --version: %s", printed)
		g.Expect(string(printed)).To(Equal(version + "\n"))
	}
}

// hostPlatform is the release platform of the host's architecture, or the
// first release platform on another architecture.
func hostPlatform(t *testing.T) v1.Platform {
	t.Helper()
	platforms, err := parsePlatforms(releasePlatforms)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		if p.Architecture == runtime.GOARCH {
			return p
		}
	}
	return platforms[0]
}

// checkBinary checks that the manager at path is a static binary of platform
// p, built with the release flags and the embedded CA roots.
func checkBinary(t *testing.T, path string, p v1.Platform, version string) {
	t.Helper()
	g := NewWithT(t)
	bin, err := elf.Open(path)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = bin.Close() }()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	g.Expect(bin.Machine).To(Equal(machine[p.Architecture]), "the manager's machine")
	for _, prog := range bin.Progs {
		g.Expect(prog.Type).NotTo(Equal(elf.PT_INTERP), "the manager asks for a dynamic loader")
	}

	info, err := buildinfo.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	g.Expect(settings).To(HaveKeyWithValue("CGO_ENABLED", "0"))
	g.Expect(settings).To(HaveKeyWithValue("GOOS", p.OS))
	g.Expect(settings).To(HaveKeyWithValue("GOARCH", p.Architecture))
	g.Expect(settings).To(HaveKeyWithValue("-trimpath", "true")) // which leaves -ldflags out
	content, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.Contains(content, []byte(version))).To(BeTrue(), "the manager does not hold its version, %s", version)
	g.Expect(bin.Section(".symtab")).To(BeNil(), "the manager has a symbol table (built without -s)")
	g.Expect(bin.Section(".debug_info")).To(BeNil(), "the manager has DWARF data (built without -w)")
	var deps []string
	for _, d := range info.Deps {
		deps = append(deps, d.Path)
	}
	g.Expect(deps).To(ContainElement("golang.org/x/crypto/x509roots/fallback"), "the manager embeds no CA roots")
}

// extracted is one file of an image's filesystem.
type extracted struct {
	hdr     *tar.Header
	content string
}

// extract returns the files of img's filesystem by name (clean paths, as
// mutate.Extract writes them: "tmp", not "tmp/"), with the content of every
// file but binary, which it writes to the file dst (every file when binary
// is empty).
func extract(t *testing.T, img v1.Image, binary, dst string) map[string]extracted {
	t.Helper()
	g := NewWithT(t)
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	files := map[string]extracted{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(files).NotTo(HaveKey(hdr.Name), "two entries for %s", hdr.Name)
		f := extracted{hdr: hdr}
		if binary != "" && hdr.Name == binary {
			out, err := os.Create(dst)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = io.Copy(out, tr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.Close()).To(Succeed())
		} else {
			content, err := io.ReadAll(tr)
			g.Expect(err).NotTo(HaveOccurred())
			f.content = string(content)
		}
		files[hdr.Name] = f
	}
	return files
}

// TestIndex assembles the index of the release platforms from a stand-in
// file per platform: it lists them in order, each image says its platform
// and carries its own manager, and they share the base layer.
func TestIndex(t *testing.T) {
	g := NewWithT(t)
	platforms, err := parsePlatforms(releasePlatforms)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(platforms).To(HaveLen(2))
	binaries := make([]managerBinary, 0, len(platforms))
	for _, p := range platforms {
		bin := filepath.Join(t.TempDir(), "manager")
		g.Expect(os.WriteFile(bin, []byte("the manager for "+p.String()), 0o600)).To(Succeed())
		binaries = append(binaries, managerBinary{platform: p, path: bin})
	}
	idx, err := newIndex(binaries, "v1.0.0", time.Unix(0, 0).UTC())
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.MediaType).To(Equal(types.OCIImageIndex))
	g.Expect(manifest.Manifests).To(HaveLen(len(platforms)))
	var bases []v1.Hash
	for i, desc := range manifest.Manifests {
		p := platforms[i]
		g.Expect(desc.Platform).To(HaveValue(Equal(p)), "the platforms of the index, in order")
		img, err := idx.Image(desc.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		cf, err := img.ConfigFile()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect([]string{cf.OS, cf.Architecture}).To(Equal([]string{p.OS, p.Architecture}))
		layers, err := img.Layers()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(layers).To(HaveLen(2))
		base, err := layers[0].Digest()
		g.Expect(err).NotTo(HaveOccurred())
		bases = append(bases, base)
		files := extract(t, img, "", "")
		g.Expect(files).To(HaveKey("manager"))
		g.Expect(files["manager"].content).To(Equal("the manager for " + p.String()))
	}
	g.Expect(bases).To(HaveEach(bases[0]), "the platforms share the base layer")
}

// TestReleasePlatforms checks that the Makefile builds the release
// platforms, the command's default.
func TestReleasePlatforms(t *testing.T) {
	g := NewWithT(t)
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(makefile)).To(MatchRegexp(`(?m)^IMAGE_PLATFORMS \?= %s$`, regexp.QuoteMeta(releasePlatforms)))
}

// TestIndexIsReproducible assembles the index of the same binaries twice:
// the digests are the same, and change with SOURCE_DATE_EPOCH's time.
func TestIndexIsReproducible(t *testing.T) {
	g := NewWithT(t)
	bin := filepath.Join(t.TempDir(), "manager")
	g.Expect(os.WriteFile(bin, []byte("not a manager"), 0o600)).To(Succeed())
	platforms, err := parsePlatforms(releasePlatforms)
	g.Expect(err).NotTo(HaveOccurred())
	binaries := []managerBinary{{platform: platforms[0], path: bin}, {platform: platforms[1], path: bin}}
	digest := func(created time.Time) v1.Hash {
		idx, err := newIndex(binaries, "v1.0.0", created)
		g.Expect(err).NotTo(HaveOccurred())
		d, err := idx.Digest()
		g.Expect(err).NotTo(HaveOccurred())
		return d
	}
	epoch := time.Unix(0, 0).UTC()
	g.Expect(digest(epoch)).To(Equal(digest(epoch)))
	g.Expect(digest(epoch)).NotTo(Equal(digest(epoch.Add(time.Second))))
}

// TestLabelsAreTheDockerfiles checks that the image built by an engine from
// the Dockerfile has the same labels as the release image.
func TestLabelsAreTheDockerfiles(t *testing.T) {
	g := NewWithT(t)
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	g.Expect(err).NotTo(HaveOccurred())
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(org\.opencontainers\.image\.[a-z]+)="([^"]*)"`).FindAllStringSubmatch(string(dockerfile), -1) {
		got[m[1]] = m[2]
	}
	g.Expect(got).To(Equal(labels("${VERSION}")))
}

func TestParsePlatforms(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "linux/amd64,linux/arm64", want: []string{"linux/amd64", "linux/arm64"}},
		{in: "linux/arm64", want: []string{"linux/arm64"}},
		{in: "linux/amd64,linux/amd64", wantErr: true},
		{in: "linux/arm/v7", wantErr: true},
		{in: "windows/amd64", wantErr: true},
		{in: "linux", wantErr: true},
		{in: "", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parsePlatforms(tc.in)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, p := range got {
				names = append(names, p.String())
			}
			g.Expect(names).To(Equal(tc.want))
		})
	}
}
