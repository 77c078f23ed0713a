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

package manifests_test

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/version"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/webhooks"
)

const (
	// systemNamespace and prefix are what config/default deploys into.
	systemNamespace = "tollgate-system"
	prefix          = "tollgate-"
	// providerLabel is the label clusterctl and CAPI's Tiltfile find a
	// provider's objects by.
	providerLabel = "cluster.x-k8s.io/provider"
	providerName  = "addon-tollgate"
	// managerImage is the image name of the manager, as tilt-provider.yaml
	// and `make release-manifests` know it.
	managerImage = "ghcr.io/tollgate-dev/tollgate-controller"
	fieldOwner   = client.FieldOwner("tollgate-manifests-test")
)

var (
	mgmt *envtest.Management
	// talosCRDs is the folder of the Talos CAPI providers' CRDs, empty when
	// it is absent.
	talosCRDs string
)

func TestMain(m *testing.M) {
	envtest.ExitWithoutAssets("manifests suite")
	var opts []envtest.ManagementOption
	dir := filepath.Join(envtest.RepoRoot(), "..", "shared", "testdata", "talos-capi-crds")
	if _, err := os.Stat(dir); err == nil {
		talosCRDs = dir
		opts = append(opts, envtest.WithCRDDirectories(dir))
	}
	var err error
	mgmt, err = envtest.StartManagement(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the management control plane: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = mgmt.Stop()
	os.Exit(code)
}

// build renders the kustomization in dir, relative to the repository root,
// as `kustomize build` does.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(envtest.RepoRoot(), dir))
	if err != nil {
		t.Fatalf("Building %s: %v", dir, err)
	}
	objs := make([]*unstructured.Unstructured, 0, m.Size())
	for _, r := range m.Resources() {
		// Through JSON, so that numbers are JSON numbers (int64, float64).
		raw, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("Reading a resource of %s: %v", dir, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatalf("Reading a resource of %s: %v", dir, err)
		}
		objs = append(objs, u)
	}
	return objs
}

// kustomizations lists every folder of config/ and templates/ with a
// kustomization.yaml, relative to the repository root.
func kustomizations(t *testing.T) []string {
	t.Helper()
	root := envtest.RepoRoot()
	var dirs []string
	for _, top := range []string{"config", "templates"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
				return err
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			dirs = append(dirs, rel)
			return err
		})
		if err != nil {
			t.Fatalf("Listing the kustomizations of %s: %v", top, err)
		}
	}
	return dirs
}

// dryRunApply server-side applies objs with dryRun=All, after creating the
// namespaces they live in (for real: a dry run into a missing namespace
// fails). cert-manager's kinds are skipped: envtest has no cert-manager.
func dryRunApply(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	// Namespaces of objs first, with their labels (Pod Security).
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			ensureNamespace(ctx, t, o.GetName(), o.GetLabels())
		}
	}
	for _, o := range objs {
		if o.GetNamespace() != "" {
			ensureNamespace(ctx, t, o.GetNamespace(), nil)
		}
	}
	applied := 0
	for _, o := range objs {
		if o.GroupVersionKind().Group == "cert-manager.io" {
			continue
		}
		err := mgmt.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership, client.DryRunAll)
		g.Expect(err).NotTo(HaveOccurred(), "dry-run applying %s %s", o.GetKind(), client.ObjectKeyFromObject(o))
		applied++
	}
	g.Expect(applied).To(BeNumerically(">", 0), "nothing to apply")
}

func ensureNamespace(ctx context.Context, t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := mgmt.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Creating Namespace %s: %v", name, err)
	}
}

// find returns the only object of kind named name in objs.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into kruntime.Object) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatalf("Converting %s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("No %s %s among the %d rendered objects", kind, name, len(objs))
}

func ofKind[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var out []*T
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, v); err != nil {
			t.Fatalf("Converting %s %s: %v", kind, o.GetName(), err)
		}
		out = append(out, v)
	}
	return out
}

