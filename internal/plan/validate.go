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

package plan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/distribution/reference"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/maintenance"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

const (
	// MinRebootTimeout is the shortest rebootTimeout: a node cannot reboot
	// and come back Ready faster.
	MinRebootTimeout = 30 * time.Second

	// MaxRetries is the largest number of retries of an action hook.
	MaxRetries = 10
)

var (
	// schematicIDPattern is an Image Factory schematic ID.
	schematicIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

	// percentPattern is a percentage from 0% to 999%, checked for range
	// separately so that the message can say which bound is crossed.
	percentPattern = regexp.MustCompile(`^[0-9]{1,3}%$`)
)

// Validate checks the rules of a plan that need nothing but the plan itself:
// well-formed versions, images, rollout pace, hooks, health-check references
// and maintenance windows. fldPath is the path of the plan, for example
// field.NewPath("spec") for a TalosUpgradePolicy whose spec inlines it.
//
// The admission webhooks of TalosUpgradePolicy and TalosUpgrade call it. The
// controller's preflight does not call it again: it checks only what depends
// on the Cluster and may have changed since admission (ValidateForCluster).
func Validate(p *upgradev1.UpgradePlan, fldPath *field.Path) field.ErrorList {
	return append(validateTargetVersion(p, fldPath), ValidateRules(p, fldPath)...)
}

// ValidateRules checks every rule of a plan but its target version: the plan
// of a TalosUpgradePolicy that follows releases, whose target Tollgate
// chooses.
func ValidateRules(p *upgradev1.UpgradePlan, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateInstaller(&p.Installer, fldPath.Child("installer"))...)
	allErrs = append(allErrs, validateRollout(&p.Rollout, fldPath.Child("rollout"))...)
	allErrs = append(allErrs, validateHealthCheckRefs(p.HealthChecks, fldPath.Child("healthChecks"))...)
	allErrs = append(allErrs, validateHooks(p.Hooks, fldPath.Child("hooks"))...)
	allErrs = append(allErrs, validatePositiveDuration(p.Drain.Timeout, fldPath.Child("drain", "timeout"))...)
	allErrs = append(allErrs, validatePositiveDuration(p.Removal.Timeout, fldPath.Child("removal", "timeout"))...)
	if p.RebootTimeout != nil && p.RebootTimeout.Duration < MinRebootTimeout {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("rebootTimeout"), p.RebootTimeout.Duration.String(),
			fmt.Sprintf("must be at least %s: no node reboots and comes back Ready faster; leave it unset for 15m", MinRebootTimeout)))
	}
	switch p.UpgradePath {
	case "", upgradev1.UpgradePathDirect, upgradev1.UpgradePathAuto:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("upgradePath"), p.UpgradePath,
			[]string{string(upgradev1.UpgradePathDirect), string(upgradev1.UpgradePathAuto)}))
	}
	switch p.RebootMode {
	case "", upgradev1.RebootModeDefault, upgradev1.RebootModePowerCycle:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("rebootMode"), p.RebootMode,
			[]string{string(upgradev1.RebootModeDefault), string(upgradev1.RebootModePowerCycle)}))
	}
	if !p.Reboot.After.IsZero() && p.CAPIDriven() {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("reboot", "after"),
			"a rolling reboot cannot be asked for by a policy whose target comes from CAPI (targetFrom: CAPI): its rollouts act only on the Machines CAPI hands over for an in-place update; remove reboot, or set talosVersion instead of targetFrom"))
	}
	allErrs = append(allErrs, validateKubernetesTarget(p, fldPath)...)
	allErrs = append(allErrs, validateFailurePolicy(&p.FailurePolicy, fldPath.Child("failurePolicy"))...)
	allErrs = append(allErrs, maintenance.Validate(p.Maintenance, fldPath.Child("maintenance"))...)
	return allErrs
}

