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

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/rolloutview"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// writeSummary writes the rollout's summary table (rolloutview, as kubectl
// tollgate watch ends) and what the health check and hooks did, as the
// workload's Kubelet saw them run beside the Job controller.
func writeSummary(out io.Writer, f *followed, driver jobdriver.Runner, endpoint *healthEndpoint) {
	u := f.upgrade
	rolloutview.WriteSummary(out, u, f.timeline)
	if endpoint != nil {
		endpoint.writeSummary(out, f.checksHeld)
		writeHookRuns(out, driver)
		return
	}

	checkJobs := driver.SeenMatching(jobdriver.NamePrefix(healthchecks.JobName(checkName, u.Spec.ClusterName)))
	failed, reasons := 0, []string{}
	for _, j := range checkJobs {
		if j.Outcome.Fail {
			failed++
			reasons = append(reasons, j.Outcome.Message)
		}
	}
	printf(out, "ClusterHealthCheck %s: %s, %d failed", checkName, rolloutview.Plural(len(checkJobs), "run"), failed)
	if failed > 0 {
		printf(out, " (last reason: %q); it held the rollout %s in WaitingForHealthChecks",
			reasons[len(reasons)-1], rolloutview.FormatDuration(f.checksHeld))
	}
	printLine(out)
	writeHookRuns(out, driver)
}

// writeHookRuns says how many hook Jobs ran, per point.
func writeHookRuns(out io.Writer, driver jobdriver.Runner) {
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

// printf writes to the demo's output. A write error (a closed pipe) is not
// the demo's to handle: the rollout goes on and the exit code tells.
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

// printLine is fmt.Fprintln for the demo's output; see printf.
func printLine(w io.Writer, args ...any) {
	_, _ = fmt.Fprintln(w, args...)
}
