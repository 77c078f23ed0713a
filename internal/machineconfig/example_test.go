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

package machineconfig_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tollgate-dev/tollgate/internal/machineconfig"
)

// ExampleRead reads the patches of a MachineDeployment's
// TalosConfigTemplate; Hash tells when they change.
func ExampleRead() {
	template := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1",
		"kind":       "TalosConfigTemplate",
		"metadata":   map[string]any{"namespace": "fleet", "name": "alpha-md-0"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"generateType":     "worker",
			"strategicPatches": []any{"machine:\n  sysctls:\n    net.core.somaxconn: \"65535\"\n"},
		}}},
	}}
	patches, err := machineconfig.Read(template)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(patches)

	reformatted := patches
	reformatted.StrategicPatches = []string{"# tuning\nmachine: {sysctls: {net.core.somaxconn: '65535'}}\n"}
	fmt.Println(patches.Hash() == reformatted.Hash())
	// Output:
	// 0 configPatches and 1 strategicPatches of TalosConfigTemplate fleet/alpha-md-0 spec.template.spec
	// true
}