// TestEveryKustomizationAppliesCleanly renders every kustomization of
// config/ and templates/ and dry-run applies what it renders.
func TestEveryKustomizationAppliesCleanly(t *testing.T) {
	dirs := kustomizations(t)
	for _, want := range []string{"config/default", "config/crd", "config/rbac", "config/manager", "config/webhook", "config/certmanager", "config/extension", "templates/policies", "templates/policies/workload"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("%s has no kustomization.yaml", want)
		}
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			if strings.HasPrefix(dir, "config/") && dir != "config/default" {
				// The bases keep kubebuilder's placeholder namespace
				// "system"; config/default, applied below, holds every
				// object they render.
				return
			}
			if strings.HasPrefix(dir, "templates/") {
				// The examples take the namespace of the Clusters (kubectl -n).
				for _, o := range objs {
					namespaced, err := mgmt.Client.IsObjectNamespaced(o)
					if err != nil {
						t.Fatalf("Finding the scope of %s: %v", o.GetKind(), err)
					}
					if namespaced && o.GetNamespace() == "" {
						o.SetNamespace("examples")
					}
				}
			}
			dryRunApply(t.Context(), t, objs)
		})
	}
}

// TestDefaultIsConsistent checks what clusterctl installs: every object in
// tollgate-system (or cluster-scoped), named tollgate-*, labelled as the
// provider, and the cross-references between config/ folders.
func TestDefaultIsConsistent(t *testing.T) {
	g := NewWithT(t)
	objs := build(t, "config/default")
	kinds := sets.New[string]()
	for _, o := range objs {
		kinds.Insert(o.GetKind())
		g.Expect(o.GetLabels()).To(HaveKeyWithValue(providerLabel, providerName), "%s %s", o.GetKind(), o.GetName())
		if o.GetKind() != "CustomResourceDefinition" {
			g.Expect(o.GetName()).To(HavePrefix(prefix), "%s %s", o.GetKind(), o.GetName())
		}
		if o.GetNamespace() != "" {
			g.Expect(o.GetNamespace()).To(Equal(systemNamespace), "%s %s", o.GetKind(), o.GetName())
		}
		if o.GetKind() == "CustomResourceDefinition" {
			g.Expect(o.GetLabels()).To(HaveKeyWithValue("cluster.x-k8s.io/v1beta2", "v1alpha1"), "CRD %s carries no contract label", o.GetName())
		}
	}
	g.Expect(moveLabelledKinds(t, objs)).To(ConsistOf(tollgateKinds()),
		"every Tollgate CRD must carry %s, or clusterctl move leaves its objects behind", clusterctlv1.ClusterctlMoveLabel)
	g.Expect(sets.List(kinds)).To(ConsistOf("CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole",
		"ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service", "MutatingWebhookConfiguration",
		"ValidatingWebhookConfiguration", "Issuer", "Certificate", "ExtensionConfig"))

	// The webhooks reach the manager through the Service, with the
	// certificate cert-manager issues for the Service's DNS name.
	svc := &corev1.Service{}
	find(t, objs, "Service", prefix+"webhook-service", svc)
	deploy := &appsv1.Deployment{}
	find(t, objs, "Deployment", prefix+"controller-manager", deploy)
	g.Expect(deploy.Spec.Template.Labels).To(gstruct(svc.Spec.Selector), "the webhook Service selects no manager Pod")
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, o := range objs {
			if o.GetKind() != kind {
				continue
			}
			g.Expect(o.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", systemNamespace+"/"+prefix+"serving-cert"))
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			g.Expect(hooks).NotTo(BeEmpty())
			for _, h := range hooks {
				ref, _, _ := unstructured.NestedStringMap(h.(map[string]any), "clientConfig", "service")
				g.Expect(ref).To(HaveKeyWithValue("name", svc.Name))
				g.Expect(ref).To(HaveKeyWithValue("namespace", systemNamespace))
			}
		}
	}
	cert := findUnstructured(t, objs, "Certificate", prefix+"serving-cert")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	g.Expect(dnsNames).To(ContainElement(svc.Name + "." + systemNamespace + ".svc"))
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	findUnstructured(t, objs, "Issuer", issuer)
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	g.Expect(deploy.Spec.Template.Spec.Volumes).To(ContainElement(
		HaveField("VolumeSource.Secret.SecretName", secretName)), "the manager does not mount the serving certificate")

	// tilt-provider.yaml names the image the Deployment runs.
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "tilt-provider.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var tilt []struct {
		Name   string         `json:"name"`
		Config map[string]any `json:"config"`
	}
	g.Expect(yaml.UnmarshalStrict(raw, &tilt)).To(Succeed())
	g.Expect(tilt).To(HaveLen(1))
	g.Expect(tilt[0].Config).To(HaveKeyWithValue("image", managerImage))
	g.Expect(tilt[0].Config).To(HaveKey("live_reload_deps"))
	g.Expect(tilt[0].Config).To(HaveKey("label"))
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(HavePrefix(managerImage + ":"))
}

