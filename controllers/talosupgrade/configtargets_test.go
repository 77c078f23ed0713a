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
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	controlplanev1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/controlplane/v1alpha3"
)

const sysctlPatch = "machine:\n  sysctls:\n    net.core.somaxconn: \"65535\"\n"

// talosConfigTemplate is a worker TalosConfigTemplate with patches.
func talosConfigTemplate(name string, patches ...string) *bootstrapv1.TalosConfigTemplate {
	return &bootstrapv1.TalosConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: bootstrapv1.TalosConfigTemplateSpec{Template: bootstrapv1.TalosConfigTemplateResource{Spec: bootstrapv1.TalosConfigSpec{
			GenerateType: "worker", StrategicPatches: patches,
		}}},
	}
}

// machineDeploymentOption changes a MachineDeployment of
// machineDeployment.
type machineDeploymentOption func(*clusterv1.MachineDeployment)

// rollingOut gives a MachineDeployment the RollingUpdate strategy.
func rollingOut(md *clusterv1.MachineDeployment) {
	md.Spec.Rollout.Strategy.Type = clusterv1.RollingUpdateMachineDeploymentStrategyType
}

// ofCluster puts a MachineDeployment in another Cluster.
func ofCluster(cluster string) machineDeploymentOption {
	return func(md *clusterv1.MachineDeployment) {
		md.Labels[clusterv1.ClusterNameLabel], md.Spec.ClusterName = cluster, cluster
	}
}

// machineDeployment is a MachineDeployment of Cluster alpha that rolls out
// OnDelete, whose Machines are bootstrapped by TalosConfigTemplate
// template.
func machineDeployment(name, template string, opts ...machineDeploymentOption) *clusterv1.MachineDeployment {
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: "alpha"}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: "alpha",
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: "alpha",
				Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: machineconfig.BootstrapGroup, Kind: machineconfig.TalosConfigTemplateKind, Name: template,
				}},
			}},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{Type: clusterv1.OnDeleteMachineDeploymentStrategyType}},
		},
	}
	for _, opt := range opts {
		opt(md)
	}
	return md
}

// controlPlane is the TalosControlPlane of Cluster alpha, rolling out
// OnDelete when onDelete, with patches.
func controlPlane(onDelete bool, patches ...string) *controlplanev1.TalosControlPlane {
	tcp := &controlplanev1.TalosControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha-cp"}}
	tcp.Spec.ControlPlaneConfig.ControlPlaneConfig = bootstrapv1.TalosConfigSpec{GenerateType: "controlplane", StrategicPatches: patches}
	if onDelete {
		tcp.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{Type: controlplanev1.OnDeleteStrategyType}
	}
	return tcp
}

// readConfigTargets runs reconcileConfigTargets for Cluster alpha over
// objs.
func readConfigTargets(g Gomega, objs ...client.Object) (*scope, ctrl.Result) {
	s := envtest.NewScheme()
	g.Expect(bootstrapv1.AddToScheme(s)).To(Succeed())
	g.Expect(controlplanev1.AddToScheme(s)).To(Succeed())
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{clusterv1.GroupVersion, bootstrapv1.GroupVersion, controlplanev1.GroupVersion})
	for _, gvk := range []schema.GroupVersionKind{
		clusterv1.GroupVersion.WithKind("MachineDeployment"),
		bootstrapv1.GroupVersion.WithKind(machineconfig.TalosConfigTemplateKind),
		controlplanev1.GroupVersion.WithKind(machineconfig.TalosControlPlaneKind),
	} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).Build()
	r := &Reconciler{Client: c, Templates: c, Now: func() time.Time { return t0 }}
	sc := &scope{Rollout: disruption.Rollout{Upgrade: &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}, Cluster: builder.Cluster("ns", "alpha")}}
	res, err := r.reconcileConfigTargets(context.Background(), sc)
	g.Expect(err).NotTo(HaveOccurred())
	return sc, res
}

