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

package demo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/test/jobdriver"
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

// writeSummary writes the table of Machines (from -> to, time in each
// phase) and what the health check and hooks did.
func writeSummary(out io.Writer, u *upgradev1.TalosUpgrade, tl *timeline, driver *jobdriver.Driver) {
	st := u.Status
	rolloutTime := time.Duration(0)
	if len(tl.rollout) > 0 {
		rolloutTime = tl.end.Sub(tl.rollout[0].start)
	}
	printf(out, "Rollout %s: %s Machines of Cluster %s/%s on Talos %s in %s\n\n",
		st.Phase, st.Progress, u.Namespace, u.Spec.ClusterName, u.Spec.TalosVersion, formatDuration(rolloutTime))

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := make([]string, 0, 5+len(summaryPhases))
	header = append(header, "MACHINE", "ROLE", "FROM -> TO", "RESULT")
	for _, p := range summaryPhases {
		header = append(header, p.title)
	}
	printLine(tw, strings.Join(append(header, "TOTAL"), "\t"))
	for _, m := range st.Machines {
		d := durations(tl.machines[m.Machine], tl.end)
		role := "worker"
		if m.Role == upgradev1.MachineRoleControlPlane {
			role = "control plane"
		}
		row := make([]string, 0, 5+len(summaryPhases))
		row = append(row, m.Machine, role, m.FromVersion+" -> "+m.TargetVersion, string(m.Phase))
		for _, p := range summaryPhases {
			row = append(row, formatDuration(d[string(p.phase)]))
		}
		total := "-"
		if start, end := tl.started(m.Machine); !start.IsZero() && !end.IsZero() {
			total = formatDuration(end.Sub(start))
		}
		printLine(tw, strings.Join(append(row, total), "\t"))
	}
	_ = tw.Flush()
	printLine(out)

	rollout := durations(tl.rollout, tl.end)
	checkJobs := driver.SeenMatching(jobdriver.NamePrefix(healthchecks.JobName(checkName, u.Spec.ClusterName)))
	failed, reasons := 0, []string{}
	for _, j := range checkJobs {
		if j.Outcome.Fail {
			failed++
			reasons = append(reasons, j.Outcome.Message)
		}
	}
	printf(out, "ClusterHealthCheck %s: %s, %d failed", checkName, plural(len(checkJobs), "run"), failed)
	if failed > 0 {
		printf(out, " (last reason: %q); it held the rollout %s in WaitingForHealthChecks",
			reasons[len(reasons)-1], formatDuration(rollout[string(upgradev1.UpgradePhaseWaitingForHealthChecks)]))
	}
	printLine(out)
	hookRuns := map[string]int{}
	for _, j := range driver.Seen() {
		for _, env := range j.Env {
			if h := env["TOLLGATE_HOOK"]; h != "" {
				hookRuns[h]++
			}
		}
	}
	runs := []string{}
	for _, point := range []upgradev1.HookPoint{upgradev1.HookPointPreDrain, upgradev1.HookPointPreReboot, upgradev1.HookPointNodeReady} {
		if n := hookRuns[string(point)]; n > 0 {
			runs = append(runs, fmt.Sprintf("%s %d", point, n))
		}
	}
	printf(out, "Hook Jobs run, per point: %s (one per Machine)\n", strings.Join(runs, ", "))
	printLine(out, "Times are as the demo's watch saw the status change; status.machines[].phaseDurations keeps whole seconds.")
}

// plural returns "1 run" or "n runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
