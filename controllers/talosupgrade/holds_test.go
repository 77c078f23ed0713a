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

package talosupgrade

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/builder"
	"github.com/tollgate-dev/tollgate/test/envtest"
)

// TestHoldsAreReadLiveWhenPassing: the cache has not heard of a pre-reboot
// hold set an instant ago; the apiserver has. The Machine does not pass the
// point, and its record names the owner.
func TestHoldsAreReadLiveWhenPassing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := envtest.NewScheme()
	cached := builder.Machine("ns", "m-0", "c")
	live := cached.DeepCopy()
	apiserver := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live).Build()
	g.Expect(hooks.SetHold(ctx, apiserver, live, upgradev1.HoldPointPreReboot, "storage-operator", "rebalancing")).To(Succeed())
	workload := fake.NewClientBuilder().WithScheme(scheme).Build()

	r := &Reconciler{APIReader: apiserver}
	s := &scope{
		upgrade:  &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{ClusterName: "c"}},
		cluster:  &clusterv1.Cluster{},
		workload: workload,
		now:      time.Now(),
	}
	st := &upgradev1.MachineUpgradeStatus{Machine: "m-0", Node: "m-0"}
	// waitForHolds asks its round to read the holds again, and decides on
	// what was read in the next round.
	wait := func(point upgradev1.HoldPoint, hookPoint upgradev1.HookPoint, then func(context.Context) error) bool {
		ok, _, err := r.waitForHolds(ctx, s, st, cached, point, hookPoint, then)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeFalse(), "nothing passes before the holds are read again")
		g.Expect(s.waits(st.Machine)).To(BeTrue())
		_, err = r.makeRequests(ctx, s)
		g.Expect(err).NotTo(HaveOccurred())
		s.read, s.reading = s.reading, readings{}
		ok, _, err = r.waitForHolds(ctx, s, st, cached, point, hookPoint, then)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.waits(st.Machine)).To(BeFalse(), "decided on the read")
		return ok
	}
	g.Expect(wait(upgradev1.HoldPointPreReboot, upgradev1.HookPointPreReboot, nil)).To(BeFalse(), "a hold the apiserver has holds the Machine")
	g.Expect(st.HeldBy).To(ConsistOf("storage-operator"))
	g.Expect(st.Message).To(ContainSubstring(`held at preReboot by "storage-operator"`))

	// Released, it passes.
	g.Expect(hooks.ReleaseHold(ctx, apiserver, live, upgradev1.HoldPointPreReboot, "storage-operator")).To(Succeed())
	g.Expect(wait(upgradev1.HoldPointPreReboot, upgradev1.HookPointPreReboot, nil)).To(BeTrue())
	g.Expect(st.HeldBy).To(BeEmpty())

	// What passing a point undoes is done with the read, and only when no
	// hold is read.
	undone := 0
	undo := func(context.Context) error { undone++; return nil }
	g.Expect(hooks.SetHold(ctx, apiserver, live, upgradev1.HoldPointPostUpgrade, "storage-operator", "rebalancing")).To(Succeed())
	g.Expect(wait(upgradev1.HoldPointPostUpgrade, upgradev1.HookPointNodePreReady, undo)).To(BeFalse())
	g.Expect(undone).To(BeZero(), "nothing is undone while held")
	g.Expect(hooks.ReleaseHold(ctx, apiserver, live, upgradev1.HoldPointPostUpgrade, "storage-operator")).To(Succeed())
	g.Expect(wait(upgradev1.HoldPointPostUpgrade, upgradev1.HookPointNodePreReady, undo)).To(BeTrue())
	g.Expect(undone).To(Equal(1))
}
