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

package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// A bypass is an override of a safety gate, so it is audited: it needs a
// reason, and the defaulting webhooks record who asked for it
// (spec.bypass.requestedBy), which the controller writes into the Bypassed
// condition and the events.

// bypassOf returns the bypass of the object an admission request updates,
// read from the request's old object; nil on a create or when it had none.
func bypassOf(ctx context.Context, decodeOld func(raw []byte) (*upgradev1.BypassSpec, error)) *upgradev1.BypassSpec {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil
	}
	b, err := decodeOld(req.OldObject.Raw)
	if err != nil {
		return nil
	}
	return b
}

// recordRequester sets newB.RequestedBy to the user of the admission
// request when the bypass changed, and keeps the recorded requester when it
// did not: a value written by a request is never kept as such.
func recordRequester(ctx context.Context, oldB, newB *upgradev1.BypassSpec) {
	if newB == nil {
		return
	}
	if sameBypass(oldB, newB) {
		newB.RequestedBy = ""
		if oldB != nil {
			newB.RequestedBy = oldB.RequestedBy
		}
		return
	}
	newB.RequestedBy = ""
	if req, err := admission.RequestFromContext(ctx); err == nil {
		newB.RequestedBy = req.UserInfo.Username
	}
}

// sameBypass reports whether two bypasses bypass the same gates for the same
// reason.
func sameBypass(a, b *upgradev1.BypassSpec) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, y := a.DeepCopy(), b.DeepCopy()
	x.RequestedBy, y.RequestedBy = "", ""
	return equality.Semantic.DeepEqual(x, y)
}

// decodeUpgradeBypass reads the bypass of a raw TalosUpgrade.
func decodeUpgradeBypass(raw []byte) (*upgradev1.BypassSpec, error) {
	u := &upgradev1.TalosUpgrade{}
	if err := json.Unmarshal(raw, u); err != nil {
		return nil, err
	}
	return u.Spec.Bypass, nil
}

// decodePolicyBypass reads the bypass of a raw TalosUpgradePolicy.
func decodePolicyBypass(raw []byte) (*upgradev1.BypassSpec, error) {
	p := &upgradev1.TalosUpgradePolicy{}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, err
	}
	return p.Spec.Bypass, nil
}

// validateBypass checks a bypass: a reason when anything is bypassed,
// Machines only on a TalosUpgrade (onPolicy false), and only hooks of the
// plan. It warns when a gate is newly bypassed. A bypass an update leaves
// as it is is not checked again: an update that changes nothing else is
// always allowed.
func validateBypass(oldB, newB *upgradev1.BypassSpec, hooks []upgradev1.ActionHook, onPolicy bool, fldPath *field.Path) (field.ErrorList, []string) {
	if newB == nil || (oldB != nil && sameBypass(oldB, newB)) {
		return nil, nil
	}
	var allErrs field.ErrorList
	if newB.Any() && strings.TrimSpace(newB.Reason) == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("reason"),
			"say why the bypass is needed: a bypass takes a safety gate away, and the reason is shown with who asked for it in the events and the Bypassed condition"))
	}
	if onPolicy && len(newB.Machines) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("machines"),
			"a Machine's hook is bypassed on the TalosUpgrade of its Cluster (kubectl edit talosupgrade -n <namespace> <cluster>), where its Machines are; the policy may bypass healthChecks and holdOwners"))
	}
	names := map[string]bool{}
	for _, h := range hooks {
		names[h.Name] = true
	}
	for i, m := range newB.Machines {
		if !names[m.Hook] {
			allErrs = append(allErrs, field.NotFound(fldPath.Child("machines").Index(i).Child("hook"),
				fmt.Sprintf("%s (not a hook of this rollout's plan, spec.hooks[].name)", m.Hook)))
		}
	}
	return allErrs, bypassWarnings(oldB, newB, fldPath)
}

// bypassWarnings warns when a gate is newly bypassed.
func bypassWarnings(oldB, newB *upgradev1.BypassSpec, fldPath *field.Path) []string {
	if newB == nil {
		return nil
	}
	var warnings []string
	if newB.HealthChecks && (oldB == nil || !oldB.HealthChecks) {
		warnings = append(warnings, fmt.Sprintf("%s is true: Machines are taken down without waiting for the ClusterHealthChecks to pass; set it back to false as soon as the checks are fixed",
			fldPath.Child("healthChecks")))
	}
	if newB.MaintenanceWindows && (oldB == nil || !oldB.MaintenanceWindows) {
		warnings = append(warnings, fmt.Sprintf("%s is true: Machines start now, outside the maintenance windows, until the rollout ends",
			fldPath.Child("maintenanceWindows")))
	}
	if len(newB.HoldOwners) > 0 && (oldB == nil || !equality.Semantic.DeepEqual(oldB.HoldOwners, newB.HoldOwners)) {
		warnings = append(warnings, fmt.Sprintf("%s: the holds of %s are passed at every point without being released; use it only for an owner that is gone",
			fldPath.Child("holdOwners"), strings.Join(newB.HoldOwners, ", ")))
	}
	return warnings
}
