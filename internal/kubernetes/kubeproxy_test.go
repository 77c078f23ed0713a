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

package kubernetes_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tollgate-dev/tollgate/internal/kubernetes"
)

// kubeProxy is the kube-proxy DaemonSet of Talos' bootstrap manifests with
// image, rolled out on three nodes unless edits say otherwise.
func kubeProxy(image string, edits ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy", Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "kube-proxy", Image: image, Command: []string{"/usr/local/bin/kube-proxy", "--cluster-cidr=10.244.0.0/16"}},
			}}},
		},
		Status: appsv1.DaemonSetStatus{
			ObservedGeneration: 1, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3,
		},
	}
	for _, edit := range edits {
		edit(ds)
	}

	return ds
}

func fakeWorkload(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
}

func TestUpdateKubeProxy(t *testing.T) {
	tests := []struct {
		name    string
		ds      *appsv1.DaemonSet
		changed bool
		image   string
		err     error
	}{
		{name: "a new version", ds: kubeProxy(proxy135), changed: true, image: "registry.k8s.io/kube-proxy:v1.36.0"},
		{
			name: "a mirror stays the mirror", ds: kubeProxy("mirror.example.com:5000/kube-proxy:v1.35.0"),
			changed: true, image: "mirror.example.com:5000/kube-proxy:v1.36.0",
		},
		{name: "already there", ds: kubeProxy("registry.k8s.io/kube-proxy:v1.36.0"), image: "registry.k8s.io/kube-proxy:v1.36.0"},
		{name: "pinned by digest", ds: kubeProxy(proxy135 + digest), image: proxy135 + digest, err: kubernetes.ErrDigestImage},
		{name: "no DaemonSet", err: kubernetes.ErrKubeProxyNotFound},
		{
			name: "no kube-proxy container",
			ds: kubeProxy(proxy135, func(ds *appsv1.DaemonSet) {
				ds.Spec.Template.Spec.Containers = append(ds.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "x:v1"})
				ds.Spec.Template.Spec.Containers[0].Name = "proxy"
			}),
			image: proxy135,
			err:   kubernetes.ErrKubeProxyNotFound,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()

			var c client.Client
			if tt.ds != nil {
				c = fakeWorkload(tt.ds)
			} else {
				c = fakeWorkload()
			}

			changed, err := kubernetes.UpdateKubeProxy(ctx, c, "v1.36.0")
			if tt.err != nil {
				g.Expect(err).To(MatchError(tt.err))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(changed).To(Equal(tt.changed))

			if tt.ds == nil {
				return
			}

			got := &appsv1.DaemonSet{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(tt.ds), got)).To(Succeed())
			g.Expect(got.Spec.Template.Spec.Containers[0].Image).To(Equal(tt.image))
			g.Expect(got.Spec.Template.Spec.Containers[0].Command).To(Equal(tt.ds.Spec.Template.Spec.Containers[0].Command))
		})
	}
}

func TestUpdateKubeProxyDoesNotOverwriteAConcurrentChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	// Another writer changes the DaemonSet between the read and the patch.
	racing := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(kubeProxy(proxy135)).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				ds := &appsv1.DaemonSet{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), ds); err != nil {
					return err
				}
				ds.Labels = map[string]string{"changed": "by-someone-else"}
				if err := c.Update(ctx, ds); err != nil {
					return err
				}

				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()

	_, err := kubernetes.UpdateKubeProxy(ctx, racing, "v1.36.0")
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a conflict, that the caller retries: %v", err)
}

func TestKubeProxyRolledOut(t *testing.T) {
	tests := []struct {
		name    string
		ds      *appsv1.DaemonSet
		ok      bool
		message string
	}{
		{name: "rolled out", ds: kubeProxy("registry.k8s.io/kube-proxy:v1.36.0"), ok: true},
		{
			name:    "not updated",
			ds:      kubeProxy(proxy135),
			message: "Waiting for DaemonSet kube-system/kube-proxy to be updated: its image is v1.35.0, not v1.36.0",
		},
		{
			name:    "not observed yet",
			ds:      kubeProxy("registry.k8s.io/kube-proxy:v1.36.0", func(ds *appsv1.DaemonSet) { ds.Generation = 2 }),
			message: "Waiting for the DaemonSet controller to observe DaemonSet kube-system/kube-proxy",
		},
		{
			name:    "rolling out",
			ds:      kubeProxy("registry.k8s.io/kube-proxy:v1.36.0", func(ds *appsv1.DaemonSet) { ds.Status.UpdatedNumberScheduled = 1 }),
			message: "Waiting for DaemonSet kube-system/kube-proxy to roll out: 1 of 3 Pods updated",
		},
		{
			name:    "updated, not all available",
			ds:      kubeProxy("registry.k8s.io/kube-proxy:v1.36.0", func(ds *appsv1.DaemonSet) { ds.Status.NumberAvailable = 2 }),
			message: "Waiting for DaemonSet kube-system/kube-proxy to roll out: 2 of 3 updated Pods available",
		},
		{
			name: "OnDelete",
			ds: kubeProxy("registry.k8s.io/kube-proxy:v1.36.0", func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
			}),
			message: "Waiting for DaemonSet kube-system/kube-proxy to roll out: its updateStrategy is OnDelete, so its Pods change only when deleted; delete them node by node, or set updateStrategy RollingUpdate",
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			ok, message, err := kubernetes.KubeProxyRolledOut(context.Background(), fakeWorkload(tt.ds), "v1.36.0")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(message).To(Equal(tt.message))
		})
	}
}

func TestKubeProxyRolledOutWithoutKubeProxy(t *testing.T) {
	g := NewWithT(t)

	_, _, err := kubernetes.KubeProxyRolledOut(context.Background(), fakeWorkload(), "v1.36.0")
	g.Expect(err).To(MatchError(kubernetes.ErrKubeProxyNotFound))
}
