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
	"time"

	"github.com/go-logr/logr"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io;bootstrap.cluster.x-k8s.io,resources=*,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Extension is Tollgate's in-place update extension: it answers CAPI's
// CanUpdateMachineSet, CanUpdateMachine and UpdateMachine hooks (feature
// gates InPlaceUpdates and RuntimeSDK) from what the apiserver holds.
//
// A CanUpdate answer claims a change only when Tollgate will finish it: the
// change is made of fields Tollgate claims (Claims), the Machines' Cluster
// is selected by a TalosUpgradePolicy in a namespace that opts in, the
// policy installs what the change asks (its target, with targetFrom:
// Policy; an image of its installer, with targetFrom: CAPI), and the
// providers admit CAPI's write of the desired InfraMachine and
// BootstrapConfig (a server-side dry-run, as KCP asks before it claims an
// in-place update). Once CAPI moved a Machine it never falls back to
// replacing it: anything else is answered "no" (Success without patches),
// and CAPI replaces the Machines. Only a request that cannot be read is a
// Failure, which CAPI retries.
//
// The handlers change nothing: the TalosUpgrade controller upgrades the
// Machines CAPI handed over (ReadHandover) through the policy's gates, and
// UpdateMachine reports how far that went.
type Extension struct {
	// Client reads from the apiserver, not from a cache (an answer is given
	// on what holds now), and dry-runs the writes CAPI would make.
	Client client.Client
	// Claims are the fields Tollgate changes in place; DefaultClaims when
	// empty.
	Claims Claims
	// RetryAfter is how long CAPI waits before it asks UpdateMachine again
	// while the update is not done; DefaultRetryAfter when zero.
	RetryAfter time.Duration
}

// claims returns the extension's Claims.
func (e *Extension) claims() Claims {
	if e.Claims.Infrastructure == nil && e.Claims.Machine == nil {
		return DefaultClaims()
	}
	return e.Claims
}

// answer is a CanUpdate answer: the patches when the change is claimed,
// and why not when it is not.
type answer struct {
	patches [][]byte
	no      []string
}

// CanUpdateMachineSet answers CAPI's CanUpdateMachineSet hook for the
// Machines of the current MachineSet moving to the desired one.
func (e *Extension) CanUpdateMachineSet(ctx context.Context, req *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse) {
	log := ctrl.LoggerFrom(ctx).WithValues("MachineSet", req.Current.MachineSet.Namespace+"/"+req.Current.MachineSet.Name)
	p, err := e.claims().machineSetProposal(req)
	a, err := e.answerProposal(ctrl.LoggerInto(ctx, log), p, err)
	if err != nil {
		resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
		resp.SetMessage(err.Error())
		log.Error(err, "Answering CanUpdateMachineSet")
		return
	}
	if a.no == nil {
		resp.MachineSetPatch = jsonPatch(a.patches[machineObject])
		resp.InfrastructureMachineTemplatePatch = jsonPatch(a.patches[infraObject])
		if len(a.patches) > bootstrapObject {
			resp.BootstrapConfigTemplatePatch = jsonPatch(a.patches[bootstrapObject])
		}
	}
	resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	resp.SetMessage(logAnswer(log, a))
}

// CanUpdateMachine answers CAPI's CanUpdateMachine hook, which a control
// plane provider calls for one Machine, as CanUpdateMachineSet does for a
// MachineSet.
func (e *Extension) CanUpdateMachine(ctx context.Context, req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) {
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", req.Desired.Machine.Namespace+"/"+req.Desired.Machine.Name)
	p, err := e.claims().machineProposal(req)
	a, err := e.answerProposal(ctrl.LoggerInto(ctx, log), p, err)
	if err != nil {
		resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
		resp.SetMessage(err.Error())
		log.Error(err, "Answering CanUpdateMachine")
		return
	}
	if a.no == nil {
		resp.MachinePatch = jsonPatch(a.patches[machineObject])
		resp.InfrastructureMachinePatch = jsonPatch(a.patches[infraObject])
		if len(a.patches) > bootstrapObject {
			resp.BootstrapConfigPatch = jsonPatch(a.patches[bootstrapObject])
		}
	}
	resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	resp.SetMessage(logAnswer(log, a))
}

// answerProposal decides p, read with readErr: the fields first, then, when
// they are all claimed, the world. An error is a request that cannot be
// read.
func (e *Extension) answerProposal(ctx context.Context, p proposal, readErr error) (answer, error) {
	if errors.Is(readErr, errBootstrapAddedOrRemoved) {
		return answer{no: []string{readErr.Error()}}, nil
	}
	if readErr != nil {
		return answer{}, readErr
	}
	fv, err := fieldsPass(p)
	if err != nil {
		return answer{}, err
	}
	if len(fv.unclaimed) > 0 {
		return answer{no: fv.unclaimed}, nil
	}
	if fv.claimed == 0 {
		return answer{patches: fv.patches}, nil // Nothing changes.
	}
	if no := judge(p, fv, e.readWorld(ctx, p, fv)); len(no) > 0 {
		return answer{no: no}, nil
	}
	return answer{patches: fv.patches}, nil
}

// logAnswer logs an answer and returns its message.
func logAnswer(log logr.Logger, a answer) string {
	if a.no != nil {
		msg := "not made in place, CAPI replaces the Machines: " + strings.Join(a.no, "; ")
		log.Info("Answered that the change is not made in place", "reasons", strings.Join(a.no, "; "))
		return msg
	}
	claimed := 0
	for _, p := range a.patches {
		if p != nil {
			claimed++
		}
	}
	log.Info("Answered that the change is made in place", "objectsPatched", claimed)
	return fmt.Sprintf("made in place by Tollgate (%d objects patched)", claimed)
}

func jsonPatch(patch []byte) runtimehooksv1.Patch {
	if patch == nil {
		return runtimehooksv1.Patch{}
	}
	return runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: patch}
}
