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
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// nonroot is the user and group the manager runs as, distroless's
	// "nonroot" (the manager's Deployment sets runAsNonRoot).
	nonroot = 65532
	// entrypoint is the manager's path in the image.
	entrypoint = "/manager"
)

// labels are the image's OCI labels, in the config of every platform's image
// and in the index's annotations (where registries such as GHCR read a
// multi-platform image's description). They are the Dockerfile's.
func labels(version string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "tollgate-controller",
		"org.opencontainers.image.description": "Rolls Talos Linux upgrades across Cluster API workload clusters",
		"org.opencontainers.image.source":      "https://github.com/tollgate-dev/tollgate",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     version,
	}
}

// managerBinary is the manager built for one platform.
type managerBinary struct {
	platform v1.Platform
	// path is the binary's file on the build host.
	path string
}

// newIndex assembles the OCI image index of the manager binaries, one image
// per platform, in their order. Every image has two layers: the base
// filesystem, the same blob for every platform and version, then the
// manager.
func newIndex(binaries []managerBinary, version string, created time.Time) (v1.ImageIndex, error) {
	base, err := newLayer(baseFiles(), created)
	if err != nil {
		return nil, fmt.Errorf("building the base layer: %w", err)
	}
	adds := make([]mutate.IndexAddendum, 0, len(binaries))
	for _, b := range binaries {
		img, err := newImage(base, b, version, created)
		if err != nil {
			return nil, fmt.Errorf("building the image for %s: %w", b.platform, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &b.platform}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	return mutate.Annotations(idx, labels(version)).(v1.ImageIndex), nil
}

// newImage assembles the image of one platform: the base layer, the
// manager's layer and a config that runs the manager as nonroot.
func newImage(base v1.Layer, b managerBinary, version string, created time.Time) (v1.Image, error) {
	manager, err := newLayer([]file{{name: entrypoint[1:], mode: 0o755, src: b.path}}, created)
	if err != nil {
		return nil, fmt.Errorf("building the manager layer: %w", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: b.platform.Architecture,
		OS:           b.platform.OS,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			User:       fmt.Sprintf("%d:%d", nonroot, nonroot),
			Entrypoint: []string{entrypoint},
			WorkingDir: "/",
			Labels:     labels(version),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	history := func(createdBy string) v1.History {
		return v1.History{Created: v1.Time{Time: created}, CreatedBy: createdBy, Comment: "hack/tools/image"}
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: history("base: /etc/passwd, /etc/group, /etc/nsswitch.conf, /home/nonroot, /root, /tmp")},
		mutate.Addendum{Layer: manager, History: history("COPY manager " + entrypoint + " (" + version + ")")},
	)
}

// file is one entry of a layer.
type file struct {
	// name is the path, relative to the root, without a trailing slash.
	name string
	// mode is the permission bits, with os.ModeDir for a directory and
	// os.ModeSticky for /tmp.
	mode os.FileMode
	// uid and gid own the file; root when zero.
	uid, gid int
	// data is a regular file's content, unless src is set.
	data []byte
	// src is the file on the build host that holds the content.
	src string
}

// baseFiles are the files of gcr.io/distroless/static:nonroot that a static
// Go binary uses: the users and groups (the manager runs as nonroot, and
// its home exists), the name service order of Go's resolver, and a /tmp.
// There is no shell and no CA bundle: the manager embeds Mozilla's roots
// (golang.org/x/crypto/x509roots/fallback), which Go uses when the host has
// none.
func baseFiles() []file {
	return []file{
		{name: "etc", mode: os.ModeDir | 0o755},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "home", mode: os.ModeDir | 0o755},
		{name: "home/nonroot", mode: os.ModeDir | 0o700, uid: nonroot, gid: nonroot},
		{name: "root", mode: os.ModeDir | 0o700},
		{name: "tmp", mode: os.ModeDir | os.ModeSticky | 0o777},
	}
}

// newLayer returns a gzip-compressed OCI layer of files, sorted by name, each
// dated created. The tar stream is written again on every read of the
// uncompressed layer, so that a manager binary is never held in memory; the
// compressed layer is, once compressed (about 20 MB), so that writing the
// layout and pushing compress it only once.
func newLayer(files []file, created time.Time) (v1.Layer, error) {
	files = append([]file(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	opener := func() (io.ReadCloser, error) {
		r, w := io.Pipe()
		go func() { w.CloseWithError(writeTar(w, files, created)) }()
		return r, nil
	}
	return tarball.LayerFromOpener(opener, tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

// writeTar writes files as a tar stream to w.
func writeTar(w io.Writer, files []file, created time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := writeEntry(tw, f, created); err != nil {
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	return tw.Close()
}

// writeEntry writes one file to tw.
func writeEntry(tw *tar.Writer, f file, created time.Time) error {
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     f.name,
		Mode:     int64(f.mode.Perm()),
		Uid:      f.uid,
		Gid:      f.gid,
		Size:     int64(len(f.data)),
		ModTime:  created,
	}
	if f.mode&os.ModeSticky != 0 {
		hdr.Mode |= 0o1000 // c_ISVTX
	}
	content := io.Reader(bytes.NewReader(f.data))
	switch {
	case f.mode.IsDir():
		hdr.Typeflag, hdr.Name, hdr.Size = tar.TypeDir, f.name+"/", 0
	case f.src != "":
		src, err := os.Open(f.src)
		if err != nil {
			return err
		}
		defer func() { _ = src.Close() }()
		info, err := src.Stat()
		if err != nil {
			return err
		}
		hdr.Size, content = info.Size(), src
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := io.Copy(tw, content)
	return err
}
