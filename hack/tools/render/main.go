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

// Command render builds a kustomization with the kustomize Go API, the same
// code as `kustomize build`, so that `make release-manifests` needs no
// kustomize binary. With --image it sets the manager image the way
// `kustomize edit set image` would, in a throwaway overlay.
//
//	go run ./hack/tools/render --image ghcr.io/tollgate-dev/tollgate-controller:v0.1.0 \
//	    --out out/addon-components.yaml config/default
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// managerImage is the image name config/manager deploys; --image replaces it.
const managerImage = "ghcr.io/tollgate-dev/tollgate-controller"

func main() {
	image := flag.String("image", "", "Manager image (name:tag or name@digest) to set; the image of config/manager when empty.")
	out := flag.String("out", "", "File to write; standard output when empty.")
	flag.Usage = func() {
		_, _ = fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [--image IMAGE] [--out FILE] KUSTOMIZATION_DIR\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	yaml, err := render(flag.Arg(0), *image)
	if err != nil {
		fmt.Fprintf(os.Stderr, "render: %v\n", err)
		os.Exit(1)
	}
	if *out == "" {
		_, err = os.Stdout.Write(yaml)
	} else {
		if err = os.MkdirAll(filepath.Dir(*out), 0o755); err == nil {
			err = os.WriteFile(*out, yaml, 0o644) //nolint:gosec // G306: release manifests are public.
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "render: writing the manifests: %v\n", err)
		os.Exit(1)
	}
}

// render builds the kustomization in dir, with the manager image set to
// image when it is not empty.
func render(dir, image string) ([]byte, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if image != "" {
		overlay, err := os.MkdirTemp("", "tollgate-render-")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(overlay) }()
		if err := writeImageOverlay(overlay, dir, image); err != nil {
			return nil, err
		}
		dir = overlay
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("building %q: %w", dir, err)
	}
	return m.AsYaml()
}

// writeImageOverlay writes into overlay a kustomization of base that sets
// the manager image.
func writeImageOverlay(overlay, base, image string) error {
	name, tag, digest, err := splitImage(image)
	if err != nil {
		return err
	}
	// kustomize resolves resources relative to the kustomization.
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "resources:\n- %s\nimages:\n- name: %s\n  newName: %s\n", rel, managerImage, name)
	if tag != "" {
		fmt.Fprintf(&b, "  newTag: %q\n", tag)
	}
	if digest != "" {
		fmt.Fprintf(&b, "  digest: %s\n", digest)
	}
	return os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(b.String()), 0o600)
}

// splitImage splits name[:tag][@digest]; a colon before the last slash is a
// registry port, not a tag.
func splitImage(image string) (name, tag, digest string, err error) {
	name, digest, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	if name == "" || (tag == "" && digest == "") {
		return "", "", "", fmt.Errorf("--image must be name:tag or name@digest, got %q", image)
	}
	return name, tag, digest, nil
}
