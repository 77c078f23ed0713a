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

package talosupgrade_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// kubernetes133 is a Kubernetes version every Talos from 1.10 to 1.13
// supports.
const kubernetes133 = "v1.33.3"

// hops returns the versions of the path of a rollout.
func hops(u *upgradev1.TalosUpgrade) []string {
	if u.Status.Path == nil {
		return nil
	}
	out := make([]string, 0, len(u.Status.Path.Hops))
	for _, h := range u.Status.Path.Hops {
		out = append(out, h.Version)
	}
	return out
}

// TestAutoUpgradePath takes a Cluster on Talos v1.10.3 to v1.13.0 through
// the latest patch of 1.11 and 1.12 in the installer repository: each hop
// is a complete rollout (its hooks run on every Machine, its holds hold),
// every Machine gets one upgrade call per hop, a restart mid-path resumes on
// the right hop, and a release pushed meanwhile does not change the path.
func TestAutoUpgradePath(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, v := range []string{"v1.11.0", "v1.11.5", "v1.12.0", "v1.12.6", "v1.13.0-beta.1"} {
		g.Expect(sb.PushInstaller(ctx, v)).To(Succeed())
	}
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 1, version: "v1.10.3", kubernetes: kubernetes133})
	isHook := jobdriver.HasLabels(map[string]string{workloadjob.JobKindLabel: workloadjob.JobKindHook})
	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPostUpgrade, true)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.UpgradePath = upgradev1.UpgradePathAuto
		p.Spec.Hooks = []upgradev1.ActionHook{{Name: "noout", Point: upgradev1.HookPointPreDrain, Template: jobTemplate("ceph", "osd", "set", "noout")}}
	}))).To(Succeed())
	r.startManager()

	// The first hop, held by the worker's post-upgrade hold.
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(hops(u)).To(Equal([]string{"v1.11.5", "v1.12.6", toVersion}), "blockedBy: %s; conditions: %v", u.Status.BlockedBy, u.Status.Conditions)
		g.Expect(u.Status.Path.Current).To(BeZero())
		rec := machineRecord(u, "alpha-worker-0")
		g.Expect(rec.TargetVersion).To(Equal("v1.11.5"))
		g.Expect(rec.HeldBy).To(ConsistOf("test"))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.Node("alpha-cp-0").Version()).To(Equal("v1.11.5"))
	g.Consistently(func(g Gomega) {
		g.Expect(r.upgrade(g).Status.Path.Current).To(BeZero(), "a hold keeps the rollout on its hop")
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// A release pushed now does not change the running path; a restart
	// resumes on the hop.
	g.Expect(sb.PushInstaller(ctx, "v1.12.9")).To(Succeed())
	r.stopManager()
	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPostUpgrade, false)
	r.startManager()

	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
		g.Expect(hops(u)).To(Equal([]string{"v1.11.5", "v1.12.6", toVersion}))
		g.Expect(u.Status.Path.Current).To(BeEquivalentTo(2))
		for _, h := range u.Status.Path.Hops {
			g.Expect(h.CompletedMachines).To(BeEquivalentTo(2), "Machines done on hop %s", h.Version)
		}
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	u := r.upgrade(g)
	g.Expect(conditions.IsTrue(u, upgradev1.CompletedCondition)).To(BeTrue())
	for _, n := range r.sim.Nodes() {
		g.Expect(n.Version()).To(Equal(toVersion))
		g.Expect(r.upgradeCalls(n.Name())).To(Equal(3), "one upgrade call per hop on %s", n.Name())
	}
	g.Expect(r.driver.SeenMatching(isHook)).To(HaveLen(6), "the preDrain hook ran on both Machines at every hop")
	g.Eventually(func(g Gomega) { // Events are written behind the reconcile that records them.
		g.Expect(r.eventNotes(g, "HopCompleted")).To(HaveLen(2))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// TestAutoUpgradePathMissingMinor refuses, at the preflight, a path through
// a minor the installer repository has no release of, naming it.
func TestAutoUpgradePathMissingMinor(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, version: "v1.9.6", kubernetes: kubernetes133})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.UpgradePath = upgradev1.UpgradePathAuto
	}))).To(Succeed())
	r.startManager()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		c := conditions.Get(u, upgradev1.PreflightSucceededCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(upgradev1.UnsupportedVersionStepReason))
		g.Expect(c.Message).To(ContainSubstring("no stable 1.10 release"))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(BeZero())
}

