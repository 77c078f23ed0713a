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
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "v1.13.0", want: "1.13.0"},
		{in: "1.12.4", want: "1.12.4"},
		{in: "v1.13.0-beta.1", want: "1.13.0-beta.1"},
		{in: "v1.13", wantErr: true},
		{in: "", wantErr: true},
		{in: "latest", wantErr: true},
		{in: "vv1.13.0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseVersion(tt.in)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ErrInvalidVersion))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.String()).To(Equal(tt.want))
		})
	}
}

func TestCanonicalVersionAndCompare(t *testing.T) {
	g := NewWithT(t)

	v, err := CanonicalVersion("1.13.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(Equal("v1.13.0"))

	c, err := CompareVersions("v1.12.4", "1.13.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(Equal(-1))

	c, err = CompareVersions("v1.13.0", "v1.13.0-rc.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(Equal(1))

	_, err = CompareVersions("x", "v1.13.0")
	g.Expect(err).To(MatchError(ErrInvalidVersion))
}

func TestIsStableRelease(t *testing.T) {
	tests := map[string]bool{
		"v1.13.0":         true,
		"1.13.0":          true,
		"v1.13.0-alpha.1": false,
		"v1.13.0-rc.0":    false,
		"v1.13.0+custom":  false,
		"garbage":         false,
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			NewWithT(t).Expect(IsStableRelease(in)).To(Equal(want))
		})
	}
}

func TestUsesLifecycleAPI(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{in: "v1.12.4", want: false},
		{in: "v1.13.0-alpha.0", want: true},
		{in: "v1.13.0", want: true},
		{in: "v1.14.2", want: true},
		{in: "v2.0.0", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := UsesLifecycleAPI(tt.in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestCheckUpgradeStep(t *testing.T) {
	tests := []struct {
		name           string
		from, to       string
		allowDowngrade bool
		wantErr        error
		wantMessage    string
	}{
		{name: "same version", from: "v1.12.4", to: "v1.12.4"},
		{name: "patch upgrade", from: "v1.12.1", to: "v1.12.4"},
		{name: "one minor", from: "v1.12.4", to: "v1.13.0"},
		{name: "two minors", from: "v1.11.5", to: "v1.13.0"},
		{name: "to a pre-release", from: "v1.12.4", to: "v1.13.0-beta.0"},
		{
			name: "three minors", from: "v1.10.3", to: "v1.13.0",
			wantErr: ErrUnsupportedUpgradePath, wantMessage: "upgrade to v1.12 first",
		},
		{
			name: "far behind", from: "v1.8.0", to: "v1.13.0",
			wantErr: ErrUnsupportedUpgradePath, wantMessage: "upgrade to v1.10 first",
		},
		{
			name: "downgrade not allowed", from: "v1.13.0", to: "v1.12.4",
			wantErr: ErrDowngradeNotAllowed, wantMessage: "set allowDowngrade",
		},
		{
			name: "patch downgrade not allowed", from: "v1.13.2", to: "v1.13.0",
			wantErr: ErrDowngradeNotAllowed,
		},
		{name: "downgrade one minor allowed", from: "v1.13.0", to: "v1.12.4", allowDowngrade: true},
		{
			name: "downgrade two minors", from: "v1.13.0", to: "v1.11.0", allowDowngrade: true,
			wantErr: ErrUnsupportedUpgradePath, wantMessage: "too new to downgrade",
		},
		{name: "unknown future target", from: "v1.13.0", to: "v1.20.0", wantErr: ErrUnsupportedUpgradePath},
		{name: "invalid from", from: "one", to: "v1.13.0", wantErr: ErrInvalidVersion},
		{name: "invalid to", from: "v1.12.0", to: "1.13", wantErr: ErrInvalidVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckUpgradeStep(tt.from, tt.to, tt.allowDowngrade)
			if tt.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
		})
	}
}

func TestSuggestIntermediate(t *testing.T) {
	tests := []struct {
		from, to, want string
	}{
		{from: "v1.12.4", to: "v1.13.0", want: ""},
		{from: "v1.10.3", to: "v1.13.0", want: "v1.12"},
		{from: "v1.9.0", to: "v1.13.0", want: "v1.11"},
		{from: "v1.13.0", to: "v1.12.0", want: ""},
		{from: "bad", to: "v1.13.0", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.from+"->"+tt.to, func(t *testing.T) {
			NewWithT(t).Expect(SuggestIntermediate(tt.from, tt.to)).To(Equal(tt.want))
		})
	}
}

func TestCheckKubernetesSupported(t *testing.T) {
	tests := []struct {
		talos, k8s string
		wantErr    error
	}{
		{talos: "v1.13.0", k8s: "v1.36.1"},
		{talos: "v1.13.0", k8s: "1.31.0"},
		{talos: "v1.12.4", k8s: "v1.36.0", wantErr: ErrKubernetesUnsupported},
		{talos: "v1.13.0", k8s: "v1.30.9", wantErr: ErrKubernetesUnsupported},
		{talos: "v1.13.0", k8s: "v1.37.0", wantErr: ErrKubernetesUnsupported},
		{talos: "v1.99.0", k8s: "v1.35.0", wantErr: ErrKubernetesUnsupported},
		{talos: "v1.13.0", k8s: "latest", wantErr: ErrInvalidVersion},
	}
	for _, tt := range tests {
		t.Run(tt.talos+"/"+tt.k8s, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckKubernetesSupported(tt.talos, tt.k8s)
			if tt.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.wantErr))
		})
	}
}

