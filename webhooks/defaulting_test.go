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

package webhooks

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestDefaultingWebhookAdmitsWhatDoesNotDecode: a policy whose reboot.after
// is a duration is let through unchanged, for the schema to refuse it naming
// the field; one that decodes is defaulted.
func TestDefaultingWebhookAdmitsWhatDoesNotDecode(t *testing.T) {
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(upgradev1.AddToScheme(scheme)).To(Succeed())
	wh := defaultingWebhook(scheme, &TalosUpgradePolicy{})
	request := func(op admissionv1.Operation, after string) admission.Request {
		raw := `{"apiVersion":"upgrade.tollgate.dev/v1alpha1","kind":"TalosUpgradePolicy","metadata":{"name":"p","namespace":"fleet"},` +
			`"spec":{"talosVersion":"1.13.0","installer":{"source":"ghcr"},"reboot":{"after":"` + after + `"}}}`
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Kind: metav1GVK("TalosUpgradePolicy"), Object: runtime.RawExtension{Raw: []byte(raw)}, OldObject: runtime.RawExtension{Raw: []byte(raw)},
		}}
	}
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		t.Run(string(op), func(t *testing.T) {
			g := NewWithT(t)
			resp := wh.Handle(context.Background(), request(op, "168h"))
			g.Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			g.Expect(resp.Patches).To(BeEmpty(), "nothing is defaulted on an object that does not decode")

			resp = wh.Handle(context.Background(), request(op, "2026-12-24T22:00:00Z"))
			g.Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			g.Expect(resp.Patches).To(ContainElement(HaveField("Path", "/spec/talosVersion")), "an object that decodes is defaulted")
		})
	}
}

func metav1GVK(kind string) metav1.GroupVersionKind {
	return metav1.GroupVersionKind{Group: upgradev1.GroupVersion.Group, Version: upgradev1.GroupVersion.Version, Kind: kind}
}
