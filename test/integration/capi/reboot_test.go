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
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/sampler"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// TestRollingRebootWithCAPICore asks for a rolling reboot of a 3+3 Cluster
// that CAPI core and the Talos providers' stand-ins made, while its health
// check fails and a worker is held at its pre-drain point. Nothing reboots
// while the check fails; then the control plane reboots first and one
// node at a time, the workers within maxUnavailable 2, the held worker
// once its hold is gone, every node exactly once, and no MachineHealthCheck
// or provider replaces a Machine on the way.
func TestRollingRebootWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Managements: managements, InstallerVersions: []string{"v1.13.0"}, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(sb.Stop()).To(Succeed()) }()
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "fleet", Name: "alpha", ControlPlanes: 3, Workers: 3, TalosVersion: "v1.13.0"})
	g.Expect(err).NotTo(HaveOccurred())
	cps, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	var failing atomic.Bool
	failing.Store(true)
	c.Workload.Driver.Script(func(job *batchv1.Job) bool {
		return strings.HasPrefix(job.Name, "tollgate-hc-ceph") && failing.Load()
	}, repeat(jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN"}, 1000)...)
	g.Expect(sb.Management.Client.Create(ctx, sandbox.HealthCheck("fleet", "ceph", 5*time.Second, "ceph", "health"))).To(Succeed())
	g.Expect(sb.StartManager(ctx, manager.Options{})).To(Succeed())
	two := intstr.FromInt32(2)
	policy := sb.Policy("fleet", "gate", "v1.13.0", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
		p.Spec.Rollout.Workers.MaxUnavailable = &two
	})
	g.Expect(sb.Management.Client.Create(ctx, policy)).To(Succeed())
	g.Expect(c.OptIn(ctx, "gate")).To(Succeed())
	upgrade := func(g Gomega) *upgradev1.TalosUpgrade {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha"}, u)).To(Succeed())
		return u
	}
	g.Eventually(func(g Gomega) {
		g.Expect(upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())

	// A pre-drain hold on a worker, and a rolling reboot asked for now.
	held := workers[0]
	m := &clusterv1.Machine{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: held}, m)).To(Succeed())
	g.Expect(hooks.SetHold(ctx, sb.Management.Client, m, upgradev1.HoldPointPreDrain, "storage-operator", "rebalancing")).To(Succeed())
	disrupted := sampler.Nodes(ctx, c.Workload.Client, func(n *corev1.Node) bool { return slices.Contains(cps, n.Name) })
	p := &upgradev1.TalosUpgradePolicy{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKeyFromObject(policy), p)).To(Succeed())
	before := p.DeepCopy()
	p.Spec.Reboot.After = metav1.Now()
	g.Expect(sb.Management.Client.Patch(ctx, p, client.MergeFrom(before))).To(Succeed())

	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseWaitingForHealthChecks), "blockedBy: %s", u.Status.BlockedBy)
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, name := range append(cps, workers...) {
			g.Expect(c.Simulator.Node(name).Boots()).To(BeZero(), "node %s rebooted while the check fails", name)
		}
	}, 6*time.Second, 250*time.Millisecond).Should(Succeed())
	failing.Store(false)

	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		st := record(u, held)
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreDrain))
		g.Expect(st.HeldBy).To(ConsistOf("storage-operator"))
		booted := 0
		for _, name := range append(cps, workers...) {
			booted += c.Simulator.Node(name).Boots()
		}
		g.Expect(booted).To(Equal(5), "every node but the held one rebooted")
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: held}, m)).To(Succeed())
	g.Expect(hooks.ReleaseHold(ctx, sb.Management.Client, m, upgradev1.HoldPointPreDrain, "storage-operator")).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(upgrade(g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())

	u := upgrade(g)
	for _, name := range append(cps, workers...) {
		g.Expect(c.Simulator.Node(name).Boots()).To(Equal(1), "node %s rebooted once", name)
		g.Expect(record(u, name).Action).To(Equal(upgradev1.MachineActionReboot))
	}
	cp, w, _ := disrupted.Max()
	order := disrupted.Order()
	g.Expect(cp).To(Equal(1), "control plane one at a time")
	g.Expect(w).To(BeNumerically("<=", 2), "workers within maxUnavailable")
	for i, name := range order {
		g.Expect(strings.Contains(name, "control-plane")).To(Equal(i < len(cps)), "control plane first: %v", order)
	}
	now, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now).To(ConsistOf(cps), "no control-plane Machine replaced")
	now, err = c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now).To(ConsistOf(workers), "no worker replaced")
}
