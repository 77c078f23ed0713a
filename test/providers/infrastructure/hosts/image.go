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

package hosts

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

// ErrInvalidImage is returned by ParseImage for an image a machine cannot
// boot.
var ErrInvalidImage = errors.New("invalid image")

var schematicPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// OS is what a machine boots from its image.
type OS struct {
	// Version is the Talos version, canonical ("v1.12.4").
	Version string
	// Schematic is the Image Factory schematic ID, "" for an image that is
	// not an Image Factory one.
	Schematic string
}

// ParseImage returns the Talos version and schematic an image boots: the
// tag is the version (ghcr.io/siderolabs/installer:v1.12.4), and an Image
// Factory image (factory.talos.dev/<kind>/<schematic>:<version>) boots its
// schematic too. A digest after the tag is allowed and ignored.
func ParseImage(image string) (OS, error) {
	if image == "" {
		return OS{}, fmt.Errorf("%w: the image is empty; name a Talos installer such as %s:v1.12.4", ErrInvalidImage, talos.GHCRInstallerRepository)
	}

	tagged, _, _ := strings.Cut(image, "@")

	ref, err := name.NewTag(tagged, name.StrictValidation)
	if err != nil {
		return OS{}, fmt.Errorf("%w: %q is not an image reference with a tag (%w); name one such as %s:v1.12.4",
			ErrInvalidImage, image, err, talos.GHCRInstallerRepository)
	}

	version, err := talos.CanonicalVersion(ref.TagStr())
	if err != nil {
		return OS{}, fmt.Errorf("%w: the tag of %q is not a Talos version: %w", ErrInvalidImage, image, err)
	}

	parsed := OS{Version: version}

	if ref.RegistryStr() != talos.FactoryRegistry {
		return parsed, nil
	}

	path := strings.Split(ref.RepositoryStr(), "/")
	if len(path) != 2 || !schematicPattern.MatchString(path[1]) {
		return OS{}, fmt.Errorf("%w: the Image Factory image %q names no schematic; use %s/installer/<64 hexadecimal characters>:%s",
			ErrInvalidImage, image, talos.FactoryRegistry, version)
	}

	parsed.Schematic = path[1]

	return parsed, nil
}
