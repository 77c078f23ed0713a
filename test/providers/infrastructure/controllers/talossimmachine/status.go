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

package talossimmachine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
)

// setReadyCondition sets the Ready condition from what the reconcile
// found: Deleting while the TalosSimMachine is deleted, the reason a phase
// recorded, Ready once the node booted and its Node is registered.
func setReadyCondition(s *scope) {
	switch {
	case !s.tsm.GetDeletionTimestamp().IsZero() && s.notReady == nil:
		conditions.Set(s.tsm, metav1.Condition{
			Type:    infrav1.ReadyCondition,
			Status:  metav1.ConditionFalse,
			Reason:  infrav1.DeletingReason,
			Message: "The simulated node and its Node are being removed",
		})
	case s.notReady != nil:
		conditions.Set(s.tsm, metav1.Condition{
			Type:    infrav1.ReadyCondition,
			Status:  metav1.ConditionFalse,
			Reason:  s.notReady.reason,
			Message: s.notReady.message,
		})
	case s.nodeRegistered:
		conditions.Set(s.tsm, metav1.Condition{
			Type:   infrav1.ReadyCondition,
			Status: metav1.ConditionTrue,
			Reason: infrav1.ReadyReason,
		})
	}
}
