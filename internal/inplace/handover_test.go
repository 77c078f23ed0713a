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

package inplace

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// TestHandover reads what a handed-over InfraMachine asks its node to run,
// for every family of provider: an installer of the policy's repository, an
// Image Factory URL of a schematic the policy installs, an opaque image its
// template declares; an image Tollgate cannot read was not changed, and the
// node keeps its Talos (a Kubernetes change alone); an image the policy
// would not install is refused, naming the object.
func TestHandover(t *testing.T) {
	schematic := strings.Repeat("ab", 32)
	ghcr := upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR}
	mirror := upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "mirror.example/talos/installer"}
	factory := upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"}
	infra := func(kind string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": kind,
			"metadata": map[string]any{"name": "alpha-md-0-x"}, "spec": spec,
		}}
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0-x"},
		Spec:       clusterv1.MachineSpec{ClusterName: "alpha", Version: "v1.36.0"},
		Status:     clusterv1.MachineStatus{NodeInfo: &corev1.NodeSystemInfo{OSImage: "Talos (v1.12.4)"}},
	}
	for _, tc := range []struct {
		name      string
		infra     *unstructured.Unstructured
		declared  string
		installer upgradev1.InstallerSpec
		want      *Handover
		wantErr   string
	}{
		{name: "an installer of the policy's repository", infra: infra("TalosSimMachine", map[string]any{"image": "ghcr.io/siderolabs/installer:v1.13.0"}), installer: ghcr,
			want: &Handover{Image: "ghcr.io/siderolabs/installer:v1.13.0", Version: "v1.13.0", KubernetesVersion: "v1.36.0"}},
		{name: "an installer of another repository", infra: infra("TalosSimMachine", map[string]any{"image": "ghcr.io/siderolabs/installer:v1.13.0"}), installer: mirror,
			wantErr: `TalosSimMachine alpha-md-0-x of Machine fleet/alpha-md-0-x: image "ghcr.io/siderolabs/installer:v1.13.0" is not from the policy's installer`},
		{name: "a Metal3 Image Factory URL of any schematic, with a factory installer that keeps each node's",
			infra:     infra("Metal3Machine", map[string]any{"image": map[string]any{"url": "https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst", "checksum": "abc"}}),
			installer: factory, want: &Handover{Image: "abc, https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst", Version: "v1.13.0", KubernetesVersion: "v1.36.0"}},
		{name: "an Image Factory URL of a schematic the stock installer does not install",
			infra:     infra("Metal3Machine", map[string]any{"image": map[string]any{"url": "https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst"}}),
			installer: ghcr, wantErr: "the image boots Image Factory schematic " + schematic + ", which the policy's installer (ghcr) does not install"},
		{name: "an Image Factory URL of the default schematic, with the stock installer",
			infra:     infra("Metal3Machine", map[string]any{"image": map[string]any{"url": "https://factory.talos.dev/image/" + talos.DefaultSchematicID + "/v1.13.0/metal-amd64.raw.zst"}}),
			installer: ghcr, want: &Handover{Image: "https://factory.talos.dev/image/" + talos.DefaultSchematicID + "/v1.13.0/metal-amd64.raw.zst", Version: "v1.13.0", KubernetesVersion: "v1.36.0"}},
		{name: "an opaque image its template declares", infra: infra("AWSMachine", map[string]any{"ami": map[string]any{"id": "ami-2"}}), declared: "v1.13.0", installer: ghcr,
			want: &Handover{Image: "ami-2", Version: "v1.13.0", KubernetesVersion: "v1.36.0"}},
		{name: "an opaque image nothing declares keeps the node's Talos", infra: infra("AWSMachine", map[string]any{"ami": map[string]any{"id": "ami-1"}}), installer: ghcr,
			want: &Handover{Version: "v1.12.4", KubernetesVersion: "v1.36.0"}},
		{name: "a provider Tollgate does not know keeps the node's Talos", infra: infra("AcmeMachine", map[string]any{"disk": "d1"}), installer: ghcr,
			want: &Handover{Version: "v1.12.4", KubernetesVersion: "v1.36.0"}},
		{name: "an image and a declared version that disagree", infra: infra("VSphereMachine", map[string]any{"template": "talos-v1.12.4"}), declared: "v1.13.0", installer: ghcr,
			wantErr: "conflicting Talos versions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h, err := DefaultClaims().handover(tc.infra, tc.declared, machine, tc.installer)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h).To(Equal(tc.want))
		})
	}
}
