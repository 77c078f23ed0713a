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

package capi_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestControlPlaneDesiredVersionWithCAPICore: the control plane declares its
// Talos version on the TalosControlPlane itself (the released provider has
// no metadata for its Machines, see TestTalosControlPlaneHasNoMachineTemplateMetadata),
// while the Cluster's policy keeps v1.12.4. The rollout has nothing to do
// until the annotation is written; then the TalosControlPlane's edit alone
// brings it back (Tollgate watches the control plane's kind), and its three
// Machines go to v1.13.0 one at a time, etcd healthy between them, while
// the worker stays on the policy's v1.12.4. CAPI replaces no Machine. The
// installer of v1.13.0 is pushed only once the control plane waits for it:
// the DesiredVersions condition names the object and the missing image,
// the preflight passes for the rest, and the image is looked for again.
func TestControlPlaneDesiredVersionWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Managements: managements, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(sb.Stop()).To(Succeed()) })
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "fleet", Name: "alpha", ControlPlanes: 3, Workers: 1, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sb.StartManager(ctx, manager.Options{})).To(Succeed())
	g.Expect(sb.Management.Client.Create(ctx, sb.Policy("fleet", "keep", "v1.12.4"))).To(Succeed())
	g.Expect(c.OptIn(ctx, "keep")).To(Succeed())
	cps, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cps).To(HaveLen(3))
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(workers).To(HaveLen(1))
	upgrade := func(g Gomega) *upgradev1.TalosUpgrade {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		return u
	}
	g.Eventually(func(g Gomega) {
		g.Expect(upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())

	tcp := &controlplanev1.TalosControlPlane{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha-control-plane"}, tcp)).To(Succeed())
	patch := client.MergeFrom(tcp.DeepCopy())
	tcp.Annotations = map[string]string{upgradev1.DesiredTalosVersionAnnotation: "v1.13.0"}
	g.Expect(sb.Management.Client.Patch(ctx, tcp, patch)).To(Succeed())

	// The registry has no installer of v1.13.0 yet: the control plane
	// waits, named with its field, and nothing else stops.
	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		c := conditions.Get(u, upgradev1.DesiredVersionsCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(And(
			ContainSubstring("TalosControlPlane alpha-control-plane declares Talos v1.13.0 (metadata.annotations["+upgradev1.DesiredTalosVersionAnnotation+"])"),
			ContainSubstring("installer:v1.13.0 was not found")))
		g.Expect(conditions.IsTrue(u, upgradev1.PreflightSucceededCondition)).To(BeTrue(), "the preflight passes for the rest of the Cluster")
		g.Expect(u.Status.UnavailableVersions).To(HaveLen(1))
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	for _, name := range cps {
		g.Expect(c.Simulator.Node(name).Version()).To(Equal("v1.12.4"), "control-plane node %s waits", name)
	}
	g.Expect(sb.PushInstaller(ctx, "v1.13.0")).To(Succeed())
	t.Log("Pushed the installer of v1.13.0: the rollout looks for it again within 30s")

	// One control-plane Machine at a time, and the worker never.
	inFlight := 0
	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		now := 0
		for _, st := range u.Status.Machines {
			if st.Role == upgradev1.MachineRoleControlPlane && st.Phase.InFlight() {
				now++
			}
			if st.Role == upgradev1.MachineRoleWorker {
				g.Expect(st.Phase).To(BeElementOf(upgradev1.MachinePhasePending, upgradev1.MachinePhaseCompleted), "the worker is not disrupted")
			}
		}
		inFlight = max(inFlight, now)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "rollout %s: %s", u.Status.Phase, u.Status.BlockedBy)
		for _, name := range cps {
			g.Expect(c.Simulator.Node(name).Version()).To(Equal("v1.13.0"), "control-plane node %s", name)
		}
	}, 6*time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(inFlight).To(Equal(1), "the control plane moved one Machine at a time")
	g.Expect(c.Simulator.Node(workers[0]).Version()).To(Equal("v1.12.4"), "the worker stays on the policy's target")
	for _, name := range cps {
		g.Expect(c.Simulator.Node(name).EtcdMember()).To(BeTrue(), "%s is still an etcd member", name)
	}
	now, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now).To(Equal(cps), "no control-plane Machine was replaced")
	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		g.Expect(u.Status.Targets).To(ContainElement(upgradev1.TargetStatus{
			Kind: "TalosControlPlane", Name: "alpha-control-plane", TalosVersion: "v1.13.0", Source: upgradev1.VersionSourceObject,
			Field: "TalosControlPlane alpha-control-plane metadata.annotations[" + upgradev1.DesiredTalosVersionAnnotation + "]", Machines: 3, OnTarget: 3,
		}))
		g.Expect(conditions.IsTrue(u, upgradev1.DesiredVersionsCondition)).To(BeTrue())
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		for _, name := range cps {
			machine := &clusterv1.Machine{}
			g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: name}, machine)).To(Succeed())
			g.Expect(machine.Status.NodeInfo).NotTo(BeNil())
			g.Expect(machine.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage("v1.13.0")), "CAPI reports v1.13.0 for Machine %s", name)
		}
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
}
