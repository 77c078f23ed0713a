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

package inventory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/inventory"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

const ns = "fleet"

// world is an Inventory fed by fake informers of Clusters and Machines.
type world struct {
	inv                *inventory.Inventory
	clusters, machines *controllertest.FakeInformer
}

// newWorld returns an Inventory watching fake informers, which have
// listed what there was (synced) or not yet.
func newWorld(t *testing.T, synced bool) *world {
	t.Helper()
	s := kruntime.NewScheme()
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var opts []controllertest.InformerOption
	if synced {
		opts = append(opts, controllertest.Synced)
	}
	w := &world{inv: inventory.New(), clusters: controllertest.NewFakeInformer(opts...), machines: controllertest.NewFakeInformer(opts...)}
	informers := &informertest.FakeInformers{Scheme: s, InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
		clusterv1.GroupVersion.WithKind("Cluster"): w.clusters,
		clusterv1.GroupVersion.WithKind("Machine"): w.machines,
	}}
	if err := w.inv.Watch(context.Background(), informers); err != nil {
		t.Fatal(err)
	}
	return w
}

func newCluster(name, policy string) *clusterv1.Cluster {
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}}}
	if policy != "" {
		c.Labels[upgradev1.PolicyLabel] = policy
	}
	c.Spec.Topology.Version = "v1.35.0"
	return c
}

func newMachine(cluster, name, talos string, controlPlane bool) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}}}
	m.Spec.ClusterName = cluster
	if controlPlane {
		m.Labels[clusterv1.MachineControlPlaneLabel] = ""
		m.Spec.Version = "v1.35.0"
	}
	if talos != "" {
		m.Status.NodeInfo = &corev1.NodeSystemInfo{OSImage: fmt.Sprintf("Talos (%s)", talos), KubeletVersion: "v1.35.0"}
	}
	return m
}

