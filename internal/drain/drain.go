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
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	kubedrain "k8s.io/kubectl/pkg/drain"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// maxListedPods is how many Pods a message names before "and N more".
const maxListedPods = 5

// Cordon marks node unschedulable. A Node already cordoned is left alone.
func Cordon(ctx context.Context, cs kubernetes.Interface, node string) error {
	return setUnschedulable(ctx, cs, node, true)
}

// Uncordon marks node schedulable again. A Node already schedulable is left
// alone.
func Uncordon(ctx context.Context, cs kubernetes.Interface, node string) error {
	return setUnschedulable(ctx, cs, node, false)
}

// The patches of spec.unschedulable, as kubectl cordon and uncordon send
// them (false is spec.unschedulable left out).
var (
	cordonPatch   = []byte(`{"spec":{"unschedulable":true}}`)
	uncordonPatch = []byte(`{"spec":{"unschedulable":null}}`)
)

// setUnschedulable patches spec.unschedulable of a Node in one request, not
// read first: a Node already as desired is a patch that changes nothing,
// which the apiserver does not write.
func setUnschedulable(ctx context.Context, cs kubernetes.Interface, name string, desired bool) error {
	patch := uncordonPatch
	if desired {
		patch = cordonPatch
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting Node %q unschedulable=%t: %w", name, desired, err)
	}
	return nil
}

// Result is where a drain stands.
type Result struct {
	// Done is true when no Pod that must go is left on the Node, and no Pod
	// the drain waits for still runs: the Pods it leaves in place (DaemonSet
	// and mirror Pods, Pods skipped by a rule or by their drain label) do
	// not count.
	Done bool

	// Message says what the drain waits for when it is not done, for
	// example `blocked by PodDisruptionBudget "default/web": default/web-0`.
	Message string
}

// Drain moves the drain of node one step on without waiting: it evicts (or
// deletes, when spec.respectPodDisruptionBudgets is false) the Pods of the
// Node that must go now, once, and reports what is left.
//
// What must go is decided Pod by Pod, in this order: mirror Pods, and the
// Pods of a DaemonSet when spec.ignoreDaemonSets (the default), stay; then
// CAPI's cluster.x-k8s.io/drain label ("skip" or "wait-completed") and,
// without it, the first of rules (by name) whose Pod selectors match say
// whether the Pod is drained (with the rule's order), skipped (left in
// place, not waited for) or waited for (left in place, and the drain is not
// done until it completed: it finished, or is gone); every other Pod is
// drained in order 0. Pods are drained by order, lowest first: a Pod is
// evicted only once every Pod of a lower order (and, above order 0, every
// Pod waited for) is gone.
//
// A PodDisruptionBudget that refuses an eviction is not an error: it is
// named in Result.Message, and the eviction is tried again on the next call.
// When the DrainSpec forbids evicting some Pod to drain (an unmanaged Pod, a
// Pod with emptyDir data, or a DaemonSet Pod the spec does not ignore),
// nothing is evicted and Result.Message says what to change; a Pod a rule
// or its label leaves in place is never refused. Errors are returned for
// failures the caller should retry with backoff, along with the Result so
// far.
func Drain(ctx context.Context, cs kubernetes.Interface, node string, spec upgradev1.DrainSpec, rules Rules) (Result, error) {
	pods, err := podsOf(ctx, cs, node)
	if err != nil {
		return Result{}, err
	}
	d := &decider{
		ignoreDaemonSets:   boolOr(spec.IgnoreDaemonSets, true),
		deleteEmptyDirData: boolOr(spec.DeleteEmptyDirData, true),
		evictUnmanaged:     boolOr(spec.EvictUnmanagedPods, false),
		rules:              rules,
		daemonSetExists:    daemonSetExists(ctx, cs),
	}
	if rules.needNamespaces() && len(pods) > 0 {
		list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return Result{}, fmt.Errorf("listing the Namespaces for the MachineDrainRules: %w", err)
		}
		d.namespaces = make(map[string]*corev1.Namespace, len(list.Items))
		for i := range list.Items {
			d.namespaces[list.Items[i].Name] = &list.Items[i]
		}
	}
	fates := make([]fate, len(pods))
	for i := range pods {
		if fates[i], err = d.fateOf(&pods[i]); err != nil {
			return Result{}, fmt.Errorf("deciding the drain of Pod %s: %w", pods[i].Namespace+"/"+pods[i].Name, err)
		}
	}
	p := planPass(pods, fates)
	if len(p.refused) > 0 {
		msgs := make([]string, 0, len(p.refused))
		for refusal, names := range p.refused {
			msgs = append(msgs, refusal+": "+listPods(names))
		}
		slices.Sort(msgs)
		return Result{Message: "cannot drain Node: " + strings.Join(msgs, "; ")}, nil
	}

	log := ctrl.LoggerFrom(ctx)
	helper := newHelper(ctx, cs, spec)
	var (
		evicted  []string
		blocked  = map[string][]string{}
		failures []error
	)
	for _, pod := range p.evict {
		name := pod.Namespace + "/" + pod.Name
		var err error
		if spec.RespectPodDisruptionBudgets == nil || *spec.RespectPodDisruptionBudgets {
			err = helper.EvictPod(pod, policyv1.SchemeGroupVersion)
		} else {
			err = helper.DeletePod(pod)
		}
		switch {
		case err == nil:
			log.V(4).Info("Evicted Pod", "Pod", klog.KObj(&pod), "Node", klog.KRef("", node), "order", p.order)
			evicted = append(evicted, name)
		case apierrors.IsNotFound(err):
			// Gone already.
		case apierrors.IsTooManyRequests(err):
			pdb := disruptionBudget(err, pod.Namespace)
			blocked[pdb] = append(blocked[pdb], name)
		default:
			failures = append(failures, fmt.Errorf("evicting Pod %s: %w", name, err))
		}
	}

	if len(p.terminating) == 0 && len(evicted) == 0 && len(blocked) == 0 && len(failures) == 0 && len(p.waiting) == 0 && len(p.later) == 0 {
		return Result{Done: true}, nil
	}
	var parts []string
	for _, pdb := range slices.Sorted(maps.Keys(blocked)) {
		parts = append(parts, fmt.Sprintf("blocked by %s: %s", pdb, listPods(blocked[pdb])))
	}
	if n := len(evicted) + len(p.terminating); n > 0 {
		parts = append(parts, fmt.Sprintf("waiting for %d Pods to terminate: %s", n, listPods(append(p.terminating, evicted...))))
	}
	if len(failures) > 0 {
		parts = append(parts, fmt.Sprintf("%d evictions failed", len(failures)))
	}
	if len(p.waiting) > 0 {
		parts = append(parts, fmt.Sprintf("waiting for %d Pods to complete (not evicted): %s", len(p.waiting), listPods(p.waiting)))
	}
	if len(p.later) > 0 {
		parts = append(parts, fmt.Sprintf("then %d Pods of a later drain order: %s", len(p.later), listPods(p.later)))
	}
	return Result{Message: strings.Join(parts, "; ")}, kerrors.NewAggregate(failures)
}

