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
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

// TestKubernetesVersionsCondition: a rollout with a Kubernetes target
// changes no node until the Cluster's CAPI objects ask for the target and
// replace no Machine for it, and the condition says which object and field
// to change.
func TestKubernetesVersionsCondition(t *testing.T) {
	const target = "v1.36.0"
	tcp := func(version string, onDelete bool) *controlplanev1.TalosControlPlane {
		tcp := controlPlane(onDelete)
		tcp.Spec.Version = version
		return tcp
	}
	md := func(name, version string, strategy clusterv1.MachineDeploymentRolloutStrategyType) *clusterv1.MachineDeployment {
		md := machineDeployment(name, name+"-t")
		md.Spec.Template.Spec.Version = version
		md.Spec.Rollout.Strategy.Type = strategy
		return md
	}
	onDelete := clusterv1.OnDeleteMachineDeploymentStrategyType
	tests := []struct {
		name        string
		objs        []client.Object
		cluster     func(*clusterv1.Cluster)
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage []string
	}{{
		name:       "every object asks for the target and replaces nothing",
		objs:       []client.Object{tcp(target, true), md("alpha-md-0", target, onDelete)},
		wantStatus: metav1.ConditionTrue, wantReason: upgradev1.KubernetesVersionsAgreeReason,
	}, {
		name:       "the control plane asks for the old version",
		objs:       []client.Object{tcp("v1.35.2", true), md("alpha-md-0", target, onDelete)},
		wantStatus: metav1.ConditionFalse, wantReason: upgradev1.KubernetesVersionsDisagreeReason,
		wantMessage: []string{"TalosControlPlane alpha-cp asks for v1.35.2 in spec.version: set it to v1.36.0"},
	}, {
		name:       "a MachineDeployment asks for the old version",
		objs:       []client.Object{tcp(target, true), md("alpha-md-0", target, onDelete), md("alpha-md-1", "v1.35.2", onDelete)},
		wantStatus: metav1.ConditionFalse, wantReason: upgradev1.KubernetesVersionsDisagreeReason,
		wantMessage: []string{"MachineDeployment alpha-md-1 asks for v1.35.2 in spec.template.spec.version: set it to v1.36.0"},
	}, {
		name:       "the control plane rolls out RollingUpdate",
		objs:       []client.Object{tcp(target, false), md("alpha-md-0", target, onDelete)},
		wantStatus: metav1.ConditionFalse, wantReason: upgradev1.KubernetesReplacesMachinesReason,
		wantMessage: []string{"TalosControlPlane alpha-cp rolls out RollingUpdate", "set spec.rolloutStrategy.type: OnDelete"},
	}, {
		name:       "a MachineDeployment rolls out RollingUpdate, and asks for the old version too",
		objs:       []client.Object{tcp(target, true), md("alpha-md-0", "v1.35.2", clusterv1.RollingUpdateMachineDeploymentStrategyType)},
		wantStatus: metav1.ConditionFalse, wantReason: upgradev1.KubernetesReplacesMachinesReason,
		wantMessage: []string{"MachineDeployment alpha-md-0 rolls out RollingUpdate", "set spec.rollout.strategy.type: OnDelete", "MachineDeployment alpha-md-0 asks for v1.35.2 in spec.template.spec.version"},
	}, {
		name: "a control plane of another provider",
		cluster: func(c *clusterv1.Cluster) {
			c.Spec.ControlPlaneRef = clusterv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: "alpha-kcp"}
		},
		wantStatus: metav1.ConditionFalse, wantReason: upgradev1.KubernetesReplacesMachinesReason,
		wantMessage: []string{"KubeadmControlPlane alpha-kcp: its provider replaces the control-plane Machines"},
	}, {
		name:       "a control plane not created yet: wait",
		objs:       []client.Object{md("alpha-md-0", target, onDelete)},
		wantStatus: metav1.ConditionUnknown, wantReason: upgradev1.KubernetesVersionsUnknownReason,
		wantMessage: []string{"cannot read TalosControlPlane alpha-cp"},
	}, {
		name: "a topology that asks for the old version",
		objs: []client.Object{tcp(target, true)},
		cluster: func(c *clusterv1.Cluster) {
			c.Spec.Topology = clusterv1.Topology{ClassRef: clusterv1.ClusterClassRef{Name: "talos"}, Version: "v1.35.2"}
		},
		wantStatus: metav1.ConditionFalse, wantReason: upgradev1.KubernetesVersionsDisagreeReason,
		wantMessage: []string{"Cluster alpha asks for v1.35.2 in spec.topology.version"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := envtest.NewScheme()
			g.Expect(controlplanev1.AddToScheme(s)).To(Succeed())
			mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{clusterv1.GroupVersion, controlplanev1.GroupVersion})
			mapper.Add(clusterv1.GroupVersion.WithKind("MachineDeployment"), meta.RESTScopeNamespace)
			mapper.Add(controlplanev1.GroupVersion.WithKind(machineconfig.TalosControlPlaneKind), meta.RESTScopeNamespace)
			c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(tt.objs...).Build()
			r := &Reconciler{Client: c, Templates: c, Now: func() time.Time { return t0 }}
			cluster := builder.Cluster("ns", "alpha")
			cluster.Spec.ControlPlaneRef.Name = "alpha-cp"
			if tt.cluster != nil {
				tt.cluster(cluster)
			}
			sc := &scope{
				Rollout: disruption.Rollout{Cluster: cluster, Upgrade: &upgradev1.TalosUpgrade{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"},
					Spec:       upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: target}},
				}},
			}
			res, err := r.reconcileKubernetesVersions(context.Background(), sc)
			g.Expect(err).NotTo(HaveOccurred())
			cond := sc.KubernetesVersions
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(tt.wantStatus), "%s", cond.Message)
			g.Expect(cond.Reason).To(Equal(tt.wantReason), "%s", cond.Message)
			for _, want := range tt.wantMessage {
				g.Expect(cond.Message).To(ContainSubstring(want))
			}
			g.Expect(res.RequeueAfter > 0).To(Equal(tt.wantStatus == metav1.ConditionUnknown), "an object not readable yet is read again")
			gate := sc.KubernetesVersionsGate()
			if tt.wantStatus == metav1.ConditionTrue {
				g.Expect(gate.Reason).To(BeEmpty())
			} else {
				g.Expect(gate.Reason).To(Equal(upgradev1.WaitingForKubernetesVersionsReason))
				g.Expect(gate.Message).To(Equal(cond.Message))
			}
		})
	}
}
