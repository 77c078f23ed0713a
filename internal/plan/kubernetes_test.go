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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

func TestValidateKubernetes(t *testing.T) {
	tests := []struct {
		name     string
		plan     upgradev1.UpgradePlan
		talos    string
		k8s      []string // the control plane's, then a worker's
		wantErrs []string // substrings, one per error, in order
	}{
		{name: "no Kubernetes target", plan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}, talos: "v1.12.4", k8s: []string{"v1.35.2", "v1.35.2"}},
		{name: "next minor on the Talos the Cluster runs", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.36.0"}, talos: "v1.13.0", k8s: []string{"v1.35.2", "v1.35.2"}},
		{name: "a patch of the same minor", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.35.4"}, talos: "v1.13.0", k8s: []string{"v1.35.2", "v1.35.2"}},
		{name: "the version it runs", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.35.2"}, talos: "v1.13.0", k8s: []string{"v1.35.2", "v1.35.2"}},
		{
			name: "older than a node runs", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.35.1"}, talos: "v1.13.0", k8s: []string{"v1.35.2", "v1.35.0"},
			wantErrs: []string{`Cluster "c" runs or is asked to run Kubernetes v1.35.2, newer than the target: Kubernetes is never downgraded`},
		},
		{
			name: "a minor back", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.34.3"}, talos: "v1.13.0", k8s: []string{"v1.35.2", "v1.35.2"},
			wantErrs: []string{"never downgraded"},
		},
		{
			name: "a skip, Direct", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.36.0"}, talos: "v1.13.0", k8s: []string{"v1.34.1", "v1.34.1"},
			wantErrs: []string{"moves one minor at a time; upgrade to 1.35 first; or set upgradePath: Auto for Tollgate to plan through the minors in between"},
		},
		{
			// KubernetesPath plans through 1.35, with the kubelet
			// repository's releases.
			name: "a skip, Auto", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.36.0", UpgradePath: upgradev1.UpgradePathAuto}, talos: "v1.13.0", k8s: []string{"v1.34.1", "v1.34.1"},
		},
		{
			name: "a skip, Auto, to another major", plan: upgradev1.UpgradePlan{KubernetesVersion: "v2.0.0", UpgradePath: upgradev1.UpgradePathAuto}, talos: "v1.13.0", k8s: []string{"v1.34.1", "v1.34.1"},
			wantErrs: []string{"it changes the major version", "too new to be used with Talos 1.13.0"},
		},
		{
			name: "a Kubernetes the Talos the Cluster runs does not support", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.36.0"}, talos: "v1.11.5", k8s: []string{"v1.35.2", "v1.35.2"},
			wantErrs: []string{`Cluster "c" runs Talos v1.11.5, which does not support Kubernetes v1.36.0`},
		},
		{
			name: "both targets, supported together", plan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.35.2", UpgradePath: upgradev1.UpgradePathAuto}, talos: "v1.11.5", k8s: []string{"v1.34.1", "v1.34.1"},
		},
		{
			name: "both targets, not supported together", plan: upgradev1.UpgradePlan{TalosVersion: "v1.11.5", KubernetesVersion: "v1.36.0", UpgradePath: upgradev1.UpgradePathAuto}, talos: "v1.11.5", k8s: []string{"v1.35.2", "v1.35.2"},
			wantErrs: []string{`Cluster "c" would run Talos v1.11.5 with Kubernetes v1.36.0`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clusterWith("c", newMachine("cp-0", true, tt.talos, tt.k8s[0]), newMachine("w-0", false, tt.talos, tt.k8s[1]))
			errs := plan.NewClusterValidator(&tt.plan, field.NewPath("spec")).ValidateKubernetes(&c)
			g.Expect(errs).To(HaveLen(len(tt.wantErrs)), "%v", errs)
			for i, want := range tt.wantErrs {
				g.Expect(errs[i].Field).To(Equal("spec.kubernetesVersion"))
				g.Expect(errs[i].Detail).To(ContainSubstring(want))
			}
		})
	}
}

// clusterWith returns the versions of a Cluster called name with machines.
func clusterWith(name string, machines ...clusterv1.Machine) plan.ClusterVersions {
	ms := make([]*clusterv1.Machine, 0, len(machines))
	for i := range machines {
		ms = append(ms, &machines[i])
	}
	return plan.NewClusterVersions(&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, ms)
}

// TestKubernetesPath: a hop that changes Kubernetes moves its control plane
// first, on the Talos version before it.
func TestKubernetesPath(t *testing.T) {
	cluster := func(talos ...string) plan.ClusterVersions {
		ms := []clusterv1.Machine{newMachine("cp-0", true, talos[0], "v1.34.1")}
		for i, v := range talos[1:] {
			ms = append(ms, newMachine(fmt.Sprintf("w-%d", i), false, v, "v1.34.1"))
		}
		return clusterWith("c", ms...)
	}
	kubelets := plan.KubeletReleases{Versions: []string{"v1.34.1", "v1.35.0", "v1.35.2", "v1.35.3-rc.0", "v1.36.0"}, Repository: "ghcr.io/siderolabs/kubelet"}
	tests := []struct {
		name     string
		plan     upgradev1.UpgradePlan
		cluster  plan.ClusterVersions
		kubelets *plan.KubeletReleases // kubelets when nil
		want     string
		wantErr  string
	}{{
		name:    "through the Talos minors in between",
		plan:    upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.35.2", UpgradePath: upgradev1.UpgradePathAuto},
		cluster: cluster("v1.11.5", "v1.11.5"),
		want:    "Talos v1.12.6, kubelets v1.34.1 → Kubernetes v1.35.2 control plane → Talos v1.13.0, kubelets v1.35.2",
	}, {
		name:    "Kubernetes alone",
		plan:    upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.35.2"},
		cluster: cluster("v1.13.0", "v1.13.0"),
		want:    "Kubernetes v1.35.2 control plane → Talos v1.13.0, kubelets v1.35.2",
	}, {
		name:    "both targets run already: one hop, on them",
		plan:    upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.34.1"},
		cluster: cluster("v1.13.0", "v1.13.0"),
		want:    "Talos v1.13.0, kubelets v1.34.1",
	}, {
		// Issue 26's example: Talos 1.11 does not run Kubernetes 1.35, and
		// Talos 1.13 does not run 1.34, so Talos 1.12 comes first, then
		// 1.35's control plane on it, then Talos 1.13 with the kubelets of
		// 1.35 in one reboot, then 1.36, control plane first.
		name:    "two Kubernetes minors with Talos, through the newest 1.35 patch",
		plan:    upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.36.0", UpgradePath: upgradev1.UpgradePathAuto},
		cluster: cluster("v1.11.5", "v1.11.5"),
		want: "Talos v1.12.6, kubelets v1.34.1 → Kubernetes v1.35.2 control plane → Talos v1.13.0, kubelets v1.35.2 → " +
			"Kubernetes v1.36.0 control plane → Talos v1.13.0, kubelets v1.36.0",
	}, {
		name:    "two Kubernetes minors alone",
		plan:    upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.36.0", UpgradePath: upgradev1.UpgradePathAuto},
		cluster: cluster("v1.13.0", "v1.13.0"),
		want: "Kubernetes v1.35.2 control plane → Talos v1.13.0, kubelets v1.35.2 → " +
			"Kubernetes v1.36.0 control plane → Talos v1.13.0, kubelets v1.36.0",
	}, {
		name:     "a Kubernetes minor in between the kubelet repository has no release of",
		plan:     upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.36.0", UpgradePath: upgradev1.UpgradePathAuto},
		cluster:  cluster("v1.11.5", "v1.11.5"),
		kubelets: &plan.KubeletReleases{Versions: []string{"v1.34.1", "v1.36.0"}, Repository: "mirror.example.com/kubelet"},
		wantErr:  "it goes through Kubernetes 1.35, and mirror.example.com/kubelet has no stable 1.35 release",
	}, {
		name:    "a Kubernetes skip with a Direct path",
		plan:    upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.36.0"},
		cluster: cluster("v1.13.0", "v1.13.0"),
		wantErr: "upgradePath Direct moves Kubernetes one minor per policy target; choose the next minor, or set upgradePath: Auto",
	}, {
		name:    "a Talos rollout under way finishes first, changing no Kubernetes",
		plan:    upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.35.2"},
		cluster: cluster("v1.13.0", "v1.12.4"),
		want:    "v1.13.0 → Kubernetes v1.35.2 control plane → Talos v1.13.0, kubelets v1.35.2",
	}, {
		name:    "a Machine beyond the Talos target",
		plan:    upgradev1.UpgradePlan{TalosVersion: "v1.12.4", KubernetesVersion: "v1.35.2"},
		cluster: cluster("v1.12.4", "v1.13.0"),
		wantErr: "run Talos v1.12.4, v1.13.0, not all at or below the target v1.12.4: a Kubernetes upgrade is planned from one Talos version",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			releases := kubelets
			if tt.kubelets != nil {
				releases = *tt.kubelets
			}
			hops, err := plan.KubernetesPath(&tt.plan, &tt.cluster, []string{"v1.12.0", "v1.12.6", "v1.13.0"}, "ghcr.io/siderolabs/installer", releases)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(plan.DescribeHops(hops)).To(Equal(tt.want))
		})
	}
}

func TestCommonKubeletReleases(t *testing.T) {
	tests := []struct {
		name         string
		byRepository map[string][]string
		want         plan.KubeletReleases
	}{
		{name: "no repository", want: plan.KubeletReleases{}},
		{
			name:         "one repository",
			byRepository: map[string][]string{"ghcr.io/siderolabs/kubelet": {"v1.35.2", "v1.36.0"}},
			want:         plan.KubeletReleases{Versions: []string{"v1.35.2", "v1.36.0"}, Repository: "ghcr.io/siderolabs/kubelet"},
		},
		{
			name: "a mirror that lacks a release: the releases both list",
			byRepository: map[string][]string{
				"mirror.example.com/kubelet": {"v1.35.0", "v1.36.0"},
				"ghcr.io/siderolabs/kubelet": {"v1.35.0", "v1.35.2", "v1.36.0"},
			},
			want: plan.KubeletReleases{Versions: []string{"v1.35.0", "v1.36.0"}, Repository: "ghcr.io/siderolabs/kubelet and mirror.example.com/kubelet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(plan.CommonKubeletReleases(tt.byRepository)).To(Equal(tt.want))
		})
	}
}

// TestValidateTargets checks what is judged of a plan's targets without a
// Cluster: the pair a plan with both targets ends on, a Kubernetes version
// no Talos runs.
func TestValidateTargets(t *testing.T) {
	tests := []struct {
		name    string
		plan    upgradev1.UpgradePlan
		wantErr string
	}{
		{name: "no Kubernetes target", plan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}},
		{name: "a pair Talos supports", plan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.36.0"}},
		{name: "a pair no Talos supports", plan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.13.0"}, wantErr: `spec.kubernetesVersion: Invalid value: "v1.13.0": unsupported Kubernetes version for the Talos version: Talos v1.13.0 supports Kubernetes 1.31 to 1.36, not Kubernetes v1.13.0`},
		{name: "a pair an older Talos supports", plan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "v1.30.0"}, wantErr: "or a Talos version that supports Kubernetes v1.30.0 (Talos 1.7 to 1.12)"},
		{name: "Kubernetes alone", plan: upgradev1.UpgradePlan{KubernetesVersion: "v1.36.0"}},
		{name: "Kubernetes alone, no Talos runs it", plan: upgradev1.UpgradePlan{KubernetesVersion: "v2.0.0"}, wantErr: "no Talos version this Tollgate build knows supports Kubernetes v2.0.0"},
		{name: "a Talos version too new to know: Validate refuses it, the Kubernetes version is judged alone", plan: upgradev1.UpgradePlan{TalosVersion: "v1.99.0", KubernetesVersion: "v1.36.0"}},
		{name: "a Talos version too new to know, with a Kubernetes version no Talos runs", plan: upgradev1.UpgradePlan{TalosVersion: "v1.99.0", KubernetesVersion: "v1.13.0"}, wantErr: "no Talos version this Tollgate build knows supports Kubernetes v1.13.0"},
		{name: "a malformed Kubernetes version: ValidateRules refuses it", plan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0", KubernetesVersion: "1.36"}},
		{name: "targetFrom CAPI: ValidateRules refuses a Kubernetes target", plan: upgradev1.UpgradePlan{TargetFrom: upgradev1.TargetFromCAPI, KubernetesVersion: "v1.13.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := plan.ValidateTargets(&tt.plan, field.NewPath("spec"))
			if tt.wantErr == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Field).To(Equal("spec.kubernetesVersion"))
			g.Expect(errs[0].Error()).To(ContainSubstring(tt.wantErr))
		})
	}
}

// TestValidatePolicy checks that the rules of a policy that need no Cluster
// are judged as its kind of target says, its pair of targets included.
func TestValidatePolicy(t *testing.T) {
	policy := func(mutate func(*upgradev1.TalosUpgradePolicySpec)) *upgradev1.TalosUpgradePolicy {
		p := &upgradev1.TalosUpgradePolicy{Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0", Installer: upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR},
		}}}
		mutate(&p.Spec)
		return p
	}
	tests := []struct {
		name      string
		policy    *upgradev1.TalosUpgradePolicy
		wantField []string
	}{
		{name: "a named target", policy: policy(func(*upgradev1.TalosUpgradePolicySpec) {})},
		{name: "a named target Talos does not know", policy: policy(func(s *upgradev1.TalosUpgradePolicySpec) { s.TalosVersion = "v1.99.0" }), wantField: []string{"spec.talosVersion"}},
		{name: "named targets no Talos supports together", policy: policy(func(s *upgradev1.TalosUpgradePolicySpec) { s.KubernetesVersion = "v1.13.0" }), wantField: []string{"spec.kubernetesVersion"}},
		{name: "Kubernetes alone no Talos runs", policy: policy(func(s *upgradev1.TalosUpgradePolicySpec) { s.TalosVersion, s.KubernetesVersion = "", "v2.0.0" }), wantField: []string{"spec.kubernetesVersion"}},
		{
			name: "following releases with a Kubernetes version no Talos runs",
			policy: policy(func(s *upgradev1.TalosUpgradePolicySpec) {
				s.TalosVersion, s.KubernetesVersion, s.Follow = "", "v1.13.0", &upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch}
			}),
			wantField: []string{"spec.kubernetesVersion"},
		},
		{
			name: "following releases with a check interval under a minute",
			policy: policy(func(s *upgradev1.TalosUpgradePolicySpec) {
				s.TalosVersion, s.Follow = "", &upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch, CheckInterval: &metav1.Duration{Duration: 1}}
			}),
			wantField: []string{"spec.follow.checkInterval"},
		},
		{
			name: "targetFrom CAPI with a Kubernetes target",
			policy: policy(func(s *upgradev1.TalosUpgradePolicySpec) {
				s.TalosVersion, s.TargetFrom, s.KubernetesVersion = "", upgradev1.TargetFromCAPI, "v1.13.0"
			}),
			wantField: []string{"spec.kubernetesVersion"},
		},
		{
			name: "targetFrom Channel naming its channel",
			policy: policy(func(s *upgradev1.TalosUpgradePolicySpec) {
				s.TalosVersion, s.TargetFrom, s.Channel = "", upgradev1.TargetFromChannel, "fleet"
			}),
		},
		{
			name: "targetFrom Channel with targets of its own and no channel",
			policy: policy(func(s *upgradev1.TalosUpgradePolicySpec) {
				s.TargetFrom, s.KubernetesVersion = upgradev1.TargetFromChannel, "v1.35.0"
			}),
			wantField: []string{"spec.talosVersion", "spec.kubernetesVersion", "spec.channel"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs, _ := plan.ValidatePolicy(tt.policy)
			fields := make([]string, 0, len(errs))
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			if len(tt.wantField) == 0 {
				g.Expect(fields).To(BeEmpty(), "%v", errs)
				return
			}
			g.Expect(fields).To(Equal(tt.wantField), "%v", errs)
		})
	}
}
