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

package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

// cacheTimeout bounds the wait for the manager's cache to see a write.
const cacheTimeout = 10 * time.Second

func TestUnsafeCorpusIsRefusedByTheAPIServer(t *testing.T) {
	envtestOnly(t)
	for i, tc := range corpus.Unsafe() {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := apply(t, fmt.Sprintf("unsafe-%d", i), tc)
			g.Expect(err).To(HaveOccurred(), "the apiserver must refuse the request")
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			want := tc.Message
			if tc.Schema != "" {
				want = tc.Schema
			}
			g.Expect(err.Error()).To(SatisfyAll(ContainSubstring(tc.Field), ContainSubstring(want)))
		})
	}
}

func TestValidCorpusIsAdmittedByTheAPIServer(t *testing.T) {
	envtestOnly(t)
	examples, err := corpus.Documentation(envtest.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range append(corpus.Valid(), examples...) {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			warnings, err := apply(t, fmt.Sprintf("valid-%d", i), tc)
			g.Expect(err).NotTo(HaveOccurred())
			if tc.Warning != "" {
				g.Expect(warnings).To(ContainElement(ContainSubstring(tc.Warning)))
			}
		})
	}
}

// TestDefaultsAreStored checks that the mutating webhooks fill in what the
// CRD schema cannot default, and leave the Job template intact.
func TestDefaultsAreStored(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "defaults")

	p := corpus.Policy("p", func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TalosVersion = "1.13.0" })
	p.Namespace = ns
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	g.Expect(p.Spec.TalosVersion).To(Equal("v1.13.0"))
	g.Expect(*p.Spec.Rollout.ControlPlane.MaxUnavailable).To(BeEquivalentTo(1))
	g.Expect(p.Spec.Rollout.Workers.MaxUnavailable.IntValue()).To(Equal(1))
	g.Expect(p.Spec.RebootTimeout.Duration).To(Equal(15 * time.Minute))
	g.Expect(*p.Spec.Drain.RespectPodDisruptionBudgets).To(BeTrue())
	g.Expect(p.Spec.FailurePolicy.Action).To(Equal(upgradev1.FailureActionHalt))

	c := corpus.HealthCheck("ceph", func(c *upgradev1.ClusterHealthCheck) {
		c.Spec.Template.Spec.Template.Spec.RestartPolicy = ""
		c.Spec.Interval = nil
	})
	c.Namespace = ns
	g.Expect(mgmt.Client.Create(ctx, c)).To(Succeed())
	g.Expect(c.Spec.Template.Spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(c.Spec.Interval.Duration).To(Equal(30 * time.Second))
	g.Expect(c.Spec.Template.Spec.Template.Spec.Containers).To(HaveLen(1))
	g.Expect(c.Spec.Template.Spec.Template.Spec.Containers[0].Image).To(Equal("quay.io/ceph/ceph:v19"))
}

// TestClusterWebhookIgnoresOtherChanges checks that a Cluster without the
// policy label, or whose label does not change, is never refused.
func TestClusterWebhookIgnoresOtherChanges(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "cluster-ignore")

	c := corpus.Cluster("c", "")
	c.Namespace = ns
	g.Expect(mgmt.Client.Create(ctx, c)).To(Succeed())
	c.Spec.Paused = ptrTo(true)
	c.Labels = map[string]string{"env": "prod"}
	g.Expect(mgmt.Client.Update(ctx, c)).To(Succeed())
	g.Expect(mgmt.Client.Delete(ctx, c)).To(Succeed())
}

// apply creates tc.World in a namespace of its own, then sends tc.Object as
// tc.Username: an update when World holds the same object, else a create.
// It returns the admission warnings and the error of that request.
func apply(t *testing.T, name string, tc corpus.Case) ([]string, error) {
	t.Helper()
	ctx := context.Background()
	ns := namespace(t, name)

	target := tc.Object.DeepCopyObject().(client.Object)
	localize(target, ns)
	var existing client.Object
	for _, o := range tc.World {
		if d, ok := o.(corpus.Deleted); ok {
			obj := d.DeepCopyObject().(client.Object)
			localize(obj, ns)
			deleteAndWait(t, ctx, obj)
			if existing != nil && sameKey(existing, obj) {
				existing = nil
			}
			continue
		}
		obj := o.DeepCopyObject().(client.Object)
		localize(obj, ns)
		createAndWait(t, ctx, obj)
		if sameKey(obj, target) {
			existing = obj
		}
	}

	c, w := clientFor(t, tc.Username)
	obj := target
	if existing == nil {
		err := c.Create(ctx, obj)
		return w.texts, err
	}
	current := existing.DeepCopyObject().(client.Object)
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(current), current); err != nil {
		t.Fatalf("getting %s: %v", client.ObjectKeyFromObject(current), err)
	}
	copyMutable(t, obj, current)
	err := c.Update(ctx, current)
	return w.texts, err
}

