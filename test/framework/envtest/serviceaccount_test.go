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
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestManagerConfig checks that the rest.Config of ManagerConfig acts as the
// manager's ServiceAccount and that the apiserver holds it to the RBAC of
// config/default: a Secret may be read by name but not listed, a Lease
// written only in the manager's namespace.
func TestManagerConfig(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx := t.Context()
	cp, err := envtest.StartControlPlane()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = cp.Stop() }()

	cfg, err := cp.ManagerConfig(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: cp.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(c.Create(ctx, review)).To(Succeed())
	g.Expect(review.Status.UserInfo.Username).To(Equal(envtest.ManagerUsername))
	g.Expect(review.Status.UserInfo.Groups).To(ConsistOf(envtest.ManagerGroups))

	err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "missing"}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "get Secret: %v", err)
	err = c.List(ctx, &corev1.SecretList{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list Secrets: %v", err)

	lease := func(namespace string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "tollgate-controller-leader"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("test")},
		}
	}
	g.Expect(c.Create(ctx, lease(envtest.ManagerNamespace))).To(Succeed())
	err = c.Create(ctx, lease("default"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "create Lease in default: %v", err)

	// Each refusal is recorded, for the suites to fail on.
	g.Expect(cp.ForbiddenRequests()).To(Equal([]string{
		"GET /api/v1/secrets",
		"POST /apis/coordination.k8s.io/v1/namespaces/default/leases",
	}))
}