// moveLabelledKinds returns the kinds of the rendered CRDs that carry
// clusterctl's move label.
func moveLabelledKinds(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var kinds []string
	for _, crd := range ofKind[apiextensionsv1.CustomResourceDefinition](t, objs, "CustomResourceDefinition") {
		if _, ok := crd.Labels[clusterctlv1.ClusterctlMoveLabel]; ok {
			kinds = append(kinds, crd.Spec.Names.Kind)
		}
	}
	return kinds
}

// tollgateKinds returns every kind of Tollgate's API group: the kinds that
// have a List kind.
func tollgateKinds() []string {
	known := envtest.NewScheme().KnownTypes(upgradev1.GroupVersion)
	var kinds []string
	for kind := range known {
		if _, ok := known[kind+"List"]; ok {
			kinds = append(kinds, kind)
		}
	}
	return kinds
}

// gstruct matches a map that holds every key and value of want.
func gstruct(want map[string]string) OmegaMatcher {
	matchers := make([]OmegaMatcher, 0, len(want))
	for k, v := range want {
		matchers = append(matchers, HaveKeyWithValue(k, v))
	}
	return And(matchers...)
}

func findUnstructured(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("No %s %s among the %d rendered objects", kind, name, len(objs))
	return nil
}

// TestManagerDeployment holds the manager to the Pod Security restricted
// profile, both by its fields and by the apiserver's own PodSecurity
// admission, and checks its probes, resources and flags.
func TestManagerDeployment(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	objs := build(t, "config/default")
	deploy := &appsv1.Deployment{}
	find(t, objs, "Deployment", prefix+"controller-manager", deploy)
	ns := &corev1.Namespace{}
	find(t, objs, "Namespace", systemNamespace, ns)
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))

	pod := deploy.Spec.Template.Spec
	g.Expect(pod.SecurityContext).NotTo(BeNil())
	g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.SecurityContext.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)))
	g.Expect(pod.HostNetwork || pod.HostPID || pod.HostIPC).To(BeFalse())
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.SecurityContext).NotTo(BeNil())
	g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(c.SecurityContext.Privileged).To(Or(BeNil(), HaveValue(BeFalse())))
	g.Expect(c.SecurityContext.Capabilities).NotTo(BeNil())
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(c.SecurityContext.Capabilities.Add).To(BeEmpty())
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		g.Expect(c.Resources.Requests).To(HaveKey(r))
		g.Expect(c.Resources.Limits).To(HaveKey(r))
	}

	// The flags of main.go, the ports they open and the probes on them.
	g.Expect(c.Args).To(ContainElements("--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:9440",
		"--webhook-port=9443", "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs", "--extension-port=9444"))
	g.Expect(c.Ports).To(ContainElements(
		And(HaveField("Name", "metrics"), HaveField("ContainerPort", int32(8080))),
		And(HaveField("Name", "healthz"), HaveField("ContainerPort", int32(9440))),
		And(HaveField("Name", "webhook-server"), HaveField("ContainerPort", int32(9443))),
		And(HaveField("Name", "extension"), HaveField("ContainerPort", int32(9444)))))
	g.Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", "/tmp/k8s-webhook-server/serving-certs")))
	g.Expect(c.LivenessProbe).To(HaveValue(HaveField("HTTPGet", HaveValue(And(HaveField("Path", "/healthz"), HaveField("Port.StrVal", "healthz"))))))
	g.Expect(c.ReadinessProbe).To(HaveValue(HaveField("HTTPGet", HaveValue(And(HaveField("Path", "/readyz"), HaveField("Port.StrVal", "healthz"))))))

	// The webhooks let only the controller change a TalosUpgrade's plan; by
	// default main.go knows the controller by this service account.
	g.Expect("system:serviceaccount:" + deploy.Namespace + ":" + pod.ServiceAccountName).To(Equal(webhooks.DefaultControllerUsername))
	find(t, objs, "ServiceAccount", pod.ServiceAccountName, &corev1.ServiceAccount{})

	// The apiserver's PodSecurity admission enforces the namespace's
	// profile on Pods: a Pod of the manager's template is admitted, and a
	// Pod without a security context is not (so the check is live).
	dryRunApply(ctx, t, objs)
	managerPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: "manager"}, Spec: *pod.DeepCopy()}
	g.Expect(mgmt.Client.Create(ctx, managerPod, client.DryRunAll)).To(Succeed())
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: "bare"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	err := mgmt.Client.Create(ctx, bare, client.DryRunAll)
	g.Expect(err).To(MatchError(ContainSubstring("violates PodSecurity \"restricted")))
}

