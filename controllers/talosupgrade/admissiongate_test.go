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
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// TestAdmissionGate: a rollout its policy has not admitted names what it
// waits for, as the policy's Admitting condition says: the fleet's failure
// budget, the canaries (for a Cluster that is not one), or a slot.
func TestAdmissionGate(t *testing.T) {
	admitting := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: upgradev1.PolicyAdmittingCondition, Status: status, Reason: reason, Message: "the policy's message"}
	}
	tests := []struct {
		name        string
		noPolicy    bool
		condition   *metav1.Condition
		canaries    []string
		wantReason  string
		wantMessage string
	}{
		{name: "no policy", noPolicy: true, wantReason: upgradev1.WaitingForClusterSlotReason, wantMessage: "maxClustersInProgress"},
		{name: "no condition yet", wantReason: upgradev1.WaitingForClusterSlotReason, wantMessage: "maxClustersInProgress"},
		{name: "admitting", condition: admitting(metav1.ConditionTrue, upgradev1.AdmittingReason), wantReason: upgradev1.WaitingForClusterSlotReason, wantMessage: "maxClustersInProgress"},
		{
			name: "failure budget spent", condition: admitting(metav1.ConditionFalse, upgradev1.FailureBudgetExhaustedReason),
			wantReason: upgradev1.WaitingForFailureBudgetReason, wantMessage: `TalosUpgradePolicy "p" admits no new Cluster: the policy's message`,
		},
		{
			name: "canaries first, not a canary", condition: admitting(metav1.ConditionFalse, upgradev1.WaitingForCanariesReason), canaries: []string{"other"},
			wantReason: upgradev1.WaitingForCanariesReason, wantMessage: "the policy's message",
		},
		{
			name: "canaries first, a canary waits for a slot", condition: admitting(metav1.ConditionFalse, upgradev1.WaitingForCanariesReason), canaries: []string{"alpha"},
			wantReason: upgradev1.WaitingForClusterSlotReason, wantMessage: "maxClustersInProgress",
		},
		{
			name: "a canary failed", condition: admitting(metav1.ConditionFalse, upgradev1.CanaryFailedReason), canaries: []string{"alpha"},
			wantReason: upgradev1.WaitingForCanariesReason, wantMessage: "the policy's message",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := &scope{Rollout: disruption.Rollout{Upgrade: &upgradev1.TalosUpgrade{Spec: upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "p"}}}}
			if !tt.noPolicy {
				s.Policy = &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
				s.Policy.Status.Canaries = tt.canaries
				if tt.condition != nil {
					s.Policy.Status.Conditions = []metav1.Condition{*tt.condition}
				}
			}
			got := s.StartGate()
			g.Expect(got.Reason).To(Equal(tt.wantReason))
			g.Expect(got.Message).To(ContainSubstring(tt.wantMessage))
		})
	}
}
