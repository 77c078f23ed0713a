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
	"errors"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const (
	drainB = clusterv1.MachineDrainRuleDrainBehaviorDrain
	skipB  = clusterv1.MachineDrainRuleDrainBehaviorSkip
	waitB  = clusterv1.MachineDrainRuleDrainBehaviorWaitCompleted
)

// mdr builds a MachineDrainRule of behavior (and order, for Drain).
func mdr(name string, b clusterv1.MachineDrainRuleDrainBehavior, order *int32, mutate ...func(*clusterv1.MachineDrainRule)) clusterv1.MachineDrainRule {
	r := clusterv1.MachineDrainRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name},
		Spec:       clusterv1.MachineDrainRuleSpec{Drain: clusterv1.MachineDrainRuleDrainConfig{Behavior: b, Order: order}},
	}
	for _, m := range mutate {
		m(&r)
	}
	return r
}

func forMachines(sel ...clusterv1.MachineDrainRuleMachineSelector) func(*clusterv1.MachineDrainRule) {
	return func(r *clusterv1.MachineDrainRule) { r.Spec.Machines = sel }
}

func forPods(sel ...clusterv1.MachineDrainRulePodSelector) func(*clusterv1.MachineDrainRule) {
	return func(r *clusterv1.MachineDrainRule) { r.Spec.Pods = sel }
}

func matchLabels(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// newPod returns a Pod of the node "n", in namespace "default" unless
// inNamespace says otherwise, owned by a ReplicaSet unless opts say
// otherwise.
func newPod(name string, opts ...podOption) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	ownedBy("ReplicaSet", name)(&p)
	for _, o := range opts {
		o(&p)
	}
	return p
}

func inNamespace(ns string) podOption { return func(p *corev1.Pod) { p.Namespace = ns } }

func unmanaged() podOption { return func(p *corev1.Pod) { p.OwnerReferences = nil } }

func mirror() podOption {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }
}

func phase(ph corev1.PodPhase) podOption { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func terminating() podOption {
	return func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }
}

