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
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// LogAnnotation carries a copy of the rollout's write-ahead log on the
// TalosUpgrade's metadata: the records of the Machines in flight or failed,
// and when the rollout started. clusterctl move creates every object without
// its status; the controller in the new management cluster restores the
// records from this copy, so that a rollout in progress resumes there
// without repeating an upgrade call or forgetting a cordon. Completed
// Machines are not carried: they are found on the target again.
//
// The copy is written when the controller sees the Cluster paused, in the
// patch that removes clusterctl's block-move annotation: clusterctl move
// pauses the Cluster and waits for that, and nothing extends the log while
// the Cluster is paused, so the copy it takes is the whole log. It goes
// again once the Cluster is unpaused and the status holds the log. Keeping
// it up to date at every step would double the writes of a rollout (a
// status patch cannot change the metadata) for a copy only a move reads.
const LogAnnotation = "upgrade.tollgate.dev/write-ahead-log"

// maxLogBytes bounds the annotation, well under the 256 KiB all annotations
// of an object may take; Failed records are left out first.
const maxLogBytes = 128 << 10

// rolloutLog is the content of LogAnnotation.
type rolloutLog struct {
	StartTime            *metav1.Time                     `json:"startTime,omitempty"`
	AcknowledgedFailures int32                            `json:"acknowledgedFailures,omitempty"`
	Machines             []upgradev1.MachineUpgradeStatus `json:"machines"`
}

// syncLog writes the copy of the write-ahead log into u's annotations, or
// removes it when no Machine is in flight or failed.
func syncLog(u *upgradev1.TalosUpgrade) {
	l := rolloutLog{StartTime: u.Status.StartTime, AcknowledgedFailures: u.Status.AcknowledgedFailures}
	var failedRecords []upgradev1.MachineUpgradeStatus
	for _, st := range u.Status.Machines {
		switch {
		case st.Phase.InFlight():
			l.Machines = append(l.Machines, st)
		case st.Phase == upgradev1.MachinePhaseFailed:
			st.PhaseDurations, st.Hooks = nil, nil
			failedRecords = append(failedRecords, st)
		}
	}
	inFlightOnly := l
	l.Machines = append(l.Machines, failedRecords...)
	raw, err := json.Marshal(l)
	if err == nil && len(raw) > maxLogBytes {
		raw, err = json.Marshal(inFlightOnly)
	}
	if err != nil || len(l.Machines) == 0 {
		delete(u.Annotations, LogAnnotation)
		return
	}
	if u.Annotations == nil {
		u.Annotations = map[string]string{}
	}
	u.Annotations[LogAnnotation] = string(raw)
}

// hasLog reports whether a status holds a write-ahead log: Machine records
// or the start of the rollout.
func hasLog(st *upgradev1.TalosUpgradeStatus) bool {
	return len(st.Machines) > 0 || st.StartTime != nil
}

// restoreLog restores the Machine records of a TalosUpgrade that has none
// from its LogAnnotation: it was created without its status, by clusterctl
// move for example.
func (r *Reconciler) restoreLog(s *scope) error {
	u := s.Upgrade
	raw, ok := u.Annotations[LogAnnotation]
	if !ok || hasLog(&u.Status) {
		return nil
	}
	l := rolloutLog{}
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return fmt.Errorf("reading the %s annotation of TalosUpgrade %s/%s: %w", LogAnnotation, u.Namespace, u.Name, err)
	}
	u.Status.Machines, u.Status.StartTime, u.Status.AcknowledgedFailures = l.Machines, l.StartTime, l.AcknowledgedFailures
	r.event(s, corev1.EventTypeNormal, "RolloutRestored", "Restore", "Restored the records of %d Machines from the %s annotation (the TalosUpgrade was created without its status, by clusterctl move for example)", len(l.Machines), LogAnnotation)
	return nil
}
