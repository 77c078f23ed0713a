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
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctllog "sigs.k8s.io/cluster-api/cmd/clusterctl/log"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/integration/clusterctl"
)

var (
	// mgmt is the management cluster clusterctl installs into.
	mgmt *envtest.Management
	// kubeconfig is an administrator kubeconfig of mgmt: the user's.
	kubeconfig clusterctlclient.Kubeconfig
	// repo is the local provider repository with Tollgate's release.
	repo *repository
	// talosCRDs is the folder of the Talos CAPI providers' CRDs, empty
	// when it is absent.
	talosCRDs string
	// clusterctlLog holds what clusterctl logs.
	clusterctlLog logBuffer
)

func TestMain(m *testing.M) {
	envtest.ExitWithoutAssets("clusterctl suite")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	clusterctllog.SetLogger(funcr.New(clusterctlLog.add, funcr.Options{Verbosity: 1}))
	dir, err := os.MkdirTemp("", "tollgate-clusterctl-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "Creating a directory: %v\n", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if repo, err = writeRepository(dir); err != nil {
		fmt.Fprintf(os.Stderr, "Writing the local provider repository: %v\n", err)
		return 1
	}

	opts := []envtest.ManagementOption{envtest.WithCRDDirectories(filepath.Join(envtest.RepoRoot(), "test", "integration", "clusterctl", "testdata", "cert-manager"))}
	talos := filepath.Join(envtest.RepoRoot(), "..", "shared", "testdata", "talos-capi-crds")
	if _, err := os.Stat(talos); err == nil {
		talosCRDs = talos
		opts = append(opts, envtest.WithCRDDirectories(talos))
	}
	if mgmt, err = envtest.StartManagement(opts...); err != nil {
		fmt.Fprintf(os.Stderr, "Starting the management control plane: %v\n", err)
		return 1
	}
	defer func() { _ = mgmt.Stop() }()
	user, err := mgmt.AddAdmin("clusterctl-user")
	if err == nil {
		var kc []byte
		if kc, err = user.KubeConfig(); err == nil {
			kubeconfig.Path = filepath.Join(dir, "management.kubeconfig")
			err = os.WriteFile(kubeconfig.Path, kc, 0o600)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "Writing the management kubeconfig: %v\n", err)
		return 1
	}
	return m.Run()
}

