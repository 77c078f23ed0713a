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
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/inplace"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/webhooks"
)

// replacementsWorld is a Cluster alpha of namespace fleet selected by
// policy to-1-13, whose spec.replacements is replacements.
func replacementsWorld(replacements upgradev1.ReplacementPolicy, objects ...client.Object) *webhooks.Replacements {
	policy := &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "to-1-13"}, Spec: upgradev1.TalosUpgradePolicySpec{
		UpgradePlan:  upgradev1.UpgradePlan{TalosVersion: "v1.13.0"},
		Replacements: replacements,
	}}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha", Labels: map[string]string{upgradev1.PolicyLabel: "to-1-13"}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
	s := envtest.NewScheme()
	if err := runtimev1.AddToScheme(s); err != nil {
		panic(err) // The scheme is static.
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(append(objects, policy, cluster, ns)...).Build()
	return &webhooks.Replacements{Client: c, Claims: inplace.DefaultClaims()}
}

func machineDeployment(image, version string, mutate ...func(*clusterv1.MachineDeployment)) *clusterv1.MachineDeployment {
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0"},
		Spec: clusterv1.MachineDeploymentSpec{ClusterName: "alpha", Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
			ClusterName: "alpha", Version: version,
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "AWSMachineTemplate", Name: image},
		}}},
	}
	for _, m := range mutate {
		m(md)
	}
	return md
}

// TestReplacementsMachineDeployment: with spec.replacements: Refuse, a
// change of a MachineDeployment's template that CAPI would carry out by
// replacing its Machines (no in-place update extension serves the
// namespace) is refused, naming the field and what to change instead;
// with Warn (the default), OnDelete, a change of what CAPI propagates in
// place, or a Cluster no policy selects, it is admitted.
func TestReplacementsMachineDeployment(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		replacements upgradev1.ReplacementPolicy
		newMD        *clusterv1.MachineDeployment
		wantRefused  string
	}{
		{name: "a new image, refused", replacements: upgradev1.ReplacementsRefuse, newMD: machineDeployment("workers-v1-13", "v1.35.0"),
			wantRefused: `spec.template.spec: Forbidden: CAPI would replace the Machines of MachineDeployment alpha-md-0 for this change (spec.infrastructureRef AWSMachineTemplate workers-v1-12, AWSMachineTemplate workers-v1-13 required; no in-place update extension serves namespace fleet), which TalosUpgradePolicy to-1-13 keeps (spec.replacements: Refuse): move the Talos (and Kubernetes) version with the policy's target instead of the template`},
		{name: "a new Kubernetes version, refused", replacements: upgradev1.ReplacementsRefuse, newMD: machineDeployment("workers-v1-12", "v1.36.0"),
			wantRefused: "spec.version v1.35.0, v1.36.0 required"},
		{name: "a new image, admitted by default", newMD: machineDeployment("workers-v1-13", "v1.35.0")},
		{name: "a new image, admitted with Warn", replacements: upgradev1.ReplacementsWarn, newMD: machineDeployment("workers-v1-13", "v1.35.0")},
		{name: "OnDelete replaces nothing", replacements: upgradev1.ReplacementsRefuse, newMD: machineDeployment("workers-v1-13", "v1.35.0", func(md *clusterv1.MachineDeployment) {
			md.Spec.Rollout.Strategy.Type = clusterv1.OnDeleteMachineDeploymentStrategyType
		})},
		{name: "labels are propagated in place", replacements: upgradev1.ReplacementsRefuse, newMD: machineDeployment("workers-v1-12", "v1.35.0", func(md *clusterv1.MachineDeployment) {
			md.Spec.Template.Labels = map[string]string{"team": "a"}
		})},
		{name: "another Cluster", replacements: upgradev1.ReplacementsRefuse, newMD: machineDeployment("workers-v1-13", "v1.35.0", func(md *clusterv1.MachineDeployment) {
			md.Spec.ClusterName = "beta"
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := replacementsWorld(tc.replacements)
			old := machineDeployment("workers-v1-12", "v1.35.0")
			old.Spec.ClusterName = tc.newMD.Spec.ClusterName
			_, err := w.ValidateUpdate(ctx, old, tc.newMD)
			if tc.wantRefused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.wantRefused))
		})
	}
}

