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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/providers/talos/controllers/talosconfig"
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

// TestBootstrapData: a TalosConfig gets a real Talos configuration of its
// generateType for its Cluster as soon as its Machine owns it and the
// Cluster's infrastructure is provisioned, which is all the real provider
// waits for (a worker's before the control plane is initialized); every
// configuration of a Cluster shares its PKI; a TalosConfig no Machine owns
// waits, and says so.
func TestBootstrapData(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster := createCluster(t, "bootstrap-data")

	cp := createOwnedConfig(t, cluster, "cp-0", bootstrapv1.GenerateTypeControlPlane, true)
	worker := createOwnedConfig(t, cluster, "worker-0", bootstrapv1.GenerateTypeWorker, false)
	for _, config := range []*bootstrapv1.TalosConfig{cp, worker} {
		eventually(g, func(g Gomega) {
			got := &bootstrapv1.TalosConfig{}
			g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(config), got)).To(Succeed())
			g.Expect(v1beta1conditions.GetReason(got, bootstrapv1.DataSecretAvailableCondition)).To(Equal(bootstrapv1.WaitingForClusterInfrastructureReason))
			g.Expect(got.Status.Ready).To(BeFalse())
		}).Should(Succeed())
		g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(config), &corev1.Secret{})).NotTo(Succeed(), "no bootstrap data before the infrastructure is provisioned")
	}

	// CAPI's Cluster controller reports the infrastructure provisioned; the
	// control plane is not initialized.
	provision(t, cluster)

	cpSecret := dataSecret(t, cp)
	cpConfig, err := configloader.NewFromBytes(cpSecret.Data["value"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cpConfig.Machine().Type()).To(Equal(machine.TypeControlPlane))
	g.Expect(cpConfig.Cluster().Name()).To(Equal("c"))
	g.Expect(cpConfig.Cluster().Endpoint().String()).To(Equal("https://127.0.0.1:6443"))
	g.Expect(cpConfig.Machine().Kubelet().Image()).To(HaveSuffix(":v1.34.1"), "the Machine's Kubernetes version")

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
	provision(t, cluster)

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

// TestBootstrapConditionsOnAStaleRead is the regression test of a worker
// that CAPI showed BootstrapConfigReady=False WaitingForControlPlaneInitialized
// for good, its bootstrap data written long before (TestInPlaceUpdateWithCAPICore
// on a loaded machine: the worker's MachineDeployment counted it unavailable
// and moved no further Machine). The reconcile that wrote the data had read
// its TalosConfig from a cache that had not seen the waiting condition the
// reconcile before had written: the condition patch conflicted with it, the
// status was written ready all the same, and every later reconcile returned
// early on the ready status, leaving the condition of before. As in the
// real provider, the controller owns its conditions (a stale read cannot
// conflict with its own write) and says a ready TalosConfig is available
// again on every reconcile.
func TestBootstrapConditionsOnAStaleRead(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster := createCluster(t, "bootstrap-stale")
	// The suite's controller leaves a paused Cluster alone: the reconciler
	// of this test reads it unpaused, and its TalosConfig stale once.
	g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)).To(Succeed())
	cluster.Spec.Paused = ptr.To(true)
	g.Expect(mgmtClient.Update(ctx, cluster)).To(Succeed())

	config := createOwnedConfig(t, cluster, "worker-0", bootstrapv1.GenerateTypeWorker, false)
	stale := config.DeepCopy()
	// What the reconcile before wrote, and the cache has not seen.
	v1beta1conditions.MarkFalse(config, bootstrapv1.DataSecretAvailableCondition, bootstrapv1.WaitingForClusterInfrastructureReason, clusterv1.ConditionSeverityInfo, "waiting")
	v1beta1conditions.SetSummary(config, v1beta1conditions.WithConditions(bootstrapv1.DataSecretAvailableCondition))
	g.Expect(mgmtClient.Status().Update(ctx, config)).To(Succeed())
	provision(t, cluster)

	reads := &staleReads{Client: mgmtClient, once: map[client.ObjectKey]*bootstrapv1.TalosConfig{client.ObjectKeyFromObject(config): stale}}
	r := &talosconfig.Reconciler{Client: reads, APIReader: mgmtClient}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}
	_, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred(), "a stale read conflicts with nothing the controller owns")
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())

	got := &bootstrapv1.TalosConfig{}
	g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(config), got)).To(Succeed())
	g.Expect(got.Status.Ready).To(BeTrue())
	g.Expect(v1beta1conditions.IsTrue(got, bootstrapv1.DataSecretAvailableCondition)).To(BeTrue(), "conditions: %v", got.Status.Conditions)
	g.Expect(v1beta1conditions.IsTrue(got, clusterv1.ReadyV1Beta1Condition)).To(BeTrue(), "the Ready condition CAPI mirrors into BootstrapConfigReady")

	// A ready TalosConfig whose conditions say otherwise (as the bug left
	// them) says it is available at its next reconcile.
	v1beta1conditions.MarkFalse(got, bootstrapv1.DataSecretAvailableCondition, bootstrapv1.WaitingForClusterInfrastructureReason, clusterv1.ConditionSeverityInfo, "waiting")
	v1beta1conditions.SetSummary(got, v1beta1conditions.WithConditions(bootstrapv1.DataSecretAvailableCondition))
	g.Expect(mgmtClient.Status().Update(ctx, got)).To(Succeed())
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(config), got)).To(Succeed())
	g.Expect(v1beta1conditions.IsTrue(got, clusterv1.ReadyV1Beta1Condition)).To(BeTrue(), "conditions: %v", got.Status.Conditions)
}

