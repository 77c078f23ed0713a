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
	"io"
	"strings"
	"text/tabwriter"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// summaryPhases are the columns of the summary table.
var summaryPhases = []struct {
	phase upgradev1.MachinePhase
	title string
}{
	{upgradev1.MachinePhaseWaitingForHold, "HOLDS+HOOKS"},
	{upgradev1.MachinePhaseDraining, "DRAIN"},
	{upgradev1.MachinePhaseUpgrading, "UPGRADE"},
	{upgradev1.MachinePhaseRebooting, "REBOOT"},
	{upgradev1.MachinePhaseVerifying, "VERIFY"},
}

// WriteSummary writes the end of a rollout: a line with its outcome, then a
// table of its Machines (from -> to, result, time in each phase, total).
// Times are the timeline's, to the millisecond, for the Machines the watch
// saw start, and whole seconds from the status for the others, which a note
// below the table then says.
func WriteSummary(out io.Writer, u *upgradev1.TalosUpgrade, tl *Timeline) {
	st := u.Status
	printf(out, "Rollout %s: %s Machines of Cluster %s/%s on Talos %s in %s\n\n",
		rolloutPhase(u), st.Progress, u.Namespace, u.Spec.ClusterName, u.Spec.TalosVersion, FormatDuration(rolloutTime(u, tl)))

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := make([]string, 0, 5+len(summaryPhases))
	header = append(header, "MACHINE", "ROLE", "FROM -> TO", "RESULT")
	for _, p := range summaryPhases {
		header = append(header, p.title)
	}
	printLine(tw, strings.Join(append(header, "TOTAL"), "\t"))
	allExact := true
	for i := range st.Machines {
		m := &st.Machines[i]
		d, exact := tl.machineDurations(m)
		allExact = allExact && exact
		row := make([]string, 0, 5+len(summaryPhases))
		row = append(row, m.Machine, roleName(m.Role), m.FromVersion+" -> "+m.TargetVersion, string(m.Phase))
		for _, p := range summaryPhases {
			row = append(row, FormatDuration(d[string(p.phase)]))
		}
		total := "-"
		if start, end := tl.started(m); !start.IsZero() && !end.IsZero() {
			total = FormatDuration(end.Sub(start))
		}
		printLine(tw, strings.Join(append(row, total), "\t"))
	}
	_ = tw.Flush()
	if !allExact {
		printLine(out, "Times in whole seconds are from status.machines[].phaseDurations: the watch did not see those Machines start.")
	}
	printLine(out)
}

// rolloutTime is the time from the rollout's start to its end: as the watch
// saw it when it saw every Machine start, from the status otherwise.
func rolloutTime(u *upgradev1.TalosUpgrade, tl *Timeline) time.Duration {
	exact := len(tl.rollout) > 0
	for _, m := range u.Status.Machines {
		exact = exact && tl.sawStart(m.Machine)
	}
	if exact {
		return tl.RolloutTime()
	}
	if u.Status.StartTime == nil {
		return 0
	}
	end := tl.endOr(time.Now())
	if u.Status.CompletionTime != nil {
		end = u.Status.CompletionTime.Time
	}
	return end.Sub(u.Status.StartTime.Time)
}
