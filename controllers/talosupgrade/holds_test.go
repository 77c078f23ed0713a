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
	ok, _, err := r.waitForHolds(ctx, s, st, cached, upgradev1.HoldPointPreReboot, upgradev1.HookPointPreReboot)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse(), "a hold the apiserver has holds the Machine")
	g.Expect(st.HeldBy).To(ConsistOf("storage-operator"))
	g.Expect(st.Message).To(ContainSubstring(`held at preReboot by "storage-operator"`))

	// Released, it passes.
	g.Expect(hooks.ReleaseHold(ctx, apiserver, live, upgradev1.HoldPointPreReboot, "storage-operator")).To(Succeed())
	ok, _, err = r.waitForHolds(ctx, s, st, cached, upgradev1.HoldPointPreReboot, upgradev1.HookPointPreReboot)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(st.HeldBy).To(BeEmpty())
}
