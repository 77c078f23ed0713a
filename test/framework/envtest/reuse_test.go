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
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestReleasedWorkloadIsEmptied fills a workload control plane with what a
// test leaves (a Namespace, a Node, a Job and its Pod held by a finalizer, a
// PodDisruptionBudget, an Event), releases it and starts the next
// Cluster's: the same kube-apiserver, holding none of it, with the next
// Cluster's kubeconfig Secret; and the Namespace can be made again.
func TestReleasedWorkloadIsEmptied(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	mgmt, err := envtest.StartManagement()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(mgmt.Stop()).To(Succeed()) }()
	mgmt.ReuseWorkloads = true

	first, err := mgmt.StartWorkload(ctx, "fleet", "alpha")
	g.Expect(err).NotTo(HaveOccurred())
	c := first.Client
	before := countObjects(ctx, g, c)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alpha-cp-0"}})).To(Succeed())
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "check"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "check", Image: "busybox"}},
		}}},
	}
	g.Expect(c.Create(ctx, job)).To(Succeed())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "check-abcde", Finalizers: []string{batchv1.JobTrackingFinalizer}},
		Spec:       corev1.PodSpec{NodeName: "alpha-cp-0", Containers: []corev1.Container{{Name: "check", Image: "busybox"}}},
	}
	g.Expect(c.Create(ctx, pod)).To(Succeed())
	g.Expect(c.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db"}})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "alpha-cp-0.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "alpha-cp-0"},
	})).To(Succeed())
	g.Expect(countObjects(ctx, g, c)).To(BeNumerically(">", before))

	g.Expect(mgmt.ReleaseWorkload(ctx, first)).To(Succeed())
	next, err := mgmt.StartWorkload(ctx, "fleet", "beta")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next.Config.Host).To(Equal(first.Config.Host), "the released workload control plane is reused")

	for _, o := range []client.Object{ns, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alpha-cp-0"}}, job, pod} {
		err := c.Get(ctx, client.ObjectKeyFromObject(o), o)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is left: %v", o, o.GetName(), err)
	}
	g.Expect(countObjects(ctx, g, c)).To(Equal(before))
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}})).To(Succeed())

	s := &corev1.Secret{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: secret.Name("beta", secret.Kubeconfig)}, s)).To(Succeed())
	g.Expect(s.Data[secret.KubeconfigDataName]).To(Equal(next.Kubeconfig))
}

// countObjects counts the workload's objects of the kinds a test leaves.
func countObjects(ctx context.Context, g Gomega, c client.Client) int {
	n := 0
	for _, list := range []client.ObjectList{&corev1.NamespaceList{}, &corev1.NodeList{}, &batchv1.JobList{}, &corev1.PodList{}, &policyv1.PodDisruptionBudgetList{}, &corev1.EventList{}} {
		g.Expect(c.List(ctx, list)).To(Succeed())
		n += meta.LenList(list)
	}
	return n
}
