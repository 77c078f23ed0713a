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

package talosimage

import (
	"fmt"
	"slices"
	"strings"
)

// InfrastructureGroup is the API group of CAPI infrastructure providers.
const InfrastructureGroup = "infrastructure.cluster.x-k8s.io"

// Kind is where a kind of InfraMachine names the image it boots.
type Kind struct {
	// Group and Kind are the InfraMachine's; its template's kind is Kind
	// with the suffix "Template".
	Group, Kind string
	// Provider names the provider, for messages.
	Provider string
	// Fields are the paths, below the InfraMachine's spec, of the field
	// that names the image, the first one present being it (a provider
	// may name its image one way or another: a template's ID or tags).
	// A structured field (Metal3's image: its URL and checksum) is the
	// image as a whole; its strings are read.
	Fields [][]string
}

// Kinds are the InfraMachine kinds whose image field is known: the real
// providers Talos users run (read from each provider's API types) and
// Tollgate's test provider.
var Kinds = []Kind{
	{Group: InfrastructureGroup, Kind: "AWSMachine", Provider: "CAPA", Fields: [][]string{{"ami"}}},
	{Group: InfrastructureGroup, Kind: "AzureMachine", Provider: "CAPZ", Fields: [][]string{{"image"}}},
	{Group: InfrastructureGroup, Kind: "GCPMachine", Provider: "CAPG", Fields: [][]string{{"image"}, {"imageFamily"}}},
	{Group: InfrastructureGroup, Kind: "VSphereMachine", Provider: "CAPV", Fields: [][]string{{"template"}}},
	{Group: InfrastructureGroup, Kind: "OpenStackMachine", Provider: "CAPO", Fields: [][]string{{"image"}}},
	{Group: InfrastructureGroup, Kind: "HCloudMachine", Provider: "CAPH", Fields: [][]string{{"imageName"}, {"imageURL"}}},
	{Group: InfrastructureGroup, Kind: "Metal3Machine", Provider: "CAPM3", Fields: [][]string{{"image"}}},
	{Group: InfrastructureGroup, Kind: "ProxmoxMachine", Provider: "CAPMOX", Fields: [][]string{{"templateSelector"}, {"templateID"}}},
	{Group: InfrastructureGroup, Kind: "NutanixMachine", Provider: "CAPX", Fields: [][]string{{"image"}, {"imageLookup"}}},
	{Group: InfrastructureGroup, Kind: "TalosSimMachine", Provider: "Tollgate's test provider", Fields: [][]string{{"image"}}},
	{Group: InfrastructureGroup, Kind: "TalosSimCloudMachine", Provider: "Tollgate's test provider", Fields: [][]string{{"imageID"}}},
}

// KindOf returns the Kind of an InfraMachine of group and kind (without
// the suffix "Template").
func KindOf(group, kind string) (Kind, bool) {
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Group == group && k.Kind == kind })
	if i < 0 {
		return Kind{}, false
	}

	return Kinds[i], true
}

// imageField is the image field of one object, as found.
type imageField struct {
	// field is its path, from the object's root, with dots.
	field string
	// path is its path from the object's root.
	path []string
	// values are its strings (a number, such as a template's ID, as
	// written), in a stable order.
	values []string
}

// value is the field's value for a message.
func (f imageField) value() string { return strings.Join(f.values, ", ") }

// image returns the first of k's fields present in obj, below base.
func (k Kind) image(obj map[string]any, base []string) (imageField, bool) {
	for _, f := range k.Fields {
		path := append(slices.Clone(base), f...)

		v, ok := lookup(obj, path)
		if !ok || v == nil {
			continue
		}

		var values []string
		leaves(v, &values)

		return imageField{field: strings.Join(path, "."), path: path, values: values}, true
	}

	return imageField{}, false
}

// Path returns the path, from an object's root, of k's image field in obj
// (an InfraMachine, or its template with template): the first present, or
// the first of k's fields when none is.
func (k Kind) Path(obj map[string]any, template bool) []string {
	base := []string{"spec"}
	if template {
		base = []string{"spec", "template", "spec"}
	}

	if f, ok := k.image(obj, base); ok {
		return f.path
	}

	return slices.Concat(base, k.Fields[0])
}

// fieldNames names k's fields below base, for a message.
func (k Kind) fieldNames(base []string) string {
	names := make([]string, 0, len(k.Fields))
	for _, f := range k.Fields {
		names = append(names, strings.Join(append(slices.Clone(base), f...), "."))
	}

	return strings.Join(names, " or ")
}

// leaves appends the strings of v (numbers and booleans as written), in
// the order of sorted keys.
func leaves(v any, out *[]string) {
	switch t := v.(type) {
	case string:
		*out = append(*out, t)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}

		slices.Sort(keys)

		for _, k := range keys {
			leaves(t[k], out)
		}
	case []any:
		for _, e := range t {
			leaves(e, out)
		}
	case nil:
	default:
		*out = append(*out, fmt.Sprint(t))
	}
}
