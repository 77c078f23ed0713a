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

package workloadjob

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"regexp"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// Labels and annotations Tollgate puts on every Job it creates in a workload
// cluster, and on the Job's Pods.
const (
	// ManagedByLabel is the standard label naming the manager of the Job;
	// its value is ManagedByValue.
	ManagedByLabel = "app.kubernetes.io/managed-by"

	// ManagedByValue is the value of ManagedByLabel on Tollgate's Jobs.
	ManagedByValue = "tollgate"

	// UpgradeLabel carries the name of the TalosUpgrade (the rollout) that
	// created the Job, as a label value (see LabelValue).
	UpgradeLabel = "upgrade.tollgate.dev/upgrade"

	// ClusterLabel carries the name of the CAPI Cluster the Job runs in.
	ClusterLabel = "upgrade.tollgate.dev/cluster"

	// JobKindLabel says what the Job is for: JobKindHealthCheck or JobKindHook.
	JobKindLabel = "upgrade.tollgate.dev/job-kind"

	// JobKindHealthCheck is the JobKindLabel value of a ClusterHealthCheck Job.
	JobKindHealthCheck = "health-check"

	// JobKindHook is the JobKindLabel value of an action hook Job.
	JobKindHook = "hook"

	// HealthCheckLabel carries the name of the ClusterHealthCheck of a
	// health-check Job.
	HealthCheckLabel = "upgrade.tollgate.dev/health-check"

	// HookLabel carries the name of the action hook of a hook Job.
	HookLabel = "upgrade.tollgate.dev/hook"

	// HookPointLabel carries the point (preDrain, preReboot, nodeReady) of a
	// hook Job.
	HookPointLabel = "upgrade.tollgate.dev/hook-point"

	// MachineLabel carries the name of the CAPI Machine a hook Job runs for.
	MachineLabel = "upgrade.tollgate.dev/machine"

	// RunAnnotation identifies one run of a Job name: Tollgate re-uses a
	// health-check Job name on every interval, and tells a stale Job from the
	// current one by this annotation.
	RunAnnotation = "upgrade.tollgate.dev/run"
)

// MaxMessageLength is the length, in characters, to which a failure message
// read from a Job is truncated, keeping its end (see TruncateMessage):
// shorter than the message fields that quote it
// (upgradev1.MaxMessageLength).
const MaxMessageLength = 256

// hashLength is the number of hex digits of the hash Name appends.
const hashLength = 8

// RolloutLabels returns the labels that tie a Job to one rollout: Tollgate's
// manager label, the TalosUpgrade and the Cluster. Cleanup selects Jobs by
// exactly these labels.
func RolloutLabels(upgradeName, clusterName string) map[string]string {
	return map[string]string{
		ManagedByLabel: ManagedByValue,
		UpgradeLabel:   LabelValue(upgradeName),
		ClusterLabel:   LabelValue(clusterName),
	}
}

var invalidLabelChars = regexp.MustCompile(`[^a-z0-9-]+`)

// Name returns a DNS-1123 label of at most 63 characters made of parts
// joined with "-". When the joined parts are already a valid label they are
// returned as they are; otherwise they are lower-cased, every run of
// characters a label cannot hold becomes "-", the result is truncated and a
// hash of the original parts is appended, so that different parts never
// share a name and the same parts always give the same name.
func Name(parts ...string) string {
	joined := strings.Join(parts, "-")
	if len(validation.IsDNS1123Label(joined)) == 0 {
		return joined
	}
	return hashedName(parts)
}

// HashedName is Name with the hash always appended: use it when some of the
// identity is not in the readable parts, or when a name must never collide
// with one built by Name.
func HashedName(parts ...string) string {
	return hashedName(parts)
}

func hashedName(parts []string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	suffix := hex.EncodeToString(sum[:])[:hashLength]
	readable := invalidLabelChars.ReplaceAllString(strings.ToLower(strings.Join(parts, "-")), "-")
	maxReadable := validation.DNS1123LabelMaxLength - hashLength - 1
	if len(readable) > maxReadable {
		readable = readable[:maxReadable]
	}
	readable = strings.Trim(readable, "-")
	if readable == "" {
		return suffix
	}
	return readable + "-" + suffix
}

