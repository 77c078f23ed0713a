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
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// ANSI escape sequences of the terminal views.
const (
	cursorUp  = "\x1b[%dA\r"
	clearLine = "\x1b[2K"
	clearDown = "\x1b[J"
	bold      = "\x1b[1m"
	dim       = "\x1b[2m"
	red       = "\x1b[31m"
	green     = "\x1b[32m"
	yellow    = "\x1b[33m"
	cyan      = "\x1b[36m"
	reset     = "\x1b[0m"
)

// FormatDuration formats d with a tenth of a second under a minute, "1m02s"
// above: the clocks of the live view and the summary.
func FormatDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// formatAge formats how long ago t was the way kubectl shows an age: "12s",
// "4m", "3h", "2d"; "" for a zero t.
func formatAge(t time.Time, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// bar is a progress bar of width characters, done out of total.
func bar(done, total, width int) string {
	filled := 0
	if total > 0 {
		filled = max(0, min(width, done*width/total))
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

// Plural returns "1 run" or "n runs".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// roleName is how a Machine's role is shown.
func roleName(r upgradev1.MachineRole) string {
	if r == upgradev1.MachineRoleControlPlane {
		return "control plane"
	}
	return "worker"
}

// machinePhase is a Machine's phase as shown, with the hold point of a
// Machine that waits at one: "WaitingForHold:preDrain".
func machinePhase(m *upgradev1.MachineUpgradeStatus) string {
	phase := string(m.Phase)
	if phase == "" {
		phase = string(upgradev1.MachinePhasePending)
	}
	if m.Phase == upgradev1.MachinePhaseWaitingForHold && m.HoldPoint != "" {
		phase += ":" + string(m.HoldPoint)
	}
	return phase
}

// machineVersion is what a Machine's record changes, as shown: the versions
// of an upgrade, or the version of a node that is only rebooted.
func machineVersion(m *upgradev1.MachineUpgradeStatus) string {
	switch m.Action {
	case upgradev1.MachineActionReboot:
		return m.FromVersion + " (reboot)"
	case upgradev1.MachineActionConfigure:
		return m.FromVersion + " (configure)"
	case upgradev1.MachineActionKubernetes:
		if k := m.Kubernetes; k != nil {
			return fmt.Sprintf("%s (%s %s)", m.FromVersion, strings.ToLower(string(k.Part)), k.Version)
		}
	}
	if k := m.Kubernetes; k != nil && k.Part == upgradev1.KubernetesPartKubelet && k.State != upgradev1.MachineConfigConverged {
		return fmt.Sprintf("%s -> %s (kubelet %s)", m.FromVersion, m.TargetVersion, k.Version)
	}
	return m.FromVersion + " -> " + m.TargetVersion
}

// rolloutPhase is a rollout's phase as shown: Pending before the controller
// wrote one.
func rolloutPhase(u *upgradev1.TalosUpgrade) string {
	if u.Status.Phase == "" {
		return string(upgradev1.UpgradePhasePending)
	}
	return string(u.Status.Phase)
}

// fromVersions is the versions the Machines of a rollout came from: "v1.12.4",
// "v1.11.6, v1.12.4" for a mixed Cluster, "..." before the controller read
// them.
func fromVersions(u *upgradev1.TalosUpgrade) string {
	var versions []string
	for _, m := range u.Status.Machines {
		if m.FromVersion != "" && !slices.Contains(versions, m.FromVersion) {
			versions = append(versions, m.FromVersion)
		}
	}
	if len(versions) == 0 {
		return "..."
	}
	return strings.Join(versions, ", ")
}

// nodeChange says what a rollout does to nodes it does not upgrade:
// "configure" when it changes a configuration, "reboot" when it only
// reboots, "" when neither.
func nodeChange(u *upgradev1.TalosUpgrade) string {
	change := ""
	for _, m := range u.Status.Machines {
		switch m.Action {
		case upgradev1.MachineActionConfigure:
			return "configure"
		case upgradev1.MachineActionReboot:
			change = "reboot"
		}
	}
	return change
}

func phaseColor(p upgradev1.MachinePhase) string {
	switch p {
	case upgradev1.MachinePhaseCompleted:
		return green
	case upgradev1.MachinePhaseFailed:
		return red
	case upgradev1.MachinePhaseWaitingForHold:
		return yellow
	case upgradev1.MachinePhasePending, "":
		return dim
	}
	return cyan
}

func rolloutColor(p upgradev1.UpgradePhase) string {
	switch p {
	case upgradev1.UpgradePhaseCompleted:
		return green
	case upgradev1.UpgradePhaseFailed:
		return red
	case upgradev1.UpgradePhasePaused, upgradev1.UpgradePhaseWaitingForHealthChecks, upgradev1.UpgradePhaseDetached:
		return yellow
	case upgradev1.UpgradePhasePending, "":
		return dim
	}
	return cyan
}

func resultColor(r upgradev1.HealthCheckResult) string {
	switch r {
	case upgradev1.HealthCheckPassed:
		return green
	case upgradev1.HealthCheckFailed:
		return red
	}
	return yellow
}

func hookColor(p upgradev1.HookRunPhase) string {
	switch p {
	case upgradev1.HookRunSucceeded:
		return green
	case upgradev1.HookRunFailed:
		return red
	}
	return yellow
}

// printf writes to a view's output. A write error (a closed pipe) is not
// the view's to handle: the caller's exit code tells.
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

// printLine is fmt.Fprintln for a view's output; see printf.
func printLine(w io.Writer, args ...any) {
	_, _ = fmt.Fprintln(w, args...)
}
