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
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// webApp is the ReplicaSet whose Pods the test places on the workers: what a
// drain evicts (a Pod no controller manages would block it).
const webApp = "web"

// kubelet plays the kubelets of a workload cluster for the Pods a test
// places (place): it ends a Pod being deleted (an eviction) at once, as a
// kubelet does once its containers stopped, since no kubelet runs there. It
// records what it saw, from informers that see every change: which Nodes
// were cordoned at some point, and which Pods were evicted from which node.
type kubelet struct {
	c client.Client

	mu sync.Mutex
	// cordoned are the Nodes seen with spec.unschedulable.
	cordoned map[string]bool
	// evicted are the names of the Pods ended, by node.
	evicted map[string][]string
	// errs are the deletions that failed.
	errs []error
}

// startKubelet starts the kubelet of workload's Nodes, with a ReplicaSet
// webApp to own the Pods it places; it stops when the test ends.
func startKubelet(ctx context.Context, t *testing.T, workload *envtest.Workload) *kubelet {
	t.Helper()
	g := NewWithT(t)
	k := &kubelet{c: workload.Client, cordoned: map[string]bool{}, evicted: map[string][]string{}}
	g.Expect(k.c.Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: webApp},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": webApp}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": webApp}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}}},
			},
		},
	})).To(Succeed())

	informers, err := crcache.New(workload.Config, crcache.Options{Scheme: workload.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	nodes, err := informers.GetInformer(ctx, &corev1.Node{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    k.sawNode,
		UpdateFunc: func(_, obj any) { k.sawNode(obj) },
	})
	g.Expect(err).NotTo(HaveOccurred())
	pods, err := informers.GetInformer(ctx, &corev1.Pod{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.sawPod(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.sawPod(ctx, obj) },
	})
	g.Expect(err).NotTo(HaveOccurred())
	informersCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = informers.Start(informersCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
	g.Expect(informers.WaitForCacheSync(ctx)).To(BeTrue(), "the kubelet's informers synced")
	return k
}

// sawNode records a Node seen cordoned.
func (k *kubelet) sawNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok || !node.Spec.Unschedulable {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cordoned[node.Name] = true
}

// sawPod ends a Pod being deleted, as its kubelet would once its
// containers stopped, and records it as evicted from its node.
func (k *kubelet) sawPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp.IsZero() {
		return
	}
	err := k.c.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil || apierrors.IsNotFound(err):
		if !slices.Contains(k.evicted[pod.Spec.NodeName], pod.Name) {
			k.evicted[pod.Spec.NodeName] = append(k.evicted[pod.Spec.NodeName], pod.Name)
		}
	case apierrors.IsConflict(err): // Ended already, and a Pod of that name made again.
	default:
		k.errs = append(k.errs, fmt.Errorf("ending Pod %s/%s: %w", pod.Namespace, pod.Name, err))
	}
}

// place runs a Pod of webApp on node, as the scheduler and the kubelet
// would, and returns its name.
func (k *kubelet) place(ctx context.Context, g Gomega, node string) string {
	rs := &appsv1.ReplicaSet{}
	g.Expect(k.c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: webApp}, rs)).To(Succeed())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceDefault, Name: webApp + "-" + node,
			Labels: map[string]string{"app": webApp},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}}},
	}
	g.Expect(k.c.Create(ctx, pod)).To(Succeed())
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		StartTime:  &now,
	}
	g.Expect(k.c.Status().Update(ctx, pod)).To(Succeed())
	return pod.Name
}

// sawCordoned reports whether node was seen cordoned.
func (k *kubelet) sawCordoned(node string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cordoned[node]
}

// evictedFrom returns the Pods ended on node.
func (k *kubelet) evictedFrom(node string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.evicted[node])
}

// err returns the deletions that failed.
func (k *kubelet) err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return errors.Join(k.errs...)
}
