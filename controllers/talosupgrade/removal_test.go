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
	"k8s.io/client-go/tools/events"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// TestRemovalHookBypass checks, with no apiserver, that a bypass of a held
// removal's failed preRemoval hook is applied to its record once, with a
// Warning event, and that the rollout's bypass is not cleared while a
// removal is held (the rollout ended) and is recorded in the bypass history
// when it is.
func TestRemovalHookBypass(t *testing.T) {
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: recorder}
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha", Generation: 2}}
	u.Spec.Bypass = &upgradev1.BypassSpec{
		Machines:    []upgradev1.MachineBypass{{Machine: "w-1", Hook: "osd-out", Action: upgradev1.HookBypassSkip}},
		Reason:      "INC-42: the OSDs were taken out by hand",
		RequestedBy: "alice",
	}
	u.Status.Machines = []upgradev1.MachineUpgradeStatus{{Machine: "w-0", Group: "md/w", Phase: upgradev1.MachinePhaseCompleted}}
	u.Status.Removals = []upgradev1.MachineRemovalStatus{{
		Machine: "w-1", Group: "md/w", Cause: upgradev1.RemovalCauseDeleted, Phase: upgradev1.RemovalPhaseHeld, StartTime: metav1.NewTime(t0),
		Reason: upgradev1.RemovalHookFailedReason,
		Hooks:  []upgradev1.HookRunStatus{{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunFailed, Attempts: 1}},
	}}
	s := &scope{Rollout: disruption.Rollout{Upgrade: u, Now: t0}}

	r.passRemovalHooks(t.Context(), s)
	rec := s.Removal("w-1")
	g.Expect(rec.Hooks[0].Phase).To(Equal(upgradev1.HookRunSkipped))
	g.Expect(rec.Message).To(Equal(`preRemoval hook "osd-out" skipped, bypassed by alice: INC-42: the OSDs were taken out by hand`))
	g.Expect(recorder.Events).To(Receive(And(ContainSubstring("HookBypassed"), ContainSubstring("Removal of Machine w-1"))))
	r.passRemovalHooks(t.Context(), s)
	g.Expect(recorder.Events).NotTo(Receive(), "a bypass is applied once per generation")

	// The rollout ended, a removal is held: the bypass stays.
	r.clearBypass(s)
	g.Expect(u.Spec.Bypass).NotTo(BeNil())
	// The removal is released: the bypass goes, recorded first.
	rec.Phase = upgradev1.RemovalPhaseReleased
	r.clearBypass(s)
	g.Expect(u.Spec.Bypass).To(BeNil())
	g.Expect(u.Status.BypassHistory).To(ConsistOf(And(
		HaveField("Source", upgradev1.BypassSourceUpgrade),
		HaveField("RequestedBy", "alice"),
		HaveField("Bypassed", `hook "osd-out" of Machine "w-1" (Skip)`),
	)))
}
