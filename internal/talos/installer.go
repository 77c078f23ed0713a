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
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const (
	// DefaultSchematicID is the Image Factory schematic without
	// customization (no extension, no extra kernel argument).
	DefaultSchematicID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
	// FactoryRegistry is the registry of the Talos Image Factory.
	FactoryRegistry = "factory.talos.dev"
	// GHCRInstallerRepository is the stock Talos installer.
	GHCRInstallerRepository = "ghcr.io/siderolabs/installer"
)

// ErrInvalidInstaller is returned when an installer spec cannot produce an
// image reference.
var ErrInvalidInstaller = errors.New("invalid installer")

var schematicIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// NeedsRunningSchematic reports whether InstallerImage needs the schematic
// the node runs: a factory installer without a schematicID keeps each
// node's own schematic.
func NeedsRunningSchematic(spec upgradev1.InstallerSpec) bool {
	return spec.Source == upgradev1.InstallerSourceFactory && spec.SchematicID == ""
}

// InstallerImage returns the installer image reference that installs
// version according to spec:
//
//   - factory: factory.talos.dev/<platform>-installer[-secureboot]/<schematic>:<version>,
//     the schematic being spec.SchematicID, else runningSchematic (read from
//     the node with Client.Schematic), else DefaultSchematicID;
//   - ghcr: ghcr.io/siderolabs/installer:<version>;
//   - image: <spec.Repository>:<version>.
//
// version gets a "v" prefix when it lacks one.
func InstallerImage(spec upgradev1.InstallerSpec, version, runningSchematic string) (string, error) {
	tag, err := CanonicalVersion(version)
	if err != nil {
		return "", err
	}

	switch spec.Source {
	case upgradev1.InstallerSourceFactory:
		if spec.Platform == "" {
			return "", fmt.Errorf("%w: platform is required when source is %q", ErrInvalidInstaller, spec.Source)
		}

		schematic := spec.SchematicID
		if schematic == "" {
			schematic = runningSchematic
		}

		if schematic == "" {
			schematic = DefaultSchematicID
		}

		if !schematicIDPattern.MatchString(schematic) {
			return "", fmt.Errorf("%w: schematic %q is not 64 lowercase hexadecimal characters", ErrInvalidInstaller, schematic)
		}

		kind := "installer"
		if spec.SecureBoot != nil && *spec.SecureBoot {
			kind = "installer-secureboot"
		}

		return checkReference(fmt.Sprintf("%s/%s-%s/%s:%s", FactoryRegistry, spec.Platform, kind, schematic, tag))
	case upgradev1.InstallerSourceGHCR:
		return checkReference(GHCRInstallerRepository + ":" + tag)
	case upgradev1.InstallerSourceImage:
		if spec.Repository == "" {
			return "", fmt.Errorf("%w: repository is required when source is %q", ErrInvalidInstaller, spec.Source)
		}

		if _, err := name.NewRepository(spec.Repository, name.StrictValidation); err != nil {
			return "", fmt.Errorf("%w: repository %q must be a repository without tag or digest, such as registry.example.com/talos/installer: %w",
				ErrInvalidInstaller, spec.Repository, err)
		}

		return checkReference(spec.Repository + ":" + tag)
	default:
		return "", fmt.Errorf("%w: unknown source %q, use factory, ghcr or image", ErrInvalidInstaller, spec.Source)
	}
}

func checkReference(ref string) (string, error) {
	if _, err := name.NewTag(ref, name.StrictValidation); err != nil {
		return "", fmt.Errorf("%w: %q is not a valid image reference: %w", ErrInvalidInstaller, ref, err)
	}

	return ref, nil
}

// InstallerVersion returns the Talos version an installer image installs:
// its tag, canonical ("v1.13.0"), for example of
// factory.talos.dev/installer/<schematic>:v1.13.0 or
// ghcr.io/siderolabs/installer:v1.13.0. An image by digest, or whose tag is
// not a Talos version, is an error: what it installs cannot be known
// before it runs.
func InstallerVersion(ref string) (string, error) {
	if strings.Contains(ref, "@") {
		return "", fmt.Errorf("%w: %q names a digest: its Talos version cannot be known before it runs", ErrInvalidInstaller, ref)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not an image reference with a tag: %w", ErrInvalidInstaller, ref, err)
	}
	version, err := CanonicalVersion(tag.TagStr())
	if err != nil {
		return "", fmt.Errorf("%w: the tag of %q is not a Talos version: %w", ErrInvalidInstaller, ref, err)
	}
	return version, nil
}
