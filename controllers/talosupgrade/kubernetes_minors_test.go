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
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// TestKubernetesMinorsPlannedThrough takes a Cluster on Talos v1.11.5 with
// Kubernetes v1.34.1 to Talos v1.13.0 with Kubernetes v1.36.0 through an
// Auto path (issue 26's example), its nodes' kubelet image in the sandbox
// registry's mirror. While the mirror cannot be listed the preflight waits
// with ReleasesUnavailable and nothing starts; once it lists 1.35, the path
// goes through its newest patch: Talos v1.12.6, then 1.35's control plane,
// then Talos v1.13.0 with the kubelet of 1.35 in one reboot, then 1.36's
// control plane and kubelets. No kubelet is ever newer than an apiserver,
// each node reboots once per Talos hop, and its kubelet image stays in the
// mirror.
func TestKubernetesMinorsPlannedThrough(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
	defer cancel()
	for _, v := range []string{"v1.12.0", "v1.12.6"} {
		g.Expect(sb.PushInstaller(ctx, v)).To(Succeed())
	}
	const (
		talosFrom = "v1.11.5"
		k8sFrom   = "v1.34.1"
		k8sMinor  = "v1.35.2"
		k8sTo     = "v1.36.0"
	)
	mirror := sb.KubeletRepository()
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 2, version: talosFrom, kubernetes: k8sFrom, kubeletRepository: mirror,
		clusterOptions: []builder.ClusterOption{withoutControlPlaneRef}})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion = toVersion
		p.Spec.KubernetesVersion = k8sTo
		p.Spec.UpgradePath = upgradev1.UpgradePathAuto
	}))).To(Succeed())
	var skew atomic.Value
	go watchSkew(ctx, r, []string{"alpha-cp-0"}, &skew)
	r.startManager()

	// The mirror has no kubelet yet: the preflight cannot list it, and
	// waits.
	g.Eventually(func(g Gomega) {
		c := conditions.Get(r.upgrade(g), upgradev1.PreflightSucceededCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(upgradev1.ReleasesUnavailableReason))
		g.Expect(c.Message).To(ContainSubstring("cannot list the releases of " + mirror))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	u := r.upgrade(g)
	g.Expect(u.Status.Path).To(BeNil())
	for _, st := range u.Status.Machines {
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhasePending), "Machine %s", st.Machine)
	}

	for _, v := range []string{k8sFrom, "v1.35.0", k8sMinor, "v1.35.3-rc.0", k8sTo} {
		g.Expect(sb.PushKubelet(ctx, v)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s", u.Status.BlockedBy)
	}, 5*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(plannedHops(r.upgrade(g))).To(Equal([]upgradev1.UpgradeHop{
		{Version: "v1.12.6", KubernetesVersion: k8sFrom, Stage: upgradev1.HopStageNodes},
		{Version: "v1.12.6", KubernetesVersion: k8sMinor, Stage: upgradev1.HopStageKubernetesControlPlane},
		{Version: toVersion, KubernetesVersion: k8sMinor, Stage: upgradev1.HopStageNodes},
		{Version: toVersion, KubernetesVersion: k8sTo, Stage: upgradev1.HopStageKubernetesControlPlane},
		{Version: toVersion, KubernetesVersion: k8sTo, Stage: upgradev1.HopStageNodes},
	}))
	g.Expect(skew.Load()).To(BeNil())

	r.expectRunning(ctx, g, toVersion, k8sTo, 2)
	for _, n := range r.sim.Nodes() {
		cfg, err := n.MachineConfig()
		g.Expect(err).NotTo(HaveOccurred())
		repo, err := kubernetes.KubeletRepository(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repo).To(Equal(mirror), "the kubelet of %s stays in the mirror", n.Name())
	}
}

// watchSkew samples the workload cluster until ctx ends and stores in skew
// the first moment a node's kubelet runs a version newer than the
// kube-apiserver of one of the control-plane nodes.
func watchSkew(ctx context.Context, r *rollout, controlPlanes []string, skew *atomic.Value) {
	for ctx.Err() == nil {
		if found := sampleSkew(ctx, r, controlPlanes); found != "" && skew.Load() == nil {
			skew.Store(found)
		}
		time.Sleep(20 * time.Millisecond) // Sampling period, not a wait for a condition.
	}
}

// sampleSkew returns a kubelet newer than an apiserver now, or "".
func sampleSkew(ctx context.Context, r *rollout, controlPlanes []string) string {
	nodes := &corev1.NodeList{}
	if r.workload.Client.List(ctx, nodes) != nil {
		return ""
	}
	for _, cp := range controlPlanes {
		apiserver := &corev1.Pod{}
		key := client.ObjectKey{Namespace: "kube-system", Name: kubernetes.MirrorPodName(kubernetes.ComponentAPIServer, cp)}
		if r.workload.Client.Get(ctx, key, apiserver) != nil {
			continue
		}
		image := apiserver.Spec.Containers[0].Image
		version := image[strings.LastIndex(image, ":")+1:]
		for _, n := range nodes.Items {
			if c, err := talos.CompareVersions(n.Status.NodeInfo.KubeletVersion, version); err == nil && c > 0 {
				return fmt.Sprintf("%s runs kubelet %s while the apiserver of %s runs %s", n.Name, n.Status.NodeInfo.KubeletVersion, cp, image)
			}
		}
	}
	return ""
}
