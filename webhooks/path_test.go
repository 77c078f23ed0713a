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
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/webhooks"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

// pushTags pushes an image to repo under each of tags.
func pushTags(g Gomega, repo string, tags ...string) {
	for _, tag := range tags {
		img, err := random.Image(64, 1)
		g.Expect(err).NotTo(HaveOccurred())
		ref, err := name.ParseReference(repo + ":" + tag)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.Write(ref, img)).To(Succeed())
	}
}

// clusterOn is Cluster "old", selecting policy, with a control-plane and a
// worker Machine on Talos talosVersion and Kubernetes kubernetesVersion.
func clusterOn(policy, talosVersion, kubernetesVersion string) []client.Object {
	world := []client.Object{corpus.Cluster("old", policy)}
	for _, name := range []string{"old-cp-a", "old-w-a"} {
		m := builder.Machine(corpus.Namespace, name, "old", builder.WithTalosVersion(talosVersion), builder.WithKubernetesVersion(kubernetesVersion))
		m.Status.NodeInfo.KubeletVersion = kubernetesVersion
		world = append(world, m)
	}
	return world
}

// TestAutoPathExplained: with the installer repository reachable, the policy
// webhook warns with the path each Cluster takes, and refuses a target whose
// path goes through a minor the repository has no release of, naming it.
func TestAutoPathExplained(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/siderolabs/installer"
	push := func(tags ...string) { pushTags(g, repo, tags...) }
	c := indexed(fake.NewClientBuilder().WithScheme(scheme)).WithObjects(clusterOn("auto", "v1.10.3", "v1.33.3")...).Build()
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

// TestKubernetesMinorsExplained: with upgradePath Auto, a Kubernetes target
// two minors ahead is planned through the newest patch of the minor in
// between that the kubelet repository lists, shown in the warning; a minor
// the repository lacks is refused, naming the field, the Cluster and the
// minor; a kubelet repository that cannot be listed admits the policy with
// a warning, for the preflight to plan.
func TestKubernetesMinorsExplained(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	installer, kubelet := host+"/siderolabs/installer", host+"/siderolabs/kubelet"
	push := func(repo string, tags ...string) { pushTags(g, repo, tags...) }
	c := indexed(fake.NewClientBuilder().WithScheme(scheme)).WithObjects(clusterOn("minors", "v1.11.5", "v1.34.1")...).Build()
	policy := corpus.Policy("minors", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.UpgradePath = upgradev1.UpgradePathAuto
		p.Spec.KubernetesVersion = "v1.36.0"
		p.Spec.Installer = upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: installer}
	})
	push(installer, "v1.11.5", "v1.12.6", "v1.13.0")

	// The kubelet repository cannot be listed: admitted, with a warning.
	w := &webhooks.TalosUpgradePolicy{Client: c, Releases: &talos.ReleaseLister{}, KubeletRepository: host + "/missing/kubelet"}
	warnings, err := w.ValidateCreate(ctx, policy)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings).To(ContainElement(And(ContainSubstring("spec.kubernetesVersion: the Kubernetes releases of "+host+"/missing/kubelet cannot be listed now"),
		ContainSubstring("the controller plans the Kubernetes minors in between at the preflight"))))
	g.Expect(warnings).To(ContainElement(`Cluster "old" goes through Kubernetes minors: its preflight plans them`))

	// 1.35 is missing: refused, naming it.
	push(kubelet, "v1.34.1", "v1.36.0", "v1.35.3-rc.0")
	w = &webhooks.TalosUpgradePolicy{Client: c, Releases: &talos.ReleaseLister{}, KubeletRepository: kubelet}
	_, err = w.ValidateCreate(ctx, policy)
	g.Expect(err).To(MatchError(And(ContainSubstring("spec.kubernetesVersion"), ContainSubstring(`Cluster "old"`),
		ContainSubstring("it goes through Kubernetes 1.35, and "+kubelet+" has no stable 1.35 release"))))

	// With 1.35 pushed, admitted with the hops as a warning: the newest
	// stable 1.35 patch in between.
	push(kubelet, "v1.35.0", "v1.35.2", "v1.35.2-fat")
	w = &webhooks.TalosUpgradePolicy{Client: c, Releases: &talos.ReleaseLister{}, KubeletRepository: kubelet}
	warnings, err = w.ValidateCreate(ctx, policy)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings).To(ContainElement(`Cluster "old" goes through Talos v1.12.6, kubelets v1.34.1 → Kubernetes v1.35.2 control plane → ` +
		`Talos v1.13.0, kubelets v1.35.2 → Kubernetes v1.36.0 control plane → Talos v1.13.0, kubelets v1.36.0`))

	// Direct keeps one minor per policy target.
	direct := policy.DeepCopy()
	direct.Spec.UpgradePath = upgradev1.UpgradePathDirect
	_, err = w.ValidateCreate(ctx, direct)
	g.Expect(err).To(MatchError(ContainSubstring(`spec.kubernetesVersion: Invalid value: "v1.36.0": Cluster "old" runs Kubernetes v1.34.1: ` +
		`unsupported Kubernetes step from Kubernetes v1.34.1 to v1.36.0: Kubernetes moves one minor at a time; upgrade to 1.35 first; ` +
		`or set upgradePath: Auto for Tollgate to plan through the minors in between`)))
}