func (w *world) policy(t *testing.T, policy string) []plan.ClusterVersions {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	got, err := w.inv.ClustersOfPolicy(ctx, ns, policy)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func names(vs []plan.ClusterVersions) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// TestInventoryFollowsTheFleet checks that the inventory says what the
// informers say, whatever the order of their events: Machines before their
// Cluster, a Cluster moved to another policy, Machines upgraded, deleted,
// and a Cluster deleted before its Machines.
func TestInventoryFollowsTheFleet(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, true)

	// Machines first, as clusterctl move or a GitOps tool may create them.
	b0, b1 := newMachine("b", "b-0", "v1.12.4", true), newMachine("b", "b-1", "v1.12.4", false)
	w.machines.Add(b0)
	w.machines.Add(b1)
	g.Expect(w.policy(t, "p")).To(BeEmpty(), "a Cluster not seen yet selects no policy")
	w.clusters.Add(newCluster("b", "p"))
	w.clusters.Add(newCluster("a", "p"))
	w.clusters.Add(newCluster("c", ""))
	got := w.policy(t, "p")
	g.Expect(names(got)).To(Equal([]string{"a", "b"}), "sorted by name")
	g.Expect(got[1]).To(Equal(plan.VersionsOf(newCluster("b", "p"), []clusterv1.Machine{*b0, *b1})))
	g.Expect(got[0].OSImages).To(BeEmpty())

	// b-1 upgraded, a Machine of a joins.
	upgraded := newMachine("b", "b-1", "v1.13.0", false)
	w.machines.Update(b1, upgraded)
	a0 := newMachine("a", "a-0", "v1.12.4", true)
	w.machines.Add(a0)
	got = w.policy(t, "p")
	g.Expect(got[1].OSImages).To(Equal([]plan.OSImageMachines{
		{OSImage: "Talos (v1.12.4)", Machines: []string{"b-0"}},
		{OSImage: "Talos (v1.13.0)", Machines: []string{"b-1"}},
	}))
	g.Expect(got[0].OSImages).To(HaveLen(1))
	g.Expect(got[0].SingleControlPlane).To(BeTrue())

	// b moves to policy q; c opts in to p.
	w.clusters.Update(newCluster("b", "p"), newCluster("b", "q"))
	w.clusters.Update(newCluster("c", ""), newCluster("c", "p"))
	g.Expect(names(w.policy(t, "p"))).To(Equal([]string{"a", "c"}))
	g.Expect(names(w.policy(t, "q"))).To(Equal([]string{"b"}))
	g.Expect(w.policy(t, "q")[0].OSImages).To(HaveLen(2), "the Machines stay with their Cluster")

	// A Machine leaves; a Cluster goes before its Machines.
	w.machines.Delete(b0)
	g.Expect(w.policy(t, "q")[0].OSImages).To(Equal([]plan.OSImageMachines{{OSImage: "Talos (v1.13.0)", Machines: []string{"b-1"}}}))
	w.clusters.Delete(newCluster("b", "q"))
	g.Expect(w.policy(t, "q")).To(BeEmpty())
	w.clusters.Add(newCluster("b", "q"))
	g.Expect(w.policy(t, "q")[0].OSImages).To(HaveLen(1), "Machines still there when their Cluster comes back")

	// The Cluster under admission is read as given, with the Machines the
	// inventory has of it.
	proposed := newCluster("a", "r")
	proposed.Spec.Topology.Version = "v1.36.0"
	v, err := w.inv.Cluster(context.Background(), proposed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(Equal(plan.VersionsOf(proposed, []clusterv1.Machine{*a0})))
	v, err = w.inv.Cluster(context.Background(), newCluster("unknown", "p"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.OSImages).To(BeEmpty())
}

// TestInventoryWaitsForItsInformers checks that nothing is answered before
// the informers have listed: a fleet half read would let a plan through
// that its other half refuses.
func TestInventoryWaitsForItsInformers(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := w.inv.ClustersOfPolicy(ctx, ns, "p")
	g.Expect(err).To(MatchError(ContainSubstring("has not synced")))
	_, err = w.inv.Cluster(ctx, newCluster("a", "p"))
	g.Expect(err).To(HaveOccurred())

	w.clusters.Add(newCluster("a", "p"))
	w.clusters.Synced()
	w.machines.Synced()
	g.Expect(names(w.policy(t, "p"))).To(Equal([]string{"a"}))
	g.Expect(inventory.New().ClustersOfPolicy(context.Background(), ns, "p")).Error().To(MatchError(ContainSubstring("watches no informer")))
}

// TestInventoryAgreesWithLister applies random changes of a fleet both to
// the inventory's informers and to a client, and checks after each that the
// inventory says what listing the client by the field indexes says.
func TestInventoryAgreesWithLister(t *testing.T) {
	g := NewWithT(t)
	s := kruntime.NewScheme()
	g.Expect(clusterv1.AddToScheme(s)).To(Succeed())
	b := fake.NewClientBuilder().WithScheme(s)
	for _, i := range index.Indexes {
		if _, ok := i.Object.(*clusterv1.Machine); ok {
			b = b.WithIndex(i.Object, i.Field, i.Extract)
		}
		if _, ok := i.Object.(*clusterv1.Cluster); ok {
			b = b.WithIndex(i.Object, i.Field, i.Extract)
		}
	}
	c := b.Build()
	lister := inventory.Lister{Reader: c}
	w := newWorld(t, true)
	ctx := context.Background()

	rng := rand.New(rand.NewPCG(13, 2026)) //nolint:gosec // A reproducible sequence, not a secret.
	policies := []string{"", "p", "q"}
	versions := []string{"", "v1.11.5", "v1.12.4", "v1.13.0"}
	for step := range 400 {
		cluster := fmt.Sprintf("c%d", rng.IntN(6))
		// Create the object, or change or delete it when it exists, in the
		// client and through the informer alike.
		apply := func(obj, old client.Object, informer *controllertest.FakeInformer) {
			switch {
			case c.Get(ctx, client.ObjectKeyFromObject(obj), old) != nil:
				g.Expect(c.Create(ctx, obj)).To(Succeed())
				informer.Add(obj)
			case rng.IntN(4) == 0:
				g.Expect(c.Delete(ctx, old)).To(Succeed())
				informer.Delete(old)
			default:
				obj.SetResourceVersion(old.GetResourceVersion())
				g.Expect(c.Update(ctx, obj)).To(Succeed())
				informer.Update(old, obj)
			}
		}
		if rng.IntN(3) == 0 {
			apply(newCluster(cluster, policies[rng.IntN(len(policies))]), &clusterv1.Cluster{}, w.clusters)
		} else {
			machine := newMachine(cluster, fmt.Sprintf("%s-m%d", cluster, rng.IntN(4)), versions[rng.IntN(len(versions))], rng.IntN(2) == 0)
			apply(machine, &clusterv1.Machine{}, w.machines)
		}
		for _, p := range policies[1:] {
			want, err := lister.ClustersOfPolicy(ctx, ns, p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(w.policy(t, p)).To(Equal(want), "policy %q after step %d", p, step)
		}
	}
}