// LabelValue returns s when it is a valid label value, and otherwise a valid
// label value derived from it (see Name), so that any object name can be a
// label value.
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	return hashedName([]string{s})
}

// Spec is what Build needs to turn a user's Job template into the Job
// Tollgate creates.
type Spec struct {
	// Name is the name of the Job, usually from Name or HashedName.
	Name string

	// Template is the user's Job template; Build does not modify it.
	Template *batchv1.JobTemplateSpec

	// Labels are Tollgate's labels, put on the Job and its Pods. They win
	// over the user's.
	Labels map[string]string

	// Annotations are Tollgate's annotations, put on the Job and its Pods.
	// They win over the user's.
	Annotations map[string]string

	// UserLabels are extra labels from the user (for example
	// ClusterHealthCheck.spec.labels), put on the Job and its Pods.
	UserLabels map[string]string

	// UserAnnotations are extra annotations from the user, put on the Job
	// and its Pods.
	UserAnnotations map[string]string

	// Env is set on every container and init container of the Pod,
	// replacing a variable of the same name the template sets.
	Env []corev1.EnvVar
}

// Build returns the Job to create for s. The identity of the Job (name,
// namespace, labels, annotations) is Tollgate's: the namespace is the
// template's, "default" when unset. Everything else is the user's, except
// that Build fills in what the user left unset so that one Job is one
// attempt whose failure explains itself:
//
//   - spec.backoffLimit 0: Tollgate, not the Job controller, retries;
//   - restartPolicy Never;
//   - terminationMessagePolicy FallbackToLogsOnError on every container, so
//     the tail of the output of a failed container is its termination
//     message (see FailureMessage).
func Build(s Spec) *batchv1.Job {
	tmpl := s.Template.DeepCopy()
	// Identity is Tollgate's: nothing of the template's metadata but its
	// namespace, labels and annotations survives.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        s.Name,
			Namespace:   namespaceOf(tmpl),
			Labels:      merge(tmpl.Labels, s.UserLabels, s.Labels),
			Annotations: merge(tmpl.Annotations, s.UserAnnotations, s.Annotations),
		},
		Spec: tmpl.Spec,
	}

	if job.Spec.BackoffLimit == nil {
		job.Spec.BackoffLimit = ptr.To[int32](0)
	}
	pod := &job.Spec.Template
	pod.Labels = merge(pod.Labels, s.UserLabels, s.Labels)
	pod.Annotations = merge(pod.Annotations, s.UserAnnotations, s.Annotations)
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			c := &containers[i]
			if c.TerminationMessagePolicy == "" {
				c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			}
			c.Env = setEnv(c.Env, s.Env)
		}
	}
	return job
}

// Namespace returns the namespace the Job of a template runs in: the
// template's, "default" when unset.
func Namespace(tmpl *batchv1.JobTemplateSpec) string {
	return namespaceOf(tmpl)
}

func namespaceOf(tmpl *batchv1.JobTemplateSpec) string {
	if tmpl.Namespace == "" {
		return corev1.NamespaceDefault
	}
	return tmpl.Namespace
}

// merge returns the union of the maps, later maps winning, or nil when all
// are empty.
func merge(ms ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range ms {
		if len(m) == 0 {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, m)
	}
	return out
}

// setEnv returns env with every variable of set, replacing variables of the
// same name.
func setEnv(env, set []corev1.EnvVar) []corev1.EnvVar {
	if len(set) == 0 {
		return env
	}
	names := make(map[string]bool, len(set))
	for _, e := range set {
		names[e.Name] = true
	}
	out := make([]corev1.EnvVar, 0, len(env)+len(set))
	for _, e := range env {
		if !names[e.Name] {
			out = append(out, e)
		}
	}
	return append(out, set...)
}
