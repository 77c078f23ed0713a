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
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func extensionConfig(name string, selector *metav1.LabelSelector, hooks []string, discovered *metav1.Condition) runtimev1.ExtensionConfig {
	ec := runtimev1.ExtensionConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: runtimev1.ExtensionConfigSpec{NamespaceSelector: selector}}
	for _, h := range hooks {
		ec.Status.Handlers = append(ec.Status.Handlers, runtimev1.ExtensionHandler{Name: h + "." + name, RequestHook: runtimev1.GroupVersionHook{APIVersion: "hooks.runtime.cluster.x-k8s.io/v1alpha1", Hook: h}})
	}
	if discovered != nil {
		ec.Status.Conditions = []metav1.Condition{*discovered}
	}
	return ec
}

// TestExtensionFor sorts CAPI's ExtensionConfigs by what they do for a
// namespace: the in-place update extensions discovered, those that serve
// the namespace, and why the others were not discovered.
func TestExtensionFor(t *testing.T) {
	opted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Labels: map[string]string{upgradev1.InPlaceUpdatesNamespaceLabel: upgradev1.InPlaceUpdatesEnabled}}}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{upgradev1.InPlaceUpdatesNamespaceLabel: upgradev1.InPlaceUpdatesEnabled}}
	inPlace := []string{"CanUpdateMachineSet", "CanUpdateMachine", "UpdateMachine"}
	tollgate := extensionConfig("tollgate-extension", selector, inPlace, &metav1.Condition{Type: runtimev1.ExtensionConfigDiscoveredCondition, Status: metav1.ConditionTrue})
	topology := extensionConfig("topology", nil, []string{"BeforeClusterUpgrade"}, &metav1.Condition{Type: runtimev1.ExtensionConfigDiscoveredCondition, Status: metav1.ConditionTrue})
	never := extensionConfig("tollgate-extension", selector, nil, nil)
	failed := extensionConfig("tollgate-extension", selector, nil, &metav1.Condition{Type: runtimev1.ExtensionConfigDiscoveredCondition, Status: metav1.ConditionFalse, Message: "x509: certificate signed by unknown authority"})
	everywhere := extensionConfig("another-updater", nil, inPlace, nil)

	for _, tc := range []struct {
		name    string
		configs []runtimev1.ExtensionConfig
		ns      *corev1.Namespace
		want    extensions
		why     string
	}{
		{name: "none", ns: opted, why: "no ExtensionConfig registers one"},
		{name: "Tollgate's, for an opted-in namespace", configs: []runtimev1.ExtensionConfig{topology, tollgate}, ns: opted,
			want: extensions{discovered: []string{"tollgate-extension"}, serving: []string{"tollgate-extension"}}},
		{name: "Tollgate's, for another namespace", configs: []runtimev1.ExtensionConfig{tollgate}, ns: plain,
			want: extensions{discovered: []string{"tollgate-extension"}}},
		{name: "never discovered: no RuntimeSDK", configs: []runtimev1.ExtensionConfig{never}, ns: opted,
			why: "ExtensionConfig tollgate-extension was never discovered: CAPI discovers extensions only with its RuntimeSDK feature disruption.Gate on"},
		{name: "discovery failed", configs: []runtimev1.ExtensionConfig{failed}, ns: opted,
			why: "CAPI failed to discover ExtensionConfig tollgate-extension: x509: certificate signed by unknown authority"},
		{name: "two", configs: []runtimev1.ExtensionConfig{tollgate, everywhere}, ns: opted,
			want: extensions{discovered: []string{"another-updater", "tollgate-extension"}, serving: []string{"another-updater", "tollgate-extension"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := extensionFor(tc.configs, tc.ns)
			g.Expect(got.discovered).To(Equal(tc.want.discovered))
			g.Expect(got.serving).To(Equal(tc.want.serving))
			if tc.why != "" {
				g.Expect(got.why()).To(ContainSubstring(tc.why))
			}
		})
	}
}
