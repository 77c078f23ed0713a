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

package channel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/maintenance"
	"github.com/tollgate-dev/tollgate/internal/probe"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// MinCheckInterval is the shortest checkInterval of a channel that follows
// releases: a registry is not a thing to poll.
const MinCheckInterval = time.Minute

// minAnalysisInterval is the shortest interval of an analysis.
const minAnalysisInterval = 5 * time.Second

// ValidateSpec returns what is wrong with a channel's spec on its own: the
// rules that need no other object. now is when its stages' windows must be
// able to open from. The webhook adds what needs the other channels, the
// policies and the status; the controller reports what ValidateSpec finds
// in the Ready condition, in case the webhook was bypassed.
func ValidateSpec(spec *upgradev1.ReleaseChannelSpec, now time.Time, fldPath *field.Path) field.ErrorList {
	allErrs := validateVersions(spec, fldPath)
	allErrs = append(allErrs, validateFollow(spec.Follow, fldPath.Child("follow"))...)
	allErrs = append(allErrs, validateStages(spec.Stages, now, fldPath.Child("stages"))...)
	allErrs = append(allErrs, validateApprovals(spec, fldPath.Child("approvals"))...)
	return allErrs
}

// validateVersions checks every version: one of the two targets at least,
// each a stable release Tollgate knows, a pair Talos supports, and no name
// twice.
func validateVersions(spec *upgradev1.ReleaseChannelSpec, fldPath *field.Path) field.ErrorList {
	allErrs := make(field.ErrorList, 0, len(spec.Versions))
	if spec.Follow != nil && len(spec.Versions) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("versions"),
			"must not be set with follow: a channel carries the versions it names or the releases it follows, not both"))
	}
	if spec.Follow == nil && len(spec.Versions) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("versions"),
			`name the versions the channel carries, newest last, for example [{talosVersion: v1.13.0}], or follow the releases of a repository (follow)`))
	}
	seen := map[string]int{}
	for i, v := range spec.Versions {
		path := fldPath.Child("versions").Index(i)
		if v.TalosVersion == "" && v.KubernetesVersion == "" {
			allErrs = append(allErrs, field.Required(path, "set talosVersion, kubernetesVersion or both"))
			continue
		}
		if v.TalosVersion != "" {
			allErrs = append(allErrs, validateRelease(v.TalosVersion, path.Child("talosVersion"))...)
			if err := talos.CheckKnown(v.TalosVersion); err != nil && talos.IsStableRelease(v.TalosVersion) {
				allErrs = append(allErrs, field.Invalid(path.Child("talosVersion"), v.TalosVersion, err.Error()))
			}
		}
		if v.KubernetesVersion != "" {
			allErrs = append(allErrs, validateRelease(v.KubernetesVersion, path.Child("kubernetesVersion"))...)
		}
		if v.TalosVersion != "" && v.KubernetesVersion != "" && talos.IsStableRelease(v.TalosVersion) && talos.IsStableRelease(v.KubernetesVersion) {
			if err := talos.CheckKubernetesSupported(v.TalosVersion, v.KubernetesVersion); err != nil {
				allErrs = append(allErrs, field.Invalid(path.Child("kubernetesVersion"), v.KubernetesVersion,
					fmt.Sprintf("Talos %s does not run it: %v", v.TalosVersion, err)))
			}
		}
		if j, ok := seen[v.Name()]; ok {
			allErrs = append(allErrs, field.Duplicate(path, fmt.Sprintf("%s (as versions[%d])", v.Name(), j)))
		}
		seen[v.Name()] = i
	}
	return allErrs
}

// validateRelease checks that v is a stable release.
func validateRelease(v string, fldPath *field.Path) field.ErrorList {
	if _, err := talos.ParseVersion(v); err != nil {
		return field.ErrorList{field.Invalid(fldPath, v, err.Error())}
	}
	if !talos.IsStableRelease(v) {
		return field.ErrorList{field.Invalid(fldPath, v, "must be a stable release (MAJOR.MINOR.PATCH, no pre-release part or build metadata): a channel moves releases to production")}
	}
	return nil
}

