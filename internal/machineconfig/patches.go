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
	"errors"
	"fmt"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The Talos Cluster API providers' API groups and kinds whose patches Read
// reads.
const (
	// BootstrapGroup is the API group of the Talos bootstrap provider
	// (CABPT).
	BootstrapGroup = "bootstrap.cluster.x-k8s.io"
	// ControlPlaneGroup is the API group of the Talos control-plane
	// provider (CACPPT).
	ControlPlaneGroup = "controlplane.cluster.x-k8s.io"

	// TalosConfigKind is the bootstrap config of one Machine.
	TalosConfigKind = "TalosConfig"
	// TalosConfigTemplateKind is the bootstrap config template of a
	// MachineDeployment or MachineSet.
	TalosConfigTemplateKind = "TalosConfigTemplate"
	// TalosControlPlaneKind is the control plane whose Machines get
	// spec.controlPlaneConfig.controlplane.
	TalosControlPlaneKind = "TalosControlPlane"

	// OnDelete is the spec.rolloutStrategy.type of a TalosControlPlane
	// that replaces no Machine whose configuration or version is outdated
	// (RollingUpdate, the default, replaces each); MachineDeployments spell
	// it clusterv1.OnDeleteMachineDeploymentStrategyType.
	OnDelete = "OnDelete"
)

var (
	// ErrUnsupportedKind is wrapped by the error of Read for an object that
	// is not a TalosConfig, TalosConfigTemplate or TalosControlPlane.
	ErrUnsupportedKind = errors.New("not a Talos bootstrap or control-plane object")
	// ErrMalformedPatches is wrapped by every error about patches that
	// cannot be read or applied: what to fix is in the object that holds
	// them.
	ErrMalformedPatches = errors.New("malformed machine configuration patches")
)

// Operation is one RFC 6902 JSON patch operation of spec.configPatches.
//
// The providers' ConfigPatches type has op, path and value and nothing
// else, so move and copy (which need from) cannot be written there.
type Operation struct {
	// Op is add, remove, replace or test.
	Op string
	// Path is the JSON pointer the operation applies to.
	Path string
	// Value is the value of the operation, as JSON; null when the object
	// has none, which is what CABPT sends.
	Value json.RawMessage
}

// Patches are the machine configuration patches of one Talos provider
// object, in the order CABPT applies them: ConfigPatches first, as one JSON
// patch, then each of StrategicPatches.
//
// Patches hold the user's patches as they are, which may set secrets (a
// registry password, say): String and GoString print counts and the
// source, never the patches, so a Patches logged by mistake leaks nothing.
type Patches struct {
	// Source names where the patches come from, for errors, for example
	// "TalosConfigTemplate fleet/alpha-md-0 spec.template.spec".
	Source string
	// ConfigPatches are spec.configPatches, in order.
	ConfigPatches []Operation
	// StrategicPatches are spec.strategicPatches, in order: each is a
	// strategic merge patch (YAML, one or more documents) or a JSON patch,
	// whatever configpatcher.LoadPatch reads.
	StrategicPatches []string
}

// String says how many patches p has and where they come from.
func (p Patches) String() string {
	return fmt.Sprintf("%d configPatches and %d strategicPatches of %s", len(p.ConfigPatches), len(p.StrategicPatches), p.Source)
}

// GoString is String, so that %#v does not print the patches either.
func (p Patches) GoString() string { return p.String() }

// Empty reports whether p changes nothing.
func (p Patches) Empty() bool { return len(p.ConfigPatches) == 0 && len(p.StrategicPatches) == 0 }

// Read returns the machine configuration patches of a TalosConfigTemplate
// (spec.template.spec), a TalosConfig (spec) or a TalosControlPlane
// (spec.controlPlaneConfig.controlplane, the configuration of every
// control-plane Machine; init, the deprecated configuration of the first
// one, is not read), at any version of the providers' APIs (v1alpha3 and
// v1beta1 keep these fields alike).
//
// An object without patches has empty Patches. Patches CABPT could not
// apply (a field of the wrong type, an unknown op, move or copy, a path that
// is not a JSON pointer, a strategic patch that does not load) are refused
// with an error that names the object and the field, and never quotes a
// value.
func Read(obj *unstructured.Unstructured) (Patches, error) {
	if obj == nil {
		return Patches{}, fmt.Errorf("%w: no object", ErrUnsupportedKind)
	}
	gvk := obj.GroupVersionKind()
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	var path []string
	switch {
	case gvk.Group == BootstrapGroup && gvk.Kind == TalosConfigTemplateKind:
		path = []string{"spec", "template", "spec"}
	case gvk.Group == BootstrapGroup && gvk.Kind == TalosConfigKind:
		path = []string{"spec"}
	case gvk.Group == ControlPlaneGroup && gvk.Kind == TalosControlPlaneKind:
		path = []string{"spec", "controlPlaneConfig", "controlplane"}
	default:
		return Patches{}, fmt.Errorf("%w: %s %q (want a %s or %s from %s, or a %s from %s)",
			ErrUnsupportedKind, gvk.Kind, name, TalosConfigTemplateKind, TalosConfigKind, BootstrapGroup, TalosControlPlaneKind, ControlPlaneGroup)
	}
	return readSpec(obj.Object, gvk.Kind+" "+name, path)
}

