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

package rolloutview

import (
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// span is a stretch of time a Machine or the rollout spent in one phase,
// as the watch saw it.
type span struct {
	phase string
	start time.Time
}

// Timeline records the phases a watch saw, at the time of its events: every
// phase change is a status write of the controller, so the timeline is
// precise to a few milliseconds, where status.machines[].phaseDurations
// counts whole seconds. A Machine the watch did not see start is timed from
// its status instead.
type Timeline struct {
	rollout  []span
	machines map[string][]span
	// firstSeen is, per Machine, the phase it was in when the watch first
	// saw it.
	firstSeen map[string]string
	end       time.Time
}

// NewTimeline returns an empty timeline.
func NewTimeline() *Timeline {
	return &Timeline{machines: map[string][]span{}, firstSeen: map[string]string{}}
}

// Observe records the phases of u seen at now.
func (t *Timeline) Observe(u *upgradev1.TalosUpgrade, now time.Time) {
	if u == nil {
		return
	}
	t.rollout = appendSpan(t.rollout, rolloutPhase(u), now)
	for _, m := range u.Status.Machines {
		if _, seen := t.firstSeen[m.Machine]; !seen {
			t.firstSeen[m.Machine] = string(m.Phase)
		}
		t.machines[m.Machine] = appendSpan(t.machines[m.Machine], string(m.Phase), now)
	}
}

// End marks the end of the rollout at now: the last phase of the rollout
// is not timed past it.
func (t *Timeline) End(now time.Time) {
	t.end = now
}

// Ended returns when End was called; zero before.
func (t *Timeline) Ended() time.Time {
	return t.end
}

// RolloutDurations returns the time the rollout spent in each phase, by
// phase, as the watch saw it.
func (t *Timeline) RolloutDurations() map[string]time.Duration {
	return durations(t.rollout, t.endOr(time.Now()))
}

// RolloutTime is the time from the first phase the watch saw to the end.
func (t *Timeline) RolloutTime() time.Duration {
	if len(t.rollout) == 0 {
		return 0
	}
	return t.endOr(time.Now()).Sub(t.rollout[0].start)
}

func (t *Timeline) endOr(now time.Time) time.Time {
	if t.end.IsZero() {
		return now
	}
	return t.end
}

// sawStart reports whether the watch saw the Machine before it started, so
// that its timeline holds every phase it went through.
func (t *Timeline) sawStart(machine string) bool {
	phase, ok := t.firstSeen[machine]
	return ok && (phase == "" || phase == string(upgradev1.MachinePhasePending))
}

func appendSpan(spans []span, phase string, now time.Time) []span {
	if phase == "" || len(spans) > 0 && spans[len(spans)-1].phase == phase {
		return spans
	}
	return append(spans, span{phase: phase, start: now})
}

// durations returns the time spent in each phase, ending at end for the
// last one unless it is terminal.
func durations(spans []span, end time.Time) map[string]time.Duration {
	d := map[string]time.Duration{}
	for i, s := range spans {
		next := end
		if i+1 < len(spans) {
			next = spans[i+1].start
		} else if terminal(s.phase) {
			continue
		}
		d[s.phase] += next.Sub(s.start)
	}
	return d
}

// started returns when a Machine left Pending and when it ended (zero while
// it runs): as the watch saw it when it saw the Machine start, from the
// Machine's status otherwise.
func (t *Timeline) started(m *upgradev1.MachineUpgradeStatus) (start, end time.Time) {
	if !t.sawStart(m.Machine) {
		if m.StartTime != nil {
			start = m.StartTime.Time
		}
		if m.CompletionTime != nil {
			end = m.CompletionTime.Time
		}
		return start, end
	}
	for _, s := range t.machines[m.Machine] {
		if start.IsZero() && s.phase != string(upgradev1.MachinePhasePending) {
			start = s.start
		}
		if terminal(s.phase) {
			end = s.start
		}
	}
	return start, end
}

// machineDurations returns the time a Machine spent in each phase: from the
// timeline when the watch saw it start, from status.phaseDurations
// otherwise (whole seconds; exact reports which).
func (t *Timeline) machineDurations(m *upgradev1.MachineUpgradeStatus) (d map[string]time.Duration, exact bool) {
	if t.sawStart(m.Machine) {
		return durations(t.machines[m.Machine], t.endOr(time.Now())), true
	}
	d = map[string]time.Duration{}
	for _, pd := range m.PhaseDurations {
		d[string(pd.Phase)] += time.Duration(pd.Seconds) * time.Second
	}
	return d, false
}

func terminal(phase string) bool {
	switch phase {
	case string(upgradev1.MachinePhaseCompleted), string(upgradev1.MachinePhaseFailed):
		return true
	}
	return false
}
