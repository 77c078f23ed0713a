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
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// ANSI escape sequences of the terminal view.
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

// renderer draws the live view of a rollout: a header with the rollout's
// phase, progress bar and blocker, the health checks, then one line per
// Machine. On a terminal it redraws the view in place; otherwise it prints
// a line, stamped with the elapsed time, whenever one of them changes.
type renderer struct {
	out   io.Writer
	tty   bool
	start time.Time
	// height is the number of lines the last terminal frame drew.
	height int
	// printed is, per line, the state last printed in line mode.
	printed map[string]string
}

func newRenderer(out io.Writer, tty bool, start time.Time) *renderer {
	return &renderer{out: out, tty: tty, start: start, printed: map[string]string{}}
}

// period is how often the view's clocks are refreshed.
func (r *renderer) period() time.Duration {
	if r.tty {
		return 100 * time.Millisecond
	}
	// Line mode prints changes only; the tick is never shown.
	return time.Second
}

// line is one line of the view: key identifies it, state is what must
// change for line mode to print it again, text is what is shown.
type line struct {
	key, state, text string
	color            string
}

func (r *renderer) render(u *upgradev1.TalosUpgrade, tl *timeline, now time.Time) {
	lines := r.lines(u, tl, now)
	if r.tty {
		r.frame(lines)
		return
	}
	for _, l := range lines {
		// A blocker that clears is not news: the next line says what moved.
		if r.printed[l.key] == l.state || l.key == "blocked" && l.state == "-" {
			continue
		}
		r.printed[l.key] = l.state
		printf(r.out, "[%6s] %s\n", formatDuration(now.Sub(r.start)), strings.TrimSpace(l.text))
	}
}

// finish leaves the last frame on screen.
func (r *renderer) finish() {
	r.height = 0
}

func (r *renderer) frame(lines []line) {
	width := 120
	if f, ok := r.out.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			width = w
		}
	}
	var b strings.Builder
	if r.height > 0 {
		printf(&b, cursorUp, r.height)
	}
	for _, l := range lines {
		text := truncate(l.text, width-1)
		if l.color != "" {
			text = l.color + text + reset
		}
		b.WriteString(clearLine + text + "\n")
	}
	b.WriteString(clearDown)
	r.height = len(lines)
	_, _ = io.WriteString(r.out, b.String())
}

func (r *renderer) lines(u *upgradev1.TalosUpgrade, tl *timeline, now time.Time) []line {
	elapsed := formatDuration(now.Sub(r.start))
	if u == nil {
		return []line{{key: "header", state: "waiting", text: fmt.Sprintf("Waiting for the policy controller to create TalosUpgrade %s/%s  %s", namespace, clusterName, elapsed)}}
	}
	st := u.Status
	phase := string(st.Phase)
	if phase == "" {
		phase = "Pending"
	}
	done, total := int(st.CompletedMachines), int(st.TotalMachines)
	lines := []line{{
		key:   "header",
		state: phase + "|" + st.Progress,
		text: fmt.Sprintf("Cluster %s/%s  %s -> %s  %-22s %s %d/%d Machines  %s",
			namespace, u.Spec.ClusterName, fromVersion(u), u.Spec.TalosVersion, phase, bar(done, total, 20), done, total, elapsed),
		color: bold,
	}}
	blocked := st.BlockedBy
	if blocked == "" {
		blocked = "-"
	}
	lines = append(lines, line{key: "blocked", state: blocked, text: "  blocked by: " + blocked, color: blockerColor(blocked)})
	for _, hc := range st.HealthChecks {
		text := fmt.Sprintf("  health check %s: %s", hc.Name, hc.Result)
		if hc.Result == upgradev1.HealthCheckFailed && hc.Message != "" {
			text += " (" + hc.Message + ")"
		}
		lines = append(lines, line{key: "hc/" + hc.Name, state: string(hc.Result) + "|" + hc.Message, text: text, color: resultColor(hc.Result)})
	}
	for _, m := range st.Machines {
		lines = append(lines, machineLine(m, tl, now))
	}
	return lines
}

func machineLine(m upgradev1.MachineUpgradeStatus, tl *timeline, now time.Time) line {
	phase := string(m.Phase)
	if m.Phase == upgradev1.MachinePhaseWaitingForHold && m.HoldPoint != "" {
		phase += ":" + string(m.HoldPoint)
	}
	clock := ""
	if start, end := tl.started(m.Machine); !start.IsZero() {
		if end.IsZero() {
			end = now
		}
		clock = formatDuration(end.Sub(start))
	}
	blocker := m.Message
	if blocker == "" && len(m.HeldBy) > 0 {
		blocker = "held by " + strings.Join(m.HeldBy, ", ")
	}
	role := "worker"
	if m.Role == upgradev1.MachineRoleControlPlane {
		role = "control plane"
	}
	return line{
		key:   "m/" + m.Machine,
		state: phase + "|" + m.Message + "|" + strings.Join(m.HeldBy, ","),
		text:  fmt.Sprintf("  %-18s %-13s %-26s %s %7s  %s", m.Machine, role, phase, bar(step(m), len(machineSteps), 12), clock, blocker),
		color: phaseColor(m.Phase),
	}
}

// machineSteps are the steps of a Machine's upgrade, in order, for its
// progress bar.
var machineSteps = []string{
	string(upgradev1.HoldPointPreDrain), string(upgradev1.MachinePhaseDraining), string(upgradev1.MachinePhaseUpgrading),
	string(upgradev1.HoldPointPreReboot), string(upgradev1.MachinePhaseRebooting), string(upgradev1.MachinePhaseVerifying),
	string(upgradev1.HoldPointPostUpgrade), string(upgradev1.MachinePhaseCompleted),
}

// step returns how many steps of machineSteps a Machine has reached.
func step(m upgradev1.MachineUpgradeStatus) int {
	current := string(m.Phase)
	switch m.Phase {
	case upgradev1.MachinePhasePending, "":
		return 0
	case upgradev1.MachinePhaseFailed:
		return 0
	case upgradev1.MachinePhaseWaitingForHold:
		current = string(m.HoldPoint)
	}
	for i, s := range machineSteps {
		if s == current {
			return i + 1
		}
	}
	return 0
}

// bar is a progress bar of width characters, done out of total.
func bar(done, total, width int) string {
	filled := 0
	if total > 0 {
		filled = min(width, done*width/total)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

func fromVersion(u *upgradev1.TalosUpgrade) string {
	for _, m := range u.Status.Machines {
		if m.FromVersion != "" {
			return m.FromVersion
		}
	}
	return "..."
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

func resultColor(r upgradev1.HealthCheckResult) string {
	switch r {
	case upgradev1.HealthCheckPassed:
		return green
	case upgradev1.HealthCheckFailed:
		return red
	}
	return yellow
}

func blockerColor(blocked string) string {
	if blocked == "-" {
		return dim
	}
	return yellow
}

// truncate cuts s to n runes, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "~"
}

// formatDuration formats d with a tenth of a second under a minute, "1m02s"
// above.
func formatDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
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
