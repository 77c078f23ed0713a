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

package webhooks_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/builder"
	"github.com/tollgate-dev/tollgate/webhooks"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

// TestAutoPathExplained: with the installer repository reachable, the policy
// webhook warns with the path each Cluster takes, and refuses a target whose
// path goes through a minor the repository has no release of, naming it.
func TestAutoPathExplained(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/siderolabs/installer"
	push := func(tags ...string) {
		for _, tag := range tags {
			img, err := random.Image(64, 1)
			g.Expect(err).NotTo(HaveOccurred())
			ref, err := name.ParseReference(repo + ":" + tag)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(remote.Write(ref, img)).To(Succeed())
		}
	}
	world := []client.Object{corpus.Cluster("old", "auto")}
	for _, name := range []string{"old-cp-a", "old-w-a"} {
		m := builder.Machine(corpus.Namespace, name, "old", builder.WithTalosVersion("v1.10.3"), builder.WithKubernetesVersion("v1.33.3"))
		m.Status.NodeInfo.KubeletVersion = "v1.33.3"
		world = append(world, m)
	}
	c := indexed(fake.NewClientBuilder().WithScheme(scheme)).WithObjects(world...).Build()
	policy := corpus.Policy("auto", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.UpgradePath = upgradev1.UpgradePathAuto
		p.Spec.Installer = upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: repo}
	})

	// 1.12 is missing: refused, naming it.
	push("v1.11.2", "v1.11.5", "v1.13.0")
	w := &webhooks.TalosUpgradePolicy{Client: c, Releases: &talos.ReleaseLister{}}
	_, err := w.ValidateCreate(ctx, policy)
	g.Expect(err).To(MatchError(And(ContainSubstring("spec.talosVersion"), ContainSubstring("has no stable 1.12 release"))))

	// With 1.12 pushed, admitted with the path as a warning.
	push("v1.12.0", "v1.12.6", "v1.12.7-beta.0")
	w = &webhooks.TalosUpgradePolicy{Client: c, Releases: &talos.ReleaseLister{}}
	warnings, err := w.ValidateCreate(ctx, policy)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings).To(ContainElement(`Cluster "old" goes through v1.11.5 → v1.12.6 → v1.13.0`))
}
