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
	"encoding/base32"
	"errors"
	"fmt"
	"net/url"
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

// ParseImage returns the Talos version and schematic an image boots. An
// image is one of:
//
//   - an installer image whose tag is the version
//     (ghcr.io/siderolabs/installer:v1.12.4); an Image Factory one
//     (factory.talos.dev/<kind>/<schematic>:<version>) boots its schematic
//     too; a digest after the tag is allowed and ignored;
//   - an Image Factory disk image URL, as a bare-metal or virtualization
//     provider downloads it
//     (https://factory.talos.dev/image/<schematic>/<version>/metal-amd64.raw.zst);
//   - a cloud image ID (CloudImageID), opaque to everyone but the provider,
//     as an AMI ID or a template's VMID is.
func ParseImage(image string) (OS, error) {
	switch {
	case image == "":
		return OS{}, fmt.Errorf("%w: the image is empty; name a Talos installer such as %s:v1.12.4", ErrInvalidImage, talos.GHCRInstallerRepository)
	case strings.HasPrefix(image, cloudImagePrefix):
		return parseCloudImage(image)
	case strings.HasPrefix(image, "https://"), strings.HasPrefix(image, "http://"):
		return parseFactoryURL(image)
	}

	return parseInstaller(image)
}

// parseInstaller reads an installer image reference.
func parseInstaller(image string) (OS, error) {
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

// parseFactoryURL reads an Image Factory disk image URL:
// https://<factory>/image/<schematic>/<version>/<file>.
func parseFactoryURL(image string) (OS, error) {
	u, err := url.Parse(image)
	if err != nil {
		return OS{}, fmt.Errorf("%w: %q is not a URL: %w", ErrInvalidImage, image, err)
	}

	path := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(path) != 4 || path[0] != "image" || !schematicPattern.MatchString(path[1]) {
		return OS{}, fmt.Errorf("%w: %q is not an Image Factory image URL; use https://%s/image/<schematic>/<version>/metal-amd64.raw.zst",
			ErrInvalidImage, image, talos.FactoryRegistry)
	}

	version, err := talos.CanonicalVersion(path[2])
	if err != nil {
		return OS{}, fmt.Errorf("%w: the version of %q is not a Talos version: %w", ErrInvalidImage, image, err)
	}

	return OS{Version: version, Schematic: path[1]}, nil
}

// cloudImagePrefix starts every cloud image ID.
const cloudImagePrefix = "tsi-"

// cloudImageEncoding encodes what a cloud image was built from in its ID.
var cloudImageEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// CloudImageID returns the ID of the cloud image built from installer (an
// installer image ParseImage reads), as a cloud's catalog names an image
// (ami-0abc..., a template's VMID): "tsi-" and the installer in lowercase
// base32. Nothing but this provider reads it: to everyone else, Tollgate
// included, which Talos it boots is unknown unless the template says so.
func CloudImageID(installer string) string {
	return cloudImagePrefix + strings.ToLower(cloudImageEncoding.EncodeToString([]byte(installer)))
}

// parseCloudImage reads what a cloud image ID was built from.
func parseCloudImage(id string) (OS, error) {
	raw, err := cloudImageEncoding.DecodeString(strings.ToUpper(strings.TrimPrefix(id, cloudImagePrefix)))
	if err != nil {
		return OS{}, fmt.Errorf("%w: cloud image %q does not exist", ErrInvalidImage, id)
	}

	parsed, err := parseInstaller(string(raw))
	if err != nil {
		return OS{}, fmt.Errorf("%w: cloud image %q does not exist", ErrInvalidImage, id)
	}

	return parsed, nil
}
