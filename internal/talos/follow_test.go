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

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func TestFollowCandidates(t *testing.T) {
	releases := StableReleases([]string{"v1.11.2", "v1.11.5", "v1.12.0", "v1.12.1-beta.0", "v1.12.3", "v1.13.0", "v1.13.1", "latest", "v1.12.2+build"})
	tests := []struct {
		name  string
		allow upgradev1.FollowAllow
		from  string
		want  []string
	}{
		{name: "patch stays on the minor", allow: upgradev1.FollowAllowPatch, from: "v1.12.0", want: []string{"v1.12.3"}},
		{name: "patch from an older patch", allow: upgradev1.FollowAllowPatch, from: "v1.11.2", want: []string{"v1.11.5"}},
		{name: "minor goes one minor further, never two", allow: upgradev1.FollowAllowMinor, from: "v1.11.2", want: []string{"v1.11.5", "v1.12.0", "v1.12.3"}},
		{name: "minor from the newest minor", allow: upgradev1.FollowAllowMinor, from: "v1.13.0", want: []string{"v1.13.1"}},
		{name: "up to date", allow: upgradev1.FollowAllowMinor, from: "v1.13.1", want: nil},
		{name: "a version that is not one", allow: upgradev1.FollowAllowMinor, from: "latest", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(FollowCandidates(tt.allow, tt.from, releases)).To(Equal(tt.want))
		})
	}
}
