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
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseImage(t *testing.T) {
	schematic := strings.Repeat("ab", 32)

	tests := []struct {
		name    string
		image   string
		want    OS
		wantErr string
	}{
		{name: "stock installer", image: "ghcr.io/siderolabs/installer:v1.12.4", want: OS{Version: "v1.12.4"}},
		{name: "a version without v", image: "ghcr.io/siderolabs/installer:1.13.0", want: OS{Version: "v1.13.0"}},
		{name: "a pre-release", image: "ghcr.io/siderolabs/installer:v1.13.0-beta.1", want: OS{Version: "v1.13.0-beta.1"}},
		{name: "a digest after the tag", image: "ghcr.io/siderolabs/installer:v1.12.4@sha256:" + strings.Repeat("0", 64), want: OS{Version: "v1.12.4"}},
		{name: "a private mirror", image: "registry.example.com/talos/installer:v1.12.4", want: OS{Version: "v1.12.4"}},
		{name: "factory installer", image: "factory.talos.dev/installer/" + schematic + ":v1.12.4", want: OS{Version: "v1.12.4", Schematic: schematic}},
		{name: "factory platform installer", image: "factory.talos.dev/metal-installer/" + schematic + ":v1.13.0", want: OS{Version: "v1.13.0", Schematic: schematic}},
		{name: "factory disk image URL", image: "https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst", want: OS{Version: "v1.13.0", Schematic: schematic}},
		{name: "cloud image", image: CloudImageID("ghcr.io/siderolabs/installer:v1.12.4"), want: OS{Version: "v1.12.4"}},
		{name: "cloud image of a factory installer", image: CloudImageID("factory.talos.dev/installer/" + schematic + ":v1.13.0"), want: OS{Version: "v1.13.0", Schematic: schematic}},

		{name: "empty", image: "", wantErr: "the image is empty"},
		{name: "no tag", image: "ghcr.io/siderolabs/installer", wantErr: "is not an image reference with a tag"},
		{name: "only a digest", image: "ghcr.io/siderolabs/installer@sha256:" + strings.Repeat("0", 64), wantErr: "is not an image reference with a tag"},
		{name: "not a reference", image: "ghcr.io/Siderolabs/installer:v1.12.4", wantErr: "is not an image reference with a tag"},
		{name: "tag not a version", image: "ghcr.io/siderolabs/installer:latest", wantErr: "the tag of \"ghcr.io/siderolabs/installer:latest\" is not a Talos version"},
		{name: "tag a partial version", image: "ghcr.io/siderolabs/installer:v1.12", wantErr: "is not a Talos version"},
		{name: "factory without schematic", image: "factory.talos.dev/installer:v1.12.4", wantErr: "names no schematic"},
		{name: "factory with a short schematic", image: "factory.talos.dev/installer/abc:v1.12.4", wantErr: "names no schematic"},
		{name: "factory with a nested path", image: "factory.talos.dev/a/installer/" + schematic + ":v1.12.4", wantErr: "names no schematic"},
		{name: "URL not of the factory's shape", image: "https://factory.talos.dev/talos-v1.13.0.raw.zst", wantErr: "is not an Image Factory image URL"},
		{name: "URL without a version", image: "https://factory.talos.dev/image/" + schematic + "/latest/metal-amd64.raw.zst", wantErr: "is not a Talos version"},
		{name: "unknown cloud image", image: "tsi-0123456789", wantErr: "does not exist"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			got, err := ParseImage(tt.image)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ErrInvalidImage))
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(got).To(BeZero())

				return
			}

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