func TestVersionFromOSImage(t *testing.T) {
	tests := map[string]string{
		"Talos (v1.12.4)":         "v1.12.4",
		" Talos (v1.13.0-beta.1)": "v1.13.0-beta.1",
		"Talos (1.13.0)":          "1.13.0",
		"Ubuntu 24.04 LTS":        "",
		"Talos ()":                "",
		"":                        "",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			NewWithT(t).Expect(VersionFromOSImage(in)).To(Equal(want))
		})
	}
}

func TestCheckKnown(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CheckKnown("v1.13.0")).To(Succeed())
	g.Expect(CheckKnown("1.12.4")).To(Succeed())
	g.Expect(CheckKnown("v1.13")).To(MatchError(ErrInvalidVersion))
	err := CheckKnown("v9.0.0")
	g.Expect(err).To(MatchError(ErrUnknownVersion))
	g.Expect(err.Error()).To(Equal("the compatibility rules this Tollgate build knows do not cover Talos v9.0.0, so the upgrade cannot be vouched for: upgrade Tollgate, or pick an earlier Talos version"))
}

// TestSameVersion checks the one "same version" of Tollgate, for Talos and
// Kubernetes versions alike: what the API's, the channel's and the kubelet
// check's own comparisons did before they called it (the "v" prefix either
// way, build metadata aside, a pre-release not the release, an unset or
// unparsable version never the same as a version).
func TestSameVersion(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{name: "the same text", a: "v1.13.0", b: "v1.13.0", want: true},
		{name: "without its v", a: "1.13.0", b: "v1.13.0", want: true},
		{name: "without its v, the other way", a: "v1.36.0", b: "1.36.0", want: true},
		{name: "build metadata aside", a: "v1.13.0+build.1", b: "v1.13.0", want: true},
		{name: "a kubelet's build metadata aside", a: "v1.36.0+k3s1", b: "1.36.0", want: true},
		{name: "a pre-release is not the release", a: "v1.13.0-beta.1", b: "v1.13.0"},
		{name: "another patch", a: "v1.12.4", b: "v1.13.0"},
		{name: "another Kubernetes minor", a: "v1.35.2", b: "v1.36.0"},
		{name: "unset", a: "", b: "v1.13.0"},
		{name: "unset, the other way", a: "v1.36.0", b: ""},
		{name: "both unset", a: "", b: ""},
		{name: "a version without its patch", a: "v1.13", b: "v1.13.0"},
		{name: "not a version", a: "custom", b: "v1.13.0"},
		{name: "the same text that is not a version", a: "custom", b: "custom", want: true},
		{name: "a lone v", a: "v", b: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(SameVersion(tt.a, tt.b)).To(Equal(tt.want))
			g.Expect(SameVersion(tt.b, tt.a)).To(Equal(tt.want), "symmetric")
		})
	}
}
