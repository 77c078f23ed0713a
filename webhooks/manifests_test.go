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

package webhooks_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestWebhookManifests checks the generated webhook configurations: Fail
// for Tollgate's own kinds, Ignore for CAPI's Cluster, MachineDeployment and
// the Talos control-plane provider's TalosControlPlane (a Tollgate outage
// must never block CAPI), an explicit timeout and no side effects
// everywhere.
func TestWebhookManifests(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "config", "webhook", "manifests.yaml"))
	g.Expect(err).NotTo(HaveOccurred())

	type hook struct {
		name, group   string
		failurePolicy *admissionregistrationv1.FailurePolicyType
		sideEffects   *admissionregistrationv1.SideEffectClass
		timeout       *int32
	}
	var hooks []hook
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var mutating admissionregistrationv1.MutatingWebhookConfiguration
		g.Expect(yaml.Unmarshal(doc, &mutating)).To(Succeed())
		switch mutating.Kind {
		case "MutatingWebhookConfiguration":
			for _, w := range mutating.Webhooks {
				hooks = append(hooks, hook{w.Name, w.Rules[0].APIGroups[0], w.FailurePolicy, w.SideEffects, w.TimeoutSeconds})
			}
		case "ValidatingWebhookConfiguration":
			var validating admissionregistrationv1.ValidatingWebhookConfiguration
			g.Expect(yaml.Unmarshal(doc, &validating)).To(Succeed())
			for _, w := range validating.Webhooks {
				hooks = append(hooks, hook{w.Name, w.Rules[0].APIGroups[0], w.FailurePolicy, w.SideEffects, w.TimeoutSeconds})
			}
		}
	}
	g.Expect(hooks).To(HaveLen(11), "4 defaulting and 4 validating webhooks for Tollgate's kinds, 1 for Clusters, 1 for MachineDeployments, 1 for TalosControlPlanes")
	for _, h := range hooks {
		want := admissionregistrationv1.Fail
		if h.group != upgradev1.GroupVersion.Group {
			want = admissionregistrationv1.Ignore
		}
		g.Expect(h.failurePolicy).To(HaveValue(Equal(want)), h.name)
		g.Expect(h.sideEffects).To(HaveValue(Equal(admissionregistrationv1.SideEffectClassNone)), h.name)
		g.Expect(h.timeout).To(HaveValue(BeNumerically("<=", 10)), h.name)
	}
}