// TestDeclaredVersionUpgradePath takes the workers of a MachineDeployment
// that declares v1.13.0 from v1.10.3 through the latest patch of 1.11 and
// 1.12, under a policy that names no target and upgradePath Auto: the path
// is planned for that MachineDeployment alone and recorded, its Machines go
// through each hop together (one held on a hop keeps the other from the
// next), each gets one upgrade call per hop, and the control plane, which no
// object moves, keeps its Talos.
func TestDeclaredVersionUpgradePath(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, v := range []string{"v1.11.0", "v1.11.5", "v1.12.0", "v1.12.6"} {
		g.Expect(sb.PushInstaller(ctx, v)).To(Succeed())
	}
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2, version: "v1.10.3", kubernetes: kubernetes133})
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: "alpha-md-0", Labels: map[string]string{clusterv1.ClusterNameLabel: "alpha"}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: "alpha",
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineDeploymentNameLabel: "alpha-md-0"}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{
					Labels:      map[string]string{clusterv1.MachineDeploymentNameLabel: "alpha-md-0"},
					Annotations: map[string]string{upgradev1.DesiredTalosVersionAnnotation: toVersion},
				},
				Spec: clusterv1.MachineSpec{
					ClusterName:       "alpha",
					Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("alpha-md-0")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "TalosSimMachineTemplate", Name: "alpha-md-0"},
				},
			},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, md)).To(Succeed())
	two := intstr.FromInt32(2)
	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPostUpgrade, true)
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = ""
		p.Spec.UpgradePath = upgradev1.UpgradePathAuto
		p.Spec.Rollout.Workers.MaxUnavailable = &two
	}))).To(Succeed())
	r.startManager()

	// The first hop: alpha-worker-0 is held on it, and alpha-worker-1,
	// which completed it, waits for it rather than going on. (The
	// registry is the suite's: another test may have pushed a newer patch.)
	var path []string
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.DeclaredPaths).To(HaveLen(1), "blockedBy: %s; conditions: %v", u.Status.BlockedBy, u.Status.Conditions)
		p := u.Status.DeclaredPaths[0]
		g.Expect([]string{p.Kind, p.Name, p.TalosVersion, p.From}).To(Equal([]string{"MachineDeployment", "alpha-md-0", toVersion, "v1.10.3"}))
		g.Expect(p.Hops).To(HaveLen(3))
		g.Expect(p.Hops[0]).To(HavePrefix("v1.11."))
		g.Expect(p.Hops[1]).To(HavePrefix("v1.12."))
		g.Expect(p.Hops[2]).To(Equal(toVersion))
		path = p.Hops
		g.Expect(machineRecord(u, "alpha-worker-0").HeldBy).To(ConsistOf("test"))
		g.Expect(machineRecord(u, "alpha-worker-1").Phase).To(Equal(upgradev1.MachinePhaseCompleted))
		g.Expect(u.Status.Targets).To(ContainElement(And(
			HaveField("Name", "alpha-md-0"), HaveField("TalosVersion", toVersion), HaveField("Hop", path[0]), HaveField("Source", upgradev1.VersionSourceObject))))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.Node("alpha-worker-0").Version()).To(Equal(path[0]))
	g.Consistently(func(g Gomega) {
		g.Expect(r.sim.Node("alpha-worker-1").Version()).To(Equal(path[0]), "the hop is the MachineDeployment's: one Machine does not go on alone")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	r.setHold(g, "alpha-worker-0", upgradev1.HoldPointPostUpgrade, false)
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s; records: %v", u.Status.BlockedBy, u.Status.Machines)
		for _, n := range []string{"alpha-worker-0", "alpha-worker-1"} {
			g.Expect(r.sim.Node(n).Version()).To(Equal(toVersion), n)
		}
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	for _, n := range []string{"alpha-worker-0", "alpha-worker-1"} {
		g.Expect(r.upgradeCalls(n)).To(Equal(3), "one upgrade call per hop on %s", n)
	}
	g.Expect(r.sim.Node("alpha-cp-0").Version()).To(Equal("v1.10.3"), "no object moves the control plane")
	g.Expect(r.upgradeCalls("alpha-cp-0")).To(BeZero())
	u := r.upgrade(g)
	g.Expect(conditions.IsTrue(u, upgradev1.DesiredVersionsCondition)).To(BeTrue(), "DesiredVersions: %v", conditions.Get(u, upgradev1.DesiredVersionsCondition))
	g.Expect(u.Status.Path).To(BeNil(), "the Machines the policy moves all run its target: no path of the Cluster")
	g.Eventually(func(g Gomega) { // Events are written behind the reconcile that records them.
		g.Expect(r.eventNotes(g, "UpgradePathPlanned")).To(ConsistOf("Upgrade path of MachineDeployment alpha-md-0 to Talos v1.13.0: " + strings.Join(path, " → ")))
		g.Expect(r.eventNotes(g, "HopCompleted")).To(HaveLen(2))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}
