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
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
)

// This file tells, before CAPI acts, whether CAPI's rollout of a
// MachineDeployment will hand its Machines to Tollgate or replace them: it
// asks the CanUpdateMachineSet handler what CAPI's rollout planner would,
// applies the answer's patches to the current templates and compares them
// with the desired ones, as the planner does
// (core/reconcilers/machinedeployment/machinedeployment_canupdatemachineset.go).
// What still differs is what CAPI replaces the Machines for.

// Templates are what the Machines of a MachineSet (or of a MachineDeployment,
// for the desired side) are made from.
type Templates struct {
	// Machine is the Machine template's spec.
	Machine clusterv1.MachineSpec

	// Infrastructure is the InfraMachine template, as a JSON map with its
	// apiVersion and kind.
	Infrastructure map[string]any

	// Bootstrap is the bootstrap config template, nil for Machines whose
	// bootstrap data is given (spec.bootstrap.dataSecretName).
	Bootstrap map[string]any
}

// maxChanges bounds the changes Unclaimed names.
const maxChanges = 8

// Unclaimed returns the changes from current to desired that Tollgate does
// not make in place, each as a kind and the path of a field (for example
// "TalosSimMachineTemplate spec.template.spec.cpus"): CAPI replaces the
// Machines for them. Empty when every change is Tollgate's, or nothing
// changes.
func (c Claims) Unclaimed(ctx context.Context, current, desired Templates) ([]string, error) {
	if current.Infrastructure == nil || desired.Infrastructure == nil {
		return []string{"the InfraMachine template cannot be read"}, nil
	}
	if (current.Bootstrap == nil) != (desired.Bootstrap == nil) {
		return []string{"the bootstrap config template is added or removed"}, nil
	}
	req := &runtimehooksv1.CanUpdateMachineSetRequest{
		Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: requestMachineSet(current.Machine)},
		Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: requestMachineSet(desired.Machine)},
	}
	var err error
	if req.Current.InfrastructureMachineTemplate, err = rawExtension(current.Infrastructure); err != nil {
		return nil, err
	}
	if req.Desired.InfrastructureMachineTemplate, err = rawExtension(desired.Infrastructure); err != nil {
		return nil, err
	}
	if current.Bootstrap != nil {
		if req.Current.BootstrapConfigTemplate, err = rawExtension(current.Bootstrap); err != nil {
			return nil, err
		}
		if req.Desired.BootstrapConfigTemplate, err = rawExtension(desired.Bootstrap); err != nil {
			return nil, err
		}
	}
	resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
	c.CanUpdateMachineSet(ctx, req, resp)
	if resp.GetStatus() != runtimehooksv1.ResponseStatusSuccess {
		return nil, fmt.Errorf("deciding what changes in place: %s", resp.GetMessage())
	}

	var changes []string
	machine, err := patched(&req.Current.MachineSet, resp.MachineSetPatch)
	if err != nil {
		return nil, err
	}
	want, err := patched(&req.Desired.MachineSet, runtimehooksv1.Patch{})
	if err != nil {
		return nil, err
	}
	changes = append(changes, diff("MachineSet", cleanMachineSpec(machine), cleanMachineSpec(want))...)
	for _, o := range []struct {
		current, desired runtime.RawExtension
		patch            runtimehooksv1.Patch
	}{
		{req.Current.InfrastructureMachineTemplate, req.Desired.InfrastructureMachineTemplate, resp.InfrastructureMachineTemplatePatch},
		{req.Current.BootstrapConfigTemplate, req.Desired.BootstrapConfigTemplate, resp.BootstrapConfigTemplatePatch},
	} {
		if len(o.current.Raw) == 0 {
			continue
		}
		have, err := patched(o.current, o.patch)
		if err != nil {
			return nil, err
		}
		want, err := ToMap(o.desired.Raw)
		if err != nil {
			return nil, err
		}
		kind, _ := want["kind"].(string)
		if gk, err := groupKind(have); err != nil || gk.Kind != kind {
			changes = append(changes, fmt.Sprintf("the kind of the template changes to %s", kind))
			continue
		}
		changes = append(changes, diff(kind, templateSpec(have), templateSpec(want))...)
	}
	sort.Strings(changes)
	if len(changes) > maxChanges {
		changes = append(changes[:maxChanges], fmt.Sprintf("%d more", len(changes)-maxChanges))
	}
	return changes, nil
}

