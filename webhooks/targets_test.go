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
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/webhooks"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

// TestTargetsJudgedWithoutCluster checks that the policy and TalosUpgrade
// webhooks refuse, before any Cluster exists, Talos and Kubernetes targets
// that no Talos supports together and a Kubernetes version no Talos runs,
// naming spec.kubernetesVersion, and admit the pairs Talos supports.
func TestTargetsJudgedWithoutCluster(t *testing.T) {
	both := func(talosVersion, k8s string) func(*upgradev1.TalosUpgradePolicy) {
		return func(p *upgradev1.TalosUpgradePolicy) {
			p.Spec.TalosVersion, p.Spec.KubernetesVersion = talosVersion, k8s
		}
	}
	follow := func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion, p.Spec.Follow = "", &upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch}
	}
	tests := []struct {
		name    string
		policy  *upgradev1.TalosUpgradePolicy
		wantMsg string
	}{
		{
			name: "Talos v1.13.0 with Kubernetes v1.13.0", policy: corpus.Policy("p", both("v1.13.0", "v1.13.0")),
			wantMsg: "Talos v1.13.0 supports Kubernetes 1.31 to 1.36, not Kubernetes v1.13.0; no Talos version this Tollgate build knows supports Kubernetes v1.13.0",
		},
		{
			name: "Talos v1.13.0 with Kubernetes v1.30.4", policy: corpus.Policy("p", both("v1.13.0", "v1.30.4")),
			wantMsg: "or a Talos version that supports Kubernetes v1.30.4 (Talos 1.7 to 1.12)",
		},
		{
			name: "Talos v1.12.4 with Kubernetes v1.36.0", policy: corpus.Policy("p", both("v1.12.4", "v1.36.0")),
			wantMsg: "Talos v1.12.4 supports Kubernetes 1.30 to 1.35, not Kubernetes v1.36.0; choose a Kubernetes version Talos v1.12.4 supports, or a Talos version that supports Kubernetes v1.36.0 (Talos 1.13)",
		},
		{
			name: "Kubernetes v2.0.0 alone", policy: corpus.Policy("p", both("", "v2.0.0")),
			wantMsg: "no Talos version this Tollgate build knows supports Kubernetes v2.0.0: Talos supports Kubernetes 1.23 to 1.36",
		},
		{
			name: "Kubernetes v1.37.0 alone, newer than every Talos known", policy: corpus.Policy("p", both("", "v1.37.0")),
			wantMsg: "a Kubernetes release newer than them needs a newer Tollgate",
		},
		{
			name: "follow with Kubernetes v1.13.0", policy: corpus.Policy("p", follow, both("", "v1.13.0")),
			wantMsg: "no Talos version this Tollgate build knows supports Kubernetes v1.13.0",
		},
		{name: "Talos v1.13.0 with Kubernetes v1.36.0", policy: corpus.Policy("p", both("v1.13.0", "v1.36.0"))},
		{name: "Talos v1.13.0 with Kubernetes v1.31.0", policy: corpus.Policy("p", both("v1.13.0", "v1.31.0"))},
		{name: "Kubernetes v1.23.0 alone, for Clusters on an old Talos", policy: corpus.Policy("p", both("", "v1.23.0"))},
		{name: "follow with Kubernetes v1.36.2", policy: corpus.Policy("p", follow, both("", "v1.36.2"))},
	}
	for _, tt := range tests {
		t.Run("policy: "+tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := &webhooks.TalosUpgradePolicy{Client: indexed(fake.NewClientBuilder().WithScheme(scheme)).Build()}
			_, err := w.ValidateCreate(context.Background(), tt.policy)
			expectTargetsJudged(g, err, tt.wantMsg)
		})
		if tt.policy.Spec.Follow != nil {
			continue
		}
		t.Run("TalosUpgrade by hand: "+tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := corpus.Upgrade("manual", "not-there-yet", "p", func(u *upgradev1.TalosUpgrade) { u.Spec.UpgradePlan = tt.policy.Spec.UpgradePlan })
			if u.Spec.TalosVersion == "" {
				// A TalosUpgrade always names its Talos version: the one its
				// Cluster keeps, for a policy with kubernetesVersion alone.
				u.Spec.TalosVersion = "v1.13.0"
			}
			w := &webhooks.TalosUpgrade{Client: indexed(fake.NewClientBuilder().WithScheme(scheme)).Build(), ControllerUsername: corpus.ControllerUsername}
			warnings, err := w.ValidateCreate(context.Background(), u)
			if tt.policy.Spec.TalosVersion != "" {
				expectTargetsJudged(g, err, tt.wantMsg)
			}
			g.Expect(warnings).To(ContainElement(ContainSubstring(`Cluster "not-there-yet" does not exist in namespace`)), "the missing Cluster is no reason to refuse")
		})
	}
}

// TestControllerTalosUpgradeJudgedByPreflight checks that a TalosUpgrade
// the controller makes for a policy with kubernetesVersion alone, naming the
// Talos its Cluster keeps, is admitted even when that Talos does not support
// the target: the rollout's preflight says so with the Cluster, on the
// rollout's condition.
func TestControllerTalosUpgradeJudgedByPreflight(t *testing.T) {
	g := NewWithT(t)
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, UserInfo: authenticationv1.UserInfo{Username: corpus.ControllerUsername},
	}})
	u := corpus.Upgrade("keep-c", "c", "keep", func(u *upgradev1.TalosUpgrade) { u.Spec.TalosVersion, u.Spec.KubernetesVersion = "v1.12.4", "v1.36.0" })
	w := &webhooks.TalosUpgrade{Client: indexed(fake.NewClientBuilder().WithScheme(scheme)).Build(), ControllerUsername: corpus.ControllerUsername}
	_, err := w.ValidateCreate(ctx, u)
	g.Expect(err).NotTo(HaveOccurred())
}

// expectTargetsJudged expects err to refuse spec.kubernetesVersion alone,
// saying wantMsg, or to be nil when wantMsg is empty.
func expectTargetsJudged(g Gomega, err error, wantMsg string) {
	if wantMsg == "" {
		g.Expect(err).NotTo(HaveOccurred())
		return
	}
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	g.Expect(causes(err)).To(ConsistOf(SatisfyAll(
		HaveField("Field", "spec.kubernetesVersion"),
		HaveField("Message", ContainSubstring(wantMsg)),
	)))
}