// podsOf lists the Pods of a Node, in pages.
func podsOf(ctx context.Context, cs kubernetes.Interface, node string) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(), Limit: podsPerPage}
	for {
		list, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing Pods of Node %q: %w", node, err)
		}
		pods = append(pods, list.Items...)
		if list.Continue == "" {
			return pods, nil
		}
		opts.Continue = list.Continue
	}
}

// podsPerPage is how many Pods one list request of podsOf asks for.
const podsPerPage = 500

// daemonSetExists reads DaemonSets live, as kubectl drain does: a Pod whose
// DaemonSet is gone is an orphan, not left in place.
func daemonSetExists(ctx context.Context, cs kubernetes.Interface) func(namespace, name string) (bool, error) {
	return func(namespace, name string) (bool, error) {
		_, err := cs.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		}
		return false, fmt.Errorf("reading DaemonSet %q: %w", namespace+"/"+name, err)
	}
}

// newHelper returns kubectl's drain helper, which evicts and deletes Pods
// as `kubectl drain` does, configured by spec.
func newHelper(ctx context.Context, cs kubernetes.Interface, spec upgradev1.DrainSpec) *kubedrain.Helper {
	return &kubedrain.Helper{
		Ctx:                ctx,
		Client:             cs,
		GracePeriodSeconds: -1, // The Pod's own terminationGracePeriodSeconds.
		DisableEviction:    !boolOr(spec.RespectPodDisruptionBudgets, true),
		Out:                io.Discard,
		ErrOut:             io.Discard,
	}
}

var budgetName = regexp.MustCompile(`The disruption budget (\S+)`)

// disruptionBudget names what refused an eviction with 429 Too Many
// Requests: the PodDisruptionBudget of the cause the apiserver gives, or,
// without such a cause, the apiserver's own throttling.
func disruptionBudget(err error, namespace string) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			if cause.Type != policyv1.DisruptionBudgetCause {
				continue
			}
			if m := budgetName.FindStringSubmatch(cause.Message); m != nil {
				return fmt.Sprintf("PodDisruptionBudget %q", namespace+"/"+m[1])
			}
			return "a PodDisruptionBudget"
		}
	}
	return "the apiserver throttling evictions"
}

func listPods(pods []string) string {
	slices.Sort(pods)
	if len(pods) <= maxListedPods {
		return strings.Join(pods, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(pods[:maxListedPods], ", "), len(pods)-maxListedPods)
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}