// requestMachineSet is a MachineSet whose Machine template has spec, as CAPI puts
// it in a CanUpdateMachineSet request.
func requestMachineSet(spec clusterv1.MachineSpec) clusterv1.MachineSet {
	return clusterv1.MachineSet{
		TypeMeta: metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineSet"},
		Spec:     clusterv1.MachineSetSpec{Template: clusterv1.MachineTemplateSpec{Spec: *spec.DeepCopy()}},
	}
}

// rawExtension returns obj as a request carries it: its apiVersion, kind
// and spec (CAPI drops the rest before it asks).
func rawExtension(obj map[string]any) (runtime.RawExtension, error) {
	raw, err := json.Marshal(map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "spec": obj["spec"]})
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding the template: %w", err)
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// patched returns obj (a MachineSet or a RawExtension) as a JSON map with
// patch applied.
func patched(obj any, patch runtimehooksv1.Patch) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the object to patch: %w", err)
	}
	if patch.IsDefined() {
		if patch.PatchType != runtimehooksv1.JSONPatchType {
			return nil, fmt.Errorf("unexpected patch type %q", patch.PatchType)
		}
		p, err := jsonpatch.DecodePatch(patch.Patch)
		if err != nil {
			return nil, fmt.Errorf("decoding the patch: %w", err)
		}
		if raw, err = p.Apply(raw); err != nil {
			return nil, fmt.Errorf("applying the patch: %w", err)
		}
	}
	return ToMap(raw)
}

// cleanMachineSpec returns a MachineSet's spec.template.spec without the
// fields CAPI's planner leaves out of its comparison (CAPI's
// CleanupMachineSpecForDiff): those that never change or are not the
// extension's (the cluster name, the bootstrap and infrastructure
// references, the provider ID) and those CAPI changes in place itself
// (minReadySeconds, readinessGates, taints, the deletion timeouts).
func cleanMachineSpec(ms map[string]any) map[string]any {
	spec, _ := lookupMap(ms, []string{"spec", "template", "spec"})
	out := map[string]any{}
	for k, v := range spec {
		switch k {
		case "clusterName", "bootstrap", "infrastructureRef", "providerID", "minReadySeconds", "readinessGates", "taints":
		case "deletion":
			d, _ := v.(map[string]any)
			rest := map[string]any{}
			for dk, dv := range d {
				if !strings.HasSuffix(dk, "TimeoutSeconds") {
					rest[dk] = dv
				}
			}
			if len(rest) > 0 {
				out[k] = rest
			}
		default:
			out[k] = v
		}
	}
	return out
}

// templateSpec returns a template's spec.template.spec, the part CAPI
// compares.
func templateSpec(obj map[string]any) map[string]any {
	spec, _ := lookupMap(obj, []string{"spec", "template", "spec"})
	return spec
}

// diff returns the paths, below spec.template.spec, at which have and
// want differ, each prefixed with kind.
func diff(kind string, have, want map[string]any) []string {
	var paths []string
	var walk func(path []string, a, b any)
	walk = func(path []string, a, b any) {
		am, aOK := a.(map[string]any)
		bm, bOK := b.(map[string]any)
		if !aOK || !bOK {
			if !reflect.DeepEqual(a, b) {
				paths = append(paths, kind+" "+strings.Join(path, "."))
			}
			return
		}
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			walk(append(slices.Clone(path), k), am[k], bm[k])
		}
	}
	walk([]string{"spec", "template", "spec"}, mapOrEmpty(have), mapOrEmpty(want))
	return paths
}

// mapOrEmpty returns m, or an empty map for nil, so that a missing spec
// compares as an empty one.
func mapOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
