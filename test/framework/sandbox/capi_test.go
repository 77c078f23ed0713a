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

package sandbox_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestCAPICluster makes a Cluster with CAPI core, as a user applies it: CAPI
// and the providers make its Machines (named by CAPI and the control-plane
// provider), boot their nodes and copy each Node into its Machine, and the
// Cluster keeps what callers use (the simulator, the Nodes, the
// talosconfig and kubeconfig Secrets). Options that would make Machines by
// hand are refused, and once CAPI core is gone, CreateCluster fails at once
// with its last log lines.
func TestCAPICluster(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(sb.Stop()).To(Succeed()) }()
	t.Logf("The sandbox with CAPI core started in %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "fleet", Name: "alpha", ControlPlanes: 1, Workers: 2, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("CAPI made the Cluster's 3 Machines in %s", time.Since(start).Round(time.Millisecond))

	cps, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cps).To(ConsistOf(HavePrefix("alpha-control-plane-")))
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(workers).To(ConsistOf(HavePrefix(sandbox.WorkersName("alpha")+"-"), HavePrefix(sandbox.WorkersName("alpha")+"-")))

	// What CAPI made, as callers read it: the Machines, control plane
	// first, each with its Node, its simulated node and an address.
	g.Expect(c.Fixture.Machines).To(HaveLen(3))
	g.Expect(c.Fixture.Machines[0].Name).To(Equal(cps[0]))
	for i, m := range c.Fixture.Machines {
		g.Expect(m.Status.NodeRef.Name).To(Equal(m.Name), "CAPI found the Node of Machine %s", m.Name)
		g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage("v1.12.4")), "CAPI copied the Node's OS into Machine %s", m.Name)
		g.Expect(m.Status.Addresses).NotTo(BeEmpty())
		g.Expect(c.Fixture.Nodes[i].Name).To(Equal(m.Name))
		g.Expect(c.Simulator.Node(m.Name)).NotTo(BeNil(), "Machine %s has a simulated node", m.Name)
		g.Expect(c.Simulator.Node(m.Name).Address()).To(BeElementOf(addresses(m)))
	}
	// The control-plane provider writes its status on its own schedule,
	// which on a loaded machine may come after CAPI made the Machines.
	g.Eventually(func(g Gomega) {
		tcp := &controlplanev1.TalosControlPlane{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha-control-plane"}, tcp)).To(Succeed())
		g.Expect(tcp.Status.Initialized).To(BeTrue())
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	md := &clusterv1.MachineDeployment{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: sandbox.WorkersName("alpha")}, md)).To(Succeed())
	for _, name := range []string{"alpha-talosconfig", "alpha-kubeconfig"} {
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: name}, &corev1.Secret{})).To(Succeed(), "Secret %s", name)
	}

	_, err = sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "fleet", Name: "beta", ControlPlanes: 1, WithoutTalos: true})
	g.Expect(err).To(MatchError(ContainSubstring("WithoutTalos of fleet/beta are not supported with Options.CAPI")))

	// CAPI core gone: the next Cluster fails at once, saying so.
	g.Expect(sb.CAPI.Stop()).To(Succeed())
	start = time.Now()
	_, err = sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "fleet", Name: "gamma", ControlPlanes: 1})
	g.Expect(err).To(MatchError(And(ContainSubstring("CAPI core is gone"), ContainSubstring("capi-manager exited"))))
	// The error says CAPI core is gone, not that the wait timed out; and it
	// came before ClusterReadyTimeout, however loaded the machine.
	g.Expect(time.Since(start)).To(BeNumerically("<", sandbox.ClusterReadyTimeout), "at once, not at ClusterReadyTimeout")
}

// addresses returns the addresses of m.
func addresses(m *clusterv1.Machine) []string {
	var out []string
	for _, a := range m.Status.Addresses {
		out = append(out, a.Address)
	}
	return out
}
