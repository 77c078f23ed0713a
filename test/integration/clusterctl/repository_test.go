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

package clusterctl_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

const (
	// release is the version of Tollgate the tests release and install;
	// nextRelease is a later release in the same series, with the same
	// files, for `clusterctl upgrade plan` to find.
	release     = "v0.1.0"
	nextRelease = "v0.1.1"
	// image is the manager image `make release-manifests` is given.
	image = "ghcr.io/tollgate-dev/tollgate-controller:" + release
	// providerLabel is the directory of Tollgate's releases in a local
	// repository: clusterctl's manifest label of the add-on "tollgate".
	providerLabel = "addon-tollgate"
	// componentsFile is the components file of a Tollgate release
	// (clusterctl-settings.json).
	componentsFile = "addon-components.yaml"
	// extensionConfigName is the ExtensionConfig that registers Tollgate's
	// Runtime Extension with CAPI core (config/extension).
	extensionConfigName = "tollgate-extension"
)

// repository is a local clusterctl provider repository, laid out as
// clusterctl reads one: {root}/{provider-label}/{version}/{files}.
type repository struct {
	// root is the repository's base path.
	root string
	// config is a clusterctl.yaml that declares the repository's providers,
	// as a user's ~/.config/cluster-api/clusterctl.yaml does.
	config string
	// capiVersion is the version of the CAPI core provider it serves.
	capiVersion string
}

// writeRepository builds a local repository in dir: Tollgate's releases
// from `make release-manifests`, and a stand-in for the CAPI core provider
// of go.mod's version (its metadata.yaml and core CRDs from the module).
func writeRepository(dir string) (*repository, error) {
	r := &repository{root: filepath.Join(dir, "repository")}
	out := filepath.Join(dir, "release")
	make := exec.Command("make", "--no-print-directory", "release-manifests", "RELEASE_DIR="+out, "IMG="+image)
	make.Dir = envtest.RepoRoot()
	if b, err := make.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("make release-manifests: %w: %s", err, b)
	}
	for _, v := range []string{release, nextRelease} {
		if err := copyDir(out, filepath.Join(r.root, providerLabel, v)); err != nil {
			return nil, err
		}
	}

	capiDir, capiVersion, err := capiModule()
	if err != nil {
		return nil, err
	}
	r.capiVersion = capiVersion
	core := filepath.Join(r.root, "cluster-api", capiVersion)
	if err := os.MkdirAll(core, 0o755); err != nil {
		return nil, err
	}
	if err := copyFile(filepath.Join(capiDir, "metadata.yaml"), filepath.Join(core, "metadata.yaml")); err != nil {
		return nil, err
	}
	components := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: capi-system\n")
	crds, err := filepath.Glob(filepath.Join(capiDir, "core", "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("finding CAPI's core CRDs in %s: %w", capiDir, err)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CAPI core CRDs in %s", capiDir)
	}
	for _, crd := range crds {
		b, err := os.ReadFile(crd) //nolint:gosec // G304: a file of the CAPI module.
		if err != nil {
			return nil, err
		}
		components = append(append(components, "---\n"...), bytes.TrimPrefix(b, []byte("---\n"))...)
	}
	if err := os.WriteFile(filepath.Join(core, "core-components.yaml"), components, 0o600); err != nil {
		return nil, err
	}

	// The providers, as a user declares them; overridesFolder keeps the
	// host's ~/.config/cluster-api/overrides out.
	r.config = filepath.Join(dir, "clusterctl.yaml")
	config := fmt.Sprintf(`providers:
- name: cluster-api
  type: CoreProvider
  url: file://%s/cluster-api/%s/core-components.yaml
- name: tollgate
  type: AddonProvider
  url: file://%s/%s/%s/%s
overridesFolder: %s
`, r.root, capiVersion, r.root, providerLabel, release, componentsFile, filepath.Join(dir, "overrides"))
	if err := os.WriteFile(r.config, []byte(config), 0o600); err != nil {
		return nil, err
	}
	return r, nil
}

// capiModule returns the directory and version of the CAPI module of go.mod.
func capiModule() (dir, version string, err error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "sigs.k8s.io/cluster-api")
	cmd.Dir = envtest.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("finding the CAPI module with go list: %w", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 {
		return "", "", fmt.Errorf("go list -m sigs.k8s.io/cluster-api said %q", out)
	}
	return fields[0], fields[1], nil
}

// copyDir copies the files of from, not its subdirectories, into to.
func copyDir(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from) //nolint:gosec // G304: files the test wrote or the module holds.
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}
