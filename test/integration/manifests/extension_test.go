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
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const (
	// extensionPortName is the manager's container port of the Runtime
	// Extension server (a port name has at most 15 characters).
	extensionPortName = "extension"
)

// TestExtensionConfig checks how CAPI core reaches Tollgate's Runtime
// Extension once config/default is installed: one cluster-scoped
// ExtensionConfig, served by the manager's extension port through the
// extension Service, with the CA of the certificate that port serves, for
// the opted-in namespaces only; and that CAPI's CRD schema accepts it.
func TestExtensionConfig(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	objs := build(t, "config/default")

	var rendered []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind() == runtimev1.GroupVersion.WithKind("ExtensionConfig") {
			rendered = append(rendered, o)
		}
	}
	g.Expect(rendered).To(HaveLen(1), "config/default must register exactly one Runtime Extension: CAPI calls one in-place update extension only")
	g.Expect(rendered[0].GetNamespace()).To(BeEmpty(), "an ExtensionConfig is cluster-scoped; kustomize's namespace transformer gave it a namespace")
	namespaced, err := mgmt.Client.IsObjectNamespaced(rendered[0])
	g.Expect(err).NotTo(HaveOccurred(), "the apiserver does not serve ExtensionConfig: CAPI's CRDs are missing")
	g.Expect(namespaced).To(BeFalse())
	ext := ofKind[runtimev1.ExtensionConfig](t, rendered, "ExtensionConfig")[0]
	// CAPI's admission refuses a name that is not a DNS-1123 label.
	g.Expect(validation.IsDNS1123Label(ext.Name)).To(BeEmpty())

	// Only the namespaces that opt in are served.
	g.Expect(ext.Spec.NamespaceSelector).To(HaveValue(Equal(metav1.LabelSelector{MatchLabels: map[string]string{upgradev1.InPlaceUpdatesNamespaceLabel: upgradev1.InPlaceUpdatesEnabled}})))

	// The Service it names exists, selects the manager's Pods, and its port
	// leads to the manager's extension port, which --extension-port serves.
	ref := ext.Spec.ClientConfig.Service
	g.Expect(ext.Spec.ClientConfig.URL).To(BeEmpty())
	g.Expect(ref.Namespace).To(Equal(systemNamespace))
	g.Expect(ref.Path).To(BeEmpty())
	svc := &corev1.Service{}
	find(t, objs, "Service", ref.Name, svc)
	g.Expect(svc.Namespace).To(Equal(ref.Namespace))
	deploy := &appsv1.Deployment{}
	find(t, objs, "Deployment", prefix+"controller-manager", deploy)
	g.Expect(deploy.Spec.Template.Labels).To(gstruct(svc.Spec.Selector), "the extension Service selects no manager Pod")
	port := int32(443) // CAPI's default.
	if ref.Port != nil {
		port = *ref.Port
	}
	var target *intstr.IntOrString
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			target = &p.TargetPort
		}
	}
	g.Expect(target).NotTo(BeNil(), "Service %s has no port %d", svc.Name, port)
	manager := deploy.Spec.Template.Spec.Containers[0]
	var containerPort *corev1.ContainerPort
	for i, p := range manager.Ports {
		if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
			containerPort = &manager.Ports[i]
		}
	}
	g.Expect(containerPort).NotTo(BeNil(), "port %d of Service %s targets %s, which the manager does not expose", port, svc.Name, target)
	g.Expect(containerPort.Name).To(Equal(extensionPortName))
	g.Expect(manager.Args).To(ContainElement("--extension-port="+strconv.Itoa(int(containerPort.ContainerPort))),
		"the manager does not serve the extension on its %s port", extensionPortName)

	// CAPI injects the CA of the Secret cert-manager writes for the serving
	// certificate, and the manager serves the extension with that
	// certificate, issued for the extension Service's DNS names.
	cert := findUnstructured(t, objs, "Certificate", prefix+"serving-cert")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	g.Expect(ext.Annotations).To(HaveKeyWithValue(runtimev1.InjectCAFromSecretAnnotation, cert.GetNamespace()+"/"+secretName))
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	g.Expect(dnsNames).To(ContainElements(svc.Name+"."+svc.Namespace+".svc", svc.Name+"."+svc.Namespace+".svc.cluster.local"))
	certDir := ""
	for _, a := range manager.Args {
		if v, ok := strings.CutPrefix(a, "--webhook-cert-dir="); ok {
			certDir = v
		}
	}
	g.Expect(certDir).NotTo(BeEmpty(), "the manager has no --webhook-cert-dir, the certificate directory of its extension server")
	var certVolume string
	for _, m := range manager.VolumeMounts {
		if m.MountPath == certDir {
			certVolume = m.Name
		}
	}
	g.Expect(deploy.Spec.Template.Spec.Volumes).To(ContainElement(And(HaveField("Name", certVolume),
		HaveField("VolumeSource.Secret.SecretName", secretName))), "the manager does not serve the certificate whose CA CAPI injects")

	// CAPI's CRD schema accepts it, and rejects a broken copy (so the check
	// is live).
	g.Expect(mgmt.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(rendered[0].DeepCopy()), fieldOwner, client.ForceOwnership, client.DryRunAll)).To(Succeed())
	broken := rendered[0].DeepCopy()
	g.Expect(unstructured.SetNestedField(broken.Object, "", "spec", "clientConfig", "service", "name")).To(Succeed())
	err = mgmt.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(broken), fieldOwner, client.ForceOwnership, client.DryRunAll)
	g.Expect(err).To(MatchError(ContainSubstring("spec.clientConfig.service.name")))
}