// newClient returns clusterctl's client with the repository's
// clusterctl.yaml, as `clusterctl --config` builds it.
func newClient(t *testing.T, configPath string) clusterctlclient.Client {
	t.Helper()
	c, err := clusterctl.NewClient(t.Context(), configPath)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGenerateProvider runs `clusterctl generate provider --addon tollgate`
// on the release: clusterctl finds the release's metadata and its contract
// compatible with its own, no variable to set, the manager image, the
// target namespace, and labels every object as the provider's.
func TestGenerateProvider(t *testing.T) {
	g := NewWithT(t)
	c := newClient(t, repo.config)
	comps, err := c.GenerateProvider(t.Context(), "tollgate", clusterctlv1.AddonProviderType, clusterctlclient.ComponentsOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(comps.Version()).To(Equal(release))
	g.Expect(comps.ManifestLabel()).To(Equal(providerLabel))
	g.Expect(comps.TargetNamespace()).To(Equal(envtest.ManagerNamespace))
	g.Expect(comps.Variables()).To(BeEmpty(), "the release asks for variables nobody sets")
	g.Expect(comps.Images()).To(ConsistOf(image))

	raw, err := os.ReadFile(filepath.Join(repo.root, providerLabel, release, componentsFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(comps.Objs()).To(HaveLen(strings.Count("\n"+string(raw), "\n---\n")+1), "clusterctl dropped objects of the release")
	for _, o := range comps.Objs() {
		g.Expect(o.GetLabels()).To(And(HaveKey(clusterctlv1.ClusterctlLabel), HaveKeyWithValue("cluster.x-k8s.io/provider", providerLabel)),
			"%s %s", o.GetKind(), o.GetName())
		namespaced, err := mgmt.Client.IsObjectNamespaced(&o)
		g.Expect(err).NotTo(HaveOccurred(), "%s is not served by the management cluster", o.GroupVersionKind())
		if namespaced {
			g.Expect(o.GetNamespace()).To(Equal(envtest.ManagerNamespace), "%s %s", o.GetKind(), o.GetName())
		}
	}
	// The release registers Tollgate's Runtime Extension with CAPI core: one
	// ExtensionConfig, pointing at the release's extension Service, with the
	// CA of the Secret cert-manager writes in the manager's namespace.
	// clusterctl gives it that namespace too, as it does to every kind it
	// does not know to be cluster-scoped; the apiserver drops it (see
	// TestInitAndUpgradePlan).
	var extensionConfigs []*runtimev1.ExtensionConfig
	for _, o := range comps.Objs() {
		if o.GroupVersionKind() == runtimev1.GroupVersion.WithKind("ExtensionConfig") {
			ext := &runtimev1.ExtensionConfig{}
			g.Expect(kruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ext)).To(Succeed())
			extensionConfigs = append(extensionConfigs, ext)
		}
	}
	g.Expect(extensionConfigs).To(HaveLen(1), "the release registers no Runtime Extension, or more than one")
	ext := extensionConfigs[0]
	g.Expect(ext.Name).To(Equal(extensionConfigName))
	g.Expect(ext.Annotations).To(HaveKeyWithValue(runtimev1.InjectCAFromSecretAnnotation, envtest.ManagerNamespace+"/webhook-server-cert"))
	g.Expect(ext.Spec.ClientConfig.Service).To(And(HaveField("Namespace", envtest.ManagerNamespace), HaveField("Name", "tollgate-extension-service")))
	g.Expect(comps.Objs()).To(ContainElement(And(HaveField("Object", HaveKeyWithValue("kind", "Service")),
		WithTransform(func(o unstructured.Unstructured) string { return o.GetNamespace() + "/" + o.GetName() }, Equal(envtest.ManagerNamespace+"/tollgate-extension-service")))),
		"the release has no Service %s/tollgate-extension-service", envtest.ManagerNamespace)

	inv := comps.InventoryObject()
	g.Expect(inv.ProviderName).To(Equal("tollgate"))
	g.Expect(inv.Type).To(Equal(string(clusterctlv1.AddonProviderType)))
	g.Expect(inv.Namespace).To(Equal(envtest.ManagerNamespace))

	// The check is clusterctl's: the same release with a contract clusterctl
	// does not implement is refused.
	t.Run("a contract clusterctl does not implement is refused", func(t *testing.T) {
		g := NewWithT(t)
		bad := t.TempDir()
		to := filepath.Join(bad, providerLabel, release)
		g.Expect(copyDir(filepath.Join(repo.root, providerLabel, release), to)).To(Succeed())
		md, err := os.ReadFile(filepath.Join(to, "metadata.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(md)).To(ContainSubstring("contract: v1beta2"))
		g.Expect(os.WriteFile(filepath.Join(to, "metadata.yaml"), []byte(strings.ReplaceAll(string(md), "contract: v1beta2", "contract: v1alpha4")), 0o600)).To(Succeed())
		config := filepath.Join(bad, "clusterctl.yaml")
		g.Expect(os.WriteFile(config, fmt.Appendf(nil, "providers:\n- name: tollgate\n  type: AddonProvider\n  url: file://%s/%s\n", to, componentsFile), 0o600)).To(Succeed())
		_, err = newClient(t, config).GenerateProvider(t.Context(), "tollgate", clusterctlv1.AddonProviderType, clusterctlclient.ComponentsOptions{})
		g.Expect(err).To(MatchError(ContainSubstring("detected v1alpha4 for provider tollgate")))
	})
}

// TestInitAndUpgradePlan installs Tollgate as `clusterctl init --addon
// tollgate` does, into a management cluster whose CAPI core provider
// clusterctl installed first, then reads it back with `clusterctl upgrade
// plan`.
func TestInitAndUpgradePlan(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := newClient(t, repo.config)

	// clusterctl init --core cluster-api --bootstrap - --control-plane -
	_, err := c.Init(ctx, clusterctlclient.InitOptions{
		Kubeconfig: kubeconfig, CoreProvider: "cluster-api:" + repo.capiVersion,
		BootstrapProviders: []string{clusterctlclient.NoopProvider}, ControlPlaneProviders: []string{clusterctlclient.NoopProvider},
	})
	g.Expect(err).NotTo(HaveOccurred())
	// The cert-manager stand-in: its API is there, cert-manager is not.
	g.Expect(clusterctlLog.String()).To(ContainSubstring("Skipping installing cert-manager as it is already installed"))

	finishNamespaceDeletion(t, "cert-manager-test")

	// clusterctl init --addon tollgate
	comps, err := c.Init(ctx, clusterctlclient.InitOptions{Kubeconfig: kubeconfig, AddonProviders: []string{"tollgate"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(comps).To(HaveLen(1))
	g.Expect(comps[0].Version()).To(Equal(release))

	// The inventory lists Tollgate where it was installed.
	scheme := envtest.NewScheme()
	g.Expect(clusterctlv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	reader, err := client.New(mgmt.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	inventory := &clusterctlv1.ProviderList{}
	g.Expect(reader.List(ctx, inventory)).To(Succeed())
	g.Expect(inventory.Items).To(ConsistOf(
		And(HaveField("ProviderName", "cluster-api"), HaveField("Version", repo.capiVersion), HaveField("Namespace", "capi-system")),
		And(HaveField("ProviderName", "tollgate"), HaveField("Type", string(clusterctlv1.AddonProviderType)),
			HaveField("Version", release), HaveField("Namespace", envtest.ManagerNamespace), HaveField("Name", providerLabel)),
	))

	// What clusterctl installed: the manager Deployment with the release's
	// image, Tollgate's CRDs labelled as the provider's, the webhooks with
	// their CA from the manager's namespace.
	deploy := &appsv1.Deployment{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: envtest.ManagerNamespace, Name: "tollgate-controller-manager"}, deploy)).To(Succeed())
	g.Expect(deploy.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", image)))
	g.Expect(deploy.Spec.Template.Spec.ServiceAccountName).To(Equal(envtest.ManagerServiceAccount))
	g.Expect(deploy.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/provider", providerLabel))
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(reader.Get(ctx, client.ObjectKey{Name: "talosupgrades." + upgradev1.GroupVersion.Group}, crd)).To(Succeed())
	g.Expect(crd.Labels).To(And(HaveKey(clusterctlv1.ClusterctlLabel), HaveKeyWithValue("cluster.x-k8s.io/provider", providerLabel),
		HaveKey(clusterctlv1.ClusterctlMoveLabel)))
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(reader.Get(ctx, client.ObjectKey{Name: "tollgate-validating-webhook-configuration"}, vwc)).To(Succeed())
	g.Expect(vwc.Annotations).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", envtest.ManagerNamespace+"/tollgate-serving-cert"))
	g.Expect(vwc.Webhooks).To(HaveEach(HaveField("ClientConfig.Service.Namespace", envtest.ManagerNamespace)))
	sa := &corev1.ServiceAccount{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: envtest.ManagerNamespace, Name: envtest.ManagerServiceAccount}, sa)).To(Succeed())
	// The ExtensionConfig is created cluster-scoped, as the provider's.
	ext := &unstructured.Unstructured{}
	ext.SetGroupVersionKind(runtimev1.GroupVersion.WithKind("ExtensionConfig"))
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Name: extensionConfigName}, ext)).To(Succeed())
	g.Expect(ext.GetNamespace()).To(BeEmpty())
	g.Expect(ext.GetLabels()).To(HaveKeyWithValue("cluster.x-k8s.io/provider", providerLabel))

	// A second instance (another version; the same one is skipped) is
	// refused, as clusterctl refuses it.
	_, err = c.Init(ctx, clusterctlclient.InitOptions{Kubeconfig: kubeconfig, AddonProviders: []string{"tollgate:" + nextRelease}})
	g.Expect(err).To(MatchError(ContainSubstring("there is already an instance of the \"addon-tollgate\" provider")))

	// clusterctl upgrade plan: Tollgate can go to the next release of its
	// series, in the same contract; CAPI has nowhere to go.
	plans, err := c.PlanUpgrade(ctx, clusterctlclient.PlanUpgradeOptions{Kubeconfig: kubeconfig})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plans).To(ContainElement(And(
		HaveField("Contract", "v1beta2"),
		HaveField("Providers", ConsistOf(
			And(HaveField("Provider.ProviderName", "cluster-api"), HaveField("NextVersion", "")),
			And(HaveField("Provider.ProviderName", "tollgate"), HaveField("Provider.Version", release), HaveField("NextVersion", nextRelease)),
		)),
	)), "plans: %+v", plans)
	certManager, err := c.PlanCertManagerUpgrade(ctx, clusterctlclient.PlanUpgradeOptions{Kubeconfig: kubeconfig})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(certManager.ExternallyManaged).To(BeTrue(), "clusterctl installed no cert-manager, so it manages none")
}

// TestGenerateCluster runs `clusterctl generate cluster --from
// templates/cluster-template-talos.yaml` with the variables its header
// lists and applies the result server-side, against the Talos providers'
// CRDs.
func TestGenerateCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := newClient(t, repo.config)
	path := filepath.Join(envtest.RepoRoot(), "templates", "cluster-template-talos.yaml")
	raw, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	source := &clusterctlclient.URLSourceOptions{URL: path}

	// clusterctl generate cluster --list-variables: exactly the header's.
	listed, err := c.GetClusterTemplate(ctx, clusterctlclient.GetClusterTemplateOptions{
		Kubeconfig: kubeconfig, URLSource: source, ClusterName: "any", ListVariablesOnly: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	header := headerVariables(t, string(raw))
	g.Expect(listed.Variables()).To(ConsistOf(header))

	// The flags set five; of the others, those without a default are set as
	// the header's example does.
	flags := []string{"CLUSTER_NAME", "NAMESPACE", "KUBERNETES_VERSION", "CONTROL_PLANE_MACHINE_COUNT", "WORKER_MACHINE_COUNT"}
	values := map[string]string{
		"TALOS_VERSION": "v1.12", "INFRASTRUCTURE_CLUSTER_KIND": "MetalCluster", "INFRASTRUCTURE_MACHINE_TEMPLATE_KIND": "MetalMachineTemplate",
	}
	var required []string
	for name, def := range listed.VariableMap() {
		if def == nil && !slices.Contains(flags, name) {
			required = append(required, name)
		}
	}
	g.Expect(required).To(ConsistOf(slices.Collect(maps.Keys(values))))

	options := clusterctlclient.GetClusterTemplateOptions{
		Kubeconfig: kubeconfig, URLSource: source, ClusterName: "prod-eu-1", TargetNamespace: "fleet",
		KubernetesVersion: "v1.35.0", ControlPlaneMachineCount: ptr.To[int64](3), WorkerMachineCount: ptr.To[int64](3),
	}
	_, err = c.GetClusterTemplate(ctx, options)
	g.Expect(err).To(MatchError(ContainSubstring("TALOS_VERSION")), "a variable left unset must fail, as in clusterctl")
	for name, v := range values {
		t.Setenv(name, v)
	}
	tmpl, err := c.GetClusterTemplate(ctx, options)
	g.Expect(err).NotTo(HaveOccurred())
	kinds := []string{}
	for _, o := range tmpl.Objs() {
		kinds = append(kinds, o.GetKind())
		g.Expect(o.GetNamespace()).To(Equal("fleet"))
	}
	g.Expect(kinds).To(ConsistOf("Cluster", "TalosControlPlane", "MachineDeployment", "TalosConfigTemplate"))

	if talosCRDs == "" {
		t.Skip("NOT CHECKED: the server-side apply of what `clusterctl generate cluster` made of templates/cluster-template-talos.yaml (against the Talos providers' schemas) " +
			"and its read-back (the Cluster's policy label, the TalosControlPlane's replicas from the flags): the Talos providers' CRDs are read from " +
			"../shared/testdata/talos-capi-crds beside the repository (the providers' Go modules are not served here), and that folder is absent")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
	if err := mgmt.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range tmpl.Objs() {
		g.Expect(mgmt.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("kubectl"))).
			To(Succeed(), "applying %s %s", o.GetKind(), o.GetName())
	}
	// Read back: the Cluster opts in to the default policy, the control
	// plane has the machine count of the flags.
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(tmpl.Objs()[slices.Index(kinds, "Cluster")].GroupVersionKind())
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "prod-eu-1"}, cluster)).To(Succeed())
	g.Expect(cluster.GetLabels()).To(HaveKeyWithValue(upgradev1.PolicyLabel, "talos-upgrade"))
	tcp := &unstructured.Unstructured{}
	tcp.SetGroupVersionKind(tmpl.Objs()[slices.Index(kinds, "TalosControlPlane")].GroupVersionKind())
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "prod-eu-1-control-plane"}, tcp)).To(Succeed())
	replicas, _, err := unstructured.NestedInt64(tcp.Object, "spec", "replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replicas).To(Equal(int64(3)))
}

