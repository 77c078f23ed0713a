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
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Rules are the MachineDrainRules that apply to the Machine whose node is
// drained, in name order: the first whose pods selectors match a Pod
// decides what the drain does with it, as in Cluster API's Machine drain.
// The zero value has no rule: every Pod is drained, in one group.
type Rules struct {
	rules []rule
}

// rule is a MachineDrainRule that applies to the Machine, with its Pod
// selectors parsed.
type rule struct {
	name     string
	behavior clusterv1.MachineDrainRuleDrainBehavior
	order    int32
	// pods are the rule's Pod selectors, ORed; none selects every Pod.
	pods []podSelector
}

// podSelector selects Pods by their labels and by the labels of their
// Namespace, ANDed.
type podSelector struct {
	pod, namespace labels.Selector
	// byNamespace is set when namespace selects something less than every
	// Namespace: the Namespaces' labels must then be read.
	byNamespace bool
}

// RulesFor returns the rules of a Machine labelled machineLabels in a
// Cluster labelled clusterLabels, out of the MachineDrainRules of the
// Machine's namespace: those whose spec.machines is empty or has a selector
// whose selector matches the Machine's labels and whose clusterSelector
// matches the Cluster's. A rule with an invalid selector, or one that
// applies with an unknown behavior, is an error: the drain must not go on
// without the rules (the admission of MachineDrainRules refuses both).
func RulesFor(all []clusterv1.MachineDrainRule, machineLabels, clusterLabels map[string]string) (Rules, error) {
	var rs Rules
	for i := range all {
		mdr := &all[i]
		applies, err := appliesToMachine(mdr, machineLabels, clusterLabels)
		if err != nil {
			return Rules{}, err
		}
		if !applies {
			continue
		}
		r := rule{name: mdr.Name, behavior: mdr.Spec.Drain.Behavior}
		switch r.behavior {
		case clusterv1.MachineDrainRuleDrainBehaviorDrain:
			if mdr.Spec.Drain.Order != nil {
				r.order = *mdr.Spec.Drain.Order
			}
		case clusterv1.MachineDrainRuleDrainBehaviorSkip, clusterv1.MachineDrainRuleDrainBehaviorWaitCompleted:
			// A Pod waited for has order 0; a skipped one has none.
		default:
			return Rules{}, fmt.Errorf("MachineDrainRule %q has an unknown spec.drain.behavior %q", mdr.Name, r.behavior)
		}
		for _, ps := range mdr.Spec.Pods {
			pod, err := selectorOf(ps.Selector)
			if err != nil {
				return Rules{}, fmt.Errorf("MachineDrainRule %q: spec.pods[].selector: %w", mdr.Name, err)
			}
			namespace, err := selectorOf(ps.NamespaceSelector)
			if err != nil {
				return Rules{}, fmt.Errorf("MachineDrainRule %q: spec.pods[].namespaceSelector: %w", mdr.Name, err)
			}
			r.pods = append(r.pods, podSelector{pod: pod, namespace: namespace, byNamespace: !namespace.Empty()})
		}
		rs.rules = append(rs.rules, r)
	}
	slices.SortFunc(rs.rules, func(a, b rule) int { return cmp.Compare(a.name, b.name) })
	return rs, nil
}

// appliesToMachine reports whether a MachineDrainRule applies to a Machine.
func appliesToMachine(mdr *clusterv1.MachineDrainRule, machineLabels, clusterLabels map[string]string) (bool, error) {
	if len(mdr.Spec.Machines) == 0 {
		return true, nil
	}
	for _, ms := range mdr.Spec.Machines {
		machine, err := selectorOf(ms.Selector)
		if err != nil {
			return false, fmt.Errorf("MachineDrainRule %q: spec.machines[].selector: %w", mdr.Name, err)
		}
		cluster, err := selectorOf(ms.ClusterSelector)
		if err != nil {
			return false, fmt.Errorf("MachineDrainRule %q: spec.machines[].clusterSelector: %w", mdr.Name, err)
		}
		if machine.Matches(labels.Set(machineLabels)) && cluster.Matches(labels.Set(clusterLabels)) {
			return true, nil
		}
	}
	return false, nil
}