// providerGroups are the API groups of CAPI's infrastructure, bootstrap
// and control-plane providers, whose kinds are not known in advance: the
// manager reads their InfraMachines, InfraMachine and bootstrap config
// templates and control planes, as CAPI core does, with a wildcard of
// resources and read verbs, and, for the infrastructure and bootstrap
// groups, patch: the in-place update extension asks the providers whether
// they admit CAPI's write of a desired InfraMachine and BootstrapConfig by a
// server-side apply with dryRun=All (internal/inplace, as KubeadmControlPlane
// does since CAPI PR #13640), which needs the patch verb and writes nothing.
var providerGroups = []string{"infrastructure.cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io", "controlplane.cluster.x-k8s.io"}

// TestRBAC checks that the manager's rules use no wildcard (but to read the
// kinds of the providers' groups) and reach Secrets only with get, then asks the apiserver what the manager's service account
// may do once the rendered RBAC is in place.
func TestRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	objs := build(t, "config/default")

	var rules []rbacv1.PolicyRule
	for _, cr := range ofKind[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		rules = append(rules, cr.Rules...)
		if cr.Labels["rbac.authorization.k8s.io/aggregate-to-view"] == "true" {
			for _, r := range cr.Rules {
				g.Expect(r.Verbs).To(ConsistOf("get", "list", "watch"), "ClusterRole %s is aggregated to view but writes", cr.Name)
			}
		}
		for _, r := range cr.Rules {
			if slices.Contains(r.Resources, "secrets") {
				g.Expect(r.Verbs).To(ConsistOf("get"), "ClusterRole %s reaches Secrets with more than get", cr.Name)
			}
		}
	}
	for _, role := range ofKind[rbacv1.Role](t, objs, "Role") {
		rules = append(rules, role.Rules...)
		g.Expect(role.Namespace).To(Equal(systemNamespace))
	}
	g.Expect(rules).NotTo(BeEmpty())
	for _, r := range rules {
		fields := [][]string{r.Verbs, r.APIGroups, r.ResourceNames}
		if slices.Equal(r.Resources, []string{"*"}) {
			g.Expect(providerGroups).To(ContainElements(r.APIGroups), "rule %+v reads every kind of a group that is not a provider's", r)
			if slices.Contains(r.Verbs, "patch") {
				g.Expect(r.APIGroups).To(ConsistOf("infrastructure.cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io"),
					"rule %+v patches the kinds of a group the extension does not dry-run", r)
				g.Expect(r.Verbs).To(ConsistOf("get", "list", "watch", "patch"), "rule %+v does more than read the providers' kinds and dry-run their apply", r)
			} else {
				g.Expect(r.Verbs).To(ConsistOf("get", "list", "watch"), "rule %+v does more than read the providers' kinds", r)
			}
		} else {
			fields = append(fields, r.Resources)
		}
		for _, field := range fields {
			g.Expect(field).NotTo(ContainElement(ContainSubstring("*")), "rule %+v has a wildcard", r)
		}
		g.Expect(r.NonResourceURLs).To(BeEmpty())
	}

	// Put the RBAC in place for real, then ask. The namespace first: the
	// rendered objects are not in the order kubectl would apply them.
	for _, o := range ofKind[corev1.Namespace](t, objs, "Namespace") {
		ensureNamespace(ctx, t, o.Name, o.Labels)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace":
			ensureNamespace(ctx, t, o.GetName(), o.GetLabels())
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			g.Expect(mgmt.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership)).To(Succeed())
		}
	}
	type access struct {
		namespace, group, resource, verb string
		allowed                          bool
	}
	for _, a := range []access{
		// The code reads <cluster>-kubeconfig, <cluster>-talosconfig and
		// pull Secrets one by one, in any namespace with Clusters.
		{"fleet", "", "secrets", "get", true},
		{"fleet", "", "secrets", "list", false},
		{"fleet", "", "secrets", "watch", false},
		{"", "", "secrets", "list", false},
		{"", "", "secrets", "watch", false},
		{"fleet", "", "secrets", "create", false},
		{"fleet", "", "secrets", "update", false},
		{"", "cluster.x-k8s.io", "clusters", "watch", true},
		{"fleet", "cluster.x-k8s.io", "clusters", "update", false},
		{"fleet", "cluster.x-k8s.io", "machines", "patch", true},
		{"fleet", "cluster.x-k8s.io", "machines", "delete", false},
		{"fleet", "upgrade.tollgate.dev", "talosupgrades", "create", true},
		{"fleet", "events.k8s.io", "events", "create", true},
		{"fleet", "", "pods", "list", false},
		{"", "", "nodes", "list", false},
		// Leader election, in the manager's namespace only.
		{systemNamespace, "coordination.k8s.io", "leases", "update", true},
		{"fleet", "coordination.k8s.io", "leases", "create", false},
	} {
		resource := strings.TrimSuffix(a.resource+"."+a.group, ".")
		t.Run(fmt.Sprintf("%s %s in %q", a.verb, resource, a.namespace), func(t *testing.T) {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   webhooks.DefaultControllerUsername,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNamespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: a.namespace, Group: a.group, Resource: a.resource, Verb: a.verb,
				},
			}}
			g := NewWithT(t)
			g.Expect(mgmt.Client.Create(ctx, sar)).To(Succeed())
			g.Expect(sar.Status.Allowed).To(Equal(a.allowed), "allowed=%v, reason %q", sar.Status.Allowed, sar.Status.Reason)
		})
	}
}

