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

package inplace

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

// Serving returns the names of the ExtensionConfigs CAPI discovered with an
// UpdateMachine handler whose namespaceSelector selects ns (every namespace
// when it has none): with exactly one, CAPI asks it before it replaces the
// Machines of a MachineDeployment there.
func Serving(configs []runtimev1.ExtensionConfig, ns *corev1.Namespace) []string {
	var serving []string
	for i := range configs {
		ec := &configs[i]
		updates := false
		for _, h := range ec.Status.Handlers {
			if h.RequestHook.Hook == runtimecatalog.HookName(runtimehooksv1.UpdateMachine) {
				updates = true
			}
		}
		if !updates {
			continue
		}
		if sel := ec.Spec.NamespaceSelector; sel != nil {
			selector, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil || !selector.Matches(labels.Set(ns.Labels)) {
				continue
			}
		}
		serving = append(serving, ec.Name)
	}
	return serving
}
