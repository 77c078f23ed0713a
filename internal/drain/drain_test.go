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

package drain

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// cs is a clientset of the envtest workload cluster of the package.
var cs kubernetes.Interface

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if envtest.NoteWithoutAssets("the drain tests that need a workload apiserver") {
		// make test-unit: those tests skip (requireAPIServer); the others
		// run.
		return m.Run()
	}
	cp, err := envtest.StartControlPlane()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the workload control plane: %v\n", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	if cs, err = NewClientset(cp.Config); err != nil {
		fmt.Fprintf(os.Stderr, "Creating a clientset: %v\n", err)
		return 1
	}
	return m.Run()
}

// requireAPIServer skips a test that drains the package's workload
// apiserver when there is none.
func requireAPIServer(t *testing.T) {
	t.Helper()
	envtest.SkipWithoutAssets(t)
}

type podOption func(*corev1.Pod)

// ownedBy makes the Pod controlled by a kind (ReplicaSet, DaemonSet) of
// name.
func ownedBy(kind, name string) podOption {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: appsv1.SchemeGroupVersion.String(), Kind: kind, Name: name, UID: "00000000-0000-0000-0000-000000000001",
			Controller: ptr.To(true),
		}}
	}
}

func withEmptyDir() podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
}

func withLabels(l map[string]string) podOption { return func(p *corev1.Pod) { p.Labels = l } }

// withGracePeriod sets the Pod's termination grace period. Without a
// kubelet, a Pod evicted with a grace period stays terminating for ever;
// with 0 it is gone at once, as if its kubelet were quick.
func withGracePeriod(s int64) podOption {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(s) }
}

// running makes the Pod Running and Ready, as a healthy Pod a
// PodDisruptionBudget protects.
func running() podOption {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
}

func createPod(t *testing.T, node, name string, opts ...podOption) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	status := p.Status
	created, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	if status.Phase != "" {
		created.Status = status
		_, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, created, metav1.UpdateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
}

func podNames(g Gomega, node string) []string {
	pods, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return names
}

