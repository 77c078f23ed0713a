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

package talos_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

// The support windows of the machinery v1.13.0 compatibility rules these
// tests rely on: Talos 1.10 runs Kubernetes 1.28 to 1.33, 1.11 runs 1.29 to
// 1.34, 1.12 runs 1.30 to 1.35 and 1.13 runs 1.31 to 1.36.
var (
	jointTalosReleases = []string{"v1.10.6", "v1.11.0", "v1.11.5", "v1.12.0", "v1.12.6", "v1.13.0", "v1.13.1", "v1.14.0-alpha.0"}
	jointK8sReleases   = []string{"v1.30.9", "v1.31.4", "v1.32.3", "v1.33.0", "v1.33.5", "v1.34.0", "v1.34.2", "v1.35.0", "v1.35.1", "v1.35.2-rc.0", "v1.36.0"}
)

func hop(talosVersion, k8s string, change talos.VersionChange) talos.VersionHop {
	return talos.VersionHop{Talos: talosVersion, Kubernetes: k8s, Change: change}
}

func TestPlanVersions(t *testing.T) {
	const (
		tc = talos.TalosChange
		kc = talos.KubernetesChange
		bc = talos.TalosAndKubernetesChange
	)
	tests := []struct {
		name    string
		in      talos.VersionsInput
		want    []talos.VersionHop
		wantErr []error
		wantMsg string
	}{
		{
			name: "Kubernetes only, one minor",
			in:   talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.34.2", TargetKubernetes: "v1.35.1"},
			want: []talos.VersionHop{hop("v1.13.1", "v1.35.1", kc)},
		},
		{
			name: "Kubernetes only, two minors: the newest stable patch of the minor between",
			in:   talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.33.5", TargetTalos: "v1.13.1", TargetKubernetes: "v1.35.1"},
			want: []talos.VersionHop{hop("v1.13.1", "v1.34.2", kc), hop("v1.13.1", "v1.35.1", kc)},
		},
		{
			name: "Kubernetes only, three minors",
			in:   talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.32.0", TargetKubernetes: "v1.35.0"},
			want: []talos.VersionHop{hop("v1.13.1", "v1.33.5", kc), hop("v1.13.1", "v1.34.2", kc), hop("v1.13.1", "v1.35.0", kc)},
		},
		{
			name: "Talos only, the Kubernetes version kept",
			in:   talos.VersionsInput{Talos: "v1.11.0", Kubernetes: "v1.33.5", TargetTalos: "v1.13.1"},
			want: []talos.VersionHop{hop("v1.12.6", "v1.33.5", tc), hop("v1.13.1", "v1.33.5", tc)},
		},
		{
			// Talos 1.11 does not run Kubernetes 1.35, so the first hop is
			// Talos alone; 1.12 and 1.13 both run 1.35, so the second
			// combines; 1.36 follows alone, as 1.12 does not run it.
			name: "the issue's example: Talos 1.11 with Kubernetes 1.34 to Talos 1.13 with Kubernetes 1.36",
			in:   talos.VersionsInput{Talos: "v1.11.5", Kubernetes: "v1.34.2", TargetTalos: "v1.13.1", TargetKubernetes: "v1.36.0"},
			want: []talos.VersionHop{hop("v1.12.6", "v1.34.2", tc), hop("v1.13.1", "v1.35.1", bc), hop("v1.13.1", "v1.36.0", kc)},
		},
		{
			name: "interleaved: Talos hops on either side of a combined hop",
			in:   talos.VersionsInput{Talos: "v1.10.6", Kubernetes: "v1.33.5", TargetTalos: "v1.13.1", TargetKubernetes: "v1.34.2"},
			want: []talos.VersionHop{hop("v1.11.5", "v1.33.5", tc), hop("v1.12.6", "v1.34.2", bc), hop("v1.13.1", "v1.34.2", tc)},
		},
		{
			name: "every hop combined",
			in:   talos.VersionsInput{Talos: "v1.11.5", Kubernetes: "v1.33.5", TargetTalos: "v1.13.1", TargetKubernetes: "v1.35.1"},
			want: []talos.VersionHop{hop("v1.12.6", "v1.34.2", bc), hop("v1.13.1", "v1.35.1", bc)},
		},
		{
			name: "Kubernetes first where the Talos target does not run the current Kubernetes",
			in:   talos.VersionsInput{Talos: "v1.12.6", Kubernetes: "v1.30.9", TargetTalos: "v1.13.1", TargetKubernetes: "v1.32.3"},
			want: []talos.VersionHop{hop("v1.13.1", "v1.31.4", bc), hop("v1.13.1", "v1.32.3", kc)},
		},
		{
			name: "patch moves of both, combined",
			in:   talos.VersionsInput{Talos: "v1.13.0", Kubernetes: "v1.35.0", TargetTalos: "v1.13.1", TargetKubernetes: "v1.35.1"},
			want: []talos.VersionHop{hop("v1.13.1", "v1.35.1", bc)},
		},
		{
			name: "a Kubernetes patch move",
			in:   talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.35.0", TargetKubernetes: "1.35.1"},
			want: []talos.VersionHop{hop("v1.13.1", "v1.35.1", kc)},
		},
		{
			name: "targets reached: no hop",
			in:   talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.35.1", TargetTalos: "1.13.1", TargetKubernetes: "1.35.1"},
		},
		{
			name: "no target: no hop",
			in:   talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.35.1"},
		},
		{
			name:    "a Kubernetes minor downgrade",
			in:      talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.35.1", TargetKubernetes: "v1.34.2"},
			wantErr: []error{talos.ErrNoUpgradePath, talos.ErrDowngradeNotAllowed},
			wantMsg: "the Cluster runs Kubernetes v1.35.1; Tollgate never downgrades Kubernetes, keep v1.35.1 or choose a newer version",
		},
		{
			name:    "a Kubernetes patch downgrade",
			in:      talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.35.1", TargetTalos: "v1.13.1", TargetKubernetes: "v1.35.0"},
			wantErr: []error{talos.ErrNoUpgradePath, talos.ErrDowngradeNotAllowed},
			wantMsg: "Tollgate never downgrades Kubernetes",
		},
		{
			name:    "a Talos downgrade",
			in:      talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.33.5", TargetTalos: "v1.12.6"},
			wantErr: []error{talos.ErrNoUpgradePath, talos.ErrDowngradeNotAllowed},
			wantMsg: "the Cluster runs Talos v1.13.1; keep v1.13.1",
		},
		{
			name:    "a Kubernetes version no Talos version runs",
			in:      talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.36.0", TargetKubernetes: "v1.37.0"},
			wantErr: []error{talos.ErrNoUpgradePath, talos.ErrKubernetesUnsupported},
			wantMsg: "Talos v1.13.1 supports Kubernetes 1.31 to 1.36, not v1.37.0; no Talos version this Tollgate build knows supports Kubernetes v1.37.0",
		},
		{
			name:    "a Talos target that does not run the Kubernetes version kept",
			in:      talos.VersionsInput{Talos: "v1.10.6", Kubernetes: "v1.29.3", TargetTalos: "v1.13.1"},
			wantErr: []error{talos.ErrNoUpgradePath, talos.ErrKubernetesUnsupported},
			wantMsg: "Talos v1.13.1 supports Kubernetes 1.31 to 1.36, not v1.29.3; choose a Kubernetes version Talos v1.13.1 supports, or a Talos version that supports Kubernetes v1.29.3 (Talos 1.6 to 1.11)",
		},
		{
			// Decided: refused, not planned from. Every state of a plan,
			// the start included, is one the rules accept; a Cluster
			// outside them is brought back by hand first.
			name:    "the Cluster already runs a combination Talos does not support",
			in:      talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.30.9", TargetKubernetes: "v1.31.4"},
			wantErr: []error{talos.ErrNoUpgradePath, talos.ErrKubernetesUnsupported},
			wantMsg: "the Cluster runs Kubernetes v1.30.9 on Talos v1.13.1, which supports Kubernetes 1.31 to 1.36; Tollgate plans only through combinations Talos supports",
		},
		{
			name: "an intermediate Kubernetes minor with no release available",
			in: talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.34.2", TargetKubernetes: "v1.36.0",
				AvailableKubernetes: []string{"v1.34.2", "v1.35.2-rc.0", "v1.36.0"}},
			wantErr: []error{talos.ErrNoUpgradePath},
			wantMsg: "it goes through Kubernetes 1.35, and no stable 1.35 release is among the Kubernetes versions available",
		},
		{
			name: "an intermediate Kubernetes minor the kubelet repository has no release of",
			in: talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.34.2", TargetKubernetes: "v1.36.0",
				AvailableKubernetes: []string{"v1.34.2", "v1.36.0"}, KubernetesRepository: "mirror.example.com/siderolabs/kubelet"},
			wantErr: []error{talos.ErrNoUpgradePath},
			wantMsg: "it goes through Kubernetes 1.35, and mirror.example.com/siderolabs/kubelet has no stable 1.35 release; push one there (the newest patch is taken), or choose Kubernetes 1.35 as the target",
		},
		{
			name:    "an intermediate Talos minor with no release available",
			in:      talos.VersionsInput{Talos: "v1.11.5", Kubernetes: "v1.34.2", TargetTalos: "v1.13.1", Available: []string{"v1.13.1"}},
			wantErr: []error{talos.ErrNoUpgradePath},
			wantMsg: "it goes through Talos 1.12, and the installer repository r has no stable 1.12 release",
		},
		{
			name:    "a Talos target newer than the rules this build knows",
			in:      talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.35.1", TargetTalos: "v1.14.0"},
			wantErr: []error{talos.ErrUnknownVersion},
		},
		{
			name:    "a malformed Kubernetes target",
			in:      talos.VersionsInput{Talos: "v1.13.1", Kubernetes: "v1.35.1", TargetKubernetes: "1.36"},
			wantErr: []error{talos.ErrInvalidVersion},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := tt.in
			in.Repository = "r"
			if in.Available == nil {
				in.Available = jointTalosReleases
			}
			if in.AvailableKubernetes == nil {
				in.AvailableKubernetes = jointK8sReleases
			}
			got, err := talos.PlanVersions(in)
			if tt.wantErr != nil {
				for _, want := range tt.wantErr {
					g.Expect(err).To(MatchError(want))
				}
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantMsg)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(planViolations(in, got)).To(BeEmpty())
		})
	}
}

func ExamplePlanVersions() {
	hops, err := talos.PlanVersions(talos.VersionsInput{
		Talos:               "v1.11.5",
		Kubernetes:          "v1.34.2",
		TargetTalos:         "v1.13.1",
		TargetKubernetes:    "v1.36.0",
		Available:           []string{"v1.11.5", "v1.12.6", "v1.13.1"},
		AvailableKubernetes: []string{"v1.35.0", "v1.35.1"},
	})
	if err != nil {
		panic(err)
	}
	for _, h := range hops {
		fmt.Println(h)
	}
	// Output:
	// Talos v1.12.6, Kubernetes v1.34.2 (Talos)
	// Talos v1.13.1, Kubernetes v1.35.1 (TalosAndKubernetes)
	// Talos v1.13.1, Kubernetes v1.36.0 (Kubernetes)
}
