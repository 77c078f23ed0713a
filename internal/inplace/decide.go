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
	"slices"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	jsonpatchv2 "gomodules.xyz/jsonpatch/v2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/talosimage"
)

// This file decides a CanUpdate request, in two passes, both pure: the
// fields (fieldsPass: does the change consist only of fields Tollgate
// claims?), then the world (judge: will Tollgate, with the Cluster's
// policy, finish the update, and will the provider admit CAPI's write of
// the desired objects?). Anything Tollgate would not finish is a "no", so
// that CAPI replaces the Machines instead of waiting for good.

// maxChanges bounds the changes a "no" names.
const maxChanges = 8

// fieldsVerdict is what fieldsPass decided.
type fieldsVerdict struct {
	// patches are the JSON patches of the claimed fields, per object of
	// the proposal, nil where none changes.
	patches [][]byte
	// claimed counts the claimed fields that change.
	claimed int
	// talosImage is true when a claimed field of the InfraMachine (its
	// image) changes.
	talosImage bool
	// kubernetes is the Kubernetes version a claimed field of the Machine
	// asks for, when it changes.
	kubernetes string
	// unclaimed are the changes the patches leave, each a kind and the
	// path of a field ("TalosSimMachineTemplate spec.template.spec.cpus"),
	// or why the change is not claimed: CAPI replaces the Machines for them.
	unclaimed []string
}

// fieldsPass decides which changes of p Tollgate claims, and what is left.
func fieldsPass(p proposal) (fieldsVerdict, error) {
	v := fieldsVerdict{patches: make([][]byte, len(p.objects))}

	for i, o := range p.objects {
		if o.kindChanged {
			v.unclaimed = append(v.unclaimed, fmt.Sprintf("the kind of the template changes to %s", o.kind))

			continue
		}

		d := Patch(o.fields, o.base, o.current, o.desired)

		patch, err := JSONPatch(d.Operations)
		if err != nil {
			return fieldsVerdict{}, fmt.Errorf("%s: %w", o.what, err)
		}

		v.patches[i] = patch
		v.claimed += len(d.Operations)

		if len(d.Operations) > 0 && i == infraObject {
			v.talosImage = true
		}

		if i == machineObject {
			v.kubernetes = kubernetesChange(o, d)
		}

		have, err := applied(o.current, patch)
		if err != nil {
			return fieldsVerdict{}, fmt.Errorf("%s: %w", o.what, err)
		}

		v.unclaimed = append(v.unclaimed, unclaimed(o, have)...)
	}

	sort.Strings(v.unclaimed)

	if len(v.unclaimed) > maxChanges {
		v.unclaimed = append(v.unclaimed[:maxChanges], fmt.Sprintf("%d more", len(v.unclaimed)-maxChanges))
	}

	return v, nil
}

// kubernetesChange returns the Kubernetes version the claimed fields of a
// Machine (or MachineSet) change to, "" when none changes.
func kubernetesChange(o object, d Decision) string {
	for _, f := range o.fields {
		if f.KubernetesVersion == nil {
			continue
		}

		path := append(slices.Clone(o.base), f.Path...)
		if !slices.ContainsFunc(d.Operations, func(op jsonpatchv2.Operation) bool { return op.Path == pointer(path) }) {
			continue
		}

		value, ok := lookup(o.desired, path)
		if !ok {
			continue
		}

		if version, err := f.KubernetesVersion(value); err == nil {
			return version
		}
	}

	return ""
}

// unclaimed returns what differs between have (the current object with the
// claimed fields patched) and o's desired object, in the part CAPI
// compares.
func unclaimed(o object, have map[string]any) []string {
	compared := func(obj map[string]any) map[string]any {
		if o.kind == "MachineSet" || o.kind == "Machine" {
			return machineSpecForDiff(obj, o.base)
		}

		m, _ := lookupMap(obj, o.base)

		return m
	}

	kind := o.kind
	if kind == "Machine" || kind == "MachineSet" {
		kind = o.what
	}

	return diff(kind, strings.Join(o.base, "."), compared(have), compared(o.desired))
}

// applied returns obj with patch applied.
func applied(obj map[string]any, patch []byte) (map[string]any, error) {
	if patch == nil {
		return obj, nil
	}

	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the object to patch: %w", err)
	}

	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("decoding the patch: %w", err)
	}

	if raw, err = p.Apply(raw); err != nil {
		return nil, fmt.Errorf("applying the patch: %w", err)
	}

	return ToMap(raw)
}