// drainUntilDone calls Drain as the engine does until it is done.
func drainUntilDone(g Gomega, node string, spec upgradev1.DrainSpec) {
	g.Eventually(func(g Gomega) {
		res, err := Drain(context.Background(), cs, node, spec, Rules{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Done).To(BeTrue(), res.Message)
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
}

func TestCordonUncordon(t *testing.T) {
	requireAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cordon"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	unschedulable := func() bool {
		n, err := cs.CoreV1().Nodes().Get(ctx, "cordon", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return n.Spec.Unschedulable
	}
	resourceVersion := func() string {
		n, err := cs.CoreV1().Nodes().Get(ctx, "cordon", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return n.ResourceVersion
	}
	g.Expect(Cordon(ctx, cs, "cordon")).To(Succeed())
	g.Expect(unschedulable()).To(BeTrue())
	cordoned := resourceVersion()
	g.Expect(Cordon(ctx, cs, "cordon")).To(Succeed(), "idempotent")
	g.Expect(resourceVersion()).To(Equal(cordoned), "a Node cordoned already is not written again")
	g.Expect(Uncordon(ctx, cs, "cordon")).To(Succeed())
	g.Expect(unschedulable()).To(BeFalse())
	uncordoned := resourceVersion()
	g.Expect(Uncordon(ctx, cs, "cordon")).To(Succeed(), "idempotent")
	g.Expect(resourceVersion()).To(Equal(uncordoned), "a schedulable Node is not written again")
	err = Cordon(ctx, cs, "missing")
	g.Expect(err).To(MatchError(ContainSubstring(`setting Node "missing" unschedulable=true`)))
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

func TestDrainEvictsWhatMustGo(t *testing.T) {
	requireAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-exporter"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "node-exporter"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "node-exporter"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "exporter", Image: "node-exporter"}}},
			},
		},
	}
	_, err := cs.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	createPod(t, "n1", "web-0", ownedBy("ReplicaSet", "web"))
	createPod(t, "n1", "cache-0", ownedBy("ReplicaSet", "cache"), withEmptyDir())
	createPod(t, "n1", "node-exporter-0", ownedBy("DaemonSet", "node-exporter"))
	createPod(t, "n1", "static-web", func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "mirror"}
	})
	createPod(t, "other-node", "web-1", ownedBy("ReplicaSet", "web"))

	res, err := Drain(ctx, cs, "n1", upgradev1.DrainSpec{}, Rules{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Done).To(BeFalse(), "the first call evicts and does not wait")
	g.Expect(res.Message).To(Equal("waiting for 2 Pods to terminate: default/cache-0, default/web-0"))

	drainUntilDone(g, "n1", upgradev1.DrainSpec{})
	g.Expect(podNames(g, "n1")).To(ConsistOf("node-exporter-0", "static-web"), "DaemonSet and mirror Pods stay")
	g.Expect(podNames(g, "other-node")).To(ConsistOf("web-1"))
}

func TestDrainRefusedBySpec(t *testing.T) {
	requireAPIServer(t)
	tests := []struct {
		name    string
		opts    []podOption
		spec    upgradev1.DrainSpec
		allow   upgradev1.DrainSpec
		wantMsg string
	}{
		{
			name:    "unmanaged Pod",
			spec:    upgradev1.DrainSpec{EvictUnmanagedPods: ptr.To(false)},
			allow:   upgradev1.DrainSpec{EvictUnmanagedPods: ptr.To(true)},
			wantMsg: "cannot drain Node: cannot delete Pods that declare no controller (set drain.evictUnmanagedPods to evict them): default/",
		},
		{
			name:    "emptyDir data",
			opts:    []podOption{ownedBy("ReplicaSet", "x"), withEmptyDir()},
			spec:    upgradev1.DrainSpec{DeleteEmptyDirData: ptr.To(false)},
			allow:   upgradev1.DrainSpec{},
			wantMsg: "cannot drain Node: cannot delete Pods with local storage (set drain.deleteEmptyDirData to evict them): default/",
		},
		{
			name:    "DaemonSet Pod not ignored",
			opts:    []podOption{ownedBy("DaemonSet", "node-exporter")},
			spec:    upgradev1.DrainSpec{IgnoreDaemonSets: ptr.To(false)},
			wantMsg: "cannot drain Node: cannot delete DaemonSet-managed Pods (set drain.ignoreDaemonSets to leave them in place): default/",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			node := fmt.Sprintf("refused-%d", i)
			pod := node + "-pod"
			createPod(t, node, pod, tt.opts...)

			res, err := Drain(context.Background(), cs, node, tt.spec, Rules{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Done).To(BeFalse())
			g.Expect(res.Message).To(Equal(tt.wantMsg + pod))
			g.Expect(podNames(g, node)).To(ConsistOf(pod), "nothing is evicted")

			if tt.name == "DaemonSet Pod not ignored" {
				return
			}
			drainUntilDone(g, node, tt.allow)
			g.Expect(podNames(g, node)).To(BeEmpty())
		})
	}
}

func TestDrainBlockedByPodDisruptionBudget(t *testing.T) {
	requireAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		},
	}
	created, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// What the disruption controller would write: no disruption allowed.
	created.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: created.Generation, DesiredHealthy: 1, CurrentHealthy: 1, ExpectedPods: 1}
	_, err = cs.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(ctx, created, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	createPod(t, "pdb", "db-0", ownedBy("StatefulSet", "db"), withLabels(map[string]string{"app": "db"}), running())

	for range 2 {
		res, err := Drain(ctx, cs, "pdb", upgradev1.DrainSpec{}, Rules{})
		g.Expect(err).NotTo(HaveOccurred(), "a PodDisruptionBudget is not an error")
		g.Expect(res.Done).To(BeFalse())
		g.Expect(res.Message).To(Equal(`blocked by PodDisruptionBudget "default/db": default/db-0`))
	}
	g.Expect(podNames(g, "pdb")).To(ConsistOf("db-0"))

	// Without respecting PodDisruptionBudgets, the Pod is deleted.
	drainUntilDone(g, "pdb", upgradev1.DrainSpec{RespectPodDisruptionBudgets: ptr.To(false)})
	g.Expect(podNames(g, "pdb")).To(BeEmpty())
}

func TestDrainWaitsForTerminatingPods(t *testing.T) {
	requireAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	createPod(t, "slow", "slow-0", ownedBy("ReplicaSet", "slow"), withGracePeriod(30), running())

	res, err := Drain(ctx, cs, "slow", upgradev1.DrainSpec{}, Rules{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Done).To(BeFalse())
	res, err = Drain(ctx, cs, "slow", upgradev1.DrainSpec{}, Rules{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Done).To(BeFalse())
	g.Expect(res.Message).To(Equal("waiting for 1 Pods to terminate: default/slow-0"))
	pod, err := cs.CoreV1().Pods("default").Get(ctx, "slow-0", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pod.DeletionTimestamp).NotTo(BeNil(), "evicted once, terminating")

	// The kubelet would now remove the Pod.
	err = cs.CoreV1().Pods("default").Delete(ctx, "slow-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	g.Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue())
	drainUntilDone(g, "slow", upgradev1.DrainSpec{})
}
