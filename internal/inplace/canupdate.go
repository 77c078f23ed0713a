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
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"
)

// object is one object of a CanUpdate request: its current and desired
// states as JSON maps, the claimed fields and the path they sit below.
type object struct {
	what             string
	current, desired map[string]any
	fields           []Field
	base             []string
}

// Answer is the capability answer for the objects of one request: a patch
// per object, nil where nothing changes in place, and why the claimed
// fields left to CAPI are.
type Answer struct {
	Patches [][]byte
	Refused []string
}

// answer decides every object.
func answer(objects []object) (Answer, error) {
	a := Answer{Patches: make([][]byte, len(objects))}
	for i, o := range objects {
		d := Patch(o.fields, o.base, o.current, o.desired)
		patch, err := JSONPatch(d.Operations)
		if err != nil {
			return Answer{}, fmt.Errorf("%s: %w", o.what, err)
		}
		a.Patches[i] = patch
		for _, r := range d.Refused {
			a.Refused = append(a.Refused, o.what+" "+r)
		}
	}
	return a, nil
}

// CanUpdateMachineSet answers CAPI's CanUpdateMachineSet hook: the changes
// of a MachineSet's Machine template, InfraMachine template and bootstrap
// config template that Tollgate makes in place, as patches. It never fails
// for a change it does not claim (CAPI then replaces the Machines); only a
// request it cannot read is a Failure.
func (c Claims) CanUpdateMachineSet(ctx context.Context, req *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse) {
	log := ctrl.LoggerFrom(ctx).WithValues("MachineSet", req.Desired.MachineSet.Namespace+"/"+req.Desired.MachineSet.Name)
	objects, err := c.machineSetObjects(req)
	if err == nil {
		var a Answer
		if a, err = answer(objects); err == nil {
			resp.MachineSetPatch = jsonPatch(a.Patches[0])
			resp.InfrastructureMachineTemplatePatch = jsonPatch(a.Patches[1])
			if len(a.Patches) > 2 {
				resp.BootstrapConfigTemplatePatch = jsonPatch(a.Patches[2])
			}
			resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
			logAnswer(log, a)
			return
		}
	}
	resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
	resp.SetMessage(err.Error())
	log.Error(err, "Answering CanUpdateMachineSet")
}

// CanUpdateMachine answers CAPI's CanUpdateMachine hook, which a control
// plane provider calls for one Machine, as CanUpdateMachineSet does for a
// MachineSet.
func (c Claims) CanUpdateMachine(ctx context.Context, req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) {
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", req.Desired.Machine.Namespace+"/"+req.Desired.Machine.Name)
	objects, err := c.machineObjects(req)
	if err == nil {
		var a Answer
		if a, err = answer(objects); err == nil {
			resp.MachinePatch = jsonPatch(a.Patches[0])
			resp.InfrastructureMachinePatch = jsonPatch(a.Patches[1])
			if len(a.Patches) > 2 {
				resp.BootstrapConfigPatch = jsonPatch(a.Patches[2])
			}
			resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
			logAnswer(log, a)
			return
		}
	}
	resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
	resp.SetMessage(err.Error())
	log.Error(err, "Answering CanUpdateMachine")
}

func logAnswer(log logr.Logger, a Answer) {
	claimed := 0
	for _, p := range a.Patches {
		if p != nil {
			claimed++
		}
	}
	log.Info("Answered which changes are made in place", "objectsPatched", claimed, "leftToCAPI", strings.Join(a.Refused, "; "))
}

func (c Claims) machineSetObjects(req *runtimehooksv1.CanUpdateMachineSetRequest) ([]object, error) {
	return c.objects(request{
		what: "MachineSet", current: &req.Current.MachineSet, desired: &req.Desired.MachineSet, base: []string{"spec", "template", "spec"},
		infra:    [2]runtime.RawExtension{req.Current.InfrastructureMachineTemplate, req.Desired.InfrastructureMachineTemplate},
		boot:     [2]runtime.RawExtension{req.Current.BootstrapConfigTemplate, req.Desired.BootstrapConfigTemplate},
		template: true,
	})
}

