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

package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const (
	// eventReason is the reason of the event release-hooks records on the
	// Cluster.
	eventReason = "DeletionHooksReleased"
	// eventAction is its action.
	eventAction = "BreakGlass"
	// reportingController names the plugin in the events it records.
	reportingController = "kubectl-tollgate"
	// maxEventNote is the longest note the API server takes, in bytes (the
	// Events API counts bytes, not characters; see truncateTo).
	maxEventNote = 1024
	// maxReportingInstance is the longest reportingInstance of an event, in
	// bytes.
	maxReportingInstance = 128
	// maxBypassed and maxBypassHistory are the limits of a BypassRecord's
	// bypassed and of status.bypassHistory (the controller keeps the same).
	maxBypassed, maxBypassHistory = upgradev1.MaxMessageLength, 32
	// maxRequestedBy is the longest requestedBy of a BypassRecord.
	maxRequestedBy = 512
)

// breakGlass is one release of Tollgate's deletion hooks, as it is recorded.
type breakGlass struct {
	// who is the user the API server authenticated; reason is --reason.
	who, reason string
	// cluster is the Cluster; upgrade its TalosUpgrade, nil when none.
	cluster *clusterv1.Cluster
	upgrade *upgradev1.TalosUpgrade
	// machines are the Machines whose hook is released.
	machines []string
	// tollgate says why Tollgate is judged not running.
	tollgate string
	// now is when.
	now time.Time
}

// whoAmI returns the user the API server authenticates the plugin as, as
// kubectl auth whoami does: the name the admission webhooks record too.
func whoAmI(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who you are (a SelfSubjectReview), to record it: %w; nothing was released", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", fmt.Errorf("the API server did not say who you are (its SelfSubjectReview has no username); nothing was released")
	}
	return review.Status.UserInfo.Username, nil
}

// machineList names machines for a record of at most limit characters,
// counting those left out.
func machineList(machines []string, limit int) string {
	s := strings.Join(machines, ", ")
	if len(s) <= limit {
		return s
	}
	for n := len(machines) - 1; n > 0; n-- {
		s = fmt.Sprintf("%s and %d more", strings.Join(machines[:n], ", "), len(machines)-n)
		if len(s) <= limit {
			return s
		}
	}
	return fmt.Sprintf("%d Machines", len(machines))
}

// bypassed is what the bypass history says the release took away.
func (b breakGlass) bypassed() string {
	const format = "Tollgate's deletion hook, released by kubectl tollgate release-hooks while Tollgate was not running, from Machine(s) %s"
	return fmt.Sprintf(format, machineList(b.machines, maxBypassed-len(format)))
}

// note is the event's note: who, which Machines, why, and why Tollgate was
// judged not running, within the API server's limit.
func (b breakGlass) note() string {
	head := b.who + " released Tollgate's deletion hook (break-glass) from Machine(s) "
	tail := ": " + b.reason + ". " + b.tollgate
	if len(head)+len(tail)+40 > maxEventNote {
		tail = ": " + b.reason + "."
	}
	return truncateTo(head+machineList(b.machines, maxEventNote-len(head)-len(tail))+tail, maxEventNote)
}

// record is the entry of status.bypassHistory.
func (b breakGlass) record() upgradev1.BypassRecord {
	return upgradev1.BypassRecord{
		Source:      upgradev1.BypassSourceReleaseHooks,
		RequestedBy: upgradev1.Truncate(b.who, maxRequestedBy),
		Reason:      b.reason,
		Bypassed:    b.bypassed(),
		AppliedTime: metav1.NewTime(b.now).Rfc3339Copy(),
	}
}

// event is the Warning event on the Cluster.
func (b breakGlass) event() *eventsv1.Event {
	instance, err := os.Hostname()
	if err != nil || instance == "" {
		instance = reportingController
	}
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: b.cluster.Namespace,
			Name:      fmt.Sprintf("%s.%x", b.cluster.Name, b.now.UnixNano()),
		},
		EventTime:           metav1.NewMicroTime(b.now),
		ReportingController: reportingController,
		ReportingInstance:   truncateTo(reportingController+"@"+instance, maxReportingInstance),
		Action:              eventAction,
		Reason:              eventReason,
		Type:                corev1.EventTypeWarning,
		Regarding: corev1.ObjectReference{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster",
			Namespace: b.cluster.Namespace, Name: b.cluster.Name, UID: b.cluster.UID,
		},
		Note: b.note(),
	}
	if b.upgrade != nil {
		e.Related = &corev1.ObjectReference{
			APIVersion: upgradev1.GroupVersion.String(), Kind: "TalosUpgrade",
			Namespace: b.upgrade.Namespace, Name: b.upgrade.Name, UID: b.upgrade.UID,
		}
	}
	return e
}

// recordBreakGlass records b before anything is released: in the
// TalosUpgrade's status.bypassHistory, where Tollgate keeps every bypass of
// the rollout (the controller appends to it and keeps what it finds), and
// as a Warning event on the Cluster. The history is written with the
// TalosUpgrade's resourceVersion, so that a write of the controller in
// between is read again rather than overwritten.
func recordBreakGlass(ctx context.Context, c client.Client, b breakGlass) error {
	if b.upgrade != nil {
		key := client.ObjectKeyFromObject(b.upgrade)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			u := &upgradev1.TalosUpgrade{}
			if err := c.Get(ctx, key, u); err != nil {
				return err
			}
			orig := u.DeepCopy()
			u.Status.BypassHistory = append(slices.Clone(u.Status.BypassHistory), b.record())
			if n := len(u.Status.BypassHistory); n > maxBypassHistory {
				u.Status.BypassHistory = u.Status.BypassHistory[n-maxBypassHistory:]
			}
			return c.Status().Patch(ctx, u, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		})
		if err != nil {
			return fmt.Errorf("recording the release in status.bypassHistory of TalosUpgrade %s: %w", key, err)
		}
	}
	if err := c.Create(ctx, b.event()); err != nil {
		return fmt.Errorf("recording the release in an event on Cluster %s/%s: %w", b.cluster.Namespace, b.cluster.Name, err)
	}
	return nil
}

// truncateTo cuts s to at most n bytes, at a character's start. It is not
// upgradev1.Truncate, the one truncation of Tollgate's messages, for a
// reason: it cuts an Event's fields (its note, its reportingInstance), whose
// limits the Events API counts in bytes where a CRD's maxLength counts
// characters, so a cut in characters could still be refused. Its callers
// make room for what matters first (note), so it marks no cut.
func truncateTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
