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
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/util"
)

// This file reads a CanUpdate request into a proposal: the objects it
// changes, current and desired, as JSON maps, with the fields Tollgate
// claims of each.

// object is one object of a CanUpdate request: its current and desired
// states as JSON maps, the claimed fields and the path they sit below.
type object struct {
	// what names it for messages: "MachineSet", "InfrastructureMachineTemplate
	// infrastructure.cluster.x-k8s.io/TalosSimMachineTemplate".
	what string
	// kind is the kind of the desired object.
	kind             string
	current, desired map[string]any
	fields           []Field
	// base is the path below which the fields sit, and CAPI compares the
	// object: spec (an object), spec.template.spec (a template).
	base []string
	// kindChanged is true when the current object is of another kind.
	kindChanged bool
}

// Role of each object of a proposal.
const (
	machineObject = iota
	infraObject
	bootstrapObject
)

// proposal is a CanUpdate request, read.
type proposal struct {
	// what names the request's MachineSet or Machine, for messages.
	what string
	// namespace, clusterName, machineSet and machine name where the
	// Machines live: machineSet is the current MachineSet of a
	// CanUpdateMachineSet request, machine the Machine of a
	// CanUpdateMachine request.
	namespace, clusterName, machineSet, machine string
	// template is true for a MachineSet request, whose provider objects
	// are templates.
	template bool
	// controlPlane is true for a control-plane Machine.
	controlPlane bool
	// objects are the Machine's (or MachineSet's), the InfraMachine's (or
	// its template's) and, when there is one, the BootstrapConfig's (or
	// its template's), in that order.
	objects []object
}

// infra returns the proposal's InfraMachine (template).
func (p *proposal) infra() *object { return &p.objects[infraObject] }

// bootstrap returns the proposal's BootstrapConfig (template), nil when
// the Machines have none.
func (p *proposal) bootstrap() *object {
	if len(p.objects) > bootstrapObject {
		return &p.objects[bootstrapObject]
	}

	return nil
}

// errBootstrapAddedOrRemoved is a request that adds or removes the
// bootstrap config: CAPI replaces the Machines.
var errBootstrapAddedOrRemoved = errors.New("the bootstrap config template is added or removed")

// machineSetProposal reads a CanUpdateMachineSet request.
func (c Claims) machineSetProposal(req *runtimehooksv1.CanUpdateMachineSetRequest) (proposal, error) {
	ms := &req.Current.MachineSet
	p := proposal{
		what: "MachineSet " + ms.Namespace + "/" + ms.Name, namespace: ms.Namespace, clusterName: ms.Spec.ClusterName,
		machineSet: ms.Name, template: true,
	}
	if p.namespace == "" {
		p.namespace = req.Desired.MachineSet.Namespace
	}

	if p.clusterName == "" {
		p.clusterName = req.Desired.MachineSet.Spec.ClusterName
	}

	err := c.readObjects(&p, request{
		current: &req.Current.MachineSet, desired: &req.Desired.MachineSet, base: []string{"spec", "template", "spec"},
		infra: [2]runtime.RawExtension{req.Current.InfrastructureMachineTemplate, req.Desired.InfrastructureMachineTemplate},
		boot:  [2]runtime.RawExtension{req.Current.BootstrapConfigTemplate, req.Desired.BootstrapConfigTemplate},
	})

	return p, err
}

// machineProposal reads a CanUpdateMachine request.
func (c Claims) machineProposal(req *runtimehooksv1.CanUpdateMachineRequest) (proposal, error) {
	m := &req.Desired.Machine
	p := proposal{
		what: "Machine " + m.Namespace + "/" + m.Name, namespace: m.Namespace, clusterName: m.Spec.ClusterName,
		machine: m.Name, controlPlane: util.IsControlPlaneMachine(m),
	}
	err := c.readObjects(&p, request{
		current: &req.Current.Machine, desired: &req.Desired.Machine, base: []string{"spec"},
		infra: [2]runtime.RawExtension{req.Current.InfrastructureMachine, req.Desired.InfrastructureMachine},
		boot:  [2]runtime.RawExtension{req.Current.BootstrapConfig, req.Desired.BootstrapConfig},
	})

	return p, err
}

// request is what a CanUpdate request carries: the Machine (or
// MachineSet) as CAPI's type, and the provider's objects, current and
// desired, raw.
type request struct {
	current, desired any
	base             []string
	infra, boot      [2]runtime.RawExtension
}

// readObjects reads the objects of a request into p.
func (c Claims) readObjects(p *proposal, r request) error {
	what := "Machine"
	suffix := ""

	if p.template {
		what, suffix = "MachineSet", templateSuffix
	}

	current, err := toMap(r.current)
	if err != nil {
		return fmt.Errorf("reading the current %s: %w", what, err)
	}

	desired, err := toMap(r.desired)
	if err != nil {
		return fmt.Errorf("reading the desired %s: %w", what, err)
	}

	fields := c.Machine
	if p.controlPlane {
		fields = slices.DeleteFunc(slices.Clone(fields), func(f Field) bool { return f.WorkersOnly })
	}

	p.objects = []object{{what: what, kind: what, current: current, desired: desired, fields: fields, base: r.base}}

	infra, err := rawObject("InfrastructureMachine"+suffix, r.infra[0], r.infra[1], c.Infrastructure, p.template)
	if err != nil {
		return err
	}

	p.objects = append(p.objects, infra)

	switch hasCurrent, hasDesired := len(r.boot[0].Raw) > 0, len(r.boot[1].Raw) > 0; {
	case hasCurrent != hasDesired:
		return errBootstrapAddedOrRemoved
	case hasCurrent:
		bootstrap, err := rawObject("BootstrapConfig"+suffix, r.boot[0], r.boot[1], c.Bootstrap, p.template)
		if err != nil {
			return err
		}

		p.objects = append(p.objects, bootstrap)
	}

	return nil
}

// rawObject reads the current and desired states of a provider's object.
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

	base := []string{"spec"}
	if template {
		base = []string{"spec", "template", "spec"}
	}

	o := object{what: what + " " + gk.String(), kind: gk.Kind, current: cur, desired: des, base: base}

	switch have, err := groupKind(cur); {
	case err != nil && len(current.Raw) > 0:
		return object{}, fmt.Errorf("reading the current %s: %w", what, err)
	case err == nil && have != gk:
		// CAPI replaces a Machine whose template kind changes.
		o.kindChanged = true

		return o, nil
	}

	o.fields, _ = ForKind(byKind, gk, template)

	return o, nil
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

// machineSpecForDiff is a Machine's (a MachineSet's template's) spec as CAPI compares
// it (CleanupMachineSpecForDiff): without what never changes, is not the
// extension's, or CAPI changes in place itself.
func machineSpecForDiff(obj map[string]any, base []string) map[string]any {
	spec, _ := lookupMap(obj, base)
	out := map[string]any{}

	for k, v := range spec {
		switch k {
		case "clusterName", "bootstrap", "infrastructureRef", "providerID", "minReadySeconds", "readinessGates", "taints":
		case "deletion":
			d, _ := v.(map[string]any)
			rest := map[string]any{}

			for dk, dv := range d {
				if !isTimeout(dk) {
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

// isTimeout reports whether a field of a Machine's spec.deletion is one of
// the timeouts CAPI changes in place.
func isTimeout(field string) bool { return strings.HasSuffix(field, "TimeoutSeconds") }