// validateFollow checks the rules of a channel that follows releases.
func validateFollow(f *upgradev1.ChannelFollowSpec, fldPath *field.Path) field.ErrorList {
	if f == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch f.Allow {
	case upgradev1.FollowAllowPatch, upgradev1.FollowAllowMinor:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("allow"), f.Allow, []string{string(upgradev1.FollowAllowPatch), string(upgradev1.FollowAllowMinor)}))
	}
	if f.CheckInterval != nil && f.CheckInterval.Duration < MinCheckInterval {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("checkInterval"), f.CheckInterval.Duration.String(),
			fmt.Sprintf("must be at least %s: the repository's tags are listed this often; leave it unset for 1h", MinCheckInterval)))
	}
	if f.MinReleaseAge != nil && f.MinReleaseAge.Duration < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("minReleaseAge"), f.MinReleaseAge.Duration.String(),
			"must not be negative: a release enters the channel once it is this old; 0 takes it as soon as it is seen"))
	}
	if f.Repository != "" {
		if _, err := name.NewRepository(f.Repository); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("repository"), f.Repository,
				fmt.Sprintf("must be an image repository without tag or digest, such as registry.example.com/talos/installer: %v", err)))
		}
	}
	if r := f.PullSecretRef; r != nil && (r.Namespace == "" || r.Name == "") {
		allErrs = append(allErrs, field.Required(fldPath.Child("pullSecretRef"), "name the namespace and the name of the Secret: a ReleaseChannel has no namespace of its own"))
	}
	return allErrs
}

// validateStages checks the stages: their order (every after names another
// stage, and no cycle), that a policy belongs to one stage, and each
// stage's selector, soak, analysis, approval and window.
func validateStages(stages []upgradev1.ChannelStage, now time.Time, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]int{}
	policies := map[upgradev1.PolicyReference]string{}
	for i := range stages {
		s := &stages[i]
		path := fldPath.Index(i)
		if j, ok := names[s.Name]; ok {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), fmt.Sprintf("%s (as stages[%d])", s.Name, j)))
		}
		names[s.Name] = i
		for j, ref := range s.Policies {
			if other, ok := policies[ref]; ok {
				allErrs = append(allErrs, field.Invalid(path.Child("policies").Index(j), ref.String(),
					fmt.Sprintf("policy %s is in stage %q already: a policy belongs to one stage; select some of its Clusters with clusterSelector instead", ref, other)))
				continue
			}
			policies[ref] = s.Name
		}
		allErrs = append(allErrs, validateStage(s, now, path)...)
	}
	if len(allErrs) == 0 {
		allErrs = append(allErrs, validateOrder(stages, fldPath)...)
	}
	return allErrs
}

// validateOrder checks that the stages can be ordered. A cycle is reported
// at the after of one of its stages that names another (rather than at a
// stage that comes after the one before it by default), and read from the
// stage of the cycle that comes first in spec.stages.
func validateOrder(stages []upgradev1.ChannelStage, fldPath *field.Path) field.ErrorList {
	_, err := NewGraph(stages)
	var unknown *UnknownStageError
	var cycle *CycleError
	switch {
	case errors.As(err, &unknown):
		i, j := afterIndex(stages, unknown.Stage, unknown.After)
		if unknown.Stage == unknown.After {
			return field.ErrorList{field.Invalid(fldPath.Index(i).Child("after").Index(j), unknown.After, "a stage cannot come after itself")}
		}
		return field.ErrorList{field.NotFound(fldPath.Index(i).Child("after").Index(j), unknown.After)}
	case errors.As(err, &cycle):
		edges := cycle.Cycle // edges[k+1] comes after edges[k].
		at := -1
		for k := 0; k+1 < len(edges); k++ {
			if i, j := afterIndex(stages, edges[k+1], edges[k]); j >= 0 && (at < 0 || i < at) {
				at = i
			}
		}
		if at < 0 {
			at, _ = afterIndex(stages, edges[1], edges[0])
		}
		return field.ErrorList{field.Invalid(fldPath.Index(at).Child("after"), stages[at].After,
			fmt.Sprintf("the stages' order has a cycle (%s): a version could never enter them; a stage comes after the one before it in spec.stages unless after says otherwise",
				strings.Join(readCycle(stages, edges), " → ")))}
	}
	return nil
}

// readCycle rotates a cycle (its first stage last again) to start at its
// stage that comes first in stages.
func readCycle(stages []upgradev1.ChannelStage, cycle []string) []string {
	ring := cycle[:len(cycle)-1]
	start := 0
	for i := range stages {
		if k := slices.Index(ring, stages[i].Name); k >= 0 {
			start = k
			break
		}
	}
	out := append(slices.Clone(ring[start:]), ring[:start]...)
	return append(out, out[0])
}

// afterIndex returns the index of stage and of after in its after list; -1
// for an after that is the stage before it by default.
func afterIndex(stages []upgradev1.ChannelStage, stage, after string) (int, int) {
	for i := range stages {
		if stages[i].Name != stage {
			continue
		}
		for j, a := range stages[i].After {
			if a == after {
				return i, j
			}
		}
		return i, -1
	}
	return 0, -1
}