// readSpec reads the patches of the TalosConfigSpec at path of object, the
// object called source in errors.
func readSpec(object map[string]any, source string, path []string) (Patches, error) {
	field := strings.Join(path, ".")
	p := Patches{Source: source + " " + field}
	spec, err := nestedMap(object, path)
	if err != nil || spec == nil {
		return p, err
	}
	if raw, ok := spec["configPatches"]; ok && raw != nil {
		ops, ok := raw.([]any)
		if !ok {
			return p, fmt.Errorf("%w: %s %s.configPatches: want a list of JSON patch operations, got %s", ErrMalformedPatches, source, field, kindOf(raw))
		}
		for i, op := range ops {
			o, err := readOperation(op)
			if err != nil {
				return p, fmt.Errorf("%w: %s %s.configPatches[%d]: %w", ErrMalformedPatches, source, field, i, err)
			}
			p.ConfigPatches = append(p.ConfigPatches, o)
		}
	}
	if raw, ok := spec["strategicPatches"]; ok && raw != nil {
		docs, ok := raw.([]any)
		if !ok {
			return p, fmt.Errorf("%w: %s %s.strategicPatches: want a list of strings, got %s", ErrMalformedPatches, source, field, kindOf(raw))
		}
		for i, doc := range docs {
			s, ok := doc.(string)
			if !ok {
				return p, fmt.Errorf("%w: %s %s.strategicPatches[%d]: want a string (a YAML strategic merge patch), got %s", ErrMalformedPatches, source, field, i, kindOf(doc))
			}
			if _, err := loadStrategic(s); err != nil {
				return p, fmt.Errorf("%w: %s %s.strategicPatches[%d]: %w", ErrMalformedPatches, source, field, i, err)
			}
			p.StrategicPatches = append(p.StrategicPatches, s)
		}
	}
	return p, nil
}

// nestedMap returns the map at path of object: nil when a part of the path
// is absent or null, an error naming the field when a part is not a map.
func nestedMap(object map[string]any, path []string) (map[string]any, error) {
	m := object
	for i, key := range path {
		raw, ok := m[key]
		if !ok || raw == nil {
			return nil, nil
		}
		next, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s: want an object, got %s", ErrMalformedPatches, strings.Join(path[:i+1], "."), kindOf(raw))
		}
		m = next
	}
	return m, nil
}

// readOperation reads one item of configPatches.
func readOperation(raw any) (Operation, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return Operation{}, fmt.Errorf("want an object with op, path and value, got %s", kindOf(raw))
	}
	for key := range m {
		if key != "op" && key != "path" && key != "value" {
			return Operation{}, fmt.Errorf("unknown field %q: a configPatches operation has op, path and value", key)
		}
	}
	op, ok := m["op"].(string)
	if !ok {
		return Operation{}, fmt.Errorf("op: want a string, got %s", kindOf(m["op"]))
	}
	switch op {
	case "add", "remove", "replace", "test":
	case "move", "copy":
		return Operation{}, fmt.Errorf("op %s needs from, which configPatches cannot carry: write it as add and remove, or as a strategic patch", op)
	default:
		return Operation{}, errors.New("op: want add, remove, replace or test")
	}
	path, ok := m["path"].(string)
	if !ok {
		return Operation{}, fmt.Errorf("path: want a string (a JSON pointer such as /machine/sysctls), got %s", kindOf(m["path"]))
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		return Operation{}, errors.New("path: want a JSON pointer, which starts with / (such as /machine/sysctls)")
	}
	value, err := json.Marshal(m["value"])
	if err != nil {
		return Operation{}, errors.New("value: not representable as JSON")
	}
	return Operation{Op: op, Path: path, Value: value}, nil
}

// loadStrategic loads one strategic patch as CABPT does
// (configpatcher.LoadPatch, never LoadPatches, which reads files named by
// its input); its error names no value of the patch.
func loadStrategic(s string) (configpatcher.Patch, error) {
	patch, err := configpatcher.LoadPatch([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("does not load as a Talos strategic merge patch or JSON patch: %s", scrub(err, []byte(s)))
	}
	return patch, nil
}

// kindOf names the JSON type of a value read from an unstructured object,
// for errors that must not quote it.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64, int, int32, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
