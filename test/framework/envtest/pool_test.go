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

package envtest_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestReleasedManagementIsEmptied leaves in a management control plane what
// a CAPI test leaves once its processes stopped: a Namespace with an object
// held by a finalizer, a cluster-scoped webhook configuration whose server is
// gone and which fails closed on any change of that object (as CAPI's and
// the providers' do on theirs), and a workload control plane with a Node.
// Released, the management is the next test's: the same kube-apiserver
// with its CRDs and none of the rest, the same workload control plane
// emptied, and the Namespace can be made again.
func TestReleasedManagementIsEmptied(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	pool := envtest.NewManagementPool()
	defer func() { g.Expect(pool.Close()).To(Succeed()) }()
	mgmt, err := pool.Start(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	c := mgmt.Client
	crds := crdList()
	g.Expect(c.List(ctx, crds)).To(Succeed())
	g.Expect(crds.Items).NotTo(BeEmpty())

	workload, err := mgmt.StartWorkload(ctx, "fleet", "alpha")
	g.Expect(err).NotTo(HaveOccurred())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alpha-cp-0"}}
	g.Expect(workload.Client.Create(ctx, node)).To(Succeed())

	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}})).To(Succeed())
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "alpha", Finalizers: []string{"example.com/held"}}}
	g.Expect(c.Create(ctx, held)).To(Succeed())
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	hook := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gone-provider"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "vcluster.gone.example.com",
			ClientConfig:            admissionv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Update, admissionv1.Delete}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	g.Expect(c.Create(ctx, hook)).To(Succeed())
	g.Eventually(func() error {
		return c.Patch(ctx, held, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"probe":"x"}}}`)))
	}, time.Minute, 100*time.Millisecond).Should(HaveOccurred(), "the webhook, whose server is gone, refuses a change")

	g.Expect(pool.Release(ctx, mgmt)).To(Succeed())
	next, err := pool.Start(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next.Config.Host).To(Equal(mgmt.Config.Host), "the released management control plane is reused")
	for _, o := range []client.Object{held, hook, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}} {
		err := c.Get(ctx, client.ObjectKeyFromObject(o), o)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is left: %v", o, o.GetName(), err)
	}
	left := crdList()
	g.Expect(c.List(ctx, left)).To(Succeed())
	g.Expect(left.Items).To(HaveLen(len(crds.Items)), "the CRDs it started with stay")

	again, err := next.StartWorkload(ctx, "fleet", "alpha")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Config.Host).To(Equal(workload.Config.Host), "its workload control plane is reused")
	err = again.Client.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Node is left: %v", err)
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}})).To(Succeed())
	g.Expect(pool.Release(ctx, next)).To(Succeed())
}

// crdList lists the CRDs by their metadata.
func crdList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	return l
}