// validateTargetVersion checks that talosVersion is a release known to the
// compatibility data, and that a pre-release is acknowledged. The version
// rules are package talos's.
func validateTargetVersion(p *upgradev1.UpgradePlan, fldPath *field.Path) field.ErrorList {
	path := fldPath.Child("talosVersion")
	if p.TalosVersion == "" {
		return field.ErrorList{field.Required(path,
			`names the Talos version to upgrade to, for example "v1.13.0"; a TalosUpgradePolicy may follow the releases of its installer repository instead (spec.follow), or name a kubernetesVersion alone for each Cluster to keep its Talos`)}
	}
	target, err := talos.ParseVersion(p.TalosVersion)
	if err != nil {
		return field.ErrorList{field.Invalid(path, p.TalosVersion, err.Error())}
	}
	var allErrs field.ErrorList
	if !talos.IsStableRelease(p.TalosVersion) && !p.AllowPrerelease {
		allErrs = append(allErrs, field.Invalid(path, p.TalosVersion,
			fmt.Sprintf("%s is not a stable release (it has a pre-release part or build metadata): set allowPrerelease: true to acknowledge it, or target a release such as v%d.%d.%d",
				p.TalosVersion, target.Major(), target.Minor(), target.Patch())))
	}
	if err := talos.CheckKnown(p.TalosVersion); err != nil {
		allErrs = append(allErrs, field.Invalid(path, p.TalosVersion, err.Error()))
	}
	return allErrs
}

func validateInstaller(in *upgradev1.InstallerSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch in.Source {
	case upgradev1.InstallerSourceFactory:
		if in.Platform == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("platform"),
				`is required when source is "factory": set the Image Factory platform of the Machines, for example "metal", "aws" or "nocloud"`))
		}
		if in.SchematicID != "" && !schematicIDPattern.MatchString(in.SchematicID) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("schematicID"), in.SchematicID,
				"must be 64 lowercase hexadecimal characters, the ID the Image Factory returns for a schematic; leave it empty to keep each node's current schematic"))
		}
	case upgradev1.InstallerSourceGHCR, upgradev1.InstallerSourceImage:
		if in.SchematicID != "" {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("schematicID"),
				fmt.Sprintf(`applies only when source is "factory", not %q: remove it, or use source "factory"`, in.Source)))
		}
		if in.SecureBoot != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("secureBoot"),
				fmt.Sprintf(`applies only when source is "factory", not %q: remove it, or use source "factory"`, in.Source)))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("source"), in.Source,
			[]string{string(upgradev1.InstallerSourceFactory), string(upgradev1.InstallerSourceGHCR), string(upgradev1.InstallerSourceImage)}))
	}
	if in.Platform != "" {
		for _, msg := range validation.IsDNS1123Label(in.Platform) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("platform"), in.Platform,
				msg+`; use an Image Factory platform name such as "metal" or "aws"`))
		}
	}
	switch {
	case in.Source == upgradev1.InstallerSourceImage && in.Repository == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("repository"),
			`is required when source is "image": set the installer repository without tag, for example "registry.example.com/talos/installer"`))
	case in.Source == upgradev1.InstallerSourceImage:
		allErrs = append(allErrs, validateRepository(in.Repository, fldPath.Child("repository"))...)
	case in.Repository != "":
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("repository"),
			fmt.Sprintf(`applies only when source is "image", not %q, and would be ignored: remove it, or use source "image"`, in.Source)))
	}
	if in.PullSecretRef != nil {
		for _, msg := range validation.IsDNS1123Subdomain(in.PullSecretRef.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("pullSecretRef", "name"), in.PullSecretRef.Name, msg))
		}
	}
	return allErrs
}

// validateRepository checks an image repository without tag or digest.
func validateRepository(repo string, fldPath *field.Path) field.ErrorList {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, repo,
			fmt.Sprintf("is not an image repository (%v): use a lowercase reference such as \"registry.example.com/talos/installer\"", err))}
	}
	if !reference.IsNameOnly(named) {
		return field.ErrorList{field.Invalid(fldPath, repo,
			fmt.Sprintf("must not carry a tag or digest, since the target version is the tag: use %q", named.Name()))}
	}
	return nil
}

