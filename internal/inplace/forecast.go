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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
)

// This file tells, before CAPI acts, whether CAPI's rollout of a
// MachineDeployment will hand its Machines to Tollgate or replace them: it
// asks the extension's decision what CAPI's rollout planner asks it
// (core/reconcilers/machinedeployment/machinedeployment_canupdatemachineset.go),
// on the same objects. What it answers "no" for is what CAPI replaces the
// Machines for.

// Templates are what the Machines of a MachineSet (or of a MachineDeployment,
// for the desired side) are made from.
type Templates struct {
	// Machine is the Machine template's spec.
	Machine clusterv1.MachineSpec

	// Infrastructure is the InfraMachine template, as a JSON map with its
	// apiVersion, kind and metadata.
	Infrastructure map[string]any

	// Bootstrap is the bootstrap config template, nil for Machines whose
	// bootstrap data is given (spec.bootstrap.dataSecretName).
	Bootstrap map[string]any
}

// Replaced returns why CAPI replaces the Machines of ms instead of handing
// them to Tollgate when their MachineDeployment asks for desired, as the
// extension would answer CAPI's CanUpdateMachineSet: the changes Tollgate
// does not make in place (a kind and the path of a field, for example
// "TalosSimMachineTemplate spec.template.spec.cpus"), or why it would not
// finish the update. Empty when CAPI hands the Machines over, or nothing
// changes.
func (e *Extension) Replaced(ctx context.Context, ms *clusterv1.MachineSet, current, desired Templates) ([]string, error) {
	if current.Infrastructure == nil || desired.Infrastructure == nil {
		return []string{"the InfraMachine template cannot be read"}, nil
	}
	if (current.Bootstrap == nil) != (desired.Bootstrap == nil) {
		return []string{errBootstrapAddedOrRemoved.Error()}, nil
	}
	req := &runtimehooksv1.CanUpdateMachineSetRequest{
		Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: requestMachineSet(ms.Namespace, ms.Name, ms.Spec.ClusterName, current.Machine)},
		Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: requestMachineSet(ms.Namespace, "", ms.Spec.ClusterName, desired.Machine)},
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
	p, err := e.claims().machineSetProposal(req)
	a, err := e.answerProposal(ctx, p, err)
	if err != nil {
		return nil, fmt.Errorf("deciding what changes in place: %w", err)
	}
	return a.no, nil
}

// requestMachineSet is a MachineSet whose Machine template has spec, as CAPI
// puts it in a CanUpdateMachineSet request.
func requestMachineSet(namespace, name, clusterName string, spec clusterv1.MachineSpec) clusterv1.MachineSet {
	return clusterv1.MachineSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       clusterv1.MachineSetSpec{ClusterName: clusterName, Template: clusterv1.MachineTemplateSpec{Spec: *spec.DeepCopy()}},
	}
}

// rawExtension returns obj as a request carries it: its apiVersion, kind,
// spec and name, namespace, labels and annotations (CAPI's
// cleanupUnstructured).
func rawExtension(obj map[string]any) (runtime.RawExtension, error) {
	out := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "spec": obj["spec"]}
	if meta, ok := obj["metadata"].(map[string]any); ok {
		kept := map[string]any{}
		for _, k := range []string{"name", "namespace", "labels", "annotations"} {
			if v, ok := meta[k]; ok {
				kept[k] = v
			}
		}
		out["metadata"] = kept
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding the template: %w", err)
	}
	return runtime.RawExtension{Raw: raw}, nil
}
