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

package clusterctl_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestDeleteAddon runs `clusterctl delete --addon tollgate`, the last step
// of the book's uninstall procedure (operations/upgrading-tollgate.md), and
// checks what it removes and what it leaves, as the book says:
//
//   - removed: the provider's objects in its namespace (the manager's
//     Deployment, its Services, ServiceAccount, Roles and bindings, the
//     cert-manager Certificate and Issuer) and its webhook configurations,
//     and the provider from clusterctl's inventory;
//   - left: the CRDs and every object of Tollgate's kinds (without
//     --include-crd), the namespace (without --include-namespace), the
//     cluster-scoped RBAC, whose names clusterctl does not prefix with the
//     namespace (it deletes only ClusterRoles and bindings named
//     <namespace>-...), and the ExtensionConfig, an object of CAPI core's
//     CRD, whose objects clusterctl does not list as a provider's.
//
// Then --include-crd is refused while an object of Tollgate's kinds exists,
// and deletes the CRDs once none does.
func TestDeleteAddon(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := newClient(t, repo.config)
	reader := inventoryReader(t)
	install(ctx, t, c, reader)

	// clusterctl delete --addon tollgate
	g.Expect(c.Delete(ctx, clusterctlclient.DeleteOptions{Kubeconfig: kubeconfig, AddonProviders: []string{"tollgate"}})).To(Succeed())
	g.Expect(installed(ctx, g, reader)).NotTo(ContainElement("tollgate"), "the inventory no longer lists Tollgate")
	for _, gone := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: envtest.ManagerNamespace, Name: "tollgate-controller-manager"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: envtest.ManagerNamespace, Name: envtest.ManagerServiceAccount}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: envtest.ManagerNamespace, Name: "tollgate-webhook-service"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: envtest.ManagerNamespace, Name: "tollgate-extension-service"}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "tollgate-validating-webhook-configuration"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "tollgate-mutating-webhook-configuration"}},
	} {
		err := reader.Get(ctx, client.ObjectKeyFromObject(gone), gone)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is deleted: %v", gone, gone.GetName(), err)
	}
	roles := &rbacv1.RoleList{}
	g.Expect(reader.List(ctx, roles, client.InNamespace(envtest.ManagerNamespace), client.MatchingLabels{"cluster.x-k8s.io/provider": providerLabel})).To(Succeed())
	g.Expect(roles.Items).To(BeEmpty(), "the namespaced RBAC is deleted")

	// Left: the namespace, the CRDs, the cluster-scoped RBAC, the
	// ExtensionConfig.
	g.Expect(reader.Get(ctx, client.ObjectKey{Name: envtest.ManagerNamespace}, &corev1.Namespace{})).To(Succeed())
	g.Expect(tollgateCRDs(ctx, g, reader)).To(ConsistOf(
		"clusterhealthchecks.upgrade.tollgate.dev", "releasechannels.upgrade.tollgate.dev",
		"talosupgradepolicies.upgrade.tollgate.dev", "talosupgrades.upgrade.tollgate.dev"))
	clusterRoles := &rbacv1.ClusterRoleList{}
	g.Expect(reader.List(ctx, clusterRoles, client.MatchingLabels{"cluster.x-k8s.io/provider": providerLabel})).To(Succeed())
	g.Expect(names(clusterRoles.Items)).To(ContainElement("tollgate-manager-role"), "clusterctl deletes only the ClusterRoles named %s-...", envtest.ManagerNamespace)
	bindings := &rbacv1.ClusterRoleBindingList{}
	g.Expect(reader.List(ctx, bindings, client.MatchingLabels{"cluster.x-k8s.io/provider": providerLabel})).To(Succeed())
	g.Expect(bindings.Items).NotTo(BeEmpty(), "clusterctl deletes only the ClusterRoleBindings named %s-...", envtest.ManagerNamespace)
	t.Logf("Left by clusterctl delete --addon tollgate: ClusterRoles %v, ClusterRoleBindings %v", names(clusterRoles.Items), names(bindings.Items))
	ext := &unstructured.Unstructured{}
	ext.SetGroupVersionKind(runtimev1.GroupVersion.WithKind("ExtensionConfig"))
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Name: extensionConfigName}, ext)).To(Succeed(), "the ExtensionConfig is left: clusterctl lists no object of a provider's CRD")

	// An object of Tollgate's kinds: a policy, left by a user. With the
	// webhook configurations gone nothing admits or refuses it.
	policy := &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "left-behind"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "ghcr.io/siderolabs/installer"},
		}},
	}
	g.Expect(mgmt.Client.Create(ctx, policy)).To(Succeed())

	// Installed again, then deleted with --include-crd: refused while the
	// policy exists, done once it is gone.
	install(ctx, t, c, reader)
	err := c.Delete(ctx, clusterctlclient.DeleteOptions{Kubeconfig: kubeconfig, AddonProviders: []string{"tollgate"}, IncludeCRDs: true})
	g.Expect(err).To(MatchError(ContainSubstring("Please delete these objects first before running clusterctl delete with --include-crd")))
	g.Expect(installed(ctx, g, reader)).To(ContainElement("tollgate"), "a refused delete deletes nothing")
	g.Expect(mgmt.Client.Delete(ctx, policy)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	g.Expect(c.Delete(ctx, clusterctlclient.DeleteOptions{Kubeconfig: kubeconfig, AddonProviders: []string{"tollgate"}, IncludeCRDs: true})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tollgateCRDs(ctx, g, reader)).To(BeEmpty())
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), "--include-crd deletes the CRDs")
	g.Expect(installed(ctx, g, reader)).NotTo(ContainElement("tollgate"))
}