// validateStage checks one stage.
func validateStage(s *upgradev1.ChannelStage, now time.Time, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(s.Policies) == 0 && s.ClusterSelector == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("policies"), "name the policies of the stage, or select its Clusters with clusterSelector"))
	}
	if s.ClusterSelector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(s.ClusterSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("clusterSelector"))...)
	}
	if s.SoakTime != nil && s.SoakTime.Duration < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("soakTime"), s.SoakTime.Duration.String(), "must not be negative"))
	}
	if a := s.Analysis; a != nil {
		allErrs = append(allErrs, validateAnalysis(a, fldPath.Child("analysis"))...)
		if interval := Interval(a); soakTime(s) < interval {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("soakTime"), soakTime(s).String(),
				fmt.Sprintf("cannot be met by the analysis, which measures every %s through the soak: a soak shorter than one interval holds no measurement but its ends; lengthen soakTime to %s or more, or shorten analysis.interval", interval, interval)))
		}
	}
	if a := s.Approval; a != nil && a.Timeout != nil && a.Timeout.Duration < time.Minute {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("approval", "timeout"), a.Timeout.Duration.String(),
			"cannot be met: nobody can approve in less than a minute; leave it unset to wait for ever"))
	}
	if w := s.Window; w != nil {
		windowErrs := maintenance.Validate(w, fldPath.Child("window"))
		allErrs = append(allErrs, windowErrs...)
		if len(windowErrs) == 0 {
			if open, next := maintenance.Open(w, now); !open && next.IsZero() {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("window"), maintenance.Describe(w),
					"cannot be met: the window does not open within a year (every day it could is excluded), so no version would ever enter the stage"))
			}
		}
	}
	return allErrs
}

// validateAnalysis checks a stage's analysis.
func validateAnalysis(a *upgradev1.StageAnalysis, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(a.Queries) == 0 && len(a.HealthChecks) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("queries"), "name queries, healthChecks or both; remove analysis to let a version pass on its soak alone"))
	}
	if a.Interval != nil && a.Interval.Duration < minAnalysisInterval {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("interval"), a.Interval.Duration.String(), fmt.Sprintf("must be at least %s", minAnalysisInterval)))
	}
	seen := map[string]bool{}
	for i := range a.Queries {
		q := &a.Queries[i]
		path := fldPath.Child("queries").Index(i)
		if seen[q.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), q.Name))
		}
		seen[q.Name] = true
		allErrs = append(allErrs, probe.ValidateMeasurement(&q.HealthCheckEndpoint, q.Query, ExampleExpansion(q.Query), q.Comparison, path)...)
		if q.Scope == upgradev1.AnalysisStage && q.Service != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("service"), q.Service.Name,
				"a Stage query needs a url: a service is reached through one Cluster's apiserver; use scope PerCluster for a Prometheus in every Cluster"))
		}
		secrets := q.HeadersSecretName != "" || (q.TLS != nil && q.TLS.CASecretName != "")
		switch {
		case secrets && q.SecretNamespace == "":
			allErrs = append(allErrs, field.Required(path.Child("secretNamespace"), "names the namespace of headersSecretName and tls.caSecretName: a ReleaseChannel has no namespace of its own"))
		case q.SecretNamespace != "":
			for _, msg := range validation.IsDNS1123Label(q.SecretNamespace) {
				allErrs = append(allErrs, field.Invalid(path.Child("secretNamespace"), q.SecretNamespace, msg))
			}
		}
	}
	for i, n := range a.HealthChecks {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("healthChecks").Index(i), n, msg))
		}
	}
	return allErrs
}

// validateApprovals checks what an approval says on its own: a stage of the
// channel that asks for approvals, and a reason.
func validateApprovals(spec *upgradev1.ReleaseChannelSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, a := range spec.Approvals {
		path := fldPath.Index(i)
		stage := findStage(spec, a.Stage)
		switch {
		case stage == nil:
			allErrs = append(allErrs, field.NotFound(path.Child("stage"), a.Stage))
		case stage.Approval == nil:
			allErrs = append(allErrs, field.Invalid(path.Child("stage"), a.Stage, "the stage asks for no approval (its approval is unset): there is nothing to approve"))
		}
		if a.Reason == "" {
			allErrs = append(allErrs, field.Required(path.Child("reason"), "say why: a change ticket, what was looked at; it is recorded with who decided"))
		}
		switch a.Decision {
		case "", upgradev1.ApprovalApprove, upgradev1.ApprovalReject:
		default:
			allErrs = append(allErrs, field.NotSupported(path.Child("decision"), a.Decision, []string{string(upgradev1.ApprovalApprove), string(upgradev1.ApprovalReject)}))
		}
	}
	return allErrs
}

// findStage returns the stage of the spec named name, or nil.
func findStage(spec *upgradev1.ReleaseChannelSpec, name string) *upgradev1.ChannelStage {
	for i := range spec.Stages {
		if spec.Stages[i].Name == name {
			return &spec.Stages[i]
		}
	}
	return nil
}