// selectorOf parses a label selector of a MachineDrainRule: unset or empty,
// it selects everything.
func selectorOf(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// Names returns the names of the rules, in the order they are tried.
func (rs Rules) Names() []string {
	names := make([]string, 0, len(rs.rules))
	for _, r := range rs.rules {
		names = append(names, r.name)
	}
	return names
}

// needNamespaces reports whether some rule selects Pods by the labels of
// their Namespace.
func (rs Rules) needNamespaces() bool {
	for _, r := range rs.rules {
		for _, ps := range r.pods {
			if ps.byNamespace {
				return true
			}
		}
	}
	return false
}

// behavior is what the drain does with one Pod, and why.
type behavior struct {
	// action is Drain (evict it, in its order), Skip (leave it, and do not
	// wait for it) or WaitCompleted (leave it, and wait until it completes).
	action clusterv1.MachineDrainRuleDrainBehavior
	// order is the Pod's group: a group is evicted once every Pod of the
	// groups of lower order is gone. A Pod waited for is in group 0.
	order int32
	// by names what decided, for messages and logs: a rule, the drain
	// label, or empty for the default.
	by string
}

// drainLabelBehavior reads CAPI's cluster.x-k8s.io/drain label of a Pod,
// which takes precedence over the MachineDrainRules: "skip" or
// "wait-completed", in any case, with or without the dash. Another value is
// ignored, as by CAPI.
func drainLabelBehavior(pod *corev1.Pod) (behavior, bool) {
	v, ok := pod.Labels[clusterv1.PodDrainLabel]
	if !ok {
		return behavior{}, false
	}
	by := fmt.Sprintf("label %s=%s", clusterv1.PodDrainLabel, v)
	switch {
	case strings.EqualFold(v, string(clusterv1.MachineDrainRuleDrainBehaviorSkip)):
		return behavior{action: clusterv1.MachineDrainRuleDrainBehaviorSkip, by: by}, true
	case strings.EqualFold(strings.Replace(v, "-", "", 1), string(clusterv1.MachineDrainRuleDrainBehaviorWaitCompleted)):
		return behavior{action: clusterv1.MachineDrainRuleDrainBehaviorWaitCompleted, by: by}, true
	}
	return behavior{}, false
}

// behaviorOf says what the drain label and the rules decide for a Pod in
// namespace (nil when no rule needs the Namespaces' labels): the label
// first, then the first rule, by name, whose Pod selectors match; without
// either, the Pod is drained in group 0.
func (rs Rules) behaviorOf(pod *corev1.Pod, namespace *corev1.Namespace) behavior {
	if b, ok := drainLabelBehavior(pod); ok {
		return b
	}
	var nsLabels labels.Set
	if namespace != nil {
		nsLabels = namespace.Labels
	}
	for _, r := range rs.rules {
		if !r.appliesToPod(pod, nsLabels) {
			continue
		}
		b := behavior{action: r.behavior, by: fmt.Sprintf("MachineDrainRule %q", r.name)}
		if r.behavior == clusterv1.MachineDrainRuleDrainBehaviorDrain {
			b.order = r.order
		}
		return b
	}
	return behavior{action: clusterv1.MachineDrainRuleDrainBehaviorDrain}
}

// appliesToPod reports whether one of the rule's Pod selectors matches.
func (r rule) appliesToPod(pod *corev1.Pod, namespaceLabels labels.Set) bool {
	if len(r.pods) == 0 {
		return true
	}
	for _, ps := range r.pods {
		if ps.pod.Matches(labels.Set(pod.Labels)) && ps.namespace.Matches(namespaceLabels) {
			return true
		}
	}
	return false
}
