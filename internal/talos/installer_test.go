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

package talos_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

func TestInstallerImage(t *testing.T) {
	tests := []struct {
		name      string
		spec      upgradev1.InstallerSpec
		version   string
		running   string
		want      string
		wantError bool
	}{
		{
			name:    "factory keeps the running schematic",
			spec:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"},
			version: "v1.13.0", running: otherSchem,
			want: "factory.talos.dev/metal-installer/" + otherSchem + ":v1.13.0",
		},
		{
			name:    "factory without running schematic uses the default",
			spec:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "aws"},
			version: "1.13.0",
			want:    "factory.talos.dev/aws-installer/" + talos.DefaultSchematicID + ":v1.13.0",
		},
		{
			name:    "factory schematic of the policy wins",
			spec:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal", SchematicID: talos.DefaultSchematicID},
			version: "v1.13.0", running: otherSchem,
			want: "factory.talos.dev/metal-installer/" + talos.DefaultSchematicID + ":v1.13.0",
		},
		{
			name:    "factory secureboot",
			spec:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal", SecureBoot: ptr.To(true)},
			version: "v1.13.0-beta.1",
			want:    "factory.talos.dev/metal-installer-secureboot/" + talos.DefaultSchematicID + ":v1.13.0-beta.1",
		},
		{
			name:    "factory secureboot false",
			spec:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal", SecureBoot: ptr.To(false)},
			version: "v1.13.0",
			want:    "factory.talos.dev/metal-installer/" + talos.DefaultSchematicID + ":v1.13.0",
		},
		{
			name:      "factory without platform",
			spec:      upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory},
			version:   "v1.13.0",
			wantError: true,
		},
		{
			name:    "factory with a malformed running schematic",
			spec:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"},
			version: "v1.13.0", running: "NOT-A-SCHEMATIC",
			wantError: true,
		},
		{
			name:    "ghcr",
			spec:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
			version: "v1.13.0", running: otherSchem,
			want: "ghcr.io/siderolabs/installer:v1.13.0",
		},
		{
			name:    "own repository",
			spec:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "registry.example.com:5000/talos/installer"},
			version: "1.12.4",
			want:    "registry.example.com:5000/talos/installer:v1.12.4",
		},
		{
			name:      "own repository with a tag",
			spec:      upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "registry.example.com/talos/installer:v1"},
			version:   "v1.13.0",
			wantError: true,
		},
		{
			name:      "own repository missing",
			spec:      upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage},
			version:   "v1.13.0",
			wantError: true,
		},
		{
			name:      "unknown source",
			spec:      upgradev1.InstallerSpec{Source: "quay"},
			version:   "v1.13.0",
			wantError: true,
		},
		{
			name:      "invalid version",
			spec:      upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
			version:   "latest",
			wantError: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			got, err := talos.InstallerImage(tt.spec, tt.version, tt.running)
			if tt.wantError {
				g.Expect(err).To(HaveOccurred())
				return
			}

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestNeedsRunningSchematic(t *testing.T) {
	g := NewWithT(t)

	g.Expect(talos.NeedsRunningSchematic(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"})).To(BeTrue())
	g.Expect(talos.NeedsRunningSchematic(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, SchematicID: otherSchem})).To(BeFalse())
	g.Expect(talos.NeedsRunningSchematic(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR})).To(BeFalse())
}

// startRegistry serves an in-process registry on loopback, behind basic
// auth when user is set, and pushes one installer image into it.
func startRegistry(t *testing.T, user, password string) (host, image string) {
	t.Helper()
	g := NewWithT(t)

	reg := registry.New()
	handler := reg

	if user != "" {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)

				return
			}

			reg.ServeHTTP(w, r)
		})
	}

	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)

	host = strings.TrimPrefix(srv.URL, "http://")
	image = host + "/siderolabs/installer:v1.13.0"

	img, err := random.Image(1024, 1)
	g.Expect(err).NotTo(HaveOccurred())

	ref, err := name.ParseReference(image)
	g.Expect(err).NotTo(HaveOccurred())

	auth := remote.WithAuth(authn.Anonymous)
	if user != "" {
		auth = remote.WithAuth(&authn.Basic{Username: user, Password: password})
	}

	g.Expect(remote.Write(ref, img, auth)).To(Succeed())

	return host, image
}

