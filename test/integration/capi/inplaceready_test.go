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

package capi_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// inPlaceReady waits until the rollout's InPlaceUpdatesReady condition has
// reason and a message that contains each of parts.
func (w *world) inPlaceReady(ctx context.Context, reason string, parts ...string) {
	w.t.Helper()
	var c *metav1.Condition
	NewWithT(w.t).Eventually(func(g Gomega) {
		c = conditions.Get(w.upgrade(ctx, g), upgradev1.InPlaceUpdatesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		for _, p := range parts {
			g.Expect(c.Message).To(ContainSubstring(p))
		}
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	w.t.Logf("InPlaceUpdatesReady %s %s: %s", c.Status, c.Reason, c.Message)
}

// warned returns the reasons of the Warning events recorded on the
// Cluster's TalosUpgrade.
func (w *world) warned(ctx context.Context, g Gomega) []string {
	list := &eventsv1.EventList{}
	g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "TalosUpgrade" && e.Regarding.Name == w.name && e.Type == corev1.EventTypeWarning {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// TestInPlaceUpdatesReadyWithCAPICore: a CAPI-driven rollout says, with its
// InPlaceUpdatesReady condition and a Warning event, whenever CAPI would
// replace the Cluster's Machines instead of handing them to Tollgate, and
// why: its namespace is not served by the extension, a second extension
// serves the in-place hooks (CAPI then updates nothing in place), or a
// change of the MachineDeployment's template is not one Tollgate makes in
// place (Kubernetes' version, here), seen while CAPI replaces the Machine.
func TestInPlaceUpdatesReadyWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 1, time.Second, inPlace)
	w.running(ctx, 1, "v1.12.4")
	ext := w.registerExtension(ctx)
	ns := &corev1.Namespace{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Name: w.ns}, ns)).To(Succeed())
	unlabelled := ns.DeepCopy()
	delete(unlabelled.Labels, upgradev1.InPlaceUpdatesNamespaceLabel)
	g.Expect(w.c.Patch(ctx, unlabelled, client.MergeFrom(ns))).To(Succeed())
	w.optIn(ctx, capiDriven)
	stop := startTollgate(ctx, t, w.mgmt, ext.options)
	defer stop()
	w.served(ctx)

	w.inPlaceReady(ctx, upgradev1.NamespaceNotSelectedReason, "ExtensionConfig tollgate does not serve namespace fleet", upgradev1.InPlaceUpdatesNamespaceLabel+"="+upgradev1.InPlaceUpdatesEnabled)
	g.Eventually(func(g Gomega) []string { return w.warned(ctx, g) }, 30*time.Second, 200*time.Millisecond).Should(ContainElement(upgradev1.NamespaceNotSelectedReason))

	g.Expect(w.c.Get(ctx, client.ObjectKey{Name: w.ns}, ns)).To(Succeed())
	labelled := ns.DeepCopy()
	labelled.Labels[upgradev1.InPlaceUpdatesNamespaceLabel] = upgradev1.InPlaceUpdatesEnabled
	g.Expect(w.c.Patch(ctx, labelled, client.MergeFrom(ns))).To(Succeed())
	w.inPlaceReady(ctx, upgradev1.InPlaceUpdatesReadyReason, "MachineDeployment alpha-md-0", "ExtensionConfig tollgate")

	// A second extension serving every namespace: CAPI would refuse both.
	ec := &runtimev1.ExtensionConfig{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Name: "tollgate"}, ec)).To(Succeed())
	other := &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "another-updater"},
		Spec:       runtimev1.ExtensionConfigSpec{ClientConfig: ec.Spec.ClientConfig},
	}
	g.Expect(w.c.Create(ctx, other)).To(Succeed())
	w.inPlaceReady(ctx, upgradev1.ExtensionConflictReason, "another-updater, tollgate")
	g.Expect(w.c.Delete(ctx, other)).To(Succeed())
	w.inPlaceReady(ctx, upgradev1.InPlaceUpdatesReadyReason)

	// A skip of a Kubernetes minor is not Tollgate's to make in place (a
	// kubelet moves one minor at a time): CAPI replaces the worker, and the
	// rollout says so while it does.
	before := w.workerNames(ctx, g)
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	changed := md.DeepCopy()
	changed.Spec.Template.Spec.Version = "v1.37.0"
	g.Expect(w.c.Patch(ctx, changed, client.MergeFrom(md))).To(Succeed())
	w.inPlaceReady(ctx, upgradev1.ReplacementAheadReason, "MachineDeployment alpha-md-0", "MachineSet spec.template.spec.version")
	g.Eventually(func(g Gomega) []string { return w.warned(ctx, g) }, 30*time.Second, 200*time.Millisecond).Should(ContainElement(upgradev1.ReplacementAheadReason))

	// Once CAPI replaced it, nothing is ahead.
	w.inPlaceReady(ctx, upgradev1.InPlaceUpdatesReadyReason)
	g.Eventually(func(g Gomega) []string { return w.workerNames(ctx, g) }, time.Minute, 200*time.Millisecond).ShouldNot(ContainElements(before))
}
