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

package talosupgradepolicy_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/controllers/talosupgradepolicy"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// followWorld is a namespace with a Cluster on a Talos version, an
// in-process registry of installer tags, a fake clock and a policy
// controller reconciled by hand, so that time only moves when the test says.
type followWorld struct {
	t     *testing.T
	ns    string
	repo  string
	clock *clocktesting.FakeClock
	r     *talosupgradepolicy.Reconciler
}

func newFollowWorld(t *testing.T, ns, clusterVersion string, start time.Time) *followWorld {
	t.Helper()
	g := NewWithT(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	_, err := builder.Create(context.Background(), mgmt.Client, nil, builder.ClusterFixture{Namespace: ns, Name: "a", Policy: "follow", ControlPlanes: 1, Workers: 1, TalosVersion: clusterVersion})
	g.Expect(err).NotTo(HaveOccurred())
	indexed, err := mgmt.IndexedClient(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	clk := clocktesting.NewFakeClock(start)
	return &followWorld{
		t: t, ns: ns, repo: strings.TrimPrefix(srv.URL, "http://") + "/siderolabs/installer", clock: clk,
		r: &talosupgradepolicy.Reconciler{Client: indexed, APIReader: mgmt.Client, Clock: clk, Releases: &talos.ReleaseLister{Now: clk.Now}},
	}
}

// push pushes installer tags to the registry.
func (w *followWorld) push(tags ...string) {
	w.t.Helper()
	for _, tag := range tags {
		img, err := random.Image(64, 1)
		NewWithT(w.t).Expect(err).NotTo(HaveOccurred())
		ref, err := name.ParseReference(w.repo + ":" + tag)
		NewWithT(w.t).Expect(err).NotTo(HaveOccurred())
		NewWithT(w.t).Expect(remote.Write(ref, img)).To(Succeed())
	}
}

// reconcile runs one reconcile of the policy at the fake time and returns
// the policy and its requeue.
func (w *followWorld) reconcile(g Gomega) (*upgradev1.TalosUpgradePolicy, time.Duration) {
	// The indexed client reads from a cache: let it see the last writes.
	time.Sleep(200 * time.Millisecond)
	res, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: w.ns, Name: "follow"}})
	g.Expect(err).NotTo(HaveOccurred())
	p := &upgradev1.TalosUpgradePolicy{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "follow"}, p)).To(Succeed())
	g.Expect(p.Status.Follow).NotTo(BeNil())
	return p, res.RequeueAfter
}

// rolloutTarget returns the target of the Cluster's TalosUpgrade, "" when
// there is none.
func (w *followWorld) rolloutTarget(g Gomega) string {
	u := &upgradev1.TalosUpgrade{}
	if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "a"}, u); err != nil {
		return ""
	}
	return u.Spec.TalosVersion
}

// complete marks the Cluster's rollout as ended, as the rollout controller
// would.
func (w *followWorld) complete(g Gomega) {
	u := &upgradev1.TalosUpgrade{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "a"}, u)).To(Succeed())
	u.Status.Phase, u.Status.ObservedGeneration = upgradev1.UpgradePhaseCompleted, u.Generation
	g.Expect(mgmt.Client.Status().Update(context.Background(), u)).To(Succeed())
}

func (w *followWorld) policy(follow upgradev1.FollowSpec, windows ...upgradev1.MaintenanceWindow) *upgradev1.TalosUpgradePolicy {
	p := &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "follow"},
		Spec: upgradev1.TalosUpgradePolicySpec{
			UpgradePlan: upgradev1.UpgradePlan{Installer: upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: w.repo}},
			Follow:      &follow,
		},
	}
	if len(windows) > 0 {
		p.Spec.Maintenance = &upgradev1.MaintenanceSpec{Windows: windows}
	}
	return p
}

func following(g Gomega, p *upgradev1.TalosUpgradePolicy) *metav1.Condition {
	c := conditions.Get(p, upgradev1.PolicyFollowingReleasesCondition)
	g.Expect(c).NotTo(BeNil())
	return c
}

