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

package v1alpha1_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestInProgress checks which rollouts may no longer change target: those
// that took a Machine down or are about to, until they end.
func TestInProgress(t *testing.T) {
	started := &metav1.Time{}
	tests := []struct {
		phase   upgradev1.UpgradePhase
		started bool
		want    bool
	}{
		{phase: "", want: false},
		{phase: upgradev1.UpgradePhasePending, want: false},
		{phase: upgradev1.UpgradePhasePreflight, want: false},
		{phase: upgradev1.UpgradePhasePreflight, started: true, want: true},
		{phase: upgradev1.UpgradePhaseWaitingForHealthChecks, want: true},
		{phase: upgradev1.UpgradePhaseInProgress, want: true},
		{phase: upgradev1.UpgradePhasePaused, want: true},
		{phase: upgradev1.UpgradePhaseDetached, want: false},
		{phase: upgradev1.UpgradePhaseDetached, started: true, want: true},
		{phase: upgradev1.UpgradePhaseCompleted, started: true, want: false},
		{phase: upgradev1.UpgradePhaseFailed, started: true, want: false},
	}
	for _, tt := range tests {
		u := &upgradev1.TalosUpgrade{Status: upgradev1.TalosUpgradeStatus{Phase: tt.phase}}
		if tt.started {
			u.Status.StartTime = started
		}
		NewWithT(t).Expect(u.InProgress()).To(Equal(tt.want), "phase %q, started %v", tt.phase, tt.started)
	}
}
