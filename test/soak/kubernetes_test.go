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

package soak

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestKubernetesChangeProblems: invariant 3 finds a node whose kubelet or
// static Pods changed twice for one Kubernetes target, and a Kubernetes
// change that came with a boot no upgrade made nor a configuration staged
// for; one change of each, a kubelet staged with an install (a boot after an
// upgrade call), and the control plane's images staged with a change of the
// patches that needs a reboot (seed 20261207), pass.
func TestKubernetesChangeProblems(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	kubelet := func(s int, from, to string) kubeChange {
		return kubeChange{part: kubeletPart, from: from, to: to, at: at(s), boot: t0, bootBefore: t0}
	}
	pods := func(s int) kubeChange {
		return kubeChange{part: staticPodsPart, from: "old", to: "new", at: at(s), boot: t0, bootBefore: t0}
	}
	booted := func(ch kubeChange, boot int) kubeChange {
		ch.boot = at(boot)
		return ch
	}
	tests := []struct {
		name     string
		changes  []kubeChange
		upgrades []time.Time
		// staged are the node's boots a configuration was staged for.
		staged []time.Time
		// asked are the times of the reboots asked for the node.
		asked    []time.Time
		problems int
	}{
		{name: "none"},
		{name: "the control plane then the kubelet, no boot", changes: []kubeChange{pods(10), kubelet(20, kubernetesFrom, kubernetesTo)}},
		{name: "the kubelet twice", changes: []kubeChange{kubelet(10, kubernetesFrom, kubernetesTo), kubelet(20, kubernetesTo, kubernetesFrom), kubelet(30, kubernetesFrom, kubernetesTo)}, problems: 1},
		{name: "the static Pods twice", changes: []kubeChange{pods(10), pods(20)}, problems: 1},
		{name: "the kubelet with a boot no upgrade made", changes: []kubeChange{booted(kubelet(20, kubernetesFrom, kubernetesTo), 19)}, problems: 1},
		{name: "the kubelet staged with an install", changes: []kubeChange{booted(kubelet(20, kubernetesFrom, kubernetesTo), 19)}, upgrades: []time.Time{at(15)}},
		{name: "an upgrade before the boot before does not count", changes: []kubeChange{booted(kubelet(20, kubernetesFrom, kubernetesTo), 19)}, upgrades: []time.Time{t0.Add(-time.Minute)}, problems: 1},
		{name: "the static Pods staged with a configuration for the boot", changes: []kubeChange{booted(pods(20), 19)}, staged: []time.Time{at(19)}},
		{name: "a configuration staged for another boot does not count", changes: []kubeChange{booted(pods(20), 19)}, staged: []time.Time{at(5)}, problems: 1},
		{name: "the kubelet seen after a reboot asked for", changes: []kubeChange{booted(kubelet(20, kubernetesFrom, kubernetesTo), 19)}, asked: []time.Time{at(12)}},
		{name: "a reboot asked for after the boot does not count", changes: []kubeChange{booted(kubelet(20, kubernetesFrom, kubernetesTo), 19)}, asked: []time.Time{at(25)}, problems: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(kubernetesChangeProblems(kubeLog{changes: tt.changes}, tt.upgrades, tt.staged, tt.asked)).To(HaveLen(tt.problems))
		})
	}
}

// TestKubernetesEarlyChanges: invariant 16 finds a Kubernetes change made
// before the policy and the CAPI objects agreed, or without a Kubernetes
// target at all.
func TestKubernetesEarlyChanges(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	change := kubeChange{part: kubeletPart, from: kubernetesFrom, to: kubernetesTo, at: t0, boot: t0, bootBefore: t0}
	tests := []struct {
		name     string
		target   kubeTarget
		problems int
	}{
		{name: "after they agreed", target: kubeTarget{version: kubernetesTo, agreeFrom: t0.Add(-time.Second)}},
		{name: "before they agreed", target: kubeTarget{version: kubernetesTo, agreeFrom: t0.Add(time.Second)}, problems: 1},
		{name: "without a target", problems: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(kubernetesEarlyChanges(kubeLog{changes: []kubeChange{change}}, tt.target)).To(HaveLen(tt.problems))
		})
	}
}

// TestKubernetesAtRestProblems: invariant 16 at rest finds a Node that does
// not report the kubelet version, a control-plane node whose static Pods do
// not run it, and a Machine whose spec.version does not say it, unless its
// record failed.
func TestKubernetesAtRestProblems(t *testing.T) {
	good := kubeNode{machine: "m", node: "n", machineVersion: kubernetesTo, kubelet: kubernetesTo, controlPlane: true}
	with := func(f func(*kubeNode)) []kubeNode {
		n := good
		f(&n)
		return []kubeNode{n}
	}
	tests := []struct {
		name     string
		nodes    []kubeNode
		problems int
	}{
		{name: "on the target", nodes: []kubeNode{good}},
		{name: "the kubelet behind", nodes: with(func(n *kubeNode) { n.kubelet = kubernetesFrom }), problems: 1},
		{name: "the static Pods behind", nodes: with(func(n *kubeNode) { n.staticPods = "kube-apiserver-n runs v1.35.2, not v1.36.0" }), problems: 1},
		{name: "a worker has no static Pods", nodes: with(func(n *kubeNode) { n.controlPlane, n.staticPods = false, "not found" })},
		{name: "the Machine's spec.version behind", nodes: with(func(n *kubeNode) { n.machineVersion = kubernetesFrom }), problems: 1},
		{name: "all behind", nodes: with(func(n *kubeNode) {
			n.kubelet, n.machineVersion, n.staticPods = kubernetesFrom, kubernetesFrom, "behind"
		}), problems: 3},
		{name: "its record failed", nodes: with(func(n *kubeNode) { n.kubelet, n.exempt = kubernetesFrom, "its record is Failed" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(kubernetesAtRestProblems(tt.nodes, kubernetesTo)).To(HaveLen(tt.problems))
		})
	}
}

// TestPollKubernetes: the poller reads a node's kubelet version and static
// Pods from the simulator, and sees no change while nothing changes.
func TestPollKubernetes(t *testing.T) {
	g := NewWithT(t)
	port, err := envtest.FreePort()
	g.Expect(err).NotTo(HaveOccurred())
	sim, err := talossim.New(talossim.Options{Port: port})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sim.Close() })
	n, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.13.0", ControlPlane: true, EtcdCluster: "soak", KubernetesVersion: kubernetesFrom})
	g.Expect(err).NotTo(HaveOccurred())
	c := &soakCluster{sim: sim}
	c.pollBoots()
	k, err := n.Kubelet()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k.Version).To(Equal(kubernetesFrom))
	g.Expect(k.StaticPods).To(HaveLen(3))
	c.pollBoots()
	g.Expect(c.kubeLogsCopy()["cp-1"].changes).To(BeEmpty())
}
