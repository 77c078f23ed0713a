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
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Fleet is what the tree shows: policies and their Clusters.
type Fleet struct {
	// Policies are shown in this order.
	Policies []PolicyTree
}

// PolicyTree is a policy and the rollouts of its Clusters.
type PolicyTree struct {
	// Namespace and Name name the policy.
	Namespace, Name string

	// Policy is the policy; nil when Clusters or rollouts name a policy
	// that does not exist.
	Policy *upgradev1.TalosUpgradePolicy

	// Rollouts are the policy's Clusters, shown in this order: those that
	// carry its label and those whose TalosUpgrade comes from it.
	Rollouts []Rollout
}

// TreeOptions configures WriteTree.
type TreeOptions struct {
	// AllNamespaces adds a NAMESPACE column.
	AllNamespaces bool

	// Grouping shows the Completed Machines of a Cluster on one line, and
	// its Pending ones on another, when nothing about them needs a look
	// (no hold present, no failed hook, no message); every other Machine
	// gets its own line.
	Grouping bool

	// Color colours the PHASE column. Leave it off when the output is not
	// a terminal.
	Color bool

	// Width cuts every line to that many characters when positive (a
	// terminal's width); a MESSAGE is never cut otherwise.
	Width int
}

// treeColumns are the columns of the tree, after NAMESPACE.
var treeColumns = []string{"NAME", "ROLE", "VERSION", "PHASE", "DONE", "SINCE", "MESSAGE"}

// Column indexes of a node's cells.
const (
	colName = iota
	colRole
	colVersion
	colPhase
	colDone
	colSince
	colMessage
)

// node is one line of the tree and the lines below it.
type node struct {
	namespace string
	cells     [7]string
	color     string
	children  []*node
}

// WriteTree writes the fleet as a tree, like clusterctl describe cluster:
// a line per policy, below it a line per Cluster with its rollout's phase,
// progress and blocker, below each Cluster its bypass, health checks and
// Machines (phase, time in the phase, what it waits for, the holds ahead of
// it), and below a Machine the hooks that did not succeed; then the
// Machines CAPI deletes that Tollgate holds or released.
func WriteTree(out io.Writer, f Fleet, now time.Time, o TreeOptions) {
	roots := make([]*node, 0, len(f.Policies))
	for i := range f.Policies {
		roots = append(roots, policyNode(&f.Policies[i], now, o))
	}
	writeNodes(out, roots, o)
}

func policyNode(p *PolicyTree, now time.Time, o TreeOptions) *node {
	n := &node{namespace: p.Namespace}
	n.cells[colName] = "TalosUpgradePolicy/" + p.Name
	if p.Policy == nil {
		n.cells[colPhase], n.color = "NotFound", red
		n.cells[colMessage] = fmt.Sprintf("TalosUpgradePolicy %q does not exist in namespace %q: its Clusters start no rollout", p.Name, p.Namespace)
	} else {
		pol := p.Policy
		n.cells[colVersion] = pol.Spec.TalosVersion
		n.cells[colPhase], n.cells[colMessage], n.color = policyState(pol)
		counts := pol.Status.Clusters
		n.cells[colDone] = fmt.Sprintf("%d/%d", counts.Completed, counts.Selected)
		n.cells[colSince] = formatAge(lastTransition(pol.Status.Conditions), now)
		if b := BypassText(pol.Spec.Bypass); b != "" {
			n.children = append(n.children, bypassNode(b))
		}
	}
	for i := range p.Rollouts {
		n.children = append(n.children, clusterNode(&p.Rollouts[i], now, o))
	}
	return n
}

// policyState is the phase, message and colour of a policy's line: its
// pause, else the first of its conditions that says something is wrong
// (Ready, then the others, such as Admitting), else how its rollouts are
// doing (RolloutCompleted).
func policyState(p *upgradev1.TalosUpgradePolicy) (phase, message, color string) {
	if p.Spec.Paused {
		return "Paused", "spec.paused: no rollout of the policy starts a Machine", yellow
	}
	var ready, completed, other *metav1.Condition
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		switch {
		case c.Type == upgradev1.PolicyReadyCondition:
			ready = c
		case c.Type == upgradev1.PolicyRolloutCompletedCondition:
			completed = c
		case other == nil && c.Status == metav1.ConditionFalse:
			other = c
		}
	}
	switch {
	case ready != nil && ready.Status == metav1.ConditionFalse:
		return ready.Reason, ready.Message, red
	case other != nil:
		return other.Reason, other.Message, yellow
	case completed == nil:
		return "Pending", "", dim
	case completed.Status == metav1.ConditionTrue:
		return "Completed", completed.Message, green
	case completed.Reason == upgradev1.RolloutFailedReason:
		return "Failed", completed.Message, red
	case completed.Reason == upgradev1.RolloutInProgressReason:
		return "InProgress", completed.Message, cyan
	}
	return completed.Reason, completed.Message, dim
}

