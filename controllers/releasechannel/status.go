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
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
	"github.com/tollgate-dev/tollgate/internal/metrics"
)

// LogAnnotation carries a copy of the channel's promotion record
// (status.versions) on its metadata. clusterctl move creates every object
// without its status; the controller in the new management cluster
// restores the record from this copy, so that a soak in progress neither
// restarts nor is skipped, and no version enters a stage again. It is
// written whenever the record changes (gate openings, soaks, measurements,
// decisions): a handful of writes per version and stage.
const LogAnnotation = "upgrade.tollgate.dev/promotion-log"

// maxLogBytes bounds the annotation, well under the 256 KiB all annotations
// of an object may take; the stage details of ended versions go first.
const maxLogBytes = 128 << 10

// promotionLog returns the copy of the record the annotation carries: every
// version (so that none enters again), with the stages of those in flight
// in full and, of those that ended, when each stage was entered (a stage's
// grant).
func promotionLog(ch *upgradev1.ReleaseChannel) string {
	full := ch.Status.Versions
	raw, err := json.Marshal(full)
	if err == nil && len(raw) <= maxLogBytes {
		return string(raw)
	}
	short := make([]upgradev1.ChannelVersionStatus, 0, len(full))
	for _, v := range full {
		v = *v.DeepCopy()
		if v.Phase.Ended() {
			for i := range v.Stages {
				v.Stages[i] = upgradev1.VersionStageStatus{Stage: v.Stages[i].Stage, Phase: v.Stages[i].Phase, EnteredTime: v.Stages[i].EnteredTime}
			}
		}
		short = append(short, v)
	}
	raw, err = json.Marshal(short)
	if err != nil {
		return ""
	}
	return string(raw)
}

// writeLog writes the copy of the record into the annotation.
func writeLog(ch *upgradev1.ReleaseChannel, log string) {
	if ch.Annotations == nil {
		ch.Annotations = map[string]string{}
	}
	if log == "" || log == "null" {
		delete(ch.Annotations, LogAnnotation)
		return
	}
	ch.Annotations[LogAnnotation] = log
}

// restoreLog restores status.versions of a channel that has none from its
// LogAnnotation: it was created without its status, by clusterctl move for
// example. It returns the event that says so.
func (r *Reconciler) restoreLog(ctx context.Context, ch *upgradev1.ReleaseChannel) []channel.Event {
	raw, ok := ch.Annotations[LogAnnotation]
	if !ok || len(ch.Status.Versions) > 0 {
		return nil
	}
	var versions []upgradev1.ChannelVersionStatus
	if err := json.Unmarshal([]byte(raw), &versions); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the promotion log annotation", "ReleaseChannel", klog.KObj(ch))
		return nil
	}
	ch.Status.Versions = versions
	return []channel.Event{{Type: corev1.EventTypeNormal, Reason: "PromotionsRestored", Message: fmt.Sprintf(
		"Restored the record of %d versions from the %s annotation (the channel was created without its status, by clusterctl move for example)", len(versions), LogAnnotation)}}
}

// record records the events of a reconcile, whose status is written, logs
// them and counts them in the metrics. The events of one type and reason
// are told in one event, their messages in order: the events/v1 recorder
// folds the events of one object and resourceVersion with the same type,
// reason and action into a series that keeps the first note alone, and a
// channel's versions and stages are no objects an event could name as its
// related one (two versions superseded at once would be told as one).
func (r *Reconciler) record(ctx context.Context, ch *upgradev1.ReleaseChannel, events []channel.Event) {
	log := ctrl.LoggerFrom(ctx).WithValues("ReleaseChannel", klog.KObj(ch))
	type key struct{ eventType, reason string }
	var order []key
	messages := map[key][]string{}
	for _, e := range events {
		log.Info("Promotion: "+e.Message, "reason", e.Reason, "version", e.Version, "stage", e.Stage)
		metrics.ChannelEvent(ch.Name, e.Stage, e.Reason)
		k := key{e.Type, e.Reason}
		if _, seen := messages[k]; !seen {
			order = append(order, k)
		}
		messages[k] = append(messages[k], e.Message)
	}
	for _, k := range order {
		r.event(ch, k.eventType, k.reason, "Promote", "%s", upgradev1.Truncate(strings.Join(messages[k], "; "), upgradev1.MaxMessageLength))
	}
}

func (r *Reconciler) event(ch *upgradev1.ReleaseChannel, eventType, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(ch, nil, eventType, reason, action, format, args...)
	}
}

// setInvalid reports a spec that cannot be carried out.
func setInvalid(ch *upgradev1.ReleaseChannel, errs field.ErrorList) {
	conditions.Set(ch, metav1.Condition{Type: upgradev1.ChannelReadyCondition, Status: metav1.ConditionFalse, Reason: upgradev1.PolicyInvalidReason,
		Message: upgradev1.Truncate(fmt.Sprintf("the spec cannot be carried out, so no gate opens: %v", errs.ToAggregate()), upgradev1.MaxMessageLength)})
	conditions.Set(ch, metav1.Condition{Type: upgradev1.ChannelPromotingCondition, Status: metav1.ConditionFalse, Reason: upgradev1.PolicyInvalidReason,
		Message: "the spec cannot be carried out: see the Ready condition"})
}

// setReady sets the Ready condition from what stands in the way of the
// stages resolving.
func setReady(ch *upgradev1.ReleaseChannel, problems []problem) {
	if len(problems) == 0 {
		conditions.Set(ch, metav1.Condition{Type: upgradev1.ChannelReadyCondition, Status: metav1.ConditionTrue, Reason: upgradev1.ChannelValidReason})
		return
	}
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		msgs = append(msgs, p.message)
	}
	conditions.Set(ch, metav1.Condition{Type: upgradev1.ChannelReadyCondition, Status: metav1.ConditionFalse, Reason: problems[0].reason,
		Message: upgradev1.Truncate(strings.Join(msgs, "; "), upgradev1.MaxMessageLength)})
}
