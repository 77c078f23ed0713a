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

package envtest_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestManagementAndWorkload starts a management and a workload control plane
// and checks that a Cluster fixture lands in both, and that the kubeconfig
// Secret stored the CAPI way reaches the workload apiserver.
func TestManagementAndWorkload(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	mgmt, err := envtest.StartManagement()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(mgmt.Stop()).To(Succeed()) }()

	// CAPI's and Tollgate's CRDs are served.
	for _, list := range []client.ObjectList{&clusterv1.ClusterList{}, &clusterv1.MachineList{}} {
		g.Expect(mgmt.Client.List(ctx, list)).To(Succeed())
	}

	workload, err := mgmt.StartWorkload(ctx, "fleet", "alpha")
	g.Expect(err).NotTo(HaveOccurred())

	fx, err := builder.Create(ctx, mgmt.Client, workload.Client, builder.ClusterFixture{
		Namespace: "fleet", Name: "alpha", Policy: "to-1-13", ControlPlanes: 3, Workers: 2,
		Address: func(i int, _ string) string { return "127.0.10." + string(rune('1'+i)) },
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fx.Machines).To(HaveLen(5))

	// The Machines carry the status Tollgate reads.
	m := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(fx.Machines[0]), m)).To(Succeed())
	g.Expect(m.Status.NodeInfo.OSImage).To(Equal("Talos (v1.12.4)"))
	g.Expect(m.Status.NodeRef.Name).To(Equal("alpha-cp-0"))
	g.Expect(m.Status.Addresses).To(ContainElement(clusterv1.MachineAddress{Type: clusterv1.MachineInternalIP, Address: "127.0.10.1"}))
	g.Expect(m.Labels).To(HaveKey(clusterv1.MachineControlPlaneLabel))

	// The kubeconfig Secret is stored as CAPI stores it and reaches the
	// workload apiserver, where the Nodes are Ready.
	s := &corev1.Secret{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: secret.Name("alpha", secret.Kubeconfig)}, s)).To(Succeed())
	g.Expect(s.Type).To(Equal(clusterv1.ClusterSecretType))
	g.Expect(s.Labels).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "alpha"))
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[secret.KubeconfigDataName])
	g.Expect(err).NotTo(HaveOccurred())
	wc, err := client.New(cfg, client.Options{Scheme: envtest.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	nodes := &corev1.NodeList{}
	g.Expect(wc.List(ctx, nodes)).To(Succeed())
	g.Expect(nodes.Items).To(HaveLen(5))
	for _, n := range nodes.Items {
		g.Expect(n.Status.NodeInfo.OSImage).To(Equal("Talos (v1.12.4)"))
		g.Expect(n.Status.Conditions).To(ContainElement(HaveField("Type", corev1.NodeReady)))
	}
}
