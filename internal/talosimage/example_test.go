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

package talosimage_test

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/internal/talosimage"
)

// An AWSMachineTemplate names an opaque AMI: the template says which Talos
// it boots in its own metadata.
func ExampleReadTemplate() {
	template := map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
		"kind":       "AWSMachineTemplate",
		"metadata": map[string]any{"name": "workers-v1-13", "annotations": map[string]any{
			talosimage.VersionAnnotation: "v1.13.0",
		}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"ami": map[string]any{"id": "ami-0a1b2c3d4e5f67890"}, "instanceType": "m5.large",
		}}},
	}
	img, err := talosimage.ReadTemplate(template)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(img.Version, img.Source, img.Field)
	// Output: v1.13.0 Annotation spec.template.spec.ami
}

// A Metal3 template's Image Factory URL names the version and schematic.
func ExampleParseValue() {
	version, schematic, source, ok := talosimage.ParseValue("https://factory.talos.dev/image/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba/v1.13.0/metal-amd64.raw.zst")
	fmt.Println(version, schematic[:8], source, ok)
	// Output: v1.13.0 37656798 URL true
}