func bypassNode(text string) *node {
	n := &node{color: yellow}
	n.cells[colName], n.cells[colPhase], n.cells[colMessage] = "Bypass", "Active", text
	return n
}

func clusterNode(r *Rollout, now time.Time, o TreeOptions) *node {
	n := &node{}
	n.cells[colName] = "Cluster/" + r.Cluster
	u := r.Upgrade
	if u == nil {
		n.cells[colPhase], n.color = "NoRollout", dim
		n.cells[colMessage] = "no TalosUpgrade yet: the policy controller creates it once the policy exists and is valid"
		return n
	}
	phase := rolloutPhase(u)
	n.cells[colVersion] = u.Spec.TalosVersion
	switch from := fromVersions(u); {
	case len(u.Status.Machines) == 0:
	case from == u.Spec.TalosVersion && nodeChange(u) != "":
		n.cells[colVersion] = u.Spec.TalosVersion + " (" + nodeChange(u) + ")"
	default:
		n.cells[colVersion] = from + " -> " + u.Spec.TalosVersion
	}
	n.cells[colPhase], n.color = phase, rolloutColor(u.Status.Phase)
	n.cells[colDone] = u.Status.Progress
	n.cells[colSince] = formatAge(lastTransition(u.Status.Conditions), now)
	n.cells[colMessage] = u.Status.BlockedBy
	if u.Spec.Cancel && u.Status.BlockedBy == "" && !u.Finished() {
		n.cells[colMessage] = "cancelled: Machines already started finish"
	}
	if u.Name != r.Cluster {
		n.cells[colName] += " (TalosUpgrade " + u.Name + ")"
	}
	if b := BypassText(u.Spec.Bypass); b != "" {
		n.children = append(n.children, bypassNode(b))
	}
	for _, hc := range u.Status.HealthChecks {
		c := &node{color: resultColor(hc.Result)}
		c.cells[colName] = "HealthCheck/" + hc.Name
		c.cells[colPhase] = string(hc.Result)
		if hc.LastTransitionTime != nil {
			c.cells[colSince] = formatAge(hc.LastTransitionTime.Time, now)
		}
		if hc.Result != upgradev1.HealthCheckPassed {
			c.cells[colMessage] = hc.Message
		}
		n.children = append(n.children, c)
	}
	n.children = append(n.children, conditionNodes(u, now)...)
	n.children = append(n.children, targetNodes(u)...)
	n.children = append(n.children, machineNodes(u, r.Holds, now, o)...)
	n.children = append(n.children, removalNodes(u, now)...)
	return n
}

