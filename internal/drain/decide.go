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
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// This file decides what a drain pass does with each Pod of a node (fateOf)
// and what the pass does as a whole (planPass), on what was read: no
// request is made here but the DaemonSet reads the decider is given.

// The DrainSpec's refusals, with the field that lifts each: the filters of
// `kubectl drain`, with the DrainSpec's fields for its flags.
const (
	refuseDaemonSet    = "cannot delete DaemonSet-managed Pods (set drain.ignoreDaemonSets to leave them in place)"
	refuseOrphan       = "cannot delete Pods of a DaemonSet that no longer exists (set drain.evictUnmanagedPods to evict them)"
	refuseLocalStorage = "cannot delete Pods with local storage (set drain.deleteEmptyDirData to evict them)"
	refuseUnmanaged    = "cannot delete Pods that declare no controller (set drain.evictUnmanagedPods to evict them)"
)

// fate is what a drain pass does with one Pod.
type fate struct {
	behavior
	// refusal, for a Pod to drain, says why the DrainSpec forbids evicting
	// it; empty when it may be evicted.
	refusal string
}

// decider decides the fate of the Pods of one node.
type decider struct {
	// ignoreDaemonSets, deleteEmptyDirData and evictUnmanaged are the
	// DrainSpec's, defaulted.
	ignoreDaemonSets, deleteEmptyDirData, evictUnmanaged bool
	// rules are the MachineDrainRules of the node's Machine.
	rules Rules
	// namespaces are the workload cluster's Namespaces by name, read only
	// when a rule selects Pods by their Namespace's labels.
	namespaces map[string]*corev1.Namespace
	// daemonSetExists reads whether a DaemonSet exists; each DaemonSet is
	// read once per pass (daemonSets).
	daemonSetExists func(namespace, name string) (bool, error)
	daemonSets      map[string]bool
}

// fateOf decides what the drain does with pod: mirror Pods stay; the Pods
// of a DaemonSet stay when the DrainSpec ignores DaemonSets (the default);
// then the drain label and the rules decide (see Rules.behaviorOf); a Pod to
// drain the DrainSpec does not allow to evict is refused, as by kubectl
// drain: a DaemonSet's (not ignored), an orphan of a DaemonSet (unless
// unmanaged Pods may be evicted), one with emptyDir data (unless it may be
// deleted) and one with no controller (unless unmanaged Pods may be
// evicted); a finished Pod is never refused.
func (d *decider) fateOf(pod *corev1.Pod) (fate, error) {
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return fate{behavior: behavior{action: clusterv1.MachineDrainRuleDrainBehaviorSkip, by: "mirror Pod"}}, nil
	}
	finished := podFinished(pod)
	var refusal string
	if ref := metav1.GetControllerOf(pod); ref != nil && isDaemonSet(ref) && !finished {
		exists, err := d.daemonSet(pod.Namespace, ref.Name)
		if err != nil {
			return fate{}, err
		}
		switch {
		case exists && d.ignoreDaemonSets:
			return fate{behavior: behavior{action: clusterv1.MachineDrainRuleDrainBehaviorSkip, by: "DaemonSet Pod"}}, nil
		case exists:
			refusal = refuseDaemonSet
		case !d.evictUnmanaged:
			refusal = refuseOrphan
		}
	}
	var namespace *corev1.Namespace
	if d.namespaces != nil {
		if namespace = d.namespaces[pod.Namespace]; namespace == nil {
			return fate{}, fmt.Errorf("the Namespace %q of the Pod was not found", pod.Namespace)
		}
	}
	f := fate{behavior: d.rules.behaviorOf(pod, namespace)}
	if f.action != clusterv1.MachineDrainRuleDrainBehaviorDrain || finished {
		return f, nil
	}
	switch {
	case refusal != "":
		f.refusal = refusal
	case hasLocalStorage(pod) && !d.deleteEmptyDirData:
		f.refusal = refuseLocalStorage
	case metav1.GetControllerOf(pod) == nil && !d.evictUnmanaged:
		f.refusal = refuseUnmanaged
	}
	return f, nil
}

// daemonSet reads whether a DaemonSet exists, once per pass.
func (d *decider) daemonSet(namespace, name string) (bool, error) {
	key := namespace + "/" + name
	if exists, ok := d.daemonSets[key]; ok {
		return exists, nil
	}
	exists, err := d.daemonSetExists(namespace, name)
	if err != nil {
		return false, err
	}
	if d.daemonSets == nil {
		d.daemonSets = map[string]bool{}
	}
	d.daemonSets[key] = exists
	return exists, nil
}

// isDaemonSet reports whether a controller reference names an apps/v1
// DaemonSet.
func isDaemonSet(ref *metav1.OwnerReference) bool {
	return ref.Kind == "DaemonSet" && ref.APIVersion == appsv1.SchemeGroupVersion.String()
}

// podFinished reports whether a Pod ran to its end.
func podFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func hasLocalStorage(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			return true
		}
	}
	return false
}

// pass is what one drain pass does, from the fates of a node's Pods.
type pass struct {
	// refused are the Pods to drain the DrainSpec forbids evicting, by
	// refusal: while there is one, nothing is evicted.
	refused map[string][]string
	// order is the lowest order of the Pods left to drain or wait for: the
	// group of this pass.
	order int32
	// evict are the Pods of the group to evict now.
	evict []corev1.Pod
	// terminating are the Pods to drain that are already terminating, of
	// any order.
	terminating []string
	// waiting are the Pods of the group waited for until they complete.
	waiting []string
	// later are the Pods of higher orders, evicted or waited for once the
	// group is gone.
	later []string
}

// planPass groups the Pods to drain and to wait for by order, as CAPI's
// Machine drain does: the group of the pass is the lowest order among the
// Pods to drain (terminating ones included) and the Pods waited for (order
// 0) that have not finished; its Pods are evicted, or waited for, and every
// Pod of a higher order waits for the next passes.
func planPass(pods []corev1.Pod, fates []fate) pass {
	p := pass{refused: map[string][]string{}, order: math.MaxInt32}
	waited := func(i int) bool {
		return fates[i].action == clusterv1.MachineDrainRuleDrainBehaviorWaitCompleted && !podFinished(&pods[i])
	}
	for i := range pods {
		switch {
		case fates[i].action == clusterv1.MachineDrainRuleDrainBehaviorDrain:
			if fates[i].refusal != "" {
				p.refused[fates[i].refusal] = append(p.refused[fates[i].refusal], pods[i].Namespace+"/"+pods[i].Name)
			}
			p.order = min(p.order, fates[i].order)
		case waited(i):
			p.order = min(p.order, fates[i].order)
		}
	}
	if len(p.refused) > 0 {
		return p
	}
	p.refused = nil
	for i := range pods {
		name := pods[i].Namespace + "/" + pods[i].Name
		switch {
		case fates[i].action == clusterv1.MachineDrainRuleDrainBehaviorDrain && pods[i].DeletionTimestamp != nil:
			p.terminating = append(p.terminating, name)
		case fates[i].action == clusterv1.MachineDrainRuleDrainBehaviorDrain && fates[i].order == p.order:
			p.evict = append(p.evict, pods[i])
		case waited(i) && fates[i].order == p.order:
			p.waiting = append(p.waiting, name)
		case fates[i].action == clusterv1.MachineDrainRuleDrainBehaviorDrain, waited(i):
			p.later = append(p.later, name)
		}
	}
	return p
}
