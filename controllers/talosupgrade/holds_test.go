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
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestHoldsAreReadLiveWhenPassing: the cache has not heard of a pre-reboot
// hold set an instant ago; the apiserver has. The Machine does not pass the
// point, and its record names the owner. It runs the executor of the steps
// (observe, decide, execute) over a round: the decisions themselves are
// tested in steps_test.go.
func TestHoldsAreReadLiveWhenPassing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := envtest.NewScheme()
	cached := builder.Machine("ns", "m-0", "c")
	live := cached.DeepCopy()
	apiserver := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live).Build()
	g.Expect(hooks.SetHold(ctx, apiserver, live, upgradev1.HoldPointPreReboot, "storage-operator", "rebalancing")).To(Succeed())
	workload := fake.NewClientBuilder().WithScheme(scheme).Build()

	r := &Reconciler{Client: apiserver, APIReader: apiserver, Recorder: events.NewFakeRecorder(100), Now: time.Now}
	s := &scope{
		Rollout:  disruption.Rollout{Upgrade: &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{ClusterName: "c"}}, Cluster: &clusterv1.Cluster{}, Machines: map[string]*clusterv1.Machine{cached.Name: cached}, Now: time.Now()},
		workload: workload,
	}
	st := &upgradev1.MachineUpgradeStatus{Machine: "m-0", Node: "m-0", FromVersion: "v1.13.0", TargetVersion: "v1.13.1", UpgradeRequestedTime: ptrTime(s.Now)}
	// The step asks its round to read the holds again, and decides on what
	// was read in the next round; it reports whether the Machine passed.
	wait := func(point upgradev1.HoldPoint) bool {
		st.Phase, st.HoldPoint = upgradev1.MachinePhaseWaitingForHold, point
		_, err := r.step(ctx, s, st, cached)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold), "nothing passes before the holds are read again")
		g.Expect(s.waits(st.Machine)).To(BeTrue())
		_, err = r.makeRequests(ctx, s)
		g.Expect(err).NotTo(HaveOccurred())
		s.read, s.reading = s.reading, readings{}
		_, err = r.step(ctx, s, st, cached)
		g.Expect(err).NotTo(HaveOccurred())
		passed := st.Phase != upgradev1.MachinePhaseWaitingForHold || st.HoldPoint != point
		if !passed {
			g.Expect(s.waits(st.Machine)).To(BeFalse(), "decided on the read")
		}
		s.abandonRequests()
		return passed
	}
	g.Expect(wait(upgradev1.HoldPointPreReboot)).To(BeFalse(), "a hold the apiserver has holds the Machine")
	g.Expect(st.HeldBy).To(ConsistOf("storage-operator"))
	g.Expect(st.Message).To(ContainSubstring(`held at preReboot by "storage-operator"`))

	// Released, it passes.
	g.Expect(hooks.ReleaseHold(ctx, apiserver, live, upgradev1.HoldPointPreReboot, "storage-operator")).To(Succeed())
	g.Expect(wait(upgradev1.HoldPointPreReboot)).To(BeTrue())
	g.Expect(st.HeldBy).To(BeEmpty())
	g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseRebooting))

	// Passing the post-upgrade point releases the Machine with the read,
	// and only when no hold is read.
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(live), live)).To(Succeed())
	g.Expect(r.patchSkipRemediation(ctx, live, true)).To(Succeed())
	st.SkipRemediationSet = true
	g.Expect(hooks.SetHold(ctx, apiserver, live, upgradev1.HoldPointPostUpgrade, "storage-operator", "rebalancing")).To(Succeed())
	g.Expect(wait(upgradev1.HoldPointPostUpgrade)).To(BeFalse())
	g.Expect(st.SkipRemediationSet).To(BeTrue(), "nothing is undone while held")
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(live), live)).To(Succeed())
	g.Expect(live.Annotations).To(HaveKey(clusterv1.MachineSkipRemediationAnnotation))
	g.Expect(hooks.ReleaseHold(ctx, apiserver, live, upgradev1.HoldPointPostUpgrade, "storage-operator")).To(Succeed())
	g.Expect(wait(upgradev1.HoldPointPostUpgrade)).To(BeTrue())
	g.Expect(st.SkipRemediationSet).To(BeFalse())
	g.Expect(apiserver.Get(ctx, client.ObjectKeyFromObject(live), live)).To(Succeed())
	g.Expect(live.Annotations).NotTo(HaveKey(clusterv1.MachineSkipRemediationAnnotation))
	g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseCompleted))
}