// TestFollowPatchReleases follows the patch releases of the fleet's minor:
// a release becomes the target only once it is minReleaseAge old (counted
// from when it was first seen, which a restart does not reset), inside a
// maintenance window, after the rollouts of the current target ended; a
// pre-release and the next minor are never taken.
func TestFollowPatchReleases(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	day1 := time.Date(2026, time.December, 1, 10, 0, 0, 0, time.UTC) // Outside the window.
	w := newFollowWorld(t, "follow-patch", "v1.12.0", day1)
	w.push("v1.12.0", "v1.12.3")
	g.Expect(mgmt.Client.Create(context.Background(), w.policy(upgradev1.FollowSpec{
		Allow: upgradev1.FollowAllowPatch, CheckInterval: &metav1.Duration{Duration: time.Hour}, MinReleaseAge: &metav1.Duration{Duration: 24 * time.Hour},
	}, upgradev1.MaintenanceWindow{Start: "02:00", End: "05:00"}))).To(Succeed())

	// The first check: the fleet runs v1.12.0, v1.12.3 is too young.
	p, requeue := w.reconcile(g)
	f := p.Status.Follow
	g.Expect(f.Current).To(Equal("v1.12.0"))
	g.Expect(f.Latest).To(Equal("v1.12.3"))
	g.Expect(f.TooYoung).To(Equal([]string{"v1.12.3"}))
	g.Expect(f.Next).To(Equal("v1.12.3"))
	g.Expect(f.LastCheckTime.Time).To(BeTemporally("==", day1))
	g.Expect(following(g, p).Reason).To(Equal(upgradev1.WaitingForReleaseAgeReason))
	g.Expect(requeue).To(Equal(time.Hour), "the next check comes before the release comes of age")
	g.Eventually(w.rolloutTarget).Should(Equal("v1.12.0"))
	w.complete(g)

	// A pre-release and the next minor are seen, never taken.
	w.push("v1.12.4-beta.0", "v1.13.0")
	w.clock.SetTime(day1.Add(2 * time.Hour))
	p, _ = w.reconcile(g)
	g.Expect(p.Status.Follow.Latest).To(Equal("v1.13.0"))
	g.Expect(p.Status.Follow.TooYoung).To(Equal([]string{"v1.12.3"}))

	// A day later v1.12.3 is old enough, but the window is closed.
	w.clock.SetTime(day1.Add(25 * time.Hour))
	p, requeue = w.reconcile(g)
	g.Expect(p.Status.Follow.Current).To(Equal("v1.12.0"))
	g.Expect(p.Status.Follow.Next).To(Equal("v1.12.3"))
	g.Expect(p.Status.Follow.TooYoung).To(BeEmpty())
	g.Expect(following(g, p).Reason).To(Equal(upgradev1.WaitingForMaintenanceWindowReason))
	g.Expect(requeue).To(Equal(time.Hour))
	g.Expect(w.rolloutTarget(g)).To(Equal("v1.12.0"))

	// In the window it becomes the target: the rollout goes to it.
	day3 := time.Date(2026, time.December, 3, 2, 30, 0, 0, time.UTC)
	w.clock.SetTime(day3)
	p, _ = w.reconcile(g)
	g.Expect(p.Status.Follow.Current).To(Equal("v1.12.3"))
	g.Expect(p.Status.Follow.Next).To(BeEmpty())
	g.Expect(following(g, p).Reason).To(Equal(upgradev1.UpToDateReason))
	g.Eventually(w.rolloutTarget).Should(Equal("v1.12.3"))
	g.Expect(p.Status.Follow.Releases).NotTo(ContainElement(HaveField("Version", "v1.12.0")), "a release older than the target is forgotten")

	// v1.12.5 appears; the rollout of v1.12.3 runs. A new controller (a
	// restart) keeps the time v1.12.5 was first seen.
	w.push("v1.12.5")
	w.clock.SetTime(day3.Add(time.Hour))
	p, _ = w.reconcile(g)
	g.Expect(p.Status.Follow.TooYoung).To(Equal([]string{"v1.12.5"}))
	w.r = &talosupgradepolicy.Reconciler{Client: w.r.Client, APIReader: mgmt.Client, Clock: w.clock, Releases: &talos.ReleaseLister{Now: w.clock.Now}}
	w.clock.SetTime(day3.Add(26 * time.Hour)) // 04:30 the next day: in the window, v1.12.5 a day old.
	p, _ = w.reconcile(g)
	g.Expect(p.Status.Follow.Next).To(Equal("v1.12.5"))
	g.Expect(following(g, p).Reason).To(Equal(upgradev1.WaitingForRolloutsReason), "v1.12.3's rollout has not ended")
	g.Expect(w.rolloutTarget(g)).To(Equal("v1.12.3"))
	w.complete(g)
	p, _ = w.reconcile(g)
	g.Expect(p.Status.Follow.Current).To(Equal("v1.12.5"))
	g.Eventually(w.rolloutTarget).Should(Equal("v1.12.5"))
	g.Expect(following(g, p).Message).To(ContainSubstring("the target is v1.12.5"))
	g.Expect(p.Status.Follow.Latest).To(Equal("v1.13.0"), "allow: Patch never crosses a minor")
}

