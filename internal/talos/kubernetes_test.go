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

func TestCheckKubernetesStep(t *testing.T) {
	tests := []struct {
		name           string
		from, to       string
		allowDowngrade bool
		wantErr        error
		wantMsg        string
	}{
		{name: "same version", from: "v1.35.1", to: "1.35.1"},
		{name: "patch up", from: "v1.35.1", to: "v1.35.4"},
		{name: "next minor, any patch", from: "v1.35.4", to: "v1.36.0"},
		{name: "next minor from a pre-release", from: "v1.35.0-rc.1", to: "v1.36.2"},
		{name: "two minors", from: "v1.34.2", to: "v1.36.0", wantErr: talos.ErrUnsupportedKubernetesStep, wantMsg: "upgrade to 1.35 first"},
		{name: "three minors", from: "v1.33.0", to: "v1.36.0", wantErr: talos.ErrUnsupportedKubernetesStep, wantMsg: "upgrade to 1.34 first"},
		{name: "patch down", from: "v1.35.4", to: "v1.35.1", wantErr: talos.ErrDowngradeNotAllowed, wantMsg: "keep v1.35.4 or choose a newer version"},
		{name: "patch down allowed", from: "v1.35.4", to: "v1.35.1", allowDowngrade: true},
		{name: "minor down", from: "v1.35.4", to: "v1.34.2", wantErr: talos.ErrDowngradeNotAllowed, wantMsg: "older than the running v1.35.4"},
		{name: "minor down even when downgrades are allowed", from: "v1.35.4", to: "v1.34.2", allowDowngrade: true, wantErr: talos.ErrUnsupportedKubernetesStep, wantMsg: "does not support going back a minor; choose a 1.35 patch"},
		{name: "another major", from: "v1.35.4", to: "v2.0.0", wantErr: talos.ErrUnsupportedKubernetesStep, wantMsg: "changes the major version"},
		{name: "invalid from", from: "1.35", to: "v1.35.1", wantErr: talos.ErrInvalidVersion},
		{name: "invalid to", from: "v1.35.1", to: "latest", wantErr: talos.ErrInvalidVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := talos.CheckKubernetesStep(tt.from, tt.to, tt.allowDowngrade)
			if tt.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantMsg)))
		})
	}
}