// finishNamespaceDeletion does what the namespace controller of
// kube-controller-manager, which envtest does not run, does to a deleted
// Namespace once it is empty: it removes its finalizer, and the Namespace
// goes. clusterctl's cert-manager check creates and deletes the Namespace
// cert-manager-test each time it runs; without this, the next check fails
// in a Namespace that is terminating forever.
func finishNamespaceDeletion(t *testing.T, name string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(mgmt.Config)
	g.Expect(err).NotTo(HaveOccurred())
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ns.DeletionTimestamp).NotTo(BeNil(), "Namespace %s is not being deleted", name)
	ns.Spec.Finalizers = nil
	_, err = cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	}, 10*time.Second, 50*time.Millisecond).Should(Satisfy(apierrors.IsNotFound))
}

// headerVariables returns the variables the template's header lists: the
// names at the start of each line after "# Variables".
func headerVariables(t *testing.T, template string) []string {
	t.Helper()
	_, after, ok := strings.Cut(template, "\n# Variables")
	if !ok {
		t.Fatal("the template's header has no Variables section")
	}
	var names []string
	for _, line := range strings.Split(after, "\n")[1:] {
		rest, ok := strings.CutPrefix(line, "#   ")
		if !ok {
			break
		}
		first, _, _ := strings.Cut(strings.TrimSpace(rest), "  ")
		for _, name := range strings.Split(first, ",") {
			if name = strings.TrimSpace(name); name != "" {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("the template's header lists no variable")
	}
	return names
}

// logBuffer keeps clusterctl's log lines.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(prefix, args string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, prefix+" "+args)
	fmt.Fprintln(os.Stderr, "clusterctl:", prefix, args)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}