// TestFollowMinorReleases goes one minor at a time, never skipping one.
func TestFollowMinorReleases(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	now := time.Date(2026, time.December, 1, 10, 0, 0, 0, time.UTC)
	w := newFollowWorld(t, "follow-minor", "v1.11.2", now)
	w.push("v1.11.2", "v1.11.5", "v1.12.1", "v1.12.6", "v1.13.0")
	g.Expect(mgmt.Client.Create(context.Background(), w.policy(upgradev1.FollowSpec{Allow: upgradev1.FollowAllowMinor}))).To(Succeed())
	p, _ := w.reconcile(g)
	g.Expect(p.Status.Follow.Current).To(Equal("v1.12.6"), "the newest release of the next minor, not v1.13.0")
	g.Eventually(w.rolloutTarget).Should(Equal("v1.12.6"))
	w.complete(g)
	w.clock.SetTime(now.Add(2 * time.Hour))
	p, _ = w.reconcile(g)
	g.Expect(p.Status.Follow.Current).To(Equal("v1.13.0"))
	g.Eventually(w.rolloutTarget).Should(Equal("v1.13.0"))
}

// TestFollowRegistryDown: a registry that cannot be listed is a condition
// with the reason, the target stays, and the policy is looked at again at
// the next check, not in a hot loop.
func TestFollowRegistryDown(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	now := time.Date(2026, time.December, 1, 10, 0, 0, 0, time.UTC)
	w := newFollowWorld(t, "follow-down", "v1.12.0", now)
	w.repo = "127.0.0.1:1/siderolabs/installer"
	g.Expect(mgmt.Client.Create(context.Background(), w.policy(upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch, CheckInterval: &metav1.Duration{Duration: 10 * time.Minute}}))).To(Succeed())
	p, requeue := w.reconcile(g)
	c := following(g, p)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(upgradev1.ReleasesUnavailableReason))
	g.Expect(c.Message).To(ContainSubstring("listing the releases of 127.0.0.1:1/siderolabs/installer"))
	g.Expect(requeue).To(Equal(10 * time.Minute))
	g.Expect(w.rolloutTarget(g)).To(BeEmpty(), "no target is chosen without the releases")
}

// TestFollowingPoliciesAtOnce runs the policy controller as the manager
// does, with its default release lister and two workers, over two policies
// that follow releases: both list their repositories at once (under -race,
// a lister set lazily inside Reconcile is a data race).
func TestFollowingPoliciesAtOnce(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	now := time.Now()
	worlds := []*followWorld{newFollowWorld(t, "follow-at-once-a", "v1.12.0", now), newFollowWorld(t, "follow-at-once-b", "v1.12.0", now)}
	for _, w := range worlds {
		w.push("v1.12.0", "v1.12.3")
		g.Expect(mgmt.Client.Create(context.Background(), w.policy(upgradev1.FollowSpec{
			Allow: upgradev1.FollowAllowPatch, CheckInterval: &metav1.Duration{Duration: time.Hour},
		}))).To(Succeed())
	}
	startPolicyController(t, controller.Options{MaxConcurrentReconciles: 2})
	for _, w := range worlds {
		g.Eventually(func(g Gomega) {
			p := &upgradev1.TalosUpgradePolicy{}
			g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "follow"}, p)).To(Succeed())
			g.Expect(p.Status.Follow).NotTo(BeNil())
			g.Expect(p.Status.Follow.Latest).To(Equal("v1.12.3"))
		}, time.Minute, 100*time.Millisecond).Should(Succeed(), "policy %s/follow lists its releases", w.ns)
	}
}
