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

package talosupgrade

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/inplace"
)

// This file answers, for a rollout whose target comes from CAPI, "will CAPI
// hand this Cluster's Machines to Tollgate, or replace them"
// (inplace.Readiness), and says it with the InPlaceUpdatesReady condition.

// +kubebuilder:rbac:groups=runtime.cluster.x-k8s.io,resources=extensionconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinesets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=*,verbs=get;list;watch

// inPlaceRecheck is how often a rollout looks again when it could not read
// what decides whether CAPI hands its Machines to Tollgate (a template
// missing, which is not watched).
const inPlaceRecheck = time.Minute

// reconcileInPlace sets scope.inPlace, the InPlaceUpdatesReady condition
// of a rollout whose target comes from CAPI, and records an event when CAPI
// would start replacing Machines, or stops. It never fails the reconcile.
func (r *Reconciler) reconcileInPlace(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.Upgrade.Spec.CAPIDriven() || r.Templates == nil {
		return ctrl.Result{}, nil
	}
	readiness := inplace.Readiness{Reader: r.Templates, Objects: r.templateReader(), Extension: &inplace.Extension{Client: r.Client, Claims: r.Claims}}
	c := readiness.Condition(ctx, s.Cluster)
	s.inPlace = &c
	previous := conditions.Get(s.Upgrade, upgradev1.InPlaceUpdatesReadyCondition)
	switch {
	case c.Status == metav1.ConditionTrue && previous != nil && previous.Status != metav1.ConditionTrue:
		r.event(s, corev1.EventTypeNormal, c.Reason, "InPlaceUpdates", "%s", c.Message)
	case c.Status == metav1.ConditionFalse && (previous == nil || previous.Reason != c.Reason || previous.Message != c.Message):
		r.event(s, corev1.EventTypeWarning, c.Reason, "InPlaceUpdates", "%s", c.Message)
	}
	if c.Status == metav1.ConditionUnknown {
		return ctrl.Result{RequeueAfter: inPlaceRecheck}, nil
	}
	return ctrl.Result{}, nil
}