// localize moves an object of a case to the case's namespace ns. A
// ReleaseChannel has no namespace: it is named after ns instead, and the
// policies its stages name in corpus.Namespace are those of ns; a policy
// of a channel names the channel so renamed.
func localize(obj client.Object, ns string) {
	switch o := obj.(type) {
	case *upgradev1.ReleaseChannel:
		o.Name += "-" + ns
		for i := range o.Spec.Stages {
			for j := range o.Spec.Stages[i].Policies {
				if ref := &o.Spec.Stages[i].Policies[j]; ref.Namespace == corpus.Namespace {
					ref.Namespace = ns
				}
			}
		}
	case *upgradev1.TalosUpgradePolicy:
		o.Namespace = ns
		if o.Spec.Channel != "" {
			o.Spec.Channel += "-" + ns
		}
	default:
		obj.SetNamespace(ns)
	}
}

// copyMutable copies what a case changes from src to dst.
func copyMutable(t *testing.T, src, dst client.Object) {
	t.Helper()
	switch src := src.(type) {
	case *upgradev1.TalosUpgradePolicy:
		dst.(*upgradev1.TalosUpgradePolicy).Spec = src.Spec
	case *upgradev1.TalosUpgrade:
		dst.SetAnnotations(src.Annotations)
		dst.(*upgradev1.TalosUpgrade).Spec = src.Spec
	case *upgradev1.ClusterHealthCheck:
		dst.(*upgradev1.ClusterHealthCheck).Spec = src.Spec
	case *upgradev1.ReleaseChannel:
		dst.(*upgradev1.ReleaseChannel).Spec = src.Spec
	case *clusterv1.Cluster:
		dst.SetLabels(src.Labels)
		dst.(*clusterv1.Cluster).Spec.Paused = src.Spec.Paused
	default:
		t.Fatalf("cannot update a %T", src)
	}
}

// createAndWait creates obj, writes the status of a Machine or a
// TalosUpgrade, and waits until the manager's cache sees the result.
func createAndWait(t *testing.T, ctx context.Context, obj client.Object) {
	t.Helper()
	controller, _ := clientFor(t, corpus.ControllerUsername)
	var err error
	switch o := obj.(type) {
	case *clusterv1.Machine:
		err = builder.CreateMachine(ctx, mgmt.Client, o)
	case *upgradev1.TalosUpgrade:
		// TalosUpgrades are the controller's to create.
		status := o.Status
		if err = controller.Create(ctx, o); err == nil && status.Phase != "" {
			o.Status = status
			err = mgmt.Client.Status().Update(ctx, o)
		}
	case *upgradev1.ReleaseChannel:
		// Its status is the controller's record of its promotions.
		status := o.Status
		if err = mgmt.Client.Create(ctx, o); err == nil && len(status.Versions) > 0 {
			o.Status = status
			err = mgmt.Client.Status().Update(ctx, o)
		}
	default:
		err = mgmt.Client.Create(ctx, obj)
	}
	if err != nil {
		t.Fatalf("creating the world object %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
	}
	seen := obj.DeepCopyObject().(client.Object)
	NewWithT(t).Eventually(func() (string, error) {
		err := cached.Get(ctx, client.ObjectKeyFromObject(obj), seen)
		return seen.GetResourceVersion(), err
	}, cacheTimeout).Should(Equal(obj.GetResourceVersion()), "the manager's cache must see %s", client.ObjectKeyFromObject(obj))
}

// deleteAndWait deletes obj and waits until the manager's cache no longer
// sees it.
func deleteAndWait(t *testing.T, ctx context.Context, obj client.Object) {
	t.Helper()
	if err := mgmt.Client.Delete(ctx, obj); err != nil {
		t.Fatalf("deleting the world object %s: %v", client.ObjectKeyFromObject(obj), err)
	}
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(cached.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
	}, cacheTimeout).Should(BeTrue(), "the manager's cache must see the deletion of %s", client.ObjectKeyFromObject(obj))
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.ToLower(name) + "-"}}
	if err := mgmt.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// sameKey reports whether a and b are objects of the same Go type with the
// same name.
func sameKey(a, b client.Object) bool {
	return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) && a.GetName() == b.GetName()
}

func ptrTo[T any](v T) *T { return &v }