func dockerConfigSecret(host, user, password string, useAuthField bool) *corev1.Secret {
	entry := fmt.Sprintf(`{"username":%q,"password":%q}`, user, password)
	if useAuthField {
		entry = fmt.Sprintf(`{"auth":%q}`, base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
	}

	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pull"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:%s}}`, host, entry))},
	}
}

func TestCheckImage(t *testing.T) {
	ctx := context.Background()

	t.Run("anonymous registry", func(t *testing.T) {
		g := NewWithT(t)
		host, image := startRegistry(t, "", "")

		g.Expect(talos.CheckImage(ctx, image, nil)).To(Succeed())

		missing := host + "/siderolabs/installer:v9.9.9"
		err := talos.CheckImage(ctx, missing, nil)
		g.Expect(err).To(MatchError(talos.ErrImageNotFound))
		g.Expect(err.Error()).To(ContainSubstring("installer image " + missing + " not found"))
	})

	t.Run("resolved factory reference on a mirror", func(t *testing.T) {
		g := NewWithT(t)
		host, _ := startRegistry(t, "", "")

		ref, err := talos.InstallerImage(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: host + "/siderolabs/installer"}, "1.13.0", "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(talos.CheckImage(ctx, ref, nil)).To(Succeed())
	})

	t.Run("registry with auth", func(t *testing.T) {
		g := NewWithT(t)
		host, image := startRegistry(t, "robot", "s3cr3t")

		err := talos.CheckImage(ctx, image, nil)
		g.Expect(err).To(MatchError(talos.ErrImageUnauthorized))

		for _, useAuthField := range []bool{false, true} {
			kc, err := talos.KeychainFromSecret(dockerConfigSecret(host, "robot", "s3cr3t", useAuthField))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(talos.CheckImage(ctx, image, kc)).To(Succeed())
		}

		kc, err := talos.KeychainFromSecret(dockerConfigSecret(host, "robot", "wrong", false))
		g.Expect(err).NotTo(HaveOccurred())
		err = talos.CheckImage(ctx, image, kc)
		g.Expect(err).To(MatchError(talos.ErrImageUnauthorized))
		g.Expect(err.Error()).NotTo(ContainSubstring("wrong"))
	})

	t.Run("invalid reference", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(talos.CheckImage(ctx, "not a reference", nil)).To(MatchError(talos.ErrInvalidInstaller))
	})
}

func TestKeychainFromSecret(t *testing.T) {
	g := NewWithT(t)

	kc, err := talos.KeychainFromSecret(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kc).NotTo(BeNil())

	_, err = talos.KeychainFromSecret(&corev1.Secret{Data: map[string][]byte{"other": nil}})
	g.Expect(err).To(MatchError(talos.ErrPullSecretInvalid))

	_, err = talos.KeychainFromSecret(&corev1.Secret{Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": "s3cr3t`)}})
	g.Expect(err).To(MatchError(talos.ErrPullSecretInvalid))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))

	kc, err = talos.KeychainFromSecret(dockerConfigSecret("https://index.docker.io/v1/", "u", "p", false))
	g.Expect(err).NotTo(HaveOccurred())

	ref, err := name.ParseReference("docker.io/library/alpine:3")
	g.Expect(err).NotTo(HaveOccurred())

	auth, err := kc.Resolve(ref.Context())
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := auth.Authorization()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Username).To(Equal("u"))
}

func TestInstallerVersion(t *testing.T) {
	for _, tc := range []struct {
		ref, want, err string
	}{
		{ref: "ghcr.io/siderolabs/installer:v1.13.0", want: "v1.13.0"},
		{ref: "factory.talos.dev/installer/" + talos.DefaultSchematicID + ":v1.12.4", want: "v1.12.4"},
		{ref: "registry.example.com:5000/talos/installer:1.13.0-beta.1", want: "v1.13.0-beta.1"},
		{ref: "ghcr.io/siderolabs/installer:latest", err: "is not a Talos version"},
		{ref: "ghcr.io/siderolabs/installer", err: "with a tag"},
		{ref: "ghcr.io/siderolabs/installer:v1.13.0@sha256:" + strings.Repeat("a", 64), err: "digest"},
		{ref: "not an image", err: "is not an image reference"},
		{ref: "", err: "is not an image reference"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			g := NewWithT(t)
			got, err := talos.InstallerVersion(tc.ref)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				g.Expect(err).To(MatchError(talos.ErrInvalidInstaller))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
