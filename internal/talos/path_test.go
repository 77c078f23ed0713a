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
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/internal/talos"
)

func TestPlanPath(t *testing.T) {
	available := []string{"v1.10.0", "v1.10.6", "v1.11.0", "v1.11.3", "v1.11.5", "v1.12.0", "v1.12.4", "v1.12.6", "v1.13.0", "v1.13.1", "v1.14.0-beta.0"}
	tests := []struct {
		name       string
		from       []string
		target     string
		kubernetes []string
		available  []string
		want       []string
		wantErr    string
	}{
		{name: "one step", from: []string{"v1.12.4"}, target: "v1.13.0", want: []string{"v1.13.0"}},
		{name: "already there", from: []string{"v1.13.0"}, target: "v1.13.0", want: []string{"v1.13.0"}},
		{name: "three minors behind: the latest patch of each minor between", from: []string{"v1.10.3"}, target: "v1.13.1", want: []string{"v1.11.5", "v1.12.6", "v1.13.1"}},
		{name: "Machines on two minors are brought together", from: []string{"v1.10.3", "v1.12.0"}, target: "v1.13.1", want: []string{"v1.11.5", "v1.12.6", "v1.13.1"}},
		{name: "a minor missing from the repository", from: []string{"v1.10.3"}, target: "v1.13.0", available: []string{"v1.11.5", "v1.13.0"}, wantErr: "it goes through Talos 1.12, and the installer repository r has no stable 1.12 release"},
		{name: "a pre-release is no hop", from: []string{"v1.11.3"}, target: "v1.13.0", available: []string{"v1.12.4", "v1.12.5-beta.0", "v1.13.0"}, want: []string{"v1.12.4", "v1.13.0"}},
		{name: "a Machine newer than the target", from: []string{"v1.13.1"}, target: "v1.13.0", wantErr: "newer than the target"},
		{name: "every hop supports the Cluster's Kubernetes", from: []string{"v1.10.3"}, target: "v1.13.0", kubernetes: []string{"1.28.3"}, wantErr: "the hop to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			av := available
			if tt.available != nil {
				av = tt.available
			}
			got, err := talos.PlanPath(talos.PathInput{From: tt.from, Target: tt.target, Kubernetes: tt.kubernetes, Available: av, Repository: "r"})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(talos.ErrNoUpgradePath))
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestStableReleases(t *testing.T) {
	NewWithT(t).Expect(talos.StableReleases([]string{"v1.13.0", "latest", "1.12.4", "v1.13.0-rc.1", "v1.12.4", "v1.11.0+build", "sha256-abc"})).
		To(Equal([]string{"v1.12.4", "v1.13.0"}))
}

func TestCheckPathPossible(t *testing.T) {
	g := NewWithT(t)
	g.Expect(talos.CheckPathPossible(talos.PathInput{From: []string{"v1.10.3"}, Target: "v1.13.0", Kubernetes: []string{"1.33.3"}})).To(Succeed())
	g.Expect(talos.CheckPathPossible(talos.PathInput{From: []string{"v1.10.3"}, Target: "v1.13.0", Kubernetes: []string{"1.35.2"}})).To(MatchError(ContainSubstring("the hop to v1.11.0")))
	g.Expect(talos.CheckPathPossible(talos.PathInput{From: []string{"v1.13.1"}, Target: "v1.13.0"})).To(MatchError(ContainSubstring("newer than the target")))
}