// diff returns the paths, below base, at which have and want differ, each
// prefixed with kind.
func diff(kind, base string, have, want map[string]any) []string {
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
	walk([]string{base}, mapOrEmpty(have), mapOrEmpty(want))

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

// world is what the apiserver says of a request's Cluster, read by
// Extension.readWorld.
type world struct {
	// err says why the world could not be read; the request is then not
	// claimed.
	err error
	// cluster is the Cluster's name, "" when it does not exist.
	cluster string
	// optedIn is true when the Cluster's namespace opts in to in-place
	// updates (upgradev1.InPlaceUpdatesNamespaceLabel).
	optedIn bool
	// policy is the Cluster's policy, nil when it names none or it does
	// not exist.
	policy *upgradev1.TalosUpgradePolicy
	// upgrade is the Cluster's rollout, nil when there is none yet.
	upgrade *upgradev1.TalosUpgrade
	// declared is the Talos version the desired InfraMachine's template
	// declares (talosimage.VersionAnnotation), for a Machine request.
	declared string
	// refused are the writes of the desired objects the providers refuse
	// (a server-side dry-run of each, as CAPI will write it), each saying
	// which object and why; none when they admit them.
	refused []string
}

// judge decides, once the fields are claimed, whether Tollgate will finish
// the update p asks with the Cluster's policy: it returns why not, nothing
// when it will.
func judge(p proposal, fv fieldsVerdict, w world) []string {
	switch {
	case w.err != nil:
		return []string{fmt.Sprintf("cannot tell whether Tollgate finishes the update: %v", w.err)}
	case w.cluster == "":
		return []string{fmt.Sprintf("Cluster %s/%s of %s does not exist", p.namespace, p.clusterName, p.what)}
	case !w.optedIn:
		return []string{fmt.Sprintf("namespace %s does not opt in to in-place updates (label %s=%s)", p.namespace, upgradev1.InPlaceUpdatesNamespaceLabel, upgradev1.InPlaceUpdatesEnabled)}
	case w.policy == nil:
		return []string{fmt.Sprintf("Cluster %s is not selected by a TalosUpgradePolicy (label %s): Tollgate updates the Machines of a Cluster through its policy's gates", w.cluster, upgradev1.PolicyLabel)}
	}

	var why []string

	if fv.talosImage {
		why = append(why, judgeTalos(p, w)...)
	}

	if fv.kubernetes != "" && !w.policy.Spec.CAPIDriven() {
		if target := kubernetesTarget(w); !talos.SameVersion(target, fv.kubernetes) {
			why = append(why, fmt.Sprintf("the MachineSet asks for Kubernetes %s, TalosUpgradePolicy %s (targetFrom: Policy) for %s: change spec.template.spec.version to the policy's, or set targetFrom: CAPI on the policy for the templates to decide",
				fv.kubernetes, w.policy.Name, orNone(target)))
		}
	}

	return append(why, w.refused...)
}

// judgeTalos judges the Talos version the desired InfraMachine (template)
// asks for.
func judgeTalos(p proposal, w world) []string {
	o := p.infra()

	img, err := readImage(o.desired, p.template, w.declared)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", o.what, err)}
	}

	policy := w.policy
	if !policy.Spec.CAPIDriven() {
		target := talosTarget(w)
		if !talos.SameVersion(target, img.Version) {
			return []string{fmt.Sprintf("%s %s boots %s, TalosUpgradePolicy %s (targetFrom: Policy) rolls out %s: change the template to the policy's target, or set targetFrom: CAPI on the policy for the templates to decide",
				o.kind, img.Field, img.Version, policy.Name, orNone(target))}
		}

		return nil
	}

	if err := checkInstallable(policy.Spec.Installer, img); err != nil {
		return []string{fmt.Sprintf("%s %s: %v", o.what, img.Field, err)}
	}

	current, err := readImage(o.current, p.template, "")
	if err != nil {
		return nil // What the Machines run now is the rollout's to read.
	}

	if policy.Spec.UpgradePath == upgradev1.UpgradePathAuto {
		if c, err := talos.CompareVersions(img.Version, current.Version); err == nil && c < 0 && !policy.Spec.AllowDowngrade {
			return []string{fmt.Sprintf("%s %s goes down from %s to %s, which TalosUpgradePolicy %s does not allow (allowDowngrade)", o.kind, img.Field, current.Version, img.Version, policy.Name)}
		}

		return nil
	}

	if err := talos.CheckUpgradeStep(current.Version, img.Version, policy.Spec.AllowDowngrade); err != nil {
		return []string{fmt.Sprintf("%s %s: %v", o.kind, img.Field, err)}
	}

	return nil
}

// readImage reads what an InfraMachine (or template) boots.
func readImage(obj map[string]any, template bool, declared string) (talosimage.Image, error) {
	if template {
		return talosimage.ReadTemplate(obj)
	}

	return talosimage.Read(obj, declared)
}

// talosTarget is the Talos version the Cluster's policy rolls out: its
// rollout's, else the policy's own.
func talosTarget(w world) string {
	if w.upgrade != nil && w.upgrade.Spec.TalosVersion != "" {
		return w.upgrade.Spec.TalosVersion
	}

	return w.policy.Spec.TalosVersion
}

// kubernetesTarget is the Kubernetes version the Cluster's policy rolls
// out: its rollout's, else the policy's own.
func kubernetesTarget(w world) string {
	if w.upgrade != nil && w.upgrade.Spec.KubernetesVersion != "" {
		return w.upgrade.Spec.KubernetesVersion
	}

	return w.policy.Spec.KubernetesVersion
}

// orNone is v, or "none" when empty.
func orNone(v string) string {
	if v == "" {
		return "none"
	}

	return v
}