// templateVars are the values the tests give the cluster template's
// variables, as clusterctl generate cluster would.
var templateVars = map[string]string{
	"CLUSTER_NAME":                         "prod-eu-1",
	"NAMESPACE":                            "fleet",
	"KUBERNETES_VERSION":                   "v1.35.0",
	"CONTROL_PLANE_MACHINE_COUNT":          "3",
	"WORKER_MACHINE_COUNT":                 "2",
	"TALOS_VERSION":                        "v1.12",
	"INFRASTRUCTURE_CLUSTER_KIND":          "MetalCluster",
	"INFRASTRUCTURE_MACHINE_TEMPLATE_KIND": "MetalMachineTemplate",
}

// TestClusterTemplate processes the cluster template as clusterctl
// generate cluster does and dry-run applies the result against the Talos
// providers' CRDs.
func TestClusterTemplate(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "templates", "cluster-template-talos.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	p := yamlprocessor.NewSimpleProcessor()

	// The variables without a default are exactly those the tests set, and
	// the header documents every variable.
	vars, err := p.GetVariableMap(raw)
	g.Expect(err).NotTo(HaveOccurred())
	var required []string
	for name, def := range vars {
		if def == nil {
			required = append(required, name)
		}
		g.Expect(string(raw)).To(MatchRegexp(`(?m)^#.*\b%s\b`, name), "the header does not document %s", name)
	}
	g.Expect(required).To(ConsistOf(slices.Collect(maps.Keys(templateVars))))

	_, err = p.Process(raw, func(string) (string, error) { return "", fmt.Errorf("unset") })
	g.Expect(err).To(MatchError(ContainSubstring("CLUSTER_NAME")), "a missing variable must fail as in clusterctl")
	out, err := p.Process(raw, func(name string) (string, error) {
		if v, ok := templateVars[name]; ok {
			return v, nil
		}
		return "", fmt.Errorf("variable %s is not set", name)
	})
	g.Expect(err).NotTo(HaveOccurred())
	list, err := utilyaml.ToUnstructured(out)
	g.Expect(err).NotTo(HaveOccurred())
	objs := make([]*unstructured.Unstructured, 0, len(list))
	kinds := make([]string, 0, len(list))
	for i := range list {
		objs = append(objs, &list[i])
		kinds = append(kinds, list[i].GetKind())
		g.Expect(list[i].GetNamespace()).To(Equal(templateVars["NAMESPACE"]))
	}
	g.Expect(kinds).To(ConsistOf("Cluster", "TalosControlPlane", "MachineDeployment", "TalosConfigTemplate"))

	// The Cluster opts in to the example policy of templates/policies.
	cluster := findUnstructured(t, objs, "Cluster", templateVars["CLUSTER_NAME"])
	policy := cluster.GetLabels()[upgradev1.PolicyLabel]
	g.Expect(policy).To(Equal("talos-upgrade"))
	find(t, build(t, "templates/policies"), "TalosUpgradePolicy", policy, &upgradev1.TalosUpgradePolicy{})

	if talosCRDs == "" {
		t.Skip("NOT CHECKED: the dry-run apply of templates/cluster-template-talos.yaml (its Cluster, MachineDeployment, TalosControlPlane and TalosConfigTemplate against the apiserver's schemas), " +
			"so a field the Talos providers' CRDs reject goes unnoticed: those CRDs are read from ../shared/testdata/talos-capi-crds beside the repository " +
			"(the providers' Go modules are not served here), and that folder is absent")
	}
	dryRunApply(t.Context(), t, objs)
}