func (c Claims) machineObjects(req *runtimehooksv1.CanUpdateMachineRequest) ([]object, error) {
	return c.objects(request{
		what: "Machine", current: &req.Current.Machine, desired: &req.Desired.Machine, base: []string{"spec"},
		infra:        [2]runtime.RawExtension{req.Current.InfrastructureMachine, req.Desired.InfrastructureMachine},
		boot:         [2]runtime.RawExtension{req.Current.BootstrapConfig, req.Desired.BootstrapConfig},
		controlPlane: util.IsControlPlaneMachine(&req.Desired.Machine),
	})
}

// request is what a CanUpdate request carries: the Machine (or MachineSet)
// as CAPI's type, and the provider's objects, current and desired, raw;
// templates for a MachineSet.
type request struct {
	what             string
	current, desired any
	base             []string
	infra, boot      [2]runtime.RawExtension
	template         bool
	// controlPlane is a request for a control-plane Machine.
	controlPlane bool
}

// objects reads the objects of a request: the Machine's or MachineSet's,
// the infrastructure's and, when the request has one, the bootstrap
// config's.
func (c Claims) objects(r request) ([]object, error) {
	current, err := toMap(r.current)
	if err != nil {
		return nil, fmt.Errorf("reading the current %s: %w", r.what, err)
	}
	desired, err := toMap(r.desired)
	if err != nil {
		return nil, fmt.Errorf("reading the desired %s: %w", r.what, err)
	}
	suffix := ""
	if r.template {
		suffix = templateSuffix
	}
	fields := c.Machine
	if r.controlPlane {
		fields = slices.DeleteFunc(slices.Clone(fields), func(f Field) bool { return f.WorkersOnly })
	}
	objects := []object{{what: r.what, current: current, desired: desired, fields: fields, base: r.base}}
	infra, err := rawObject("InfrastructureMachine"+suffix, r.infra[0], r.infra[1], c.Infrastructure, r.template)
	if err != nil {
		return nil, err
	}
	objects = append(objects, infra)
	if len(r.boot[0].Raw) > 0 || len(r.boot[1].Raw) > 0 {
		bootstrap, err := rawObject("BootstrapConfig"+suffix, r.boot[0], r.boot[1], c.Bootstrap, r.template)
		if err != nil {
			return nil, err
		}
		objects = append(objects, bootstrap)
	}
	return objects, nil
}

// rawObject reads the current and desired states of a provider's object,
// which must be of one group and kind.
func rawObject(what string, current, desired runtime.RawExtension, byKind map[schema.GroupKind][]Field, template bool) (object, error) {
	cur, err := ToMap(current.Raw)
	if err != nil {
		return object{}, fmt.Errorf("reading the current %s: %w", what, err)
	}
	des, err := ToMap(desired.Raw)
	if err != nil {
		return object{}, fmt.Errorf("reading the desired %s: %w", what, err)
	}
	gk, err := groupKind(des)
	if err != nil {
		return object{}, fmt.Errorf("reading the desired %s: %w", what, err)
	}
	if have, err := groupKind(cur); err == nil && have != gk {
		// CAPI replaces a Machine whose template kind changes; nothing of
		// it is made in place.
		return object{what: what + " " + gk.String(), current: cur, desired: des}, nil
	} else if err != nil && len(current.Raw) > 0 {
		return object{}, fmt.Errorf("reading the current %s: %w", what, err)
	}
	fields, base := ForKind(byKind, gk, template)
	return object{what: what + " " + gk.String(), current: cur, desired: des, fields: fields, base: base}, nil
}

// groupKind returns the group and kind an object's apiVersion and kind
// name.
func groupKind(obj map[string]any) (schema.GroupKind, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return schema.GroupKind{}, errors.New("it has no apiVersion and kind")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupKind{}, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	return gv.WithKind(kind).GroupKind(), nil
}

func toMap(obj any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

func jsonPatch(patch []byte) runtimehooksv1.Patch {
	if patch == nil {
		return runtimehooksv1.Patch{}
	}
	return runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: patch}
}