// TestBypassRecordsWhoAskedForIt changes a policy's bypass as one user, then
// another change as a second user: requestedBy names the user of the last
// change of the bypass, a value set in a request is replaced, and a change
// that leaves the bypass as it is keeps its requester.
func TestBypassRecordsWhoAskedForIt(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "bypass-requester")
	alice, _ := clientFor(t, "alice@example.com")
	bob, _ := clientFor(t, "bob@example.com")

	p := corpus.Policy("p")
	p.Namespace = ns
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())

	p.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true, Reason: "INC-42: the ceph check image is broken", RequestedBy: "someone-else"}
	g.Expect(alice.Update(ctx, p)).To(Succeed())
	g.Expect(p.Spec.Bypass.RequestedBy).To(Equal("alice@example.com"), "the webhook records the user, whatever the request said")

	// A change elsewhere keeps the requester of the bypass.
	p.Spec.Paused = true
	p.Spec.Bypass.RequestedBy = "bob@example.com"
	g.Expect(bob.Update(ctx, p)).To(Succeed())
	g.Expect(p.Spec.Bypass.RequestedBy).To(Equal("alice@example.com"))

	// A change of the bypass names its author.
	p.Spec.Bypass.HoldOwners = []string{"backup-operator"}
	g.Expect(bob.Update(ctx, p)).To(Succeed())
	g.Expect(p.Spec.Bypass.RequestedBy).To(Equal("bob@example.com"))
}

// TestPreRemovalHookIsJudgedLikeEveryHook sends, through the apiserver,
// policies whose one hook has a Job that cannot fail (its Pods restart
// "Always", or a podFailurePolicy ignores every failed container), at every
// hook point: the preRemoval hook, which a Machine CAPI deletes waits for,
// is refused with the same field and message as a hook of an upgrade.
// Then a user bypasses the failed preRemoval hook of a Machine being
// removed on its Cluster's TalosUpgrade: the bypass is admitted and names
// who asked for it.
func TestPreRemovalHookIsJudgedLikeEveryHook(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "preremoval")
	alice, _ := clientFor(t, "alice@example.com")
	unsafe := map[string]func(*upgradev1.ActionHook){
		"restartPolicy Always": func(h *upgradev1.ActionHook) {
			h.Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		},
		"failed containers ignored": func(h *upgradev1.ActionHook) {
			h.Template.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:      batchv1.PodFailurePolicyActionIgnore,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}},
			}}}
		},
	}
	points := []upgradev1.HookPoint{upgradev1.HookPointPreDrain, upgradev1.HookPointPreReboot, upgradev1.HookPointNodePreReady, upgradev1.HookPointNodeReady, upgradev1.HookPointPreRemoval}
	for shape, mutate := range unsafe {
		refusals := map[upgradev1.HookPoint]string{}
		for i, point := range points {
			h := upgradev1.ActionHook{Name: "osd-out", Point: point, Template: corpus.JobTemplate("rook-ceph", "quay.io/ceph/ceph:v19", "ceph", "osd", "out")}
			mutate(&h)
			p := corpus.Policy(fmt.Sprintf("p-%d-%d", len(refusals), i), func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Hooks = []upgradev1.ActionHook{h} })
			p.Namespace = ns
			err := alice.Create(ctx, p)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s at %s: want an Invalid error, got %v", shape, point, err)
			refusals[point] = strings.ReplaceAll(err.Error(), p.Name, "P")
		}
		for _, point := range points {
			g.Expect(refusals[point]).To(Equal(refusals[upgradev1.HookPointPreRemoval]), "%s: a %s hook and a preRemoval hook are refused alike", shape, point)
		}
		g.Expect(refusals[upgradev1.HookPointPreRemoval]).To(ContainSubstring("spec.hooks[0].template"), shape)
	}

	// A bypass of a Machine's failed preRemoval hook is a bypass like any.
	withHook := func(u *upgradev1.TalosUpgrade) {
		u.Spec.Hooks = []upgradev1.ActionHook{{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Template: corpus.JobTemplate("rook-ceph", "quay.io/ceph/ceph:v19", "ceph", "osd", "out")}}
	}
	for _, o := range append(append([]client.Object{corpus.Policy("p")}, corpus.HACluster("c", "p", "v1.12.4")...), corpus.Upgrade("p-c", "c", "p", withHook, corpus.Ended(upgradev1.UpgradePhaseCompleted))) {
		o.SetNamespace(ns)
		createAndWait(t, ctx, o)
	}
	u := &upgradev1.TalosUpgrade{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p-c"}, u)).To(Succeed())
	u.Spec.Bypass = &upgradev1.BypassSpec{
		Machines: []upgradev1.MachineBypass{{Machine: "c-w-a", Hook: "osd-out", Action: upgradev1.HookBypassSkip}},
		Reason:   "INC-77: the OSDs of c-w-a were taken out by hand",
	}
	g.Expect(alice.Update(ctx, u)).To(Succeed())
	g.Expect(u.Spec.Bypass.RequestedBy).To(Equal("alice@example.com"))
	u.Spec.Bypass.Machines = append(u.Spec.Bypass.Machines, upgradev1.MachineBypass{Machine: "c-w-b", Hook: "osd-in", Action: upgradev1.HookBypassSkip})
	err := alice.Update(ctx, u)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.bypass.machines[1].hook"))
}
