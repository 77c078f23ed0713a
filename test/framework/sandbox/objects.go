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

package sandbox

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Policy returns a TalosUpgradePolicy to version whose installer comes from
// the sandbox's registry, upgrading one worker at a time. mutate adjusts it
// (health checks, hooks, rollout) before it is created.
func (s *Sandbox) Policy(namespace, name, version string, mutate ...func(*upgradev1.TalosUpgradePolicy)) *upgradev1.TalosUpgradePolicy {
	one := intstr.FromInt32(1)
	p := &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: version,
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: s.InstallerRepository()},
			Rollout:      upgradev1.RolloutSpec{Workers: upgradev1.WorkerRollout{MaxUnavailable: &one}},
		}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// HealthCheck returns a ClusterHealthCheck whose Job runs command; in the
// sandbox a script decides its outcome (Workload.Jobs.Script with
// jobdriver.NamePrefix(healthchecks.JobName(name, cluster))).
func HealthCheck(namespace, name string, interval time.Duration, command ...string) *upgradev1.ClusterHealthCheck {
	return &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Template: jobTemplate("check", command),
			Interval: &metav1.Duration{Duration: interval},
		},
	}
}

// ActionHook returns a Job-based hook run at point for every Machine.
func ActionHook(name string, point upgradev1.HookPoint, command ...string) upgradev1.ActionHook {
	return upgradev1.ActionHook{Name: name, Point: point, Template: jobTemplate(name, command)}
}

func jobTemplate(container string, command []string) batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name:                     container,
			Image:                    "registry.k8s.io/kubectl:v1.35.2",
			Command:                  command,
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
	}}}}
}