// inventoryReader is a client of the management cluster that reads
// clusterctl's inventory and CRDs.
func inventoryReader(t *testing.T) client.Client {
	t.Helper()
	scheme := envtest.NewScheme()
	g := NewWithT(t)
	g.Expect(clusterctlv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	reader, err := client.New(mgmt.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return reader
}

// install installs, as the user does, what is not installed yet: CAPI
// core's provider (clusterctl init --core ... --bootstrap - --control-plane
// -), then Tollgate (clusterctl init --addon tollgate), so that the test
// runs alone or after TestInitAndUpgradePlan.
func install(ctx context.Context, t *testing.T, c clusterctlclient.Client, reader client.Reader) {
	t.Helper()
	g := NewWithT(t)
	providers := installed(ctx, g, reader)
	if !slices.Contains(providers, "cluster-api") {
		finishNamespaceDeletion(t, "cert-manager-test")
		_, err := c.Init(ctx, clusterctlclient.InitOptions{
			Kubeconfig: kubeconfig, CoreProvider: "cluster-api:" + repo.capiVersion,
			BootstrapProviders: []string{clusterctlclient.NoopProvider}, ControlPlaneProviders: []string{clusterctlclient.NoopProvider},
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
	if !slices.Contains(providers, "tollgate") {
		finishNamespaceDeletion(t, "cert-manager-test")
		_, err := c.Init(ctx, clusterctlclient.InitOptions{Kubeconfig: kubeconfig, AddonProviders: []string{"tollgate"}})
		g.Expect(err).NotTo(HaveOccurred())
	}
	finishNamespaceDeletion(t, "cert-manager-test")
	g.Expect(installed(ctx, g, reader)).To(ContainElements("cluster-api", "tollgate"))
}

// installed lists the providers of clusterctl's inventory.
func installed(ctx context.Context, g Gomega, reader client.Reader) []string {
	inventory := &clusterctlv1.ProviderList{}
	if err := reader.List(ctx, inventory); err != nil && !meta.IsNoMatchError(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	var providers []string
	for _, p := range inventory.Items {
		providers = append(providers, p.ProviderName)
	}
	return providers
}

// tollgateCRDs lists the names of the CRDs of upgrade.tollgate.dev.
func tollgateCRDs(ctx context.Context, g Gomega, reader client.Reader) []string {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	g.Expect(reader.List(ctx, crds)).To(Succeed())
	var found []string
	for _, crd := range crds.Items {
		if crd.Spec.Group == upgradev1.GroupVersion.Group {
			found = append(found, crd.Name)
		}
	}
	return found
}

// names returns the names of objects.
func names[T any, PT interface {
	*T
	client.Object
}](objects []T) []string {
	var out []string
	for i := range objects {
		out = append(out, PT(&objects[i]).GetName())
	}
	return out
}
