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
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Field is a spec field Tollgate changes on a running node.
type Field struct {
	// Path is the field's path below the object's spec; for a template,
	// below its spec.template.spec.
	Path []string

	// Check refuses a change Tollgate could not make: to desired (nil when
	// the field is removed) from current (nil when the field is not set);
	// nil accepts every change.
	Check func(current, desired any) error

	// KubernetesVersion returns the Kubernetes version a value of the
	// field asks the node's kubelet to run, for a field of a Machine that
	// names it; nil for another.
	KubernetesVersion func(value any) (string, error)

	// WorkersOnly leaves the field of a control-plane Machine to CAPI: what
	// it asks is the control plane's, which moves through a policy.
	WorkersOnly bool
}

// Claims are the fields Tollgate changes in place, by kind of object.
type Claims struct {
	// Machine are fields of a Machine's spec (a MachineSet's
	// spec.template.spec).
	Machine []Field

	// Infrastructure are fields of InfraMachines, by the InfraMachine's
	// group and kind; its template's kind is that kind with the suffix
	// "Template".
	Infrastructure map[schema.GroupKind][]Field

	// Bootstrap are fields of BootstrapConfigs, by the config's group and
	// kind; its template's kind is that kind with the suffix "Template".
	Bootstrap map[schema.GroupKind][]Field
}

// templateSuffix ends the kind of an InfraMachine's or a BootstrapConfig's
// template, as CAPI's contracts name them.
const templateSuffix = "Template"

// ForKind returns the fields claimed of objects of gk among byKind, a
// template of such objects when template: the fields and the path below
// which they sit.
func ForKind(byKind map[schema.GroupKind][]Field, gk schema.GroupKind, template bool) ([]Field, []string) {
	if !template {
		return byKind[gk], []string{"spec"}
	}
	if !strings.HasSuffix(gk.Kind, templateSuffix) {
		return nil, nil
	}
	gk.Kind = strings.TrimSuffix(gk.Kind, templateSuffix)
	return byKind[gk], []string{"spec", "template", "spec"}
}

// Decision is what Patch decided for one object.
type Decision struct {
	// Operations set the claimed fields that change to their desired
	// values; empty when none changes.
	Operations []jsonpatch.Operation

	// Refused say, one per field, why a claimed field that changes is
	// left to CAPI: its desired value is not one Tollgate can apply.
	Refused []string
}

// Patch decides, for the claimed fields below base, what changes in place
// from current to desired (both objects as JSON maps).
func Patch(fields []Field, base []string, current, desired map[string]any) Decision {
	var d Decision
	for _, f := range fields {
		path := append(append([]string{}, base...), f.Path...)
		want, wantOK := lookup(desired, path)
		have, haveOK := lookup(current, path)
		if wantOK == haveOK && reflect.DeepEqual(want, have) {
			continue
		}
		if f.Check != nil {
			if err := f.Check(have, want); err != nil {
				d.Refused = append(d.Refused, fmt.Sprintf("%s: %v", strings.Join(path, "."), err))
				continue
			}
		}
		d.Operations = append(d.Operations, operation(current, path, want, wantOK, haveOK))
	}
	return d
}

// operation returns the JSON patch operation that makes path of current
// hold want (or removes it when the desired object has none): a replace of
// a present field, a remove, or an add of the field below its deepest
// present ancestor, holding only the field, so that no other field is
// patched with it.
func operation(current map[string]any, path []string, want any, wantOK, haveOK bool) jsonpatch.Operation {
	switch {
	case haveOK && wantOK:
		return jsonpatch.NewOperation("replace", pointer(path), want)
	case haveOK:
		return jsonpatch.NewOperation("remove", pointer(path), nil)
	}
	// The deepest ancestor current has: add the rest of the path there.
	depth := 0
	for depth < len(path)-1 {
		if _, ok := lookupMap(current, path[:depth+1]); !ok {
			break
		}
		depth++
	}
	value := want
	for i := len(path) - 1; i > depth; i-- {
		value = map[string]any{path[i]: value}
	}
	return jsonpatch.NewOperation("add", pointer(path[:depth+1]), value)
}

// lookup returns the value at path of obj, and whether it is there.
func lookup(obj map[string]any, path []string) (any, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// lookupMap says whether path of obj holds an object.
func lookupMap(obj map[string]any, path []string) (map[string]any, bool) {
	v, ok := lookup(obj, path)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// pointer returns the JSON pointer (RFC 6901) of path.
func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// JSONPatch returns ops as the JSON patch document CAPI's hooks carry;
// nil when there is none.
func JSONPatch(ops []jsonpatch.Operation) ([]byte, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the JSON patch: %w", err)
	}
	return data, nil
}

// ToMap returns the JSON object of raw (a request's RawExtension), an empty
// one for none.
func ToMap(raw []byte) (map[string]any, error) {
	obj := map[string]any{}
	if len(raw) == 0 {
		return obj, nil
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	return obj, nil
}
