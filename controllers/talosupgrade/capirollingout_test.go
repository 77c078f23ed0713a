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

package talosupgrade

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestCAPIRollingOut checks what the controller reads as CAPI still rolling
// out a Cluster, for which a rollout whose target comes from CAPI keeps its
// workload connection between two Machines CAPI hands over.
func TestCAPIRollingOut(t *testing.T) {
	const ns, name = "default", "alpha"
	machine := func(annotations map[string]string) *clusterv1.Machine {
		return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha-md-0-a", Annotations: annotations}}
	}
	md := func(strategy clusterv1.MachineDeploymentRolloutStrategyType, rollingOut metav1.ConditionStatus, annotations map[string]string) *clusterv1.MachineDeployment {
		d := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha-md-0", Annotations: annotations,
			Labels: map[string]string{clusterv1.ClusterNameLabel: name}}}
		d.Spec.Rollout.Strategy.Type = strategy
		d.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineDeploymentRollingOutCondition, Status: rollingOut, Reason: "Test", LastTransitionTime: metav1.Now()}}
		return d
	}
	marked := map[string]string{clusterv1.UpdateInProgressAnnotation: "", runtimev1.PendingHooksAnnotation: "UpdateMachine"}
	paused := map[string]string{clusterv1.PausedAnnotation: ""}
	tests := []struct {
		name    string
		machine *clusterv1.Machine
		md      *clusterv1.MachineDeployment
		want    string
	}{
		{name: "a Machine marked for an in-place update", machine: machine(marked), want: "Machine alpha-md-0-a is being updated in place"},
		{name: "a Machine marked for an in-place update, its hook not pending yet", machine: machine(map[string]string{clusterv1.UpdateInProgressAnnotation: ""})},
		{name: "a MachineDeployment rolling out", machine: machine(nil), md: md(clusterv1.RollingUpdateMachineDeploymentStrategyType, metav1.ConditionTrue, nil), want: "MachineDeployment alpha-md-0 is rolling out"},
		{name: "a MachineDeployment with no strategy rolling out", machine: machine(nil), md: md("", metav1.ConditionTrue, nil), want: "MachineDeployment alpha-md-0 is rolling out"},
		{name: "a MachineDeployment up to date", machine: machine(nil), md: md(clusterv1.RollingUpdateMachineDeploymentStrategyType, metav1.ConditionFalse, nil)},
		{name: "a MachineDeployment OnDelete, waiting for its user", machine: machine(nil), md: md(clusterv1.OnDeleteMachineDeploymentStrategyType, metav1.ConditionTrue, nil)},
		{name: "a paused MachineDeployment", machine: machine(nil), md: md(clusterv1.RollingUpdateMachineDeploymentStrategyType, metav1.ConditionTrue, paused)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs := []client.Object{tt.machine}
			if tt.md != nil {
				objs = append(objs, tt.md)
			}
			c := indexed(fake.NewClientBuilder().WithScheme(envtest.NewScheme())).WithObjects(objs...).Build()
			r := &Reconciler{Client: c}
			s := &scope{Rollout: disruption.Rollout{
				Cluster:  &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
				Machines: map[string]*clusterv1.Machine{tt.machine.Name: tt.machine},
			}}
			got, err := r.capiRollingOut(t.Context(), s)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