// TestExamplePolicies dry-run applies the example policies and checks, runs
// the policies through Tollgate's own webhooks, checks that every Job they
// run has its service account in templates/policies/workload and would be
// admitted to a namespace that enforces the restricted profile.
func TestExamplePolicies(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	const namespace = "policies"
	objs := build(t, "templates/policies")
	for _, o := range objs {
		g.Expect(o.GetNamespace()).To(BeEmpty(), "%s %s: the examples go to the namespace of the Clusters", o.GetKind(), o.GetName())
		o.SetNamespace(namespace)
	}
	dryRunApply(ctx, t, objs)
	workload := build(t, "templates/policies/workload")
	ensureNamespace(ctx, t, "rook-ceph", nil)
	dryRunApply(ctx, t, workload)

	checks := ofKind[upgradev1.ClusterHealthCheck](t, objs, "ClusterHealthCheck")
	policies := ofKind[upgradev1.TalosUpgradePolicy](t, objs, "TalosUpgradePolicy")
	g.Expect(checks).NotTo(BeEmpty())
	g.Expect(policies).NotTo(BeEmpty())
	for _, o := range objs {
		if o.GetKind() == "ClusterHealthCheck" {
			g.Expect(mgmt.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership)).To(Succeed())
		}
	}

	serviceAccounts := sets.New[string]()
	for _, sa := range ofKind[corev1.ServiceAccount](t, workload, "ServiceAccount") {
		serviceAccounts.Insert(sa.Namespace + "/" + sa.Name)
	}
	ensureNamespace(ctx, t, "restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	jobPodAdmitted := func(what string, tmpl *upgradev1.ClusterHealthCheckSpec) {
		t.Helper()
		spec := tmpl.Template.Spec.Template.Spec
		ns := tmpl.Template.Namespace
		g.Expect(serviceAccounts.Has(ns+"/"+spec.ServiceAccountName)).To(BeTrue(),
			"%s runs as %s/%s, which templates/policies/workload does not create", what, ns, spec.ServiceAccountName)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "restricted", Name: "job"}, Spec: *spec.DeepCopy()}
		g.Expect(mgmt.Client.Create(ctx, pod, client.DryRunAll)).To(Succeed(), "the Pod of %s", what)
	}
	for _, c := range checks {
		jobPodAdmitted("ClusterHealthCheck "+c.Name, &c.Spec)
		hw := &webhooks.ClusterHealthCheck{}
		g.Expect(hw.Default(ctx, c)).To(Succeed())
		warnings, err := hw.ValidateCreate(ctx, c)
		g.Expect(err).NotTo(HaveOccurred(), "ClusterHealthCheck %s", c.Name)
		g.Expect(warnings).To(BeEmpty(), "ClusterHealthCheck %s", c.Name)
	}
	indexed, err := mgmt.IndexedClient(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range policies {
		p.Namespace = namespace
		for _, h := range p.Spec.Hooks {
			jobPodAdmitted(fmt.Sprintf("hook %s of TalosUpgradePolicy %s", h.Name, p.Name), &upgradev1.ClusterHealthCheckSpec{Template: h.Template})
		}
		pw := &webhooks.TalosUpgradePolicy{Client: indexed}
		g.Expect(pw.Default(ctx, p)).To(Succeed())
		warnings, err := pw.ValidateCreate(ctx, p)
		g.Expect(err).NotTo(HaveOccurred(), "TalosUpgradePolicy %s", p.Name)
		g.Expect(warnings).To(BeEmpty(), "TalosUpgradePolicy %s", p.Name)
	}
}