// staleReads reads through the apiserver, but serves each TalosConfig of
// once stale, the first time it is read, as a cache that lags a write
// does; and every Cluster unpaused (see TestBootstrapConditionsOnAStaleRead).
type staleReads struct {
	client.Client
	once map[client.ObjectKey]*bootstrapv1.TalosConfig
}

func (c *staleReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *clusterv1.Cluster:
		o.Spec.Paused = nil
	case *bootstrapv1.TalosConfig:
		if stale, ok := c.once[key]; ok {
			delete(c.once, key)
			*o = *stale.DeepCopy()
		}
	}
	return nil
}

// TestBootstrapSpecImmutable: as the real provider's webhooks, the spec of a
// TalosConfig and of a TalosConfigTemplate cannot change (400 BadRequest,
// the real provider's message), by update or by server-side apply, as CAPI's
// MachineSet controller writes the desired TalosConfig of a Machine it
// updates in place; their metadata can, and an apply of the same spec is
// admitted.
func TestBootstrapSpecImmutable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster := createCluster(t, "bootstrap-immutable")
	config := createOwnedConfig(t, cluster, "worker-0", bootstrapv1.GenerateTypeWorker, false)

	// Patches, not updates: the controller writes the status meanwhile.
	changed := config.DeepCopy()
	changed.Spec.TalosVersion = "v1.13"
	err := mgmtClient.Patch(ctx, changed, client.MergeFrom(config))
	g.Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "a spec change is a 400: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("TalosConfig.Spec is immutable"))

	apply := func(spec bootstrapv1.TalosConfigSpec) error {
		obj := &bootstrapv1.TalosConfig{
			TypeMeta:   metav1.TypeMeta{APIVersion: bootstrapv1.GroupVersion.String(), Kind: "TalosConfig"},
			ObjectMeta: metav1.ObjectMeta{Namespace: config.Namespace, Name: config.Name, Annotations: map[string]string{"note": "applied"}},
			Spec:       spec,
		}
		u, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
		g.Expect(err).NotTo(HaveOccurred())
		return mgmtClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}), client.FieldOwner("capi-machineset"), client.ForceOwnership)
	}
	g.Expect(apply(config.Spec)).To(Succeed(), "the same spec, new metadata")
	err = apply(changed.Spec)
	g.Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "an apply of another spec is a 400: %v", err)

	template := &bootstrapv1.TalosConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: "workers"},
		Spec: bootstrapv1.TalosConfigTemplateSpec{Template: bootstrapv1.TalosConfigTemplateResource{Spec: bootstrapv1.TalosConfigSpec{
			GenerateType: bootstrapv1.GenerateTypeWorker, TalosVersion: "v1.12",
		}}},
	}
	g.Expect(mgmtClient.Create(ctx, template)).To(Succeed())
	template.Labels = map[string]string{"team": "a"}
	g.Expect(mgmtClient.Update(ctx, template)).To(Succeed(), "metadata changes")
	template.Spec.Template.Spec.TalosVersion = "v1.13"
	err = mgmtClient.Update(ctx, template)
	g.Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "a template spec change is a 400: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("TalosConfigTemplate.Spec is immutable"))

	bad := createOwnedConfig(t, cluster, "worker-1", bootstrapv1.GenerateTypeWorker, false)
	before := bad.DeepCopy()
	bad.Spec.Hostname.Source = "Random"
	err = mgmtClient.Patch(ctx, bad, client.MergeFrom(before))
	g.Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "and a change of it even to a wrong value: %v", err)
}
