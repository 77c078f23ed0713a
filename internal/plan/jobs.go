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
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxHookNameLength is the longest action hook name; it leaves room in the
// Job name for the Machine it runs for.
const MaxHookNameLength = 40

// jobNameSourcePattern is what a check or hook name must look like for the
// Job names derived from it to be DNS-1123 labels, which Job names must be
// for their Pods' hostnames to be valid.
var jobNameSourcePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateJobNameSource checks that name, the name of a ClusterHealthCheck or
// an action hook, yields valid Job names: Tollgate derives each Job's name
// from it (truncated with a hash suffix when long), so it must consist of
// lowercase letters, digits and '-' only.
func ValidateJobNameSource(name string, fldPath *field.Path) field.ErrorList {
	if jobNameSourcePattern.MatchString(name) {
		return nil
	}
	suggestion := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, name), "-")
	msg := "cannot form a Job name: Job names are DNS-1123 labels of lowercase letters, digits and '-', starting and ending with a letter or digit"
	if suggestion != "" {
		msg += fmt.Sprintf("; rename it, for example to %q", suggestion)
	}
	return field.ErrorList{field.Invalid(fldPath, name, msg)}
}

// ValidateJobTemplate checks the Job template of a ClusterHealthCheck or an
// action hook. fldPath is the path of the template.
//
// Tollgate runs the template as one Job and takes the Job's Complete or
// Failed condition as the verdict of the check or hook, so the rule is: the
// Job passes only when its one Pod's containers exit 0, fails when one of them
// exits otherwise, and is left for Tollgate to read and delete. It refuses
// what would make every run fail or never end (no container, restartPolicy
// Always, a Job the Job API refuses) and every Job shape that could complete
// without the container's exit code deciding: see validateJobVerdict for the
// Job and validateContainerRestarts for its containers.
func ValidateJobTemplate(t *batchv1.JobTemplateSpec, fldPath *field.Path) field.ErrorList {
	specPath := fldPath.Child("spec")
	allErrs := validateJobVerdict(&t.Spec, specPath)
	allErrs = append(allErrs, validateJobPod(&t.Spec.Template.Spec, specPath.Child("template", "spec"))...)
	if ns := t.Spec.Template.Namespace; ns != "" {
		for _, msg := range validation.IsDNS1123Label(ns) {
			allErrs = append(allErrs, field.Invalid(specPath.Child("template", "metadata", "namespace"), ns, msg))
		}
	}
	if ns := t.Namespace; ns != "" {
		for _, msg := range validation.IsDNS1123Label(ns) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("metadata", "namespace"), ns, msg))
		}
	}
	return allErrs
}

// validateJobPod checks the Pod of a Job template: a restartPolicy a Job
// accepts, and named containers with images whose restarts do not hide their
// exit codes.
func validateJobPod(pod *corev1.PodSpec, podPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch pod.RestartPolicy {
	case "", corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure:
	case corev1.RestartPolicyAlways:
		allErrs = append(allErrs, field.Invalid(podPath.Child("restartPolicy"), pod.RestartPolicy,
			`a Job's Pods cannot restart "Always", the Job would never complete: use "Never" (the default) or "OnFailure"`))
	default:
		allErrs = append(allErrs, field.NotSupported(podPath.Child("restartPolicy"), pod.RestartPolicy,
			[]string{string(corev1.RestartPolicyNever), string(corev1.RestartPolicyOnFailure)}))
	}
	if len(pod.Containers) == 0 {
		allErrs = append(allErrs, field.Required(podPath.Child("containers"),
			"at least one container is required: the Job would have nothing to run; add a container with an image and a command"))
	}
	names := sets.New[string]()
	for i := range pod.Containers {
		c := &pod.Containers[i]
		path := podPath.Child("containers").Index(i)
		if c.Name == "" {
			allErrs = append(allErrs, field.Required(path.Child("name"), "every container needs a name, for example \"check\""))
		} else {
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				allErrs = append(allErrs, field.Invalid(path.Child("name"), c.Name, msg))
			}
		}
		if names.Has(c.Name) && c.Name != "" {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if strings.TrimSpace(c.Image) == "" {
			allErrs = append(allErrs, field.Required(path.Child("image"), "every container needs an image to run"))
		}
		allErrs = append(allErrs, validateContainerRestarts(c, pod.RestartPolicy, false, path)...)
	}
	for i := range pod.InitContainers {
		allErrs = append(allErrs, validateContainerRestarts(&pod.InitContainers[i], pod.RestartPolicy, true, podPath.Child("initContainers").Index(i))...)
	}
	return allErrs
}
