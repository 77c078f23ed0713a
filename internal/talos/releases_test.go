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
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

func TestReleaseLister(t *testing.T) {
	g := NewWithT(t)
	var lists atomic.Int32
	reg := registry.New()
	fail := atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			lists.Add(1)
			if fail.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/siderolabs/installer"
	push := func(tag string) {
		img, err := random.Image(64, 1)
		g.Expect(err).NotTo(HaveOccurred())
		ref, err := name.ParseReference(repo + ":" + tag)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.Write(ref, img)).To(Succeed())
	}
	for _, tag := range []string{"v1.12.4", "v1.13.0", "v1.13.1-rc.0", "latest"} {
		push(tag)
	}

	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &talos.ReleaseLister{TTL: 10 * time.Minute, MinInterval: time.Minute, Now: func() time.Time { return now }}
	ctx := context.Background()
	got, err := l.List(ctx, repo, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]string{"v1.12.4", "v1.13.0"}))

	// Cached: a new tag is not seen before the TTL.
	push("v1.13.1")
	now = now.Add(5 * time.Minute)
	got, _ = l.List(ctx, repo, nil)
	g.Expect(got).To(Equal([]string{"v1.12.4", "v1.13.0"}))
	g.Expect(lists.Load()).To(BeEquivalentTo(1))
	now = now.Add(6 * time.Minute)
	got, _ = l.List(ctx, repo, nil)
	g.Expect(got).To(Equal([]string{"v1.12.4", "v1.13.0", "v1.13.1"}))

	// A registry that fails is asked at most once a minute; a listing still
	// within its TTL is kept meanwhile.
	fail.Store(true)
	now = now.Add(11 * time.Minute)
	_, err = l.List(ctx, repo, nil)
	g.Expect(err).To(MatchError(talos.ErrCannotListReleases))
	before := lists.Load()
	now = now.Add(30 * time.Second)
	_, err = l.List(ctx, repo, nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(lists.Load()).To(Equal(before), "no request within MinInterval of a failure")
}

func TestReleaseRepository(t *testing.T) {
	g := NewWithT(t)
	repo, err := talos.ReleaseRepository(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo).To(Equal(talos.GHCRInstallerRepository), "the Image Factory's releases are Talos's")
	repo, err = talos.ReleaseRepository(upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "mirror.example.com/talos/installer"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo).To(Equal("mirror.example.com/talos/installer"))
}
