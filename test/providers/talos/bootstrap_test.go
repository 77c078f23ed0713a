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

package talos_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
)

// createOwnedConfig creates a Machine of cluster and its TalosConfig of
// generateType, owned by it as CAPI's Machine controller leaves it.
func createOwnedConfig(t *testing.T, cluster *clusterv1.Cluster, name, generateType string, controlPlane bool, mutate ...func(*bootstrapv1.TalosConfig)) *bootstrapv1.TalosConfig {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	labels := map[string]string{clusterv1.ClusterNameLabel: cluster.Name}
	if controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}

	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: cluster.Name,
			Version:     "v1.34.1",
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "TalosConfig", Name: name,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infraGroup, Kind: "TalosSimMachine", Name: name},
		},
	}
	g.Expect(mgmtClient.Create(ctx, m)).To(Succeed())

	owner := ownedBy(m, "Machine")
	owner.Controller = ptr.To(true)
	config := &bootstrapv1.TalosConfig{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cluster.Namespace, Name: name,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: bootstrapv1.TalosConfigSpec{GenerateType: generateType, TalosVersion: "v1.12"},
	}
	for _, f := range mutate {
		f(config)
	}
	g.Expect(mgmtClient.Create(ctx, config)).To(Succeed())

	return config
}

const infraGroup = "infrastructure.cluster.x-k8s.io"

// dataSecret waits for the TalosConfig's bootstrap data Secret and checks
// its shape and the status that names it.
func dataSecret(t *testing.T, config *bootstrapv1.TalosConfig) *corev1.Secret {
	t.Helper()
	g := NewWithT(t)

	got := &bootstrapv1.TalosConfig{}
	eventually(g, func(g Gomega) {
		g.Expect(mgmtClient.Get(context.Background(), client.ObjectKeyFromObject(config), got)).To(Succeed())
		g.Expect(got.Status.Ready).To(BeTrue())
		g.Expect(got.Status.DataSecretName).To(HaveValue(Equal(config.Name)))
	}).Should(Succeed())
	g.Expect(v1beta1conditions.IsTrue(got, bootstrapv1.DataSecretAvailableCondition)).To(BeTrue())
	g.Expect(v1beta1conditions.IsTrue(got, clusterv1.ReadyV1Beta1Condition)).To(BeTrue(), "the Ready condition CAPI mirrors")
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))

	secret := &corev1.Secret{}
	g.Expect(mgmtClient.Get(context.Background(), client.ObjectKeyFromObject(config), secret)).To(Succeed())
	g.Expect(secret.Type).To(Equal(clusterv1.ClusterSecretType))
	g.Expect(secret.Labels).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "c"))
	g.Expect(secret.Data).To(HaveKeyWithValue("format", []byte("talos")))
	g.Expect(secret.OwnerReferences).To(ConsistOf(HaveField("UID", got.UID)))

	return secret
}

// TestBootstrapData: a control-plane TalosConfig gets a real Talos
// controlplane configuration for its Cluster as soon as its Machine owns
// it; a worker's waits for the control plane to be initialized; both share
// the Cluster's PKI; a TalosConfig no Machine owns waits, and says so.
func TestBootstrapData(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster := createCluster(t, "bootstrap-data")

	cp := createOwnedConfig(t, cluster, "cp-0", bootstrapv1.GenerateTypeControlPlane, true)
	cpSecret := dataSecret(t, cp)

	cpConfig, err := configloader.NewFromBytes(cpSecret.Data["value"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cpConfig.Machine().Type()).To(Equal(machine.TypeControlPlane))
	g.Expect(cpConfig.Cluster().Name()).To(Equal("c"))
	g.Expect(cpConfig.Cluster().Endpoint().String()).To(Equal("https://127.0.0.1:6443"))
	g.Expect(cpConfig.Machine().Kubelet().Image()).To(HaveSuffix(":v1.34.1"), "the Machine's Kubernetes version")

	worker := createOwnedConfig(t, cluster, "worker-0", bootstrapv1.GenerateTypeWorker, false)
	eventually(g, func(g Gomega) {
		got := &bootstrapv1.TalosConfig{}
		g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(worker), got)).To(Succeed())
		g.Expect(v1beta1conditions.GetReason(got, bootstrapv1.DataSecretAvailableCondition)).To(Equal(bootstrapv1.WaitingForControlPlaneInitializedReason))
		g.Expect(got.Status.Ready).To(BeFalse())
	}).Should(Succeed())
	g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(worker), &corev1.Secret{})).NotTo(Succeed(), "no bootstrap data before the control plane is initialized")

	// CAPI's Cluster controller reports the control plane initialized.
	g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)).To(Succeed())
	cluster.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	g.Expect(mgmtClient.Status().Update(ctx, cluster)).To(Succeed())

	workerSecret := dataSecret(t, worker)
	workerConfig, err := configloader.NewFromBytes(workerSecret.Data["value"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(workerConfig.Machine().Type()).To(Equal(machine.TypeWorker))
	g.Expect(workerConfig.Cluster().IssuingCA().Crt).To(Equal(cpConfig.Cluster().IssuingCA().Crt), "one PKI per Cluster")
	g.Expect(workerConfig.Machine().Security().IssuingCA().Crt).To(Equal(cpConfig.Machine().Security().IssuingCA().Crt))

	orphan := &bootstrapv1.TalosConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: "orphan"},
		Spec:       bootstrapv1.TalosConfigSpec{GenerateType: bootstrapv1.GenerateTypeWorker},
	}
	g.Expect(mgmtClient.Create(ctx, orphan)).To(Succeed())
	eventually(g, func(g Gomega) {
		g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(orphan), orphan)).To(Succeed())
		g.Expect(v1beta1conditions.GetReason(orphan, bootstrapv1.DataSecretAvailableCondition)).To(Equal(bootstrapv1.WaitingForMachineReason))
	}).Should(Succeed())
}

// TestBootstrapBadSpec: a TalosConfig whose configuration cannot be
// generated says why in its condition and writes nothing.
func TestBootstrapBadSpec(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster := createCluster(t, "bootstrap-bad")

	bad := createOwnedConfig(t, cluster, "cp-bad", bootstrapv1.GenerateTypeControlPlane, true, func(c *bootstrapv1.TalosConfig) { c.Spec.TalosVersion = "twelve" })

	eventually(g, func(g Gomega) {
		got := &bootstrapv1.TalosConfig{}
		g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(bad), got)).To(Succeed())
		g.Expect(v1beta1conditions.GetReason(got, bootstrapv1.DataSecretAvailableCondition)).To(Equal(bootstrapv1.DataSecretGenerationFailedReason))
		g.Expect(v1beta1conditions.GetMessage(got, bootstrapv1.DataSecretAvailableCondition)).To(ContainSubstring(`talosVersion "twelve"`))
		g.Expect(got.Status.Ready).To(BeFalse())
	}).Should(Succeed())
	g.Consistently(func() error {
		return mgmtClient.Get(ctx, client.ObjectKeyFromObject(bad), &corev1.Secret{})
	}, time.Second, 100*time.Millisecond).ShouldNot(Succeed())
}