func validateRollout(r *upgradev1.RolloutSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if mu := r.ControlPlane.MaxUnavailable; mu != nil && *mu != ControlPlaneMaxUnavailable {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("controlPlane", "maxUnavailable"), *mu,
			fmt.Sprintf("must be %d: taking more than one control-plane Machine down at once risks etcd quorum; leave it unset or set %d", ControlPlaneMaxUnavailable, ControlPlaneMaxUnavailable)))
	}
	allErrs = append(allErrs, validateMaxUnavailable(r.Workers.MaxUnavailable, fldPath.Child("workers", "maxUnavailable"))...)

	seen := sets.New[string]()
	for i := range r.Order {
		g := &r.Order[i]
		path := fldPath.Child("order").Index(i)
		if seen.Has(g.Name) {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), g.Name))
		}
		seen.Insert(g.Name)
		for _, msg := range validation.IsDNS1123Label(g.Name) {
			allErrs = append(allErrs, field.Invalid(path.Child("name"), g.Name, msg))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&g.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
		if len(g.Selector.MatchLabels) == 0 && len(g.Selector.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Required(path.Child("selector"),
				"must select Machines by label: an empty selector takes every worker into this group; Machines no group selects come last anyway"))
		}
		allErrs = append(allErrs, validateMaxUnavailable(g.MaxUnavailable, path.Child("maxUnavailable"))...)
	}
	if d := r.DelayBetweenMachines; d != nil && d.Duration < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("delayBetweenMachines"), d.Duration.String(), "must not be negative; use 0s for no delay"))
	}
	if m := r.MaxFailedClusters; m != nil && *m < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedClusters"), *m,
			"must be at least 1: it is how many Clusters may fail before no new one is admitted; leave it unset for no failure budget"))
	}
	if c := r.Canaries; c != nil {
		path := fldPath.Child("canaries")
		if len(c.ClusterNames) == 0 && c.Count == nil {
			allErrs = append(allErrs, field.Required(path, "name canary Clusters in clusterNames, or give a count of Clusters to upgrade first"))
		}
		if c.Count != nil && *c.Count < 1 {
			allErrs = append(allErrs, field.Invalid(path.Child("count"), *c.Count, "must be at least 1, or unset"))
		}
		for i, n := range c.ClusterNames {
			for _, msg := range validation.IsDNS1123Subdomain(n) {
				allErrs = append(allErrs, field.Invalid(path.Child("clusterNames").Index(i), n, msg))
			}
		}
	}
	if m := r.MaxClustersInProgress; m != nil && *m < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxClustersInProgress"), *m, "must be at least 1: with 0 no Cluster would ever be upgraded; use paused: true to hold the rollout"))
	}
	return allErrs
}

// validateMaxUnavailable checks a worker maxUnavailable: at least 1, or a
// percentage from 1% to 100%.
func validateMaxUnavailable(mu *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if mu == nil {
		return nil
	}
	if mu.Type == intstr.Int {
		if mu.IntVal < 1 {
			return field.ErrorList{field.Invalid(fldPath, mu.IntVal,
				"must be at least 1: with 0 no worker would ever be upgraded, rebooted or reconfigured, nor a removal released; use paused: true to hold the rollout")}
		}
		return nil
	}
	if !percentPattern.MatchString(mu.StrVal) {
		return field.ErrorList{field.Invalid(fldPath, mu.StrVal,
			`must be an integer of at least 1 or a percentage from 1% to 100%, such as 2 or "25%"`)}
	}
	pct, _ := strconv.Atoi(strings.TrimSuffix(mu.StrVal, "%")) // The pattern guarantees digits.
	switch {
	case pct < 1:
		return field.ErrorList{field.Invalid(fldPath, mu.StrVal,
			"must be at least 1%: with 0% no worker would ever be upgraded, rebooted or reconfigured, nor a removal released; use paused: true to hold the rollout")}
	case pct > 100:
		return field.ErrorList{field.Invalid(fldPath, mu.StrVal,
			`must be at most 100%: a group cannot lose more Machines than it has; use "100%" to upgrade a whole group at once`)}
	}
	return nil
}

func validateHealthCheckRefs(refs []upgradev1.HealthCheckRef, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, ref := range refs {
		path := fldPath.Index(i)
		if seen.Has(ref.Name) {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), ref.Name))
		}
		seen.Insert(ref.Name)
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			allErrs = append(allErrs, field.Invalid(path.Child("name"), ref.Name, msg+": name a ClusterHealthCheck in the same namespace"))
		}
		switch ref.Gate {
		case "", upgradev1.HealthCheckGateEveryMachine, upgradev1.HealthCheckGateFirstMachine:
		default:
			allErrs = append(allErrs, field.NotSupported(path.Child("gate"), ref.Gate,
				[]string{string(upgradev1.HealthCheckGateEveryMachine), string(upgradev1.HealthCheckGateFirstMachine)}))
		}
	}
	return allErrs
}

