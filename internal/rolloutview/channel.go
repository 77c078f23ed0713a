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
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
)

// ChannelOptions configure WriteChannel.
type ChannelOptions struct {
	// Versions is how many versions get a column, newest first; 3 when
	// zero.
	Versions int
	// Width cuts the lines above the table to the terminal's width; 0
	// leaves them whole.
	Width int
}

// WriteChannel draws a ReleaseChannel's pipeline: a line naming the
// channel and what the newest version waits for, the stages in their
// order (stages side by side in braces), then a table of the stages: their
// Clusters, the version they are granted and, for each of the latest
// versions, where it stands there (Rolling 1/3, Soaking until 14:05 with
// the analysis so far, WaitingForApproval, Passed, Failed). Times are
// those of now's zone.
func WriteChannel(w io.Writer, ch *upgradev1.ReleaseChannel, now time.Time, o ChannelOptions) {
	if o.Versions <= 0 {
		o.Versions = 3
	}
	source := "versions"
	if f := ch.Spec.Follow; f != nil {
		source = fmt.Sprintf("follows %s releases of %s", f.Allow, orDefault(f.Repository, "ghcr.io/siderolabs/installer"))
	}
	supersede := ch.Spec.Supersede
	if supersede == "" {
		supersede = upgradev1.SupersedeHalted
	}
	head := fmt.Sprintf("ReleaseChannel %s (%s, supersede %s)", ch.Name, source, supersede)
	if ch.Spec.Paused {
		head += " PAUSED"
	}
	_, _ = fmt.Fprintln(w, cut(head, o.Width))
	if c := findCondition(ch.Status.Conditions, upgradev1.ChannelPromotingCondition); c != nil {
		_, _ = fmt.Fprintln(w, cut(fmt.Sprintf("  %s: %s", c.Reason, c.Message), o.Width))
	}
	if c := findCondition(ch.Status.Conditions, upgradev1.ChannelReadyCondition); c != nil && c.Status != "True" {
		_, _ = fmt.Fprintln(w, cut(fmt.Sprintf("  Not ready (%s): %s", c.Reason, c.Message), o.Width))
	}
	graph, err := channel.NewGraph(ch.Spec.Stages)
	if err != nil {
		_, _ = fmt.Fprintf(w, "  %v\n", err)
		return
	}
	_, _ = fmt.Fprintln(w, cut("  "+pipeline(graph), o.Width))
	_, _ = fmt.Fprintln(w)

	versions := latestVersions(ch.Status.Versions, o.Versions)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	cols := []string{"STAGE", "AFTER", "CLUSTERS", "GRANTED"}
	for _, v := range versions {
		cols = append(cols, fmt.Sprintf("%s (%s)", v.Name, v.Phase))
	}
	_, _ = fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, name := range graph.Order {
		st := stageStatus(ch, name)
		row := []string{name, orDash(strings.Join(graph.After[name], ",")), fmt.Sprintf("%d/%d", st.OnVersion, st.Clusters), orDash(st.Version)}
		for _, v := range versions {
			row = append(row, StageCell(v, name, now))
		}
		_, _ = fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

// pipeline draws the order of the stages: lab → dev → {eu, us} → prod.
func pipeline(g channel.Graph) string {
	parts := make([]string, 0, len(g.Order))
	for _, layer := range g.Layers() {
		if len(layer) == 1 {
			parts = append(parts, layer[0])
			continue
		}
		parts = append(parts, "{"+strings.Join(layer, ", ")+"}")
	}
	return strings.Join(parts, " → ")
}

// latestVersions returns the n latest versions, newest first.
func latestVersions(all []upgradev1.ChannelVersionStatus, n int) []*upgradev1.ChannelVersionStatus {
	var out []*upgradev1.ChannelVersionStatus
	for i := len(all) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, &all[i])
	}
	return out
}

// stageStatus returns the summary of a stage.
func stageStatus(ch *upgradev1.ReleaseChannel, name string) upgradev1.ChannelStageStatus {
	for _, s := range ch.Status.Stages {
		if s.Name == name {
			return s
		}
	}
	return upgradev1.ChannelStageStatus{Name: name}
}

// StageCell says where a version stands in a stage, in a few words: a cell
// of WriteChannel's table, and a line of make demo's channel flavour.
func StageCell(v *upgradev1.ChannelVersionStatus, stage string, now time.Time) string {
	var rec *upgradev1.VersionStageStatus
	for i := range v.Stages {
		if v.Stages[i].Stage == stage {
			rec = &v.Stages[i]
		}
	}
	if rec == nil {
		return "-"
	}
	clock := func(t time.Time) string { return t.In(now.Location()).Format(time.TimeOnly) }
	switch rec.Phase {
	case upgradev1.StageRolling:
		return fmt.Sprintf("Rolling %d/%d", rec.Clusters.Completed, rec.Clusters.Total)
	case upgradev1.StageSoaking:
		s := "Soaking until " + clock(rec.SoakUntil.Time)
		if a := rec.Analysis; a != nil {
			s += " (" + measured(a) + ")"
		}
		return s
	case upgradev1.StageWaitingForApproval:
		s := "WaitingForApproval " + formatAge(rec.Approval.WaitingSince.Time, now)
		if e := rec.Approval.ExpiresTime; e != nil {
			s += ", refused at " + clock(e.Time)
		}
		return s
	case upgradev1.StagePassed:
		s := "Passed " + clock(rec.PassedTime.Time)
		if a := rec.Approval; a != nil && a.RequestedBy != "" {
			s += " (approved by " + a.RequestedBy + ")"
		} else if rec.Analysis != nil {
			s += " (" + measured(rec.Analysis) + ")"
		}
		return s
	case upgradev1.StageFailed:
		return "Failed: " + upgradev1.Truncate(rec.Message, 60)
	}
	return "Pending: " + upgradev1.Truncate(rec.Message, 40)
}

// measured sums an analysis up: "4 measured, 0 failed".
func measured(a *upgradev1.AnalysisStatus) string {
	var n, failed int32
	for _, m := range append(append([]upgradev1.MeasurementStatus(nil), a.Queries...), a.HealthChecks...) {
		n, failed = n+m.Measurements, failed+m.Failures
	}
	return fmt.Sprintf("%d measured, %d failed", n, failed)
}

// findCondition returns the condition of type t, or nil.
func findCondition(conditions []metav1.Condition, t string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// cut cuts a line to width, when it is set.
func cut(s string, width int) string {
	return upgradev1.Truncate(s, width)
}