// TestImageSources checks that the Dockerfile copies, and Tilt live-reloads
// on, every folder of the module that the manager is built from.
func TestImageSources(t *testing.T) {
	g := NewWithT(t)
	root := envtest.RepoRoot()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".")
	cmd.Dir = root
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "go list -deps")
	const module = "github.com/tollgate-dev/tollgate/"
	dirs := sets.New[string]()
	for _, pkg := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(pkg, module); ok {
			dirs.Insert(strings.SplitN(rest, "/", 2)[0])
		}
	}
	g.Expect(dirs.UnsortedList()).NotTo(BeEmpty())

	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := os.ReadFile(filepath.Join(root, "tilt-provider.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var tilt []struct {
		Config struct {
			LiveReloadDeps []string `json:"live_reload_deps"`
		} `json:"config"`
	}
	g.Expect(yaml.Unmarshal(raw, &tilt)).To(Succeed())
	g.Expect(tilt).To(HaveLen(1))
	for _, dir := range sets.List(dirs) {
		g.Expect(string(dockerfile)).To(MatchRegexp(`(?m)^COPY %s/ %s/$`, dir, dir), "the Dockerfile does not copy %s/", dir)
		g.Expect(tilt[0].Config.LiveReloadDeps).To(ContainElement(dir), "Tilt does not reload on %s/", dir)
	}
}

// TestClusterctlMetadata checks that clusterctl can read metadata.yaml, that
// it names the CAPI contract Tollgate is built against, and that
// clusterctl-settings.json matches what `make release-manifests` writes.
func TestClusterctlMetadata(t *testing.T) {
	g := NewWithT(t)
	root := envtest.RepoRoot()
	raw, err := os.ReadFile(filepath.Join(root, "metadata.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	md := &clusterctlv1.Metadata{}
	g.Expect(yaml.UnmarshalStrict(raw, md)).To(Succeed())
	g.Expect(md.GroupVersionKind()).To(Equal(clusterctlv1.GroupVersion.WithKind("Metadata")))
	g.Expect(md.ReleaseSeries).NotTo(BeEmpty())
	for _, rs := range md.ReleaseSeries {
		g.Expect(rs.Contract).To(Equal(clusterv1.GroupVersion.Version), "release series %d.%d", rs.Major, rs.Minor)
	}

	raw, err = os.ReadFile(filepath.Join(root, "clusterctl-settings.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var settings struct {
		Name   string `json:"name"`
		Config struct {
			ComponentsFile string `json:"componentsFile"`
			NextVersion    string `json:"nextVersion"`
		} `json:"config"`
	}
	g.Expect(yaml.UnmarshalStrict(raw, &settings)).To(Succeed())
	g.Expect(settings.Name).To(Equal(providerName))
	g.Expect(settings.Config.ComponentsFile).To(Equal("addon-components.yaml"))
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(makefile)).To(ContainSubstring("/" + settings.Config.ComponentsFile + " config/default"))
	// clusterctl refuses a version that no release series covers.
	next, err := version.ParseSemantic(settings.Config.NextVersion)
	g.Expect(err).NotTo(HaveOccurred(), "nextVersion %q", settings.Config.NextVersion)
	g.Expect(md.GetReleaseSeriesForVersion(next)).NotTo(BeNil(), "no release series for %s", settings.Config.NextVersion)
}
