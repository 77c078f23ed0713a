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

package talos

import (
	"testing"

	"github.com/Masterminds/semver/v3"
	. "github.com/onsi/gomega"
)

func versions(vs ...string) []*semver.Version {
	out := make([]*semver.Version, 0, len(vs))
	for _, v := range vs {
		out = append(out, semver.MustParse(v))
	}
	return out
}

// window returns a support rule under which Talos 1.t supports the
// Kubernetes minors its entry in windows names; the machinery's rules leave
// no plan unbridged (TestPlanVersionsEveryCombination), so the planner's
// search is tested with made-up ones.
func window(windows map[uint64][2]uint64) func(talos, kubernetes *semver.Version) bool {
	return func(talos, kubernetes *semver.Version) bool {
		w, ok := windows[talos.Minor()]
		return ok && kubernetes.Minor() >= w[0] && kubernetes.Minor() <= w[1]
	}
}

func TestPlanHops(t *testing.T) {
	tests := []struct {
		name       string
		talos      []string
		kubernetes []string
		windows    map[uint64][2]uint64
		want       []VersionHop
		wantStuck  *gridPoint
	}{
		{
			name:  "nothing to do",
			talos: []string{"1.1.0"}, kubernetes: []string{"1.10.0"},
			windows: map[uint64][2]uint64{1: {10, 10}},
		},
		{
			name:  "the fewest hops: combined where both Talos versions run the new Kubernetes",
			talos: []string{"1.1.0", "1.2.0", "1.3.0"}, kubernetes: []string{"1.10.0", "1.11.0", "1.12.0"},
			windows: map[uint64][2]uint64{1: {10, 11}, 2: {11, 11}, 3: {11, 12}},
			want: []VersionHop{
				{Talos: "v1.2.0", Kubernetes: "v1.11.0", Change: TalosAndKubernetesChange},
				{Talos: "v1.3.0", Kubernetes: "v1.11.0", Change: TalosChange},
				{Talos: "v1.3.0", Kubernetes: "v1.12.0", Change: KubernetesChange},
			},
		},
		{
			name:  "combined first among plans of as few hops",
			talos: []string{"1.1.0", "1.2.0", "1.3.0"}, kubernetes: []string{"1.10.0", "1.11.0"},
			windows: map[uint64][2]uint64{1: {10, 11}, 2: {10, 11}, 3: {10, 11}},
			want: []VersionHop{
				{Talos: "v1.2.0", Kubernetes: "v1.11.0", Change: TalosAndKubernetesChange},
				{Talos: "v1.3.0", Kubernetes: "v1.11.0", Change: TalosChange},
			},
		},
		{
			name:  "a window that leaves a gap cannot be bridged",
			talos: []string{"1.1.0", "1.2.0", "1.3.0"}, kubernetes: []string{"1.10.0", "1.11.0", "1.12.0"},
			windows:   map[uint64][2]uint64{1: {10, 10}, 2: {10, 10}, 3: {11, 12}},
			wantStuck: &gridPoint{1, 0},
		},
		{
			name:  "an unsupported start is stuck where it is",
			talos: []string{"1.1.0", "1.2.0"}, kubernetes: []string{"1.10.0"},
			windows:   map[uint64][2]uint64{2: {10, 10}},
			wantStuck: &gridPoint{0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			hops, stuck, ok := planHops(versions(tt.talos...), versions(tt.kubernetes...), window(tt.windows))
			if tt.wantStuck != nil {
				g.Expect(ok).To(BeFalse(), "planned %v", hops)
				g.Expect(stuck).To(Equal(*tt.wantStuck))
				return
			}
			g.Expect(ok).To(BeTrue())
			g.Expect(hops).To(Equal(tt.want))
		})
	}
}

func TestUnbridged(t *testing.T) {
	g := NewWithT(t)
	g.Expect(unbridged(versions("1.11.5", "1.12.6"), versions("1.29.3"), gridPoint{0, 0})).To(Equal(
		"at Talos v1.11.5 with Kubernetes v1.29.3, the next Talos hop v1.12.6 does not support Kubernetes v1.29.3 (it supports Kubernetes 1.30 to 1.35); " +
			"no order of the hops keeps every combination supported; choose other targets"))
	g.Expect(unbridged(versions("1.11.5"), versions("1.34.2", "1.35.1"), gridPoint{0, 0})).To(ContainSubstring(
		"Talos v1.11.5 does not support the next Kubernetes step v1.35.1 (it supports Kubernetes 1.29 to 1.34)"))
	g.Expect(unbridged(versions("1.13.1"), versions("1.30.9"), gridPoint{0, 0})).To(Equal(
		"Talos v1.13.1 does not support Kubernetes v1.30.9 (it supports Kubernetes 1.31 to 1.36)"))
}
