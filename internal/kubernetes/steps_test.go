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

package kubernetes_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tollgate-dev/tollgate/internal/kubernetes"
)

func TestSteps(t *testing.T) {
	cp := func(node string) kubernetes.Step {
		return kubernetes.Step{Part: kubernetes.PartControlPlane, Node: node, Version: "v1.36.0"}
	}
	kubelet := func(node string) kubernetes.Step {
		return kubernetes.Step{Part: kubernetes.PartKubelet, Node: node, Version: "v1.36.0"}
	}
	proxy := kubernetes.Step{Part: kubernetes.PartKubeProxy, Version: "v1.36.0"}

	tests := []struct {
		name         string
		controlPlane []string
		workers      []string
		kubeProxy    bool
		want         []kubernetes.Step
	}{
		{
			name:         "3+2 with kube-proxy: every apiserver before any kubelet or kube-proxy",
			controlPlane: []string{"cp-1", "cp-2", "cp-3"},
			workers:      []string{"w-1", "w-2"},
			kubeProxy:    true,
			want: []kubernetes.Step{
				cp("cp-1"), cp("cp-2"), cp("cp-3"), proxy,
				kubelet("cp-1"), kubelet("cp-2"), kubelet("cp-3"), kubelet("w-1"), kubelet("w-2"),
			},
		},
		{
			name:         "without kube-proxy",
			controlPlane: []string{"cp-1"},
			workers:      []string{"w-1"},
			want:         []kubernetes.Step{cp("cp-1"), kubelet("cp-1"), kubelet("w-1")},
		},
		{
			name:         "no worker",
			controlPlane: []string{"cp-1"},
			kubeProxy:    true,
			want:         []kubernetes.Step{cp("cp-1"), proxy, kubelet("cp-1")},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			g.Expect(kubernetes.Steps("v1.36.0", tt.controlPlane, tt.workers, tt.kubeProxy)).To(Equal(tt.want))
		})
	}
}
