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

package disruption

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestNeedsWorkload checks when a rollout keeps its workload connection: a
// rollout whose target comes from CAPI keeps it between two Machines CAPI
// hands over, while CAPI still rolls out, and gives it back once CAPI is at
// rest or the rollout is deleted.
func TestNeedsWorkload(t *testing.T) {
	completed := record("w-0", "md/a", upgradev1.MachinePhaseCompleted)
	tests := []struct {
		name       string
		targetFrom upgradev1.TargetSource
		admitted   bool
		deleting   bool
		records    []upgradev1.MachineUpgradeStatus
		rollingOut string
		want       bool
	}{
		{name: "a Machine in flight", targetFrom: upgradev1.TargetFromPolicy, records: []upgradev1.MachineUpgradeStatus{record("w-0", "md/a", upgradev1.MachinePhaseRebooting)}, want: true},
		{name: "a policy's rollout done", targetFrom: upgradev1.TargetFromPolicy, admitted: true, records: []upgradev1.MachineUpgradeStatus{completed}},
		{name: "a policy's rollout done, CAPI rolling out a MachineDeployment (by replacement)", targetFrom: upgradev1.TargetFromPolicy, records: []upgradev1.MachineUpgradeStatus{completed}, rollingOut: "MachineDeployment a is rolling out"},
		{name: "CAPI's rollout between two hand-overs", targetFrom: upgradev1.TargetFromCAPI, records: []upgradev1.MachineUpgradeStatus{completed}, rollingOut: "MachineDeployment a is rolling out", want: true},
		{name: "CAPI at rest", targetFrom: upgradev1.TargetFromCAPI, records: []upgradev1.MachineUpgradeStatus{completed}},
		{name: "CAPI rolling out, the rollout deleted", targetFrom: upgradev1.TargetFromCAPI, deleting: true, records: []upgradev1.MachineUpgradeStatus{completed}, rollingOut: "Machine w-1 is being updated in place"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{}
			u.Spec.TargetFrom = tt.targetFrom
			u.Spec.TalosVersion = "v1.13.0"
			u.Status.Machines = tt.records
			if tt.admitted {
				u.Annotations = map[string]string{upgradev1.AdmittedAnnotation: "true"}
			}
			if tt.deleting {
				u.DeletionTimestamp = ptr.To(metav1.Now())
			}
			r := &Rollout{Upgrade: u, CAPIRollingOut: tt.rollingOut}
			g.Expect(r.NeedsWorkload()).To(Equal(tt.want))
		})
	}
}
