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

package releasechannel

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
)

// TestPromotionLogRestores: a channel created without its status, as
// clusterctl move creates it, gets its record back from the promotion-log
// annotation, timestamps included, so that its soaks go on where they
// were; a record too large for an annotation keeps every version, and of
// the ended ones when each stage was entered.
func TestPromotionLogRestores(t *testing.T) {
	g := NewWithT(t)
	t0 := metav1.NewTime(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	until := metav1.NewTime(t0.Add(time.Hour))
	soaking := upgradev1.ChannelVersionStatus{
		Name: "v1.13.0", ChannelVersion: upgradev1.ChannelVersion{TalosVersion: "v1.13.0"}, Phase: upgradev1.ChannelVersionPromoting, EnteredTime: t0,
		Stages: []upgradev1.VersionStageStatus{{Stage: "lab", Phase: upgradev1.StageSoaking, EnteredTime: &t0, CompletedTime: &t0, SoakUntil: &until,
			Analysis: &upgradev1.AnalysisStatus{NextMeasurementTime: &t0, Queries: []upgradev1.MeasurementStatus{{Name: "errors", Measurements: 7}}}}},
	}
	moved := &upgradev1.ReleaseChannel{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Status: upgradev1.ReleaseChannelStatus{Versions: []upgradev1.ChannelVersionStatus{soaking}}}
	writeLog(moved, promotionLog(moved))
	moved.Status = upgradev1.ReleaseChannelStatus{}

	r := &Reconciler{}
	events := r.restoreLog(context.Background(), moved)
	g.Expect(events).To(HaveLen(1))
	g.Expect(events[0].Reason).To(Equal("PromotionsRestored"))
	g.Expect(moved.Status.Versions).To(HaveLen(1))
	rec := moved.Status.Versions[0].Stages[0]
	g.Expect(rec.SoakUntil.Time).To(BeTemporally("==", until.Time), "the soak ends when it did before the move")
	g.Expect(rec.Analysis.Queries[0].Measurements).To(BeEquivalentTo(7))
	g.Expect(r.restoreLog(context.Background(), moved)).To(BeEmpty(), "a channel with its record is left alone")

	// A record of many ended versions with long messages.
	big := &upgradev1.ReleaseChannel{}
	for i := range 32 {
		v := soaking
		v.Name, v.Phase = fmt.Sprintf("v1.13.%d", i), upgradev1.ChannelVersionCompleted
		v.Stages = nil
		for s := range 16 {
			msg := fmt.Sprintf("%0300d", s)
			v.Stages = append(v.Stages, upgradev1.VersionStageStatus{Stage: fmt.Sprintf("stage-%d", s), Phase: upgradev1.StagePassed, EnteredTime: &t0, PassedTime: &t0, Message: msg})
		}
		big.Status.Versions = append(big.Status.Versions, v)
	}
	log := promotionLog(big)
	g.Expect(len(log)).To(BeNumerically("<=", maxLogBytes))
	var back []upgradev1.ChannelVersionStatus
	g.Expect(json.Unmarshal([]byte(log), &back)).To(Succeed())
	g.Expect(back).To(HaveLen(32), "every version, so that none enters again")
	g.Expect(back[0].Stages[0].EnteredTime).NotTo(BeNil(), "when each stage was entered: its grant")
	g.Expect(back[0].Stages[0].Message).To(BeEmpty())
}

// TestEventsOfOneReasonAreToldTogether: the events of one reconcile that
// share their type and reason (two versions superseded by a newer one that
// came with them) are told in one event with every message in order, as
// the events/v1 recorder would otherwise fold them into a series that
// keeps the first message alone; the others are told as they came.
func TestEventsOfOneReasonAreToldTogether(t *testing.T) {
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: recorder}
	ch := &upgradev1.ReleaseChannel{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
	r.record(context.Background(), ch, []channel.Event{
		{Type: corev1.EventTypeNormal, Reason: channel.EventVersionSuperseded, Version: "v1.13.0", Message: "Version v1.13.0 is superseded by v1.13.2, which came with it"},
		{Type: corev1.EventTypeNormal, Reason: channel.EventVersionSuperseded, Version: "v1.13.1", Message: "Version v1.13.1 is superseded by v1.13.2, which came with it"},
		{Type: corev1.EventTypeNormal, Reason: channel.EventVersionEntered, Version: "v1.13.2", Message: "Version v1.13.2 entered the channel"},
		{Type: corev1.EventTypeWarning, Reason: channel.EventVersionSuperseded, Version: "v1.12.9", Message: "a Warning of the same reason is another event"},
	})
	close(recorder.Events)
	var told []string
	for e := range recorder.Events {
		told = append(told, e)
	}
	g.Expect(told).To(Equal([]string{
		"Normal VersionSuperseded Version v1.13.0 is superseded by v1.13.2, which came with it; Version v1.13.1 is superseded by v1.13.2, which came with it",
		"Normal VersionEntered Version v1.13.2 entered the channel",
		"Warning VersionSuperseded a Warning of the same reason is another event",
	}))
}