func validateHooks(hooks []upgradev1.ActionHook, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i := range hooks {
		h := &hooks[i]
		path := fldPath.Index(i)
		if seen.Has(h.Name) {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), h.Name))
		}
		seen.Insert(h.Name)
		allErrs = append(allErrs, ValidateJobNameSource(h.Name, path.Child("name"))...)
		if len(h.Name) > MaxHookNameLength {
			allErrs = append(allErrs, field.TooLong(path.Child("name"), h.Name, MaxHookNameLength))
		}
		switch h.Point {
		case upgradev1.HookPointPreDrain, upgradev1.HookPointPreReboot, upgradev1.HookPointNodePreReady, upgradev1.HookPointNodeReady, upgradev1.HookPointPreRemoval:
		default:
			allErrs = append(allErrs, field.NotSupported(path.Child("point"), h.Point,
				[]string{string(upgradev1.HookPointPreDrain), string(upgradev1.HookPointPreReboot), string(upgradev1.HookPointNodePreReady), string(upgradev1.HookPointNodeReady), string(upgradev1.HookPointPreRemoval)}))
		}
		allErrs = append(allErrs, ValidateJobTemplate(&h.Template, path.Child("template"))...)
		allErrs = append(allErrs, validatePositiveDuration(h.Timeout, path.Child("timeout"))...)
		if r := h.Retries; r != nil && (*r < 0 || *r > MaxRetries) {
			allErrs = append(allErrs, field.Invalid(path.Child("retries"), *r, fmt.Sprintf("must be between 0 and %d", MaxRetries)))
		}
	}
	return allErrs
}

// validatePositiveDuration checks that an optional duration is above zero.
func validatePositiveDuration(d *metav1.Duration, fldPath *field.Path) field.ErrorList {
	if d != nil && d.Duration <= 0 {
		return field.ErrorList{field.Invalid(fldPath, d.Duration.String(), "must be positive: a zero or negative timeout would fail at once; leave it unset for the default")}
	}
	return nil
}

func validateFailurePolicy(fp *upgradev1.FailurePolicySpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch fp.Action {
	case "", upgradev1.FailureActionHalt, upgradev1.FailureActionPause:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("action"), fp.Action,
			[]string{string(upgradev1.FailureActionHalt), string(upgradev1.FailureActionPause)}))
	}
	if m := fp.MaxFailures; m != nil && *m < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailures"), *m, "must be at least 1: the action is taken once this many Machines failed"))
	}
	return allErrs
}

// validateKubernetesTarget checks kubernetesVersion and kubelet: a stable
// release, not with targetFrom CAPI (its Machines' spec.version is the
// target then), and a known kubelet drain policy.
func validateKubernetesTarget(p *upgradev1.UpgradePlan, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch p.Kubelet.Drain {
	case "", upgradev1.KubeletDrainDrain, upgradev1.KubeletDrainNever:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kubelet", "drain"), p.Kubelet.Drain,
			[]string{string(upgradev1.KubeletDrainDrain), string(upgradev1.KubeletDrainNever)}))
	}
	if p.KubernetesVersion == "" {
		return allErrs
	}
	path := fldPath.Child("kubernetesVersion")
	if p.CAPIDriven() {
		return append(allErrs, field.Forbidden(path,
			"must not be set with targetFrom: CAPI: the Kubernetes version of such a policy's rollouts is the one CAPI asks for (the Machines' spec.version); remove kubernetesVersion, or set talosVersion instead of targetFrom"))
	}
	if _, err := talos.ParseVersion(p.KubernetesVersion); err != nil {
		return append(allErrs, field.Invalid(path, p.KubernetesVersion, err.Error()))
	}
	if !talos.IsStableRelease(p.KubernetesVersion) {
		allErrs = append(allErrs, field.Invalid(path, p.KubernetesVersion, "must be a stable Kubernetes release, such as v1.36.0"))
	}
	return allErrs
}
