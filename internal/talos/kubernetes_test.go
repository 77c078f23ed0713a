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

func TestCheckTargets(t *testing.T) {
	tests := []struct {
		name       string
		talos, k8s string
		wantErr    error
		wantMsg    string
	}{
		{name: "a pair Talos supports", talos: "v1.13.0", k8s: "v1.36.0"},
		{name: "the oldest Kubernetes Talos 1.13 supports", talos: "v1.13.0", k8s: "v1.31.0"},
		{name: "a Talos pre-release", talos: "v1.13.0-beta.1", k8s: "v1.35.2"},
		{
			name: "a Kubernetes version no Talos supports", talos: "v1.13.0", k8s: "v1.13.0", wantErr: talos.ErrKubernetesUnsupported,
			wantMsg: "Talos v1.13.0 supports Kubernetes 1.31 to 1.36, not Kubernetes v1.13.0; no Talos version this Tollgate build knows supports Kubernetes v1.13.0; choose a Kubernetes version Talos v1.13.0 supports",
		},
		{
			name: "a Kubernetes version an older Talos supports", talos: "v1.13.0", k8s: "v1.30.4", wantErr: talos.ErrKubernetesUnsupported,
			wantMsg: "Talos v1.13.0 supports Kubernetes 1.31 to 1.36, not Kubernetes v1.30.4; choose a Kubernetes version Talos v1.13.0 supports, or a Talos version that supports Kubernetes v1.30.4 (Talos 1.7 to 1.12)",
		},
		{name: "a Kubernetes version too new for Talos", talos: "v1.12.4", k8s: "v1.36.0", wantErr: talos.ErrKubernetesUnsupported, wantMsg: "Talos v1.12.4 supports Kubernetes 1.30 to 1.35, not Kubernetes v1.36.0"},
		{name: "another Kubernetes major", talos: "v1.13.0", k8s: "v2.0.0", wantErr: talos.ErrKubernetesUnsupported, wantMsg: "no Talos version this Tollgate build knows supports Kubernetes v2.0.0"},
		{name: "an invalid Kubernetes version", talos: "v1.13.0", k8s: "1.36", wantErr: talos.ErrInvalidVersion},
		{name: "an invalid Talos version", talos: "latest", k8s: "v1.36.0", wantErr: talos.ErrInvalidVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := talos.CheckTargets(tt.talos, tt.k8s)
			if tt.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantMsg)))
		})
	}
}

func TestCheckKubernetesKnown(t *testing.T) {
	tests := []struct {
		name    string
		k8s     string
		wantErr error
		wantMsg string
	}{
		{name: "the newest Kubernetes Talos supports", k8s: "v1.36.2"},
		{name: "the oldest Kubernetes Talos supports", k8s: "v1.23.0"},
		{name: "a pre-release", k8s: "v1.36.0-rc.0"},
		{
			name: "a Kubernetes version older than every Talos", k8s: "v1.13.0", wantErr: talos.ErrKubernetesUnsupported,
			wantMsg: "no Talos version this Tollgate build knows supports Kubernetes v1.13.0: Talos supports Kubernetes 1.23 to 1.36; choose one of those",
		},
		{name: "a Kubernetes version newer than every Talos", k8s: "v1.37.0", wantErr: talos.ErrKubernetesUnsupported, wantMsg: "a Kubernetes release newer than them needs a newer Tollgate"},
		{name: "another major", k8s: "v2.0.0", wantErr: talos.ErrKubernetesUnsupported, wantMsg: "supports Kubernetes v2.0.0: Talos supports Kubernetes 1.23 to 1.36"},
		{name: "not a version", k8s: "v1", wantErr: talos.ErrInvalidVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := talos.CheckKubernetesKnown(tt.k8s)
			if tt.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantMsg)))
		})
	}
}
