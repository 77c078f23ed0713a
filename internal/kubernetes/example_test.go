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
	"fmt"

	"github.com/tollgate-dev/tollgate/internal/kubernetes"
)

// The steps of a Kubernetes upgrade of a Cluster of two control-plane nodes
// and one worker that runs kube-proxy.
func ExampleSteps() {
	for _, step := range kubernetes.Steps("v1.36.0", []string{"cp-1", "cp-2"}, []string{"w-1"}, true) {
		fmt.Println(step)
	}

	// Output:
	// ControlPlane cp-1 v1.36.0
	// ControlPlane cp-2 v1.36.0
	// KubeProxy v1.36.0
	// Kubelet cp-1 v1.36.0
	// Kubelet cp-2 v1.36.0
	// Kubelet w-1 v1.36.0
}

// A worker's kubelet moves to v1.36.0: the configuration to apply, and the
// field it changes.
func ExampleImagePatches() {
	running := []byte(`version: v1alpha1
machine:
  type: worker
  kubelet:
    image: mirror.example.com/siderolabs/kubelet:v1.35.2
cluster:
  controlPlane:
    endpoint: https://10.0.0.1:6443
`)

	desired, changes, err := kubernetes.ImagePatches(running, kubernetes.PartKubelet, "v1.36.0")
	if err != nil {
		fmt.Println(err)

		return
	}

	for _, c := range changes {
		fmt.Printf("%s: %s -> %s\n", c.Field, c.From, c.To)
	}

	versions, _ := kubernetes.RunningVersions(desired)
	fmt.Println("kubelet", versions.Kubelet)

	// Output:
	// machine.kubelet.image: v1.35.2 -> v1.36.0
	// kubelet v1.36.0
}