func TestRulesFor(t *testing.T) {
	machineLabels := map[string]string{"role": "worker", "pool": "gpu"}
	clusterLabels := map[string]string{"stage": "production"}
	tests := []struct {
		name    string
		rules   []clusterv1.MachineDrainRule
		want    []string
		wantErr string
	}{
		{name: "no rule"},
		{
			name:  "a rule without machines applies to every Machine",
			rules: []clusterv1.MachineDrainRule{mdr("all", skipB, nil)},
			want:  []string{"all"},
		},
		{
			name: "Machine labels",
			rules: []clusterv1.MachineDrainRule{
				mdr("workers", skipB, nil, forMachines(clusterv1.MachineDrainRuleMachineSelector{Selector: matchLabels("role", "worker")})),
				mdr("control-plane", skipB, nil, forMachines(clusterv1.MachineDrainRuleMachineSelector{Selector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: clusterv1.MachineControlPlaneLabel, Operator: metav1.LabelSelectorOpExists}},
				}})),
			},
			want: []string{"workers"},
		},
		{
			name: "Cluster labels",
			rules: []clusterv1.MachineDrainRule{
				mdr("production", skipB, nil, forMachines(clusterv1.MachineDrainRuleMachineSelector{ClusterSelector: matchLabels("stage", "production")})),
				mdr("staging", skipB, nil, forMachines(clusterv1.MachineDrainRuleMachineSelector{ClusterSelector: matchLabels("stage", "staging")})),
			},
			want: []string{"production"},
		},
		{
			name: "selector and clusterSelector are ANDed, selectors ORed",
			rules: []clusterv1.MachineDrainRule{
				mdr("and-misses", skipB, nil, forMachines(clusterv1.MachineDrainRuleMachineSelector{
					Selector: matchLabels("role", "worker"), ClusterSelector: matchLabels("stage", "staging"),
				})),
				mdr("or-matches", skipB, nil, forMachines(
					clusterv1.MachineDrainRuleMachineSelector{Selector: matchLabels("pool", "cpu")},
					clusterv1.MachineDrainRuleMachineSelector{Selector: matchLabels("pool", "gpu"), ClusterSelector: matchLabels("stage", "production")},
				)),
			},
			want: []string{"or-matches"},
		},
		{
			name:  "in name order",
			rules: []clusterv1.MachineDrainRule{mdr("b", skipB, nil), mdr("c", drainB, ptr.To[int32](5)), mdr("a", waitB, nil)},
			want:  []string{"a", "b", "c"},
		},
		{
			name: "an invalid selector stops the drain",
			rules: []clusterv1.MachineDrainRule{mdr("bad", skipB, nil, forPods(clusterv1.MachineDrainRulePodSelector{Selector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}},
			}}))},
			wantErr: `MachineDrainRule "bad": spec.pods[].selector`,
		},
		{
			name:    "an unknown behavior stops the drain",
			rules:   []clusterv1.MachineDrainRule{mdr("odd", "Evaporate", nil)},
			wantErr: `MachineDrainRule "odd" has an unknown spec.drain.behavior "Evaporate"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rs, err := RulesFor(tt.rules, machineLabels, clusterLabels)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rs.Names()).To(Equal(append([]string{}, tt.want...)))
		})
	}
}

func TestFateOf(t *testing.T) {
	namespaces := map[string]*corev1.Namespace{
		"default":    {ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}}},
		"monitoring": {ObjectMeta: metav1.ObjectMeta{Name: "monitoring", Labels: map[string]string{"kubernetes.io/metadata.name": "monitoring", "team": "obs"}}},
	}
	rules := []clusterv1.MachineDrainRule{
		mdr("a-logging-skip", skipB, nil, forPods(clusterv1.MachineDrainRulePodSelector{Selector: matchLabels("app", "logging")})),
		mdr("b-batch-wait", waitB, nil, forPods(clusterv1.MachineDrainRulePodSelector{Selector: matchLabels("app", "batch")})),
		mdr("c-obs-last", drainB, ptr.To[int32](10), forPods(clusterv1.MachineDrainRulePodSelector{NamespaceSelector: matchLabels("team", "obs")})),
		// Shadowed for app=logging by a-logging-skip, which comes first by name.
		mdr("d-logging-first", drainB, ptr.To[int32](-5), forPods(clusterv1.MachineDrainRulePodSelector{Selector: matchLabels("app", "logging")})),
		mdr("e-db-in-default-later", drainB, ptr.To[int32](3), forPods(clusterv1.MachineDrainRulePodSelector{
			Selector: matchLabels("app", "db"), NamespaceSelector: matchLabels("kubernetes.io/metadata.name", "default"),
		})),
	}
	tests := []struct {
		name string
		pod  corev1.Pod
		spec upgradev1.DrainSpec
		// rules are the test's rules: all of the above when nil.
		rules       []clusterv1.MachineDrainRule
		wantAction  clusterv1.MachineDrainRuleDrainBehavior
		wantOrder   int32
		wantBy      string
		wantRefusal string
	}{
		{name: "no rule matches: drained in order 0", pod: newPod("web"), wantAction: drainB},
		{name: "Skip rule", pod: newPod("fluentd", withLabels(map[string]string{"app": "logging"})), wantAction: skipB, wantBy: `MachineDrainRule "a-logging-skip"`},
		{name: "WaitCompleted rule", pod: newPod("job", withLabels(map[string]string{"app": "batch"})), wantAction: waitB, wantBy: `MachineDrainRule "b-batch-wait"`},
		{name: "Drain rule by Namespace labels", pod: newPod("prometheus", inNamespace("monitoring")), wantAction: drainB, wantOrder: 10, wantBy: `MachineDrainRule "c-obs-last"`},
		{name: "Pod and Namespace selectors ANDed: both match", pod: newPod("db", withLabels(map[string]string{"app": "db"})), wantAction: drainB, wantOrder: 3},
		{
			name: "Pod and Namespace selectors ANDed: the Namespace does not", pod: newPod("db", inNamespace("monitoring"), withLabels(map[string]string{"app": "db"})),
			wantAction: drainB, wantOrder: 10, wantBy: `MachineDrainRule "c-obs-last"`,
		},
		{
			name: "drain label skip takes precedence over the rules", pod: newPod("prometheus", inNamespace("monitoring"), withLabels(map[string]string{clusterv1.PodDrainLabel: "skip"})),
			wantAction: skipB, wantBy: "label cluster.x-k8s.io/drain=skip",
		},
		{
			name: "drain label wait-completed", pod: newPod("web", withLabels(map[string]string{clusterv1.PodDrainLabel: "wait-completed"})),
			wantAction: waitB, wantBy: "label cluster.x-k8s.io/drain=wait-completed",
		},
		{
			name: "drain label in another case, without the dash", pod: newPod("web", withLabels(map[string]string{clusterv1.PodDrainLabel: "WaitCompleted"})),
			wantAction: waitB, wantBy: "label cluster.x-k8s.io/drain=WaitCompleted",
		},
		{
			name: "an unknown drain label value is ignored", pod: newPod("fluentd", withLabels(map[string]string{clusterv1.PodDrainLabel: "later", "app": "logging"})),
			wantAction: skipB, wantBy: `MachineDrainRule "a-logging-skip"`,
		},
		{name: "mirror Pods stay, whatever the rules", pod: newPod("kube-apiserver", mirror(), withLabels(map[string]string{"app": "batch"})), wantAction: skipB, wantBy: "mirror Pod"},
		{name: "DaemonSet Pods stay, whatever the rules", pod: newPod("exporter", ownedBy("DaemonSet", "exporter"), withLabels(map[string]string{"app": "batch"})), wantAction: skipB, wantBy: "DaemonSet Pod"},
		{
			name: "a DaemonSet Pod not ignored is refused", pod: newPod("exporter", ownedBy("DaemonSet", "exporter")), spec: upgradev1.DrainSpec{IgnoreDaemonSets: ptr.To(false)},
			wantAction: drainB, wantRefusal: refuseDaemonSet,
		},
		{
			name: "an orphan of a DaemonSet is refused unless unmanaged Pods may be evicted", pod: newPod("exporter", ownedBy("DaemonSet", "gone")),
			wantAction: drainB, wantRefusal: refuseOrphan,
		},
		{
			name: "an orphan of a DaemonSet, with evictUnmanagedPods", pod: newPod("exporter", ownedBy("DaemonSet", "gone")), spec: upgradev1.DrainSpec{EvictUnmanagedPods: ptr.To(true)},
			wantAction: drainB,
		},
		{name: "an unmanaged Pod to drain is refused", pod: newPod("bare", unmanaged()), wantAction: drainB, wantRefusal: refuseUnmanaged},
		{
			name: "an unmanaged Pod of a later order is refused too", pod: newPod("bare", unmanaged(), inNamespace("monitoring")),
			wantAction: drainB, wantOrder: 10, wantBy: `MachineDrainRule "c-obs-last"`, wantRefusal: refuseUnmanaged,
		},
		{
			name: "an unmanaged Pod a rule skips is not refused", pod: newPod("bare", unmanaged(), withLabels(map[string]string{"app": "logging"})),
			wantAction: skipB, wantBy: `MachineDrainRule "a-logging-skip"`,
		},
		{
			name: "an unmanaged Pod waited for is not refused", pod: newPod("bare", unmanaged(), withLabels(map[string]string{clusterv1.PodDrainLabel: "wait-completed"})),
			wantAction: waitB, wantBy: "label cluster.x-k8s.io/drain=wait-completed",
		},
		{
			name: "emptyDir data kept is refused", pod: newPod("cache", withEmptyDir()), spec: upgradev1.DrainSpec{DeleteEmptyDirData: ptr.To(false)},
			wantAction: drainB, wantRefusal: refuseLocalStorage,
		},
		{
			name: "a DaemonSet Pod not ignored but skipped by its label is not refused", pod: newPod("exporter", ownedBy("DaemonSet", "exporter"), withLabels(map[string]string{clusterv1.PodDrainLabel: "skip"})),
			spec: upgradev1.DrainSpec{IgnoreDaemonSets: ptr.To(false)}, wantAction: skipB, wantBy: "label cluster.x-k8s.io/drain=skip",
		},
		{name: "a finished unmanaged Pod is drained", pod: newPod("done", unmanaged(), phase(corev1.PodSucceeded)), wantAction: drainB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rr := tt.rules
			if rr == nil {
				rr = rules
			}
			rs, err := RulesFor(rr, nil, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rs.needNamespaces()).To(BeTrue())
			d := &decider{
				ignoreDaemonSets:   boolOr(tt.spec.IgnoreDaemonSets, true),
				deleteEmptyDirData: boolOr(tt.spec.DeleteEmptyDirData, true),
				evictUnmanaged:     boolOr(tt.spec.EvictUnmanagedPods, false),
				rules:              rs,
				namespaces:         namespaces,
				daemonSetExists:    func(_, name string) (bool, error) { return name == "exporter", nil },
			}
			f, err := d.fateOf(&tt.pod)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f.action).To(Equal(tt.wantAction))
			g.Expect(f.order).To(Equal(tt.wantOrder))
			if tt.wantBy != "" {
				g.Expect(f.by).To(Equal(tt.wantBy))
			}
			g.Expect(f.refusal).To(Equal(tt.wantRefusal))
		})
	}
}

func TestFateOfErrors(t *testing.T) {
	g := NewWithT(t)
	rs, err := RulesFor([]clusterv1.MachineDrainRule{
		mdr("obs", skipB, nil, forPods(clusterv1.MachineDrainRulePodSelector{NamespaceSelector: matchLabels("team", "obs")})),
	}, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	d := &decider{rules: rs, namespaces: map[string]*corev1.Namespace{}, daemonSetExists: func(_, _ string) (bool, error) { return true, nil }}
	pod := newPod("web")
	_, err = d.fateOf(&pod)
	g.Expect(err).To(MatchError(`the Namespace "default" of the Pod was not found`), "no rule is judged on a Namespace not read")

	d = &decider{ignoreDaemonSets: true, daemonSetExists: func(_, _ string) (bool, error) { return false, errors.New("connection refused") }}
	pod = newPod("exporter", ownedBy("DaemonSet", "exporter"))
	_, err = d.fateOf(&pod)
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")), "a DaemonSet not read decides nothing")
}

func TestPlanPass(t *testing.T) {
	drainAt := func(order int32) fate { return fate{behavior: behavior{action: drainB, order: order}} }
	skip := fate{behavior: behavior{action: skipB}}
	wait := fate{behavior: behavior{action: waitB}}
	type podFate struct {
		pod  corev1.Pod
		fate fate
	}
	tests := []struct {
		name                              string
		pods                              []podFate
		wantOrder                         int32
		wantEvict                         []string
		wantTerminating, wantWait, wantLo []string
		wantRefused                       map[string][]string
	}{
		{
			name:      "no rule: one group",
			pods:      []podFate{{newPod("a"), drainAt(0)}, {newPod("b"), drainAt(0)}},
			wantEvict: []string{"a", "b"},
		},
		{
			name:      "the lowest order first",
			pods:      []podFate{{newPod("last"), drainAt(10)}, {newPod("first"), drainAt(-5)}, {newPod("mid"), drainAt(0)}},
			wantOrder: -5, wantEvict: []string{"first"}, wantLo: []string{"default/last", "default/mid"},
		},
		{
			name:      "a higher order waits for a lower one terminating",
			pods:      []podFate{{newPod("going", terminating()), drainAt(0)}, {newPod("last"), drainAt(10)}},
			wantOrder: 0, wantTerminating: []string{"default/going"}, wantLo: []string{"default/last"},
		},
		{
			name:      "skipped Pods count for nothing",
			pods:      []podFate{{newPod("logging"), skip}, {newPod("last"), drainAt(10)}},
			wantOrder: 10, wantEvict: []string{"last"},
		},
		{
			name:      "a Pod waited for is in group 0: it holds back higher orders",
			pods:      []podFate{{newPod("job", phase(corev1.PodRunning)), wait}, {newPod("last"), drainAt(10)}},
			wantOrder: 0, wantWait: []string{"default/job"}, wantLo: []string{"default/last"},
		},
		{
			name:      "a Pod waited for comes after lower orders",
			pods:      []podFate{{newPod("job", phase(corev1.PodRunning)), wait}, {newPod("first"), drainAt(-1)}},
			wantOrder: -1, wantEvict: []string{"first"}, wantLo: []string{"default/job"},
		},
		{
			name:      "a finished Pod waited for completed: it holds nothing",
			pods:      []podFate{{newPod("job", phase(corev1.PodSucceeded)), wait}, {newPod("last"), drainAt(10)}},
			wantOrder: 10, wantEvict: []string{"last"},
		},
		{
			name: "a refusal of any order stops every eviction",
			pods: []podFate{
				{newPod("first"), drainAt(0)},
				{newPod("bare"), fate{behavior: behavior{action: drainB, order: 10}, refusal: refuseUnmanaged}},
			},
			wantOrder:   0,
			wantRefused: map[string][]string{refuseUnmanaged: {"default/bare"}},
		},
		{name: "nothing to do", pods: []podFate{{newPod("logging"), skip}}, wantOrder: 1<<31 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var pods []corev1.Pod
			var fates []fate
			for _, pf := range tt.pods {
				pods, fates = append(pods, pf.pod), append(fates, pf.fate)
			}
			p := planPass(pods, fates)
			if tt.wantRefused != nil {
				g.Expect(p.refused).To(Equal(tt.wantRefused))
				g.Expect(p.evict).To(BeEmpty())
				return
			}
			g.Expect(p.refused).To(BeEmpty())
			g.Expect(p.order).To(Equal(tt.wantOrder))
			var evict []string
			for _, pod := range p.evict {
				evict = append(evict, pod.Name)
			}
			g.Expect(evict).To(ConsistOf(toAny(tt.wantEvict)...))
			g.Expect(p.terminating).To(ConsistOf(toAny(tt.wantTerminating)...))
			g.Expect(p.waiting).To(ConsistOf(toAny(tt.wantWait)...))
			g.Expect(p.later).To(ConsistOf(toAny(tt.wantLo)...))
		})
	}
}

func toAny(s []string) []any {
	out := make([]any, 0, len(s))
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

// fakeWorkload is a fake clientset whose evictions delete the Pod at once,
// as an apiserver does for a Pod with no grace period, and that records the
// Pods evicted.
func fakeWorkload(objects ...runtime.Object) (*fake.Clientset, *[]string) {
	cs := fake.NewClientset(objects...)
	var evicted []string
	cs.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		name := action.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
		evicted = append(evicted, name)
		return true, nil, cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), action.GetNamespace(), name)
	})
	return cs, &evicted
}

// TestDrainByRules drains a node by MachineDrainRules and drain labels, one
// pass after the other, as the drain step calls Drain: order -1, then order
// 0 (the Pods no rule matches) together with a Pod waited for until it
// completes, then order 10; skipped Pods stay and hold nothing.
func TestDrainByRules(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pods := []corev1.Pod{
		newPod("web-0"),
		newPod("web-1"),
		newPod("ingress-0", withLabels(map[string]string{"app": "ingress"})),
		newPod("prometheus-0", inNamespace("monitoring")),
		newPod("fluentd-0", withLabels(map[string]string{"app": "logging"})),
		newPod("migration-0", withLabels(map[string]string{clusterv1.PodDrainLabel: "wait-completed"}), phase(corev1.PodRunning)),
		newPod("debug", unmanaged(), withLabels(map[string]string{clusterv1.PodDrainLabel: "skip"})),
		newPod("node-exporter-0", ownedBy("DaemonSet", "node-exporter")),
	}
	objects := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring", Labels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-exporter"}},
	}
	for i := range pods {
		objects = append(objects, &pods[i])
	}
	cs, evicted := fakeWorkload(objects...)
	rules, err := RulesFor([]clusterv1.MachineDrainRule{
		mdr("ingress-first", drainB, ptr.To[int32](-1), forPods(clusterv1.MachineDrainRulePodSelector{Selector: matchLabels("app", "ingress")})),
		mdr("logging-stays", skipB, nil, forPods(clusterv1.MachineDrainRulePodSelector{Selector: matchLabels("app", "logging")})),
		mdr("monitoring-last", drainB, ptr.To[int32](10), forPods(clusterv1.MachineDrainRulePodSelector{
			NamespaceSelector: matchLabels("kubernetes.io/metadata.name", "monitoring"),
		})),
		// Another Cluster's rule: it would skip everything.
		mdr("staging-skips-all", skipB, nil, forMachines(clusterv1.MachineDrainRuleMachineSelector{ClusterSelector: matchLabels("stage", "staging")})),
	}, map[string]string{"role": "worker"}, map[string]string{"stage": "production"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules.Names()).To(Equal([]string{"ingress-first", "logging-stays", "monitoring-last"}))

	drainOnce := func() Result {
		res, err := Drain(ctx, cs, "n", upgradev1.DrainSpec{}, rules)
		g.Expect(err).NotTo(HaveOccurred())
		return res
	}
	res := drainOnce()
	g.Expect(*evicted).To(Equal([]string{"ingress-0"}), "order -1 first")
	g.Expect(res.Done).To(BeFalse())
	g.Expect(res.Message).To(Equal("waiting for 1 Pods to terminate: default/ingress-0; then 4 Pods of a later drain order: default/migration-0, default/web-0, default/web-1, monitoring/prometheus-0"))

	res = drainOnce()
	g.Expect(*evicted).To(Equal([]string{"ingress-0", "web-0", "web-1"}), "then order 0")
	g.Expect(res.Message).To(Equal("waiting for 2 Pods to terminate: default/web-0, default/web-1; waiting for 1 Pods to complete (not evicted): default/migration-0; then 1 Pods of a later drain order: monitoring/prometheus-0"))

	for range 2 {
		res = drainOnce()
		g.Expect(*evicted).To(HaveLen(3), "order 10 waits for the Pod waited for")
		g.Expect(res.Message).To(Equal("waiting for 1 Pods to complete (not evicted): default/migration-0; then 1 Pods of a later drain order: monitoring/prometheus-0"))
	}

	// The migration completes; it is never evicted.
	migration, err := cs.CoreV1().Pods("default").Get(ctx, "migration-0", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	migration.Status.Phase = corev1.PodSucceeded
	_, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, migration, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	res = drainOnce()
	g.Expect(*evicted).To(Equal([]string{"ingress-0", "web-0", "web-1", "prometheus-0"}), "then order 10")
	g.Expect(res.Done).To(BeFalse())
	res = drainOnce()
	g.Expect(res.Done).To(BeTrue(), res.Message)

	left, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, p := range left.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	g.Expect(names).To(Equal([]string{"debug", "fluentd-0", "migration-0", "node-exporter-0"}), "skipped, completed and DaemonSet Pods stay")
}

// TestDrainStopsOnAnUnreadNamespace: a rule that selects Pods by their
// Namespace's labels needs the Namespaces; a list that fails stops the pass
// before any eviction.
func TestDrainStopsOnAnUnreadNamespace(t *testing.T) {
	g := NewWithT(t)
	pod := newPod("web-0")
	cs, evicted := fakeWorkload(&pod)
	cs.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	rules, err := RulesFor([]clusterv1.MachineDrainRule{
		mdr("monitoring-last", drainB, ptr.To[int32](10), forPods(clusterv1.MachineDrainRulePodSelector{NamespaceSelector: matchLabels("team", "obs")})),
	}, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Drain(context.Background(), cs, "n", upgradev1.DrainSpec{}, rules)
	g.Expect(err).To(MatchError(ContainSubstring("listing the Namespaces for the MachineDrainRules")))
	g.Expect(*evicted).To(BeEmpty())
}