// TestReplacementsTalosControlPlane: with spec.replacements: Refuse, a
// change the Talos control-plane provider rolls out by replacing every
// control-plane Machine is refused, naming the field; a scale or OnDelete
// is admitted.
func TestReplacementsTalosControlPlane(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h := &webhooks.TalosControlPlaneReplacements{Replacements: replacementsWorld(upgradev1.ReplacementsRefuse)}
	tcp := func(version string, replicas int, strategy string) runtime.RawExtension {
		obj := map[string]any{
			"apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3", "kind": "TalosControlPlane",
			"metadata": map[string]any{"namespace": "fleet", "name": "alpha-cp", "labels": map[string]any{clusterv1.ClusterNameLabel: "alpha"}},
			"spec": map[string]any{"version": version, "replicas": replicas, "rolloutStrategy": map[string]any{"type": strategy},
				"infrastructureTemplate": map[string]any{"kind": "AWSMachineTemplate", "name": "cp"}},
		}
		raw, err := json.Marshal(obj)
		g.Expect(err).NotTo(HaveOccurred())
		return runtime.RawExtension{Raw: raw}
	}
	request := func(oldObj, newObj runtime.RawExtension) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update, OldObject: oldObj, Object: newObj}}
	}
	resp := h.Handle(ctx, request(tcp("v1.35.0", 3, "RollingUpdate"), tcp("v1.36.0", 3, "RollingUpdate")))
	g.Expect(resp.Allowed).To(BeFalse())
	g.Expect(resp.Result.Code).To(BeEquivalentTo(422))
	g.Expect(resp.Result.Message).To(ContainSubstring("spec.version: Forbidden: the Talos control-plane provider would replace every control-plane Machine of Cluster alpha"))
	g.Expect(resp.Result.Message).To(ContainSubstring("set spec.rolloutStrategy.type OnDelete"))

	g.Expect(h.Handle(ctx, request(tcp("v1.35.0", 1, "RollingUpdate"), tcp("v1.35.0", 3, "RollingUpdate"))).Allowed).To(BeTrue(), "a scale-up replaces nothing")
	g.Expect(h.Handle(ctx, request(tcp("v1.35.0", 3, "OnDelete"), tcp("v1.36.0", 3, "OnDelete"))).Allowed).To(BeTrue(), "OnDelete replaces nothing")

	// A scale-down: the provider takes the Machine out of etcd and deletes
	// its Node before the deletion hook, unless its Machines carry the
	// pre-terminate hook of the variant that does it after.
	cpMachine := func(hooked bool) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-cp-x", Labels: map[string]string{
			clusterv1.ClusterNameLabel: "alpha", clusterv1.MachineControlPlaneLabel: "",
		}}}
		if hooked {
			m.Annotations = map[string]string{webhooks.PreTerminateTCPCleanupHook: ""}
		}
		return m
	}
	leaves := &webhooks.TalosControlPlaneReplacements{Replacements: replacementsWorld(upgradev1.ReplacementsRefuse, cpMachine(false))}
	resp = leaves.Handle(ctx, request(tcp("v1.35.0", 3, "OnDelete"), tcp("v1.35.0", 1, "OnDelete")))
	g.Expect(resp.Allowed).To(BeFalse())
	g.Expect(resp.Result.Message).To(ContainSubstring("spec.replicas: Forbidden: the Talos control-plane provider takes the Machine it scales down out of etcd and deletes its Node before CAPI consults Tollgate's deletion hook"))
	g.Expect(resp.Result.Message).To(ContainSubstring("run a control-plane provider that takes the Machine out of etcd at a pre-terminate hook"))
	hooked := &webhooks.TalosControlPlaneReplacements{Replacements: replacementsWorld(upgradev1.ReplacementsRefuse, cpMachine(true))}
	g.Expect(hooked.Handle(ctx, request(tcp("v1.35.0", 3, "OnDelete"), tcp("v1.35.0", 1, "OnDelete"))).Allowed).To(BeTrue(), "the variant leaves etcd after the hook: the scale-down is gated")
	warn := &webhooks.TalosControlPlaneReplacements{Replacements: replacementsWorld(upgradev1.ReplacementsWarn, cpMachine(false))}
	g.Expect(warn.Handle(ctx, request(tcp("v1.35.0", 3, "RollingUpdate"), tcp("v1.35.0", 1, "RollingUpdate"))).Allowed).To(BeTrue(), "off by default")
}
