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
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/webhooks"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

var scheme = envtest.NewScheme()

func TestUnsafeCorpusIsRefused(t *testing.T) {
	for _, tc := range corpus.Unsafe() {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := admit(t, tc)
			g.Expect(err).To(HaveOccurred(), "the request must be refused")
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(causes(err)).To(ContainElement(SatisfyAll(
				HaveField("Field", HavePrefix(tc.Field)),
				HaveField("Message", ContainSubstring(tc.Message)),
			)), "want a cause at %s saying %q", tc.Field, tc.Message)
		})
	}
}

func TestValidCorpusIsAdmitted(t *testing.T) {
	examples, err := corpus.Documentation(envtest.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) == 0 {
		t.Fatal("neither the README nor the book has an example to admit")
	}
	for _, tc := range append(corpus.Valid(), examples...) {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			warnings, err := admit(t, tc)
			g.Expect(err).NotTo(HaveOccurred())
			if tc.Warning != "" {
				g.Expect(warnings).To(ContainElement(ContainSubstring(tc.Warning)))
			}
		})
	}
}

// admit runs the defaulter and the validator of tc.Object's kind, as the
// apiserver would, against a fake client holding tc.World.
func admit(t *testing.T, tc corpus.Case) (admission.Warnings, error) {
	t.Helper()
	ctx := context.Background()
	if tc.Username != "" {
		ctx = admission.NewContextWithRequest(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UserInfo: authenticationv1.UserInfo{Username: tc.Username},
		}})
	}

	var world []client.Object
	for _, o := range tc.World {
		if d, ok := o.(corpus.Deleted); ok {
			world = slicesDeleteKey(t, world, d.Object)
			continue
		}
		o = o.DeepCopyObject().(client.Object)
		defaultObject(t, ctx, o)
		world = slicesDeleteKey(t, world, o)
		world = append(world, o)
	}
	c := indexed(fake.NewClientBuilder().WithScheme(scheme)).WithObjects(world...).Build()
	var old client.Object
	for _, o := range world {
		if sameKey(t, o, tc.Object) {
			old = o
		}
	}

	// The request under review, as the apiserver sends it.
	op := admissionv1.Create
	if old != nil {
		op = admissionv1.Update
	}
	ctx = admission.NewContextWithRequest(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, UserInfo: authenticationv1.UserInfo{Username: tc.Username},
	}})
	obj := tc.Object.DeepCopyObject().(client.Object)
	defaultObject(t, ctx, obj)
	switch obj := obj.(type) {
	case *upgradev1.TalosUpgradePolicy:
		w := &webhooks.TalosUpgradePolicy{Client: c}
		if old == nil {
			return w.ValidateCreate(ctx, obj)
		}
		return w.ValidateUpdate(ctx, old.(*upgradev1.TalosUpgradePolicy), obj)
	case *upgradev1.TalosUpgrade:
		w := &webhooks.TalosUpgrade{Client: c, ControllerUsername: corpus.ControllerUsername}
		if old == nil {
			return w.ValidateCreate(ctx, obj)
		}
		return w.ValidateUpdate(ctx, old.(*upgradev1.TalosUpgrade), obj)
	case *upgradev1.ReleaseChannel:
		w := &webhooks.ReleaseChannel{Client: c}
		if old == nil {
			return w.ValidateCreate(ctx, obj)
		}
		return w.ValidateUpdate(ctx, old.(*upgradev1.ReleaseChannel), obj)
	case *upgradev1.ClusterHealthCheck:
		w := &webhooks.ClusterHealthCheck{}
		if old == nil {
			return w.ValidateCreate(ctx, obj)
		}
		return w.ValidateUpdate(ctx, old.(*upgradev1.ClusterHealthCheck), obj)
	case *clusterv1.Cluster:
		w := &webhooks.Cluster{Client: c}
		if old == nil {
			return w.ValidateCreate(ctx, obj)
		}
		return w.ValidateUpdate(ctx, old.(*clusterv1.Cluster), obj)
	}
	t.Fatalf("no webhook for %T", obj)
	return nil, nil
}

// defaultObject runs the defaulter of o's kind, if it has one.
func defaultObject(t *testing.T, ctx context.Context, o client.Object) {
	t.Helper()
	var err error
	switch o := o.(type) {
	case *upgradev1.TalosUpgradePolicy:
		err = (&webhooks.TalosUpgradePolicy{}).Default(ctx, o)
	case *upgradev1.TalosUpgrade:
		err = (&webhooks.TalosUpgrade{}).Default(ctx, o)
	case *upgradev1.ClusterHealthCheck:
		err = (&webhooks.ClusterHealthCheck{}).Default(ctx, o)
	case *upgradev1.ReleaseChannel:
		err = (&webhooks.ReleaseChannel{}).Default(ctx, o)
	}
	if err != nil {
		t.Fatalf("defaulting %T: %v", o, err)
	}
}

// sameKey reports whether a and b are the same kind, namespace and name.
func sameKey(t *testing.T, a, b client.Object) bool {
	t.Helper()
	return gvk(t, a) == gvk(t, b) && client.ObjectKeyFromObject(a) == client.ObjectKeyFromObject(b)
}

func gvk(t *testing.T, o runtime.Object) string {
	t.Helper()
	k, err := apiutil.GVKForObject(o, scheme)
	if err != nil {
		t.Fatalf("finding the kind of %T: %v", o, err)
	}
	return k.String()
}

// slicesDeleteKey removes the object with o's kind and key from objs.
func slicesDeleteKey(t *testing.T, objs []client.Object, o client.Object) []client.Object {
	t.Helper()
	out := objs[:0]
	for _, x := range objs {
		if !sameKey(t, x, o) {
			out = append(out, x)
		}
	}
	return out
}

// causes returns the causes of an API error.
func causes(err error) []metav1.StatusCause {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	return status.Status().Details.Causes
}

// Guard against a corpus case that can never fail: every unsafe case names a
// field and a message.
func TestUnsafeCorpusIsComplete(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range corpus.Unsafe() {
		g.Expect(tc.Field).NotTo(BeEmpty(), tc.Name)
		g.Expect(strings.TrimSpace(tc.Message)).NotTo(BeEmpty(), tc.Name)
	}
}

// indexed registers the manager's field indexes with a fake client, as
// cmd/manager does with the cache.
func indexed(b *fake.ClientBuilder) *fake.ClientBuilder {
	for _, i := range index.Indexes {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	return b
}
