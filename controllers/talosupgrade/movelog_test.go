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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestLogSurvivesAnObjectWithoutStatus writes the copy of the write-ahead
// log, drops the status as clusterctl move does, and restores the records of
// the Machines in flight and failed, intents included.
func TestLogSurvivesAnObjectWithoutStatus(t *testing.T) {
	g := NewWithT(t)
	now := metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}
	u.Status.StartTime = &now
	u.Status.AcknowledgedFailures = 1
	u.Status.Machines = []upgradev1.MachineUpgradeStatus{
		{Machine: "cp-0", Phase: upgradev1.MachinePhaseCompleted},
		{Machine: "w-0", Phase: upgradev1.MachinePhaseWaitingForHold, HoldPoint: upgradev1.HoldPointPreReboot, Cordoned: true, SkipRemediationSet: true, UpgradeRequestedTime: &now, BootID: "b-1"},
		{Machine: "w-1", Phase: upgradev1.MachinePhaseFailed, Message: "boom"},
		{Machine: "w-2", Phase: upgradev1.MachinePhasePending},
	}
	syncLog(u)
	g.Expect(u.Annotations).To(HaveKey(LogAnnotation))

	moved := &upgradev1.TalosUpgrade{ObjectMeta: *u.ObjectMeta.DeepCopy()}
	r := &Reconciler{Recorder: events.NewFakeRecorder(10)}
	g.Expect(r.restoreLog(&scope{upgrade: moved})).To(Succeed())
	g.Expect(moved.Status.StartTime.Equal(&now)).To(BeTrue())
	g.Expect(moved.Status.AcknowledgedFailures).To(BeEquivalentTo(1))
	g.Expect(moved.Status.Machines).To(HaveLen(2))
	w0 := moved.Status.Machines[0]
	g.Expect(w0.Machine).To(Equal("w-0"))
	g.Expect(w0.UpgradeRequestedTime).NotTo(BeNil(), "the upgrade call is never made again")
	g.Expect(w0.Cordoned && w0.SkipRemediationSet).To(BeTrue())
	g.Expect(w0.BootID).To(Equal("b-1"))
	g.Expect(moved.Status.Machines[1].Message).To(Equal("boom"))

	// A TalosUpgrade with its status keeps it.
	again := u.DeepCopy()
	again.Status.Machines = again.Status.Machines[:1]
	g.Expect(r.restoreLog(&scope{upgrade: again})).To(Succeed())
	g.Expect(again.Status.Machines).To(HaveLen(1))

	// Nothing in flight or failed: no copy.
	u.Status.Machines = u.Status.Machines[:1]
	syncLog(u)
	g.Expect(u.Annotations).NotTo(HaveKey(LogAnnotation))

	// A damaged copy is an error, not a panic.
	bad := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LogAnnotation: "{"}}}
	err := r.restoreLog(&scope{upgrade: bad})
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Contains(err.Error(), LogAnnotation)).To(BeTrue())
}
