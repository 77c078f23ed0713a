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

package machineconfig

import (
	"encoding/json"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzRead reads TalosConfigTemplates of any shape: Read, Hash and String
// never panic, and patches Read accepts load in Desired's order.
func FuzzRead(f *testing.F) {
	f.Add(`[{"op":"add","path":"/machine/sysctls","value":{"a":"1"}}]`, sysctlPatch)
	f.Add(`{"op":"add"}`, "machine: [")
	f.Add(`[{"op":"move","path":"/a"}, 3, null]`, "- op: remove\n  path: /machine/token\n")
	f.Add(`[]`, "a: &a [x, *a]\n")
	f.Fuzz(func(t *testing.T, configPatches, strategicPatch string) {
		obj := &unstructured.Unstructured{Object: map[string]any{}}
		var ops any
		if json.Unmarshal([]byte(configPatches), &ops) != nil {
			ops = configPatches
		}
		obj.Object["spec"] = map[string]any{"template": map[string]any{"spec": map[string]any{
			"configPatches":    ops,
			"strategicPatches": []any{strategicPatch},
		}}}
		obj.SetAPIVersion("bootstrap.cluster.x-k8s.io/v1beta1")
		obj.SetKind(TalosConfigTemplateKind)
		p, err := Read(obj)
		_ = p.Hash()
		_ = p.String()
		if err == nil {
			if _, err := loadUnits(p); err != nil {
				t.Fatalf("Read accepted patches Desired cannot load: %v", err)
			}
		}
	})
}

// FuzzDesired applies any patches to any running configuration, and any
// running configuration to a generated one: Desired, Converged and
// CheckInPlace never panic, and what Desired returns has converged.
func FuzzDesired(f *testing.F) {
	f.Add([]byte(nil), sysctlPatch, "/machine/sysctls", `{"a":"1"}`)
	f.Add([]byte("machine: [\n"), "machine:\n  certSANs: [a, a]\n", "/machine/certSANs/0", `"x"`)
	f.Add([]byte("version: v1alpha1\nmachine:\n  type: worker\n"), "cluster:\n  id: x\n", "", `null`)
	f.Add([]byte("apiVersion: v1alpha1\nkind: HostnameConfig\n$patch: delete\n"), "apiVersion: v1alpha1\nkind: HostnameConfig\n$patch: delete\n", "/-", `[]`)
	base := generated(f, machine.TypeWorker, "v1.11")
	f.Fuzz(func(t *testing.T, running []byte, strategicPatch, path, value string) {
		if len(running) == 0 {
			running = base
		}
		p := Patches{Source: "fuzz", StrategicPatches: []string{strategicPatch}}
		if json.Valid([]byte(value)) {
			p.ConfigPatches = []Operation{{Op: "add", Path: path, Value: json.RawMessage(value)}}
		}
		desired, err := Desired(running, p)
		converged, cerr := Converged(running, p)
		if (err == nil) != (cerr == nil) {
			t.Fatalf("Desired and Converged disagree: %v, %v", err, cerr)
		}
		_ = CheckInPlace(running, base)
		_ = CheckInPlace(base, running)
		if err != nil {
			return
		}
		_ = converged
		_ = CheckInPlace(running, desired)
		again, err := Converged(desired, p)
		if err != nil || !again {
			t.Fatalf("what Desired returned has not converged: %v, %v", again, err)
		}
	})
}
