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
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Defaults of a plan, the same as the CRD schema's. The schema applies a
// default only where the parent object is present; Default fills in the rest
// so that the stored object says what the controller will do.
const (
	DefaultRebootTimeout                = 15 * time.Minute
	DefaultDrainTimeout                 = 10 * time.Minute
	DefaultHookTimeout                  = 10 * time.Minute
	DefaultNodeUnreachableTimeout       = 5 * time.Minute
	DefaultRemovalTimeout               = 30 * time.Minute
	DefaultMaxClusters            int32 = 1
	DefaultMaxFailures            int32 = 1
	// DefaultWorkersMaxUnavailable is the disruption budget of a group of
	// workers when neither the group nor workers set one.
	DefaultWorkersMaxUnavailable int32 = 1
)

// ControlPlaneMaxUnavailable is the disruption budget of the control
// plane, and the only value rollout.controlPlane.maxUnavailable takes:
// taking two etcd members down at once risks quorum. The defaults, the
// validation and the rollout engine all read it here.
const ControlPlaneMaxUnavailable int32 = 1

// Default sets the defaults of a plan in place: a "v" prefix on talosVersion,
// and every unset timeout, pace and drain setting. It never changes a value
// the user set.
func Default(p *upgradev1.UpgradePlan) {
	if p.TalosVersion != "" && !strings.HasPrefix(p.TalosVersion, "v") {
		p.TalosVersion = "v" + p.TalosVersion
	}
	if p.RebootTimeout == nil {
		p.RebootTimeout = &metav1.Duration{Duration: DefaultRebootTimeout}
	}
	if p.NodeUnreachableTimeout == nil {
		p.NodeUnreachableTimeout = &metav1.Duration{Duration: DefaultNodeUnreachableTimeout}
	}

	r := &p.Rollout
	if r.ControlPlane.MaxUnavailable == nil {
		r.ControlPlane.MaxUnavailable = ptr.To(ControlPlaneMaxUnavailable)
	}
	if r.Workers.MaxUnavailable == nil {
		r.Workers.MaxUnavailable = ptr.To(intstr.FromInt32(DefaultWorkersMaxUnavailable))
	}
	if r.MaxClustersInProgress == nil {
		r.MaxClustersInProgress = ptr.To(DefaultMaxClusters)
	}

	d := &p.Drain
	if d.Timeout == nil {
		d.Timeout = &metav1.Duration{Duration: DefaultDrainTimeout}
	}
	if d.RespectPodDisruptionBudgets == nil {
		d.RespectPodDisruptionBudgets = ptr.To(true)
	}
	if d.IgnoreDaemonSets == nil {
		d.IgnoreDaemonSets = ptr.To(true)
	}
	if d.DeleteEmptyDirData == nil {
		d.DeleteEmptyDirData = ptr.To(true)
	}
	if d.EvictUnmanagedPods == nil {
		d.EvictUnmanagedPods = ptr.To(false)
	}

	if p.Removal.Timeout == nil {
		p.Removal.Timeout = &metav1.Duration{Duration: DefaultRemovalTimeout}
	}

	if p.FailurePolicy.Action == "" {
		p.FailurePolicy.Action = upgradev1.FailureActionHalt
	}
	if p.FailurePolicy.MaxFailures == nil {
		p.FailurePolicy.MaxFailures = ptr.To(DefaultMaxFailures)
	}

	for i := range p.HealthChecks {
		if p.HealthChecks[i].Gate == "" {
			p.HealthChecks[i].Gate = upgradev1.HealthCheckGateEveryMachine
		}
	}
	for i := range p.Hooks {
		h := &p.Hooks[i]
		if h.Timeout == nil {
			h.Timeout = &metav1.Duration{Duration: DefaultHookTimeout}
		}
		if h.Retries == nil {
			h.Retries = ptr.To[int32](0)
		}
		DefaultJobTemplate(&h.Template)
	}
}

// DefaultJobTemplate sets restartPolicy "Never" on a Job template that has
// none: a Pod defaults to "Always", which a Job refuses.
func DefaultJobTemplate(t *batchv1.JobTemplateSpec) {
	if t.Spec.Template.Spec.RestartPolicy == "" {
		t.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
}
