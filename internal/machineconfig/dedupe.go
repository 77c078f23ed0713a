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
	"reflect"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
)

// dedupeLists returns cfg with every list item that repeats an earlier
// item of its list exactly removed, at any depth of any document, and
// whether it removed any; cfg itself is not changed. Talos' strategic merge
// appends the items of a patch's lists to the configuration's, so a patch
// applied to a configuration that already has it repeats them
// (machine.certSANs, kubelet.extraMounts, files, ...); a repeated item
// means nothing more in a machine configuration than one.
//
// The documents are walked as Go values, not as YAML, so that no value
// changes its type on the way. Byte slices (certificates, keys) are values,
// not lists, and fields Talos does not export are left alone.
func dedupeLists(cfg config.Provider) (config.Provider, bool, error) {
	docs := cfg.Clone().Documents()
	changed := false
	for _, doc := range docs {
		if dedupeValue(reflect.ValueOf(doc)) {
			changed = true
		}
	}
	if !changed {
		return cfg, false, nil
	}
	out, err := container.New(docs...)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// dedupeValue removes the repeated items of the lists under v and reports
// whether it removed any.
func dedupeValue(v reflect.Value) bool {
	//nolint:exhaustive // other kinds hold no list.
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && dedupeValue(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return false
		}
		elem := v.Elem()
		if elem.Kind() == reflect.Pointer {
			return dedupeValue(elem)
		}
		c := reflect.New(elem.Type()).Elem()
		c.Set(elem)
		if !dedupeValue(c) || !v.CanSet() {
			return false
		}
		v.Set(c)
		return true
	case reflect.Struct:
		changed := false
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && dedupeValue(v.Field(i)) {
				changed = true
			}
		}
		return changed
	case reflect.Map:
		changed := false
		iter := v.MapRange()
		for iter.Next() {
			c := reflect.New(iter.Value().Type()).Elem()
			c.Set(iter.Value())
			if dedupeValue(c) {
				v.SetMapIndex(iter.Key(), c)
				changed = true
			}
		}
		return changed
	case reflect.Slice:
		return dedupeSlice(v)
	default:
		return false
	}
}

// dedupeSlice removes the items of the list v that repeat an earlier one,
// and those of the lists under its items.
func dedupeSlice(v reflect.Value) bool {
	if v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
		return false
	}
	changed := false
	for i := range v.Len() {
		if dedupeValue(v.Index(i)) {
			changed = true
		}
	}
	kept := reflect.MakeSlice(v.Type(), 0, v.Len())
	for i := range v.Len() {
		item := v.Index(i).Interface()
		repeated := false
		for j := range kept.Len() {
			if reflect.DeepEqual(kept.Index(j).Interface(), item) {
				repeated = true
				break
			}
		}
		if !repeated {
			kept = reflect.Append(kept, v.Index(i))
		}
	}
	if kept.Len() == v.Len() || !v.CanSet() {
		return changed
	}
	v.Set(kept)
	return true
}
