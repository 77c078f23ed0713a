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
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
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
	current, err := toMap(&req.Current.MachineSet)
	if err != nil {
		return nil, fmt.Errorf("reading the current MachineSet: %w", err)
	}
	desired, err := toMap(&req.Desired.MachineSet)
	if err != nil {
		return nil, fmt.Errorf("reading the desired MachineSet: %w", err)
	}
	objects := []object{{what: "MachineSet", current: current, desired: desired, fields: c.Machine, base: []string{"spec", "template", "spec"}}}
	infra, err := rawObject("InfrastructureMachineTemplate", req.Current.InfrastructureMachineTemplate, req.Desired.InfrastructureMachineTemplate, c.Infrastructure, true)
	if err != nil {
		return nil, err
	}
	objects = append(objects, infra)
	if len(req.Current.BootstrapConfigTemplate.Raw) > 0 || len(req.Desired.BootstrapConfigTemplate.Raw) > 0 {
		bootstrap, err := rawObject("BootstrapConfigTemplate", req.Current.BootstrapConfigTemplate, req.Desired.BootstrapConfigTemplate, c.Bootstrap, true)
		if err != nil {
			return nil, err
		}
		objects = append(objects, bootstrap)
	}
	return objects, nil
}

func (c Claims) machineObjects(req *runtimehooksv1.CanUpdateMachineRequest) ([]object, error) {
	current, err := toMap(&req.Current.Machine)
	if err != nil {
		return nil, fmt.Errorf("reading the current Machine: %w", err)
	}
	desired, err := toMap(&req.Desired.Machine)
	if err != nil {
		return nil, fmt.Errorf("reading the desired Machine: %w", err)
	}
	objects := []object{{what: "Machine", current: current, desired: desired, fields: c.Machine, base: []string{"spec"}}}
	infra, err := rawObject("InfrastructureMachine", req.Current.InfrastructureMachine, req.Desired.InfrastructureMachine, c.Infrastructure, false)
	if err != nil {
		return nil, err
	}
	objects = append(objects, infra)
	if len(req.Current.BootstrapConfig.Raw) > 0 || len(req.Desired.BootstrapConfig.Raw) > 0 {
		bootstrap, err := rawObject("BootstrapConfig", req.Current.BootstrapConfig, req.Desired.BootstrapConfig, c.Bootstrap, false)
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
