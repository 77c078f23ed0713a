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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestCAPICore runs the real CAPI core manager against a management control
// plane: its webhooks refuse what CAPI refuses, and its Cluster, Machine and
// MachineHealthCheck controllers act on the objects.
func TestCAPICore(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	mgmt, err := envtest.StartManagement()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(mgmt.Stop()).To(Succeed()) }()
	capi, err := mgmt.StartCAPI(envtest.CAPIOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(capi.Stop()).To(Succeed()) }()

	g.Expect(mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}})).To(Succeed())
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha"},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "NoSuchCluster", Name: "alpha",
		}},
	}
	g.Expect(mgmt.Client.Create(ctx, cluster)).To(Succeed())

	// CAPI's validating webhook refuses a Machine whose version is not a
	// semantic version: the webhook is installed and served.
	machine := func(name, version string) *clusterv1.Machine {
		return &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name},
			Spec: clusterv1.MachineSpec{
				ClusterName: "alpha",
				Version:     version,
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To("alpha-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "NoSuchMachine", Name: name,
				},
			},
		}
	}
	err = mgmt.Client.Create(ctx, machine("bad", "one-point-thirty"))
	g.Expect(err).To(MatchError(ContainSubstring("spec.version")))

	// The Cluster controller adds its finalizer; the Machine controller
	// adds its own and makes the Cluster the Machine's owner.
	g.Expect(mgmt.Client.Create(ctx, machine("alpha-0", "v1.35.0"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := &clusterv1.Cluster{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cluster), c)).To(Succeed())
		g.Expect(c.Finalizers).To(ContainElement(clusterv1.ClusterFinalizer))
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "alpha-0"}, m)).To(Succeed())
		g.Expect(m.Finalizers).To(ContainElement(clusterv1.MachineFinalizer))
		g.Expect(m.OwnerReferences).To(ContainElement(HaveField("Kind", "Cluster")))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())

	// A world that waits on CAPI core asks ExitError: nil while it runs,
	// how it ended and its last log lines once it is gone.
	g.Expect(capi.ExitError()).To(Succeed())
	g.Expect(capi.Stop()).To(Succeed())
	g.Expect(capi.ExitError()).To(MatchError(ContainSubstring("capi-manager exited (")))
}

// TestCAPICoreFailsFast checks that a CAPI core manager that exits at
// start fails StartCAPI at once, with its last log lines, instead of
// waiting for its webhooks.
func TestCAPICoreFailsFast(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	mgmt, err := envtest.StartManagement()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(mgmt.Stop()).To(Succeed()) }()

	start := time.Now()
	_, err = mgmt.StartCAPI(envtest.CAPIOptions{Args: []string{"--no-such-flag"}})
	g.Expect(err).To(MatchError(And(ContainSubstring("capi-manager exited"), ContainSubstring("no-such-flag"))))
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Minute), "the exit is noticed at once, not at the readiness timeout")
}
