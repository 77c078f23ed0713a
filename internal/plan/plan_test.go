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

package plan_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

func TestMachineTalosVersion(t *testing.T) {
	tests := []struct {
		osImage string
		want    string
	}{
		{osImage: "Talos (v1.12.4)", want: "v1.12.4"},
		{osImage: "Talos (v1.13.0-beta.1)", want: "v1.13.0-beta.1"},
		{osImage: " Talos (1.11.6) ", want: "1.11.6"},
		{osImage: "Ubuntu 24.04.1 LTS", want: ""},
		{osImage: "Talos (unknown)", want: ""},
		{osImage: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.osImage, func(t *testing.T) {
			g := NewWithT(t)
			m := &clusterv1.Machine{Status: clusterv1.MachineStatus{NodeInfo: &corev1.NodeSystemInfo{OSImage: tt.osImage}}}
			g.Expect(plan.MachineTalosVersion(m)).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(plan.MachineTalosVersion(&clusterv1.Machine{})).To(BeEmpty())
}

func TestKubernetesVersions(t *testing.T) {
	g := NewWithT(t)
	cluster := &clusterv1.Cluster{Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{Version: "v1.35.2"}}}
	machines := []clusterv1.Machine{
		newMachine("cp-0", true, "v1.12.4", "v1.35.2"),
		newMachine("cp-1", true, "v1.12.4", "v1.34.1"), // Mid Kubernetes upgrade.
		newMachine("w-0", false, "v1.12.4", "v1.34.1"),
		{ObjectMeta: metav1.ObjectMeta{Name: "w-new"}}, // No node yet.
	}
	g.Expect(plan.VersionsOf(cluster, machines).Kubernetes).To(Equal([]string{"v1.34.1", "v1.35.2"}))
	g.Expect(plan.VersionsOf(nil, nil).Kubernetes).To(BeEmpty())
}

func TestValidateForCluster(t *testing.T) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}
	tests := []struct {
		name     string
		plan     upgradev1.UpgradePlan
		machines []clusterv1.Machine
		want     []string // One part of each expected error message, in order.
	}{
		{
			name:     "one minor ahead",
			plan:     upgradev1.UpgradePlan{TalosVersion: "v1.13.0"},
			machines: machines(5, "v1.12.4", "v1.35.2"),
		},
		{
			name:     "same version is a no-op",
			plan:     upgradev1.UpgradePlan{TalosVersion: "v1.13.0"},
			machines: machines(1, "v1.13.0", "v1.35.2"),
		},
		{
			name:     "too far ahead names the Machines and the intermediate version",
			plan:     upgradev1.UpgradePlan{TalosVersion: "v1.13.0"},
			machines: machines(5, "v1.9.5", "v1.32.3"),
			want:     []string{`Cluster "prod", Machines "m-0", "m-1", "m-2" and 2 more on v1.9.5: unsupported Talos upgrade path`},
		},
		{
			name:     "one error per running version, oldest first",
			plan:     upgradev1.UpgradePlan{TalosVersion: "v1.12.0"},
			machines: append(machines(1, "v1.13.0", "v1.33.0"), newMachine("old", false, "v1.8.0", "v1.33.0")),
			want:     []string{`Machine "old" on v1.8.0`, `Machine "m-0" on v1.13.0: downgrade not allowed`},
		},
		{
			name:     "allowed downgrade one minor back",
			plan:     upgradev1.UpgradePlan{TalosVersion: "v1.12.4", AllowDowngrade: true},
			machines: machines(3, "v1.13.0", "v1.35.2"),
		},
		{
			name:     "Kubernetes too new for the target",
			plan:     upgradev1.UpgradePlan{TalosVersion: "v1.11.0"},
			machines: machines(1, "v1.10.7", "v1.36.0"),
			want:     []string{`Cluster "prod" runs Kubernetes v1.36.0`},
		},
		{
			name:     "Machines whose version is unknown are left to the controller",
			plan:     upgradev1.UpgradePlan{TalosVersion: "v1.13.0"},
			machines: []clusterv1.Machine{{ObjectMeta: metav1.ObjectMeta{Name: "new"}}},
		},
		{
			name:     "an invalid target is Validate's to report",
			plan:     upgradev1.UpgradePlan{TalosVersion: "latest"},
			machines: machines(1, "v1.12.4", "v1.35.2"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := plan.ValidateForCluster(&tt.plan, cluster, tt.machines, field.NewPath("spec"))
			g.Expect(errs).To(HaveLen(len(tt.want)), "%v", errs)
			for i, want := range tt.want {
				g.Expect(errs[i].Field).To(Equal("spec.talosVersion"))
				g.Expect(errs[i].Detail).To(ContainSubstring(want))
			}
		})
	}
}

func TestDefault(t *testing.T) {
	g := NewWithT(t)
	p := &upgradev1.UpgradePlan{
		TalosVersion: "1.13.0",
		Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
		Drain:        upgradev1.DrainSpec{RespectPodDisruptionBudgets: ptr.To(false)},
		Hooks:        []upgradev1.ActionHook{{Name: "h"}},
	}
	plan.Default(p)
	g.Expect(p.TalosVersion).To(Equal("v1.13.0"))
	g.Expect(*p.Drain.RespectPodDisruptionBudgets).To(BeFalse(), "a value the user set is kept")
	g.Expect(*p.Rollout.ControlPlane.MaxUnavailable).To(BeEquivalentTo(1))
	g.Expect(p.Hooks[0].Template.Spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(plan.Validate(p, field.NewPath("spec"))).To(HaveLen(2), "the hook still needs a point and a container")

	again := p.DeepCopy()
	plan.Default(again)
	g.Expect(again).To(Equal(p), "Default is idempotent")
}

func TestValidateJobNameSource(t *testing.T) {
	tests := []struct {
		name string
		want string
	}{
		{name: "ceph-health"},
		{name: "a"},
		{name: "ceph.health", want: `rename it, for example to "ceph-health"`},
		{name: "Ceph_Health", want: `rename it, for example to "ceph-health"`},
		{name: "-", want: "cannot form a Job name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := plan.ValidateJobNameSource(tt.name, field.NewPath("metadata", "name"))
			if tt.want == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(ConsistOf(HaveField("Detail", ContainSubstring(tt.want))))
		})
	}
}

// newMachine returns a Machine on the given Talos and Kubernetes versions.
func newMachine(name string, controlPlane bool, talos, k8s string) clusterv1.Machine {
	m := clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec:       clusterv1.MachineSpec{Version: k8s},
		Status: clusterv1.MachineStatus{NodeInfo: &corev1.NodeSystemInfo{
			OSImage: fmt.Sprintf("Talos (%s)", talos), KubeletVersion: k8s,
		}},
	}
	if controlPlane {
		m.Labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	return m
}

// machines returns n control-plane Machines m-0... on the given versions.
func machines(n int, talos, k8s string) []clusterv1.Machine {
	out := make([]clusterv1.Machine, 0, n)
	for i := range n {
		out = append(out, newMachine(fmt.Sprintf("m-%d", i), true, talos, k8s))
	}
	return out
}