// removalNodes are the lines of the Machines CAPI deletes that Tollgate's
// deletion hook holds or released, with their cause and, below each, its
// preRemoval hooks.
func removalNodes(u *upgradev1.TalosUpgrade, now time.Time) []*node {
	nodes := make([]*node, 0, len(u.Status.Removals))
	for i := range u.Status.Removals {
		r := &u.Status.Removals[i]
		n := &node{color: yellow}
		if r.Phase == upgradev1.RemovalPhaseReleased {
			n.color = dim
		}
		n.cells[colName] = "Removal/" + r.Machine
		n.cells[colRole] = r.Group
		n.cells[colPhase] = string(r.Phase) + ":" + string(r.Cause)
		n.cells[colSince] = formatAge(r.StartTime.Time, now)
		if r.ReleaseTime != nil {
			n.cells[colSince] = formatAge(r.ReleaseTime.Time, now)
		}
		n.cells[colMessage] = r.Message
		for _, h := range r.Hooks {
			c := &node{color: hookColor(h.Phase)}
			c.cells[colName] = fmt.Sprintf("Hook/%s (%s)", h.Name, h.Point)
			c.cells[colPhase] = string(h.Phase)
			c.cells[colDone] = Plural(int(h.Attempts), "run")
			c.cells[colMessage] = h.Message
			n.children = append(n.children, c)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// targetNodes are the lines of status.targets: for each object of the
// Cluster that makes Machines, the version they go to (after the hop of its
// upgrade path they go to now, if any), where it was written and how many
// run it; shown once an object declares a version.
func targetNodes(u *upgradev1.TalosUpgrade) []*node {
	nodes := make([]*node, 0, len(u.Status.Targets))
	for _, t := range u.Status.Targets {
		n := &node{color: green}
		if t.Message != "" {
			n.color = yellow
		}
		n.cells[colName] = "Target/" + t.Kind + "/" + t.Name
		n.cells[colVersion] = t.TalosVersion
		if t.Hop != "" {
			// On the way, through the object's upgrade path.
			n.cells[colVersion] = t.Hop + "→" + t.TalosVersion
		}
		n.cells[colPhase] = string(t.Source)
		n.cells[colDone] = fmt.Sprintf("%d/%d", t.OnTarget, t.Machines)
		n.cells[colMessage] = t.Message
		if t.Message == "" {
			n.cells[colMessage] = t.Field
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// conditionLines name the lines of the conditions that say what a
// rollout cannot do about the Cluster's desired state, shown while they are
// not True: the templates of new Machines that boot another version than the
// target (TemplatesOnTarget), CAPI replacing Machines instead of handing
// them to Tollgate (InPlaceUpdatesReady), and the Machines CAPI deletes
// that Tollgate holds (Removals; each has its Removal/ line too).
var conditionLines = []struct{ condition, name string }{
	{upgradev1.TemplatesOnTargetCondition, "Templates"},
	{upgradev1.InPlaceUpdatesReadyCondition, "InPlaceUpdates"},
	{upgradev1.RemovalsCondition, "Removals"},
}

// conditionNodes are the lines of conditionLines that are not True.
func conditionNodes(u *upgradev1.TalosUpgrade, now time.Time) []*node {
	var nodes []*node
	for _, l := range conditionLines {
		c := meta.FindStatusCondition(u.Status.Conditions, l.condition)
		if c == nil || c.Status == metav1.ConditionTrue {
			continue
		}
		t := &node{color: yellow}
		t.cells[colName], t.cells[colPhase], t.cells[colMessage] = l.name, c.Reason, c.Message
		t.cells[colSince] = formatAge(c.LastTransitionTime.Time, now)
		nodes = append(nodes, t)
	}
	return nodes
}

// machineNodes are the lines of a rollout's Machines, grouped when asked.
func machineNodes(u *upgradev1.TalosUpgrade, holds map[string][]Hold, now time.Time, o TreeOptions) []*node {
	machines := u.Status.Machines
	// groupOf is, for a Machine shown in a group, the group's members.
	groupOf := map[int][]int{}
	if o.Grouping {
		byPhase := map[upgradev1.MachinePhase][]int{}
		for i := range machines {
			if m := &machines[i]; quiet(m, holds[m.Machine]) {
				byPhase[m.Phase] = append(byPhase[m.Phase], i)
			}
		}
		for _, members := range byPhase {
			if len(members) > 1 {
				for _, i := range members {
					groupOf[i] = members
				}
			}
		}
	}
	var nodes []*node
	for i := range machines {
		if members, grouped := groupOf[i]; grouped {
			if members[0] == i {
				nodes = append(nodes, groupNode(machines, members))
			}
			continue
		}
		m := &machines[i]
		nodes = append(nodes, machineNode(m, holds[m.Machine], now, o))
	}
	return nodes
}

// quiet reports whether a Machine can be shown in a group: Completed (its
// message says no more than its version), or Pending with nothing to say.
func quiet(m *upgradev1.MachineUpgradeStatus, holds []Hold) bool {
	switch m.Phase {
	case upgradev1.MachinePhaseCompleted:
	case upgradev1.MachinePhasePending:
		if m.Message != "" {
			return false
		}
	default:
		return false
	}
	if len(pendingHolds(m, holds)) > 0 {
		return false
	}
	for _, h := range m.Hooks {
		if h.Phase != upgradev1.HookRunSucceeded {
			return false
		}
	}
	return true
}

// groupNode is the line of several quiet Machines in one phase.
func groupNode(machines []upgradev1.MachineUpgradeStatus, members []int) *node {
	first := &machines[members[0]]
	n := &node{color: phaseColor(first.Phase)}
	var roles, versions []string
	names := make([]string, 0, len(members))
	for _, i := range members {
		m := &machines[i]
		if r := roleName(m.Role); !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
		v := machineVersion(m)
		if m.Phase == upgradev1.MachinePhaseCompleted && (m.Action == "" || m.Action == upgradev1.MachineActionUpgrade) {
			v = m.TargetVersion
		}
		if !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
		names = append(names, m.Machine)
	}
	n.cells[colName] = fmt.Sprintf("%d Machines", len(members))
	n.cells[colRole] = strings.Join(roles, ", ")
	n.cells[colVersion] = strings.Join(versions, ", ")
	n.cells[colPhase] = machinePhase(first)
	n.cells[colMessage] = strings.Join(names, ", ")
	return n
}

func machineNode(m *upgradev1.MachineUpgradeStatus, holds []Hold, now time.Time, o TreeOptions) *node {
	n := &node{color: phaseColor(m.Phase)}
	n.cells[colName] = "Machine/" + m.Machine
	n.cells[colRole] = roleName(m.Role)
	n.cells[colVersion] = machineVersion(m)
	n.cells[colPhase] = machinePhase(m)
	switch {
	case m.CompletionTime != nil:
		n.cells[colSince] = formatAge(m.CompletionTime.Time, now)
	case m.PhaseStartTime != nil:
		n.cells[colSince] = formatAge(m.PhaseStartTime.Time, now)
	}
	msg := blocker(m)
	if ahead := holdsText(pendingHolds(m, holds)); ahead != "" {
		if msg != "" {
			msg += "; "
		}
		msg += ahead
	}
	n.cells[colMessage] = msg
	for _, h := range m.Hooks {
		if o.Grouping && h.Phase == upgradev1.HookRunSucceeded {
			continue
		}
		c := &node{color: hookColor(h.Phase)}
		c.cells[colName] = fmt.Sprintf("Hook/%s (%s)", h.Name, h.Point)
		c.cells[colPhase] = string(h.Phase)
		c.cells[colDone] = Plural(int(h.Attempts), "run")
		msg := h.Message
		if h.Phase == upgradev1.HookRunRunning && h.NextAttemptTime != nil && h.NextAttemptTime.After(now) {
			if msg != "" {
				msg += "; "
			}
			msg += "next attempt in " + h.NextAttemptTime.Sub(now).Round(time.Second).String()
		}
		c.cells[colMessage] = msg
		n.children = append(n.children, c)
	}
	return n
}

// lastTransition is the latest lastTransitionTime of conditions: when the
// object last changed state.
func lastTransition(conditions []metav1.Condition) time.Time {
	var t time.Time
	for _, c := range conditions {
		if c.LastTransitionTime.After(t) {
			t = c.LastTransitionTime.Time
		}
	}
	return t
}

// flatRow is a line of the tree, ready to be laid out.
type flatRow struct {
	cells []string
	// phase is the index of the PHASE cell, color its colour.
	phase int
	color string
}

func writeNodes(out io.Writer, roots []*node, o TreeOptions) {
	header := treeColumns
	if o.AllNamespaces {
		header = append([]string{"NAMESPACE"}, treeColumns...)
	}
	offset := len(header) - len(treeColumns)
	rows := []flatRow{{cells: header, phase: -1}}
	var walk func(n *node, prefix, childPrefix string)
	walk = func(n *node, prefix, childPrefix string) {
		cells := make([]string, 0, len(header))
		if o.AllNamespaces {
			cells = append(cells, n.namespace)
		}
		for i, c := range n.cells {
			if i == colName {
				c = prefix + c
			}
			cells = append(cells, c)
		}
		rows = append(rows, flatRow{cells: cells, phase: offset + colPhase, color: n.color})
		for i, child := range n.children {
			if i == len(n.children)-1 {
				walk(child, childPrefix+"└─", childPrefix+"  ")
			} else {
				walk(child, childPrefix+"├─", childPrefix+"│ ")
			}
		}
	}
	for _, r := range roots {
		walk(r, "", "")
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r.cells[:len(r.cells)-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		visible := 0
		for i, c := range r.cells {
			text := c
			if i < len(r.cells)-1 {
				text += strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)) + "  "
			}
			if o.Width > 0 {
				room := o.Width - visible
				if room <= 0 {
					break
				}
				text = upgradev1.Truncate(text, room)
			}
			visible += utf8.RuneCountInString(text)
			if i == r.phase && o.Color && r.color != "" {
				cut := min(len(text), len(c))
				text = r.color + text[:cut] + reset + text[cut:]
			}
			b.WriteString(text)
		}
		printLine(out, strings.TrimRight(b.String(), " "))
	}
}
