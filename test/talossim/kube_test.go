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

package talossim_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	talosclient "github.com/siderolabs/talos/pkg/machinery/client"
	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/test/envtest"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// TestKubeNodeUpdater runs an upgrade against a workload apiserver: the
// Node goes NotReady during the reboot and comes back Ready with the new
// osImage, as a kubelet would report it.
func TestKubeNodeUpdater(t *testing.T) {
	envtest.SkipWithoutAssets(t)

	g := NewWithT(t)
	ctx := context.Background()

	env := &crenvtest.Environment{}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	workload, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	updater := &talossim.KubeNodeUpdater{Client: workload}
	sim := newSim(t, talossim.Options{NodeUpdater: updater, RebootDuration: time.Second})

	n, err := sim.AddNode(talossim.NodeConfig{Name: "w-1", Version: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(updater.EnsureNode(ctx, n)).To(Succeed())

	node := func() *corev1.Node {
		obj := &corev1.Node{}
		g.Expect(workload.Get(ctx, client.ObjectKey{Name: "w-1"}, obj)).To(Succeed())

		return obj
	}
	ready := func(obj *corev1.Node) corev1.ConditionStatus {
		for _, c := range obj.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status
			}
		}

		return corev1.ConditionUnknown
	}

	g.Expect(ready(node())).To(Equal(corev1.ConditionTrue))
	g.Expect(node().Status.NodeInfo.OSImage).To(Equal("Talos (v1.12.4)"))

	//nolint:staticcheck // SA1019: the legacy upgrade is what a 1.12 node serves.
	_, err = dial(t, sim, n.Address()).UpgradeWithOptions(ctx, talosclient.WithUpgradeImage("ghcr.io/siderolabs/installer:v1.13.0"))
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() corev1.ConditionStatus { return ready(node()) }, 10*time.Second, 20*time.Millisecond).Should(Equal(corev1.ConditionFalse))
	g.Expect(node().Status.NodeInfo.OSImage).To(Equal("Talos (v1.12.4)"))

	g.Eventually(func() string { return node().Status.NodeInfo.OSImage }, 10*time.Second, 20*time.Millisecond).Should(Equal(talossim.OSImage("v1.13.0")))
	g.Expect(ready(node())).To(Equal(corev1.ConditionTrue))
}
