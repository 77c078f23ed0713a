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
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// LiveOptions configures the live view.
type LiveOptions struct {
	// Redraw redraws the view in place, for a terminal. Otherwise a line,
	// stamped with the time since Start, is printed whenever one of the
	// view's lines changes, so that a log stays readable.
	Redraw bool

	// Color colours the lines of a redrawn view. Leave it off when the
	// output is not a terminal.
	Color bool

	// Start is when the clocks of the header and the stamps start.
	Start time.Time

	// Width is the width a redrawn line is cut to; when 0, the terminal's
	// width if the output is one, 120 otherwise.
	Width int
}

// Live draws the live view of a rollout: a header with the rollout's phase,
// progress bar and blocker, its bypass, its health checks, then one line
// per Machine.
type Live struct {
	out io.Writer
	o   LiveOptions
	// height is the number of lines the last redrawn frame drew.
	height int
	// printed is, per line, the state last printed in line mode.
	printed map[string]string
}

// NewLive returns a live view that writes to out.
func NewLive(out io.Writer, o LiveOptions) *Live {
	return &Live{out: out, o: o, printed: map[string]string{}}
}

// Period is how often the view's clocks should be refreshed: Render is
// called that often besides on every change.
func (l *Live) Period() time.Duration {
	if l.o.Redraw {
		return 100 * time.Millisecond
	}
	// Line mode prints changes only; the tick is never shown.
	return time.Second
}

// Render draws r as of now: a new frame, or the lines that changed.
func (l *Live) Render(r *Rollout, tl *Timeline, now time.Time) {
	lines := viewLines(r, tl, l.o.Start, now)
	if l.o.Redraw {
		l.frame(lines)
		return
	}
	for _, ln := range lines {
		// A blocker that clears is not news: the next line says what moved.
		if l.printed[ln.key] == ln.state || ln.key == "blocked" && ln.state == "-" {
			continue
		}
		l.printed[ln.key] = ln.state
		printf(l.out, "[%6s] %s\n", FormatDuration(now.Sub(l.o.Start)), strings.TrimSpace(ln.text))
	}
}

// Finish leaves the last frame on screen: the next output goes below it.
func (l *Live) Finish() {
	l.height = 0
}

// WriteFrame writes the view of r as of now once, with no stamps and no
// cursor movement (kubectl tollgate watch --once), coloured when color.
func WriteFrame(out io.Writer, r *Rollout, tl *Timeline, start, now time.Time, color bool) {
	for _, ln := range viewLines(r, tl, start, now) {
		printLine(out, paint(ln.text, ln.color, color))
	}
}

func paint(text, color string, on bool) string {
	if !on || color == "" {
		return text
	}
	return color + text + reset
}

// line is one line of the view: key identifies it, state is what must
// change for line mode to print it again, text is what is shown.
type line struct {
	key, state, text string
	color            string
}

func (l *Live) frame(lines []line) {
	width := l.o.Width
	if width <= 0 {
		width = 120
		if f, ok := l.out.(*os.File); ok {
			if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
				width = w
			}
		}
	}
	var b strings.Builder
	if l.height > 0 {
		printf(&b, cursorUp, l.height)
	}
	for _, ln := range lines {
		b.WriteString(clearLine + paint(upgradev1.Truncate(ln.text, width-1), ln.color, l.o.Color) + "\n")
	}
	b.WriteString(clearDown)
	l.height = len(lines)
	_, _ = io.WriteString(l.out, b.String())
}

func viewLines(r *Rollout, tl *Timeline, start, now time.Time) []line {
	elapsed := FormatDuration(now.Sub(start))
	u := r.Upgrade
	if u == nil {
		return []line{{key: "header", state: "waiting", text: fmt.Sprintf("Waiting for the policy controller to create TalosUpgrade %s/%s  %s", r.Namespace, r.Cluster, elapsed)}}
	}
	st := u.Status
	phase := rolloutPhase(u)
	done, total := int(st.CompletedMachines), int(st.TotalMachines)
	lines := []line{{
		key:   "header",
		state: phase + "|" + st.Progress,
		text: fmt.Sprintf("Cluster %s/%s  %s -> %s  %-22s %s %d/%d Machines  %s",
			u.Namespace, u.Spec.ClusterName, fromVersions(u), u.Spec.TalosVersion, phase, bar(done, total, 20), done, total, elapsed),
		color: bold,
	}}
	blocked := st.BlockedBy
	if blocked == "" {
		blocked = "-"
	}
	blockedColor := yellow
	if blocked == "-" {
		blockedColor = dim
	}
	lines = append(lines, line{key: "blocked", state: blocked, text: "  blocked by: " + blocked, color: blockedColor})
	if b := BypassText(u.Spec.Bypass); b != "" {
		lines = append(lines, line{key: "bypass", state: b, text: "  bypass: " + b, color: yellow})
	}
	for _, hc := range st.HealthChecks {
		text := fmt.Sprintf("  health check %s: %s", hc.Name, hc.Result)
		if hc.Result == upgradev1.HealthCheckFailed && hc.Message != "" {
			text += " (" + hc.Message + ")"
		}
		lines = append(lines, line{key: "hc/" + hc.Name, state: string(hc.Result) + "|" + hc.Message, text: text, color: resultColor(hc.Result)})
	}
	nameWidth := 18
	for _, m := range st.Machines {
		nameWidth = max(nameWidth, utf8.RuneCountInString(m.Machine))
	}
	for i := range st.Machines {
		m := &st.Machines[i]
		lines = append(lines, machineLine(m, r.Holds[m.Machine], tl, now, nameWidth))
	}
	return lines
}

func machineLine(m *upgradev1.MachineUpgradeStatus, holds []Hold, tl *Timeline, now time.Time, nameWidth int) line {
	phase := machinePhase(m)
	clock := ""
	if start, end := tl.started(m); !start.IsZero() {
		if end.IsZero() {
			end = now
		}
		clock = FormatDuration(max(end.Sub(start), 0))
	}
	text := blocker(m)
	ahead := holdsText(pendingHolds(m, holds))
	switch {
	case text == "":
		text = ahead
	case ahead != "":
		text += "; " + ahead
	}
	return line{
		key:   "m/" + m.Machine,
		state: phase + "|" + m.Message + "|" + strings.Join(m.HeldBy, ",") + "|" + ahead,
		text: fmt.Sprintf("  %-*s %-13s %-26s %s %7s  %s", nameWidth, m.Machine, roleName(m.Role), phase,
			bar(step(m), len(machineSteps), 12), clock, text),
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
func step(m *upgradev1.MachineUpgradeStatus) int {
	current := string(m.Phase)
	switch m.Phase {
	case upgradev1.MachinePhasePending, upgradev1.MachinePhaseFailed, "":
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
