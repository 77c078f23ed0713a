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
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// TestBypassHistory: every bypass in force, the rollout's and its policy's,
// is recorded once with who, why, what and when; the record outlives the
// bypass (cleared when the rollout ends), and the oldest records go beyond
// disruption.MaxBypassHistory.
func TestBypassHistory(t *testing.T) {
	g := NewWithT(t)
	start := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	s := statusScope([]upgradev1.MachinePhase{upgradev1.MachinePhasePending}, func(s *scope) {
		s.Upgrade.Spec.Bypass = &upgradev1.BypassSpec{HealthChecks: true, RequestedBy: "alice", Reason: "ceph check is broken, see INC-42"}
		s.Policy = &upgradev1.TalosUpgradePolicy{}
		s.Policy.Spec.Bypass = &upgradev1.BypassSpec{HoldOwners: []string{"storage"}, RequestedBy: "bob", Reason: "the storage operator is down"}
	})
	s.Now = start
	s.RecordBypasses()
	s.Now = start.Add(time.Minute)
	s.RecordBypasses() // Still in force: recorded once.
	g.Expect(s.Upgrade.Status.BypassHistory).To(HaveLen(2))
	rec := s.Upgrade.Status.BypassHistory[0]
	g.Expect(rec.Source).To(Equal(upgradev1.BypassSourceUpgrade))
	g.Expect(rec.RequestedBy).To(Equal("alice"))
	g.Expect(rec.Reason).To(Equal("ceph check is broken, see INC-42"))
	g.Expect(rec.Bypassed).To(Equal("health checks"))
	g.Expect(rec.AppliedTime.Time).To(BeTemporally("==", start))
	g.Expect(s.Upgrade.Status.BypassHistory[1].Source).To(Equal(upgradev1.BypassSourcePolicy))
	g.Expect(s.Upgrade.Status.BypassHistory[1].Bypassed).To(Equal("the holds of storage"))

	// The bypasses are cleared: the records stay.
	s.Upgrade.Spec.Bypass, s.Policy.Spec.Bypass = nil, nil
	s.RecordBypasses()
	g.Expect(s.Upgrade.Status.BypassHistory).To(HaveLen(2))

	// Many more: the oldest go.
	for i := range disruption.MaxBypassHistory {
		s.Upgrade.Spec.Bypass = &upgradev1.BypassSpec{MaintenanceWindows: true, RequestedBy: "carol", Reason: fmt.Sprintf("run now #%d", i)}
		s.RecordBypasses()
	}
	g.Expect(s.Upgrade.Status.BypassHistory).To(HaveLen(disruption.MaxBypassHistory))
	g.Expect(s.Upgrade.Status.BypassHistory[0].Reason).To(Equal("run now #0"))
	g.Expect(s.Upgrade.Status.BypassHistory[disruption.MaxBypassHistory-1].Reason).To(Equal(fmt.Sprintf("run now #%d", disruption.MaxBypassHistory-1)))
}