// TestConfigTargets: which template's patches a Machine's node should run.
// A worker's are those of its MachineDeployment's current
// TalosConfigTemplate when the MachineDeployment rolls out OnDelete (CAPI
// replaces the Machines of one that rolls out RollingUpdate); a template
// that cannot be read is a target that waits, with its error.
func TestConfigTargets(t *testing.T) {
	worker := func(md string, opts ...builder.MachineOption) *clusterv1.Machine {
		opts = append(opts, builder.WithMachineDeployment(md))
		return builder.Machine("ns", md+"-abc", "alpha", opts...)
	}
	tests := []struct {
		name    string
		objs    []client.Object
		machine *clusterv1.Machine
		// wantSource is the source of the Machine's target, "" for none.
		wantSource string
		// wantErr is what the target's error wraps, when it has one.
		wantErr     func(error) bool
		wantRequeue bool
		// wantCondition is the MachineConfigs condition's reason, "" when
		// it is not set.
		wantCondition string
	}{{
		name:          "a worker of a MachineDeployment that rolls out OnDelete: its template's patches",
		objs:          []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v2"), talosConfigTemplate("alpha-md-0-v2", sysctlPatch)},
		machine:       worker("alpha-md-0"),
		wantSource:    "TalosConfigTemplate alpha-md-0-v2 of MachineDeployment alpha-md-0",
		wantCondition: upgradev1.MachineConfigsApplicableReason,
	}, {
		name: "a worker of an old MachineSet: the MachineDeployment's current template's",
		objs: []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v2"), talosConfigTemplate("alpha-md-0-v1"), talosConfigTemplate("alpha-md-0-v2", sysctlPatch)},
		machine: worker("alpha-md-0", builder.WithLabels(map[string]string{
			clusterv1.MachineSetNameLabel: "alpha-md-0-v1hash", clusterv1.MachineDeploymentUniqueLabel: "v1hash",
		})),
		wantSource:    "TalosConfigTemplate alpha-md-0-v2 of MachineDeployment alpha-md-0",
		wantCondition: upgradev1.MachineConfigsApplicableReason,
	}, {
		name:    "a worker of a MachineDeployment that rolls out RollingUpdate: CAPI replaces it",
		objs:    []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v2", rollingOut), talosConfigTemplate("alpha-md-0-v2", sysctlPatch)},
		machine: worker("alpha-md-0"),
	}, {
		name:    "a template without patches: nothing to bring",
		objs:    []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v1"), talosConfigTemplate("alpha-md-0-v1")},
		machine: worker("alpha-md-0"),
	}, {
		name:          "a template not created yet: waits, and says why",
		objs:          []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v2")},
		machine:       worker("alpha-md-0"),
		wantSource:    "TalosConfigTemplate alpha-md-0-v2 of MachineDeployment alpha-md-0",
		wantErr:       apierrors.IsNotFound,
		wantRequeue:   true,
		wantCondition: upgradev1.MachineConfigsUnknownReason,
	}, {
		name:          "malformed patches: nothing applied, the condition says which",
		objs:          []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v2"), talosConfigTemplate("alpha-md-0-v2", "machine: [")},
		machine:       worker("alpha-md-0"),
		wantSource:    "TalosConfigTemplate alpha-md-0-v2 of MachineDeployment alpha-md-0",
		wantErr:       func(err error) bool { return errors.Is(err, machineconfig.ErrMalformedPatches) },
		wantCondition: upgradev1.MachineConfigPatchesInvalidReason,
	}, {
		name:          "a worker of no MachineDeployment",
		objs:          []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v2"), talosConfigTemplate("alpha-md-0-v2", sysctlPatch)},
		machine:       builder.Machine("ns", "alpha-worker-0", "alpha"),
		wantCondition: upgradev1.MachineConfigsApplicableReason,
	}, {
		name:    "a worker of another Cluster's MachineDeployment of that name",
		objs:    []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v2", ofCluster("beta")), talosConfigTemplate("alpha-md-0-v2", sysctlPatch)},
		machine: worker("alpha-md-0"),
	}, {
		name: "a MachineDeployment bootstrapped by another provider",
		objs: []client.Object{machineDeployment("alpha-md-0", "alpha-md-0-v2", func(md *clusterv1.MachineDeployment) {
			md.Spec.Template.Spec.Bootstrap.ConfigRef.Kind = "KubeadmConfigTemplate"
		})},
		machine: worker("alpha-md-0"),
	}, {
		name:          "a control-plane Machine: the TalosControlPlane's, not a MachineDeployment's",
		objs:          []client.Object{controlPlane(true, sysctlPatch), machineDeployment("alpha-md-0", "alpha-md-0-v2"), talosConfigTemplate("alpha-md-0-v2", sysctlPatch)},
		machine:       builder.Machine("ns", "alpha-cp-0", "alpha", builder.WithControlPlane()),
		wantSource:    "TalosControlPlane alpha-cp",
		wantCondition: upgradev1.MachineConfigsApplicableReason,
	}, {
		name:    "a control-plane Machine of a TalosControlPlane that rolls out RollingUpdate",
		objs:    []client.Object{controlPlane(false, sysctlPatch)},
		machine: builder.Machine("ns", "alpha-cp-0", "alpha", builder.WithControlPlane()),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			if !hasControlPlane(tt.objs) {
				tt.objs = append(tt.objs, controlPlane(false))
			}
			s, res := readConfigTargets(g, tt.objs...)
			got := s.ConfigTargetOf(tt.machine)
			if tt.wantSource == "" {
				g.Expect(got).To(BeNil())
			} else {
				g.Expect(got).NotTo(BeNil())
				g.Expect(got.Source).To(Equal(tt.wantSource))
				if tt.wantErr != nil {
					g.Expect(tt.wantErr(got.Err)).To(BeTrue(), "%v", got.Err)
					g.Expect(got.Hash).To(BeEmpty())
				} else {
					g.Expect(got.Err).NotTo(HaveOccurred())
					g.Expect(got.Hash).NotTo(BeEmpty())
				}
			}
			g.Expect(res.RequeueAfter > 0).To(Equal(tt.wantRequeue), "a template that cannot be read is read again")
			c, set := disruption.MachineConfigsCondition(s.ConfigTargets, nil)
			if tt.wantCondition == "" {
				g.Expect(set).To(BeFalse(), "%s", c.Message)
				return
			}
			g.Expect(set).To(BeTrue())
			g.Expect(c.Reason).To(Equal(tt.wantCondition), "%s", c.Message)
			if tt.wantErr != nil {
				g.Expect(c.Message).To(ContainSubstring(tt.wantSource))
				g.Expect(c.Message).NotTo(ContainSubstring("somaxconn"), "names fields, never values")
			}
		})
	}
}

// hasControlPlane reports whether objs hold a TalosControlPlane.
func hasControlPlane(objs []client.Object) bool {
	for _, o := range objs {
		if _, ok := o.(*controlplanev1.TalosControlPlane); ok {
			return true
		}
	}
	return false
}

// TestConfigTargetsOfACAPIDrivenRollout: a rollout whose target comes from
// CAPI reads no template: CAPI replaces or hands over the Machines.
func TestConfigTargetsOfACAPIDrivenRollout(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).Build()
	r := &Reconciler{Client: c, Templates: c, Now: func() time.Time { return t0 }}
	s := &scope{Rollout: disruption.Rollout{Upgrade: &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{TargetFrom: upgradev1.TargetFromCAPI}}}, Cluster: builder.Cluster("ns", "alpha")}}
	_, err := r.reconcileConfigTargets(context.Background(), s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.ConfigTargets).To(BeNil())
	g.Expect(s.ConfigTargetOf(builder.Machine("ns", "alpha-md-0-abc", "alpha", builder.WithMachineDeployment("alpha-md-0")))).To(BeNil())
}
