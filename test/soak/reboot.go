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

package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Invariant 13: every reboot asked for is answered, once. The soak asks
// for reboots as users do: a rolling reboot of a Cluster's nodes
// (spec.reboot.after on its policy), mid-rollout or once the rollout is
// over, and the reboot of one Machine's node (the
// upgrade.tollgate.dev/reboot-after annotation). Each asks, as the API
// says, for every node it covers that last booted at or before T (to the
// second: the request's time and the node's boot time, as its kernel keeps
// it, are both in whole seconds) to be rebooted; the soak asks for the
// second it makes the request in.
//
//   - At rest, the node of every Machine a request covers has booted after
//     T (as the simulator says), unless the Machine's record is Failed or
//     its rollout stopped (Failed or Paused: it starts nothing more). The
//     round waits for it, so a request never answered ends the round at its
//     timeout.
//   - No node reboots more than once per request: each boot of a node is
//     recorded (a poller reads every node's boot count every 100ms), and a
//     boot without an upgrade call since the boot before must answer a
//     request T the node had not answered yet (the boot before it was at or
//     before T, this one after). An upgrade's reboot answers every request
//     before it, so a node asked for a reboot and upgraded after is not
//     rebooted again.

// Reboot request kinds, played by the fleet loop.
const (
	faultRollingReboot = "policy-rolling-reboot"
	faultMachineReboot = "machine-reboot-annotation"
)

// rebootRequest is a reboot the soak asked for on a Cluster.
type rebootRequest struct {
	// after is the time asked for: the whole second the request was made
	// in.
	after time.Time
	// node is the node of the Machine whose annotation asks for it; empty
	// for a rolling reboot of every node of the Cluster.
	node, machine string
}

// covers reports whether the request asks for node's reboot.
func (r rebootRequest) covers(node string) bool {
	return r.node == "" || r.node == node
}

func (r rebootRequest) String() string {
	if r.node == "" {
		return "rolling reboot after " + r.after.Format(time.TimeOnly)
	}
	return fmt.Sprintf("reboot of Machine %s after %s", r.machine, r.after.Format(time.TimeOnly))
}

// bootLog is what the boot poller saw of one node.
type bootLog struct {
	// first is the boot time the node had when the poller first saw it,
	// and firstBoots its boot count then (zero unless the poller was late).
	first      time.Time
	firstBoots int
	// boots are the boot times of the reboots seen since, in order.
	boots []time.Time
	// missed counts the reboots the poller saw only by the count: two
	// reboots between two polls (never expected: a reboot takes the
	// simulator 600ms and Tollgate several seconds between two).
	missed int
	// staged counts, for each of boots, the configurations the node took
	// staged for its next boot since the boot before (invariant 15); modes
	// is how many apply modes the poller read so far, and pendingStaged
	// the staged ones since the last boot seen.
	staged               []int
	modes, pendingStaged int
}

// askAfter returns the time a request made now asks for: the second it is
// made in (the API keeps whole seconds).
func askAfter(now time.Time) time.Time {
	return now.Truncate(time.Second)
}

// askRollingReboot sets spec.reboot.after on the Cluster's policy: at once
// (mid-rollout), or, chosen by rng, once the rollout is over.
func (s *soak) askRollingReboot(ctx context.Context, c *soakCluster, rng *rand.Rand) error {
	mgmt := s.world.mgmt.Client
	mode := "mid-rollout"
	if rng.IntN(2) == 0 {
		mode = "once the rollout was over"
		for {
			u := &upgradev1.TalosUpgrade{}
			if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil && over(u) {
				break
			}
			if !sleep(ctx, 500*time.Millisecond) {
				return ctx.Err()
			}
		}
	}
	p := &upgradev1.TalosUpgradePolicy{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: policyName}, p); err != nil {
		return err
	}
	patch := client.MergeFrom(p.DeepCopy())
	req := rebootRequest{after: askAfter(time.Now())}
	p.Spec.Reboot.After = metav1.NewTime(req.after)
	c.noteReboot(req)
	if err := mgmt.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("asking for a rolling reboot on TalosUpgradePolicy %s/%s: %w", c.ns, policyName, err)
	}
	s.cfg.Logf("Fleet: rolling reboot of %s/%s asked for (%s): every node booted at or before %s", c.ns, c.name, mode, req.after.Format(time.TimeOnly))
	return nil
}

// askMachineReboot annotates a Machine of the Cluster, picked by rng, with
// upgrade.tollgate.dev/reboot-after. On a Cluster whose MachineDeployment's
// template the soak changes, CAPI replaces every worker, and the request
// would go with its Machine unanswered: a control-plane Machine is picked
// there.
func (s *soak) askMachineReboot(ctx context.Context, c *soakCluster, rng *rand.Rand) error {
	mgmt := s.world.mgmt.Client
	machines := &clusterv1.MachineList{}
	if err := mgmt.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		return err
	}
	var candidates []*clusterv1.Machine
	for i := range machines.Items {
		m := &machines.Items[i]
		_, killed := c.killedAt(m.Status.NodeRef.Name)
		if m.DeletionTimestamp.IsZero() && m.Status.NodeRef.Name != "" && !killed && c.sim.Node(m.Status.NodeRef.Name) != nil {
			candidates = append(candidates, m)
		}
	}
	if len(candidates) == 0 {
		return errors.New("no Machine with a node to reboot")
	}
	if c.scripted(faultMDRollout) {
		if cps := slices.DeleteFunc(slices.Clone(candidates), func(m *clusterv1.Machine) bool { return workerOf(c, m) }); len(cps) > 0 {
			candidates = cps
		}
	}
	m := candidates[rng.IntN(len(candidates))]
	req := rebootRequest{after: askAfter(time.Now()), node: m.Status.NodeRef.Name, machine: m.Name}
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[upgradev1.RebootAfterAnnotation] = req.after.UTC().Format(time.RFC3339)
	c.noteReboot(req)
	if err := mgmt.Patch(ctx, m, patch); err != nil {
		return fmt.Errorf("asking for the reboot of Machine %s/%s: %w", c.ns, m.Name, err)
	}
	s.cfg.Logf("Fleet: reboot of Machine %s/%s (node %s) asked for: booted at or before %s", c.ns, m.Name, req.node, req.after.Format(time.TimeOnly))
	return nil
}

// scripted reports whether a fleet event of kind is scripted for the
// Cluster.
func (c *soakCluster) scripted(kind string) bool {
	return slices.Contains(c.fleet, kind)
}

func (c *soakCluster) noteReboot(req rebootRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reboots = append(c.reboots, req)
}

// rebootRequests returns the reboots asked for on the Cluster.
func (c *soakCluster) rebootRequests() []rebootRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reboots)
}

// bootPollPeriod is how often the boot poller reads the nodes' boot counts
// (in memory: cheap).
const bootPollPeriod = 100 * time.Millisecond

// pollBoots records every boot of the Clusters' nodes until ctx ends.
func (s *soak) pollBoots(ctx context.Context, clusters []*soakCluster) {
	for {
		for _, c := range clusters {
			c.pollBoots()
		}
		if !sleep(ctx, bootPollPeriod) {
			return
		}
	}
}

func (c *soakCluster) pollBoots() {
	nodes := c.sim.Nodes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bootLogs == nil {
		c.bootLogs = map[string]*bootLog{}
	}
	for _, n := range nodes {
		// The count first: a boot counted has its boot time set. The apply
		// modes after it: a configuration staged between two polls before
		// a boot is the boot's; one staged just after a boot, in the same
		// poll, is taken for the boot's too (Tollgate stages nothing for
		// seconds after a boot: the node must be Ready and drained again).
		boots := n.Boots()
		at := n.BootTime()
		modes := n.ApplyModes()
		c.pollKubernetesLocked(n, at)
		l := c.bootLogs[n.Name()]
		if l == nil {
			c.bootLogs[n.Name()] = &bootLog{first: at, firstBoots: boots, modes: len(modes)}
			continue
		}
		for _, m := range modes[min(l.modes, len(modes)):] {
			if m == stagedMode {
				l.pendingStaged++
			}
		}
		l.modes = len(modes)
		seen := l.firstBoots + len(l.boots) + l.missed
		if boots <= seen {
			continue
		}
		l.missed += boots - seen - 1
		l.boots = append(l.boots, at)
		l.staged = append(l.staged, l.pendingStaged)
		l.pendingStaged = 0
	}
}

// stagedMode is the apply mode of a configuration staged for the node's
// next boot, as the simulator records it.
const stagedMode = "STAGED"

// bootLogsCopy returns a copy of the boot logs of the Cluster's nodes.
func (c *soakCluster) bootLogsCopy() map[string]bootLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	logs := make(map[string]bootLog, len(c.bootLogs))
	for node, l := range c.bootLogs {
		cp := *l
		cp.boots, cp.staged = slices.Clone(l.boots), slices.Clone(l.staged)
		logs[node] = cp
	}
	return logs
}

// nodeUpgrades returns when the node was upgraded: an upgrade call it
// received, or an upgrade intent Tollgate recorded for it (u is the
// Cluster's TalosUpgrade): a controller killed between the intent and the
// call reboots the node into its old version without a call it received,
// and fails the Machine (the documented ambiguity, see explainFailure).
func (c *soakCluster) nodeUpgrades(node string, u *upgradev1.TalosUpgrade) []time.Time {
	var upgrades []time.Time
	for _, call := range c.sim.CallLog() {
		if call.Node == node && (call.RPC == talossim.RPCUpgrade || call.RPC == talossim.RPCLegacyUpgrade) {
			upgrades = append(upgrades, call.Time)
		}
	}
	for _, st := range u.Status.Machines {
		if st.Node == node && st.UpgradeRequestedTime != nil && st.Action != upgradev1.MachineActionReboot && st.Action != upgradev1.MachineActionConfigure {
			upgrades = append(upgrades, st.UpgradeRequestedTime.Time)
		}
	}
	return upgrades
}

// rebootAnswered reports whether the node booted after the request: in a
// later second than the one asked for.
func rebootAnswered(n *talossim.Node, req rebootRequest) bool {
	return n.BootTime().After(req.after)
}

// unansweredReboots lists the requests of the Cluster not answered yet on
// the nodes of its Machines present (and not deleting), but for the
// Machines whose record is Failed and every Machine of a stopped rollout
// (Failed or Paused); u is the Cluster's TalosUpgrade.
func (s *soak) unansweredReboots(ctx context.Context, c *soakCluster, u *upgradev1.TalosUpgrade) ([]string, error) {
	reqs := c.rebootRequests()
	if len(reqs) == 0 || u.Status.Phase == upgradev1.UpgradePhaseFailed || u.Status.Phase == upgradev1.UpgradePhasePaused {
		return nil, nil
	}
	machines := &clusterv1.MachineList{}
	if err := s.world.mgmt.Client.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		return nil, err
	}
	failed := map[string]bool{}
	records := map[string]upgradev1.MachineUpgradeStatus{}
	for _, st := range u.Status.Machines {
		failed[st.Machine] = st.Phase == upgradev1.MachinePhaseFailed
		records[st.Machine] = st
	}
	var out []string
	for i := range machines.Items {
		m := &machines.Items[i]
		n := c.sim.Node(m.Status.NodeRef.Name)
		if !m.DeletionTimestamp.IsZero() || n == nil || failed[m.Name] {
			continue
		}
		for _, req := range reqs {
			if req.covers(n.Name()) && !rebootAnswered(n, req) {
				out = append(out, fmt.Sprintf("Machine %s/%s: node %s last booted at %s, not after the %s (rollout %s; record: %s)",
					c.ns, m.Name, n.Name(), n.BootTime().Format(timeMillis), req, u.Status.Phase, describeReboot(records[m.Name])))
			}
		}
	}
	return out, nil
}

// describeReboot says what a record says of a reboot, for a message.
func describeReboot(st upgradev1.MachineUpgradeStatus) string {
	if st.Machine == "" {
		return "none"
	}
	msg := fmt.Sprintf("action %q, phase %s %s", st.Action, st.Phase, st.HoldPoint)
	if st.RebootAfter != nil {
		msg += ", rebootAfter " + st.RebootAfter.UTC().Format(time.RFC3339)
	}
	if st.BootTime != nil {
		msg += ", bootTime " + st.BootTime.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s: %q", msg, st.Message)
}

// judgeReboots checks invariant 13 on every Cluster of the round, once its
// rollouts are over.
func (s *soak) judgeReboots(ctx context.Context, clusters []*soakCluster) {
	for _, c := range clusters {
		c.pollBoots()
		reqs := c.rebootRequests()
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
			s.violation(13, "%s: reading the TalosUpgrade: %v", c.ns, err)
			continue
		}
		left, err := s.unansweredReboots(ctx, c, u)
		if err != nil {
			s.violation(13, "%s: %v", c.ns, err)
		}
		for _, l := range left {
			s.violation(13, "reboot asked for and not answered at rest: %s", l)
		}
		s.judgeBoots(c, reqs, u)
		s.describeReboots(c, reqs, u)
	}
}

// judgeBoots checks that every reboot of the Cluster's nodes without an
// upgrade since the boot before (see nodeUpgrades) answers a request the
// node had not answered yet, or takes a configuration staged for it since
// the boot before (invariant 15 judges those).
func (s *soak) judgeBoots(c *soakCluster, reqs []rebootRequest, u *upgradev1.TalosUpgrade) {
	for node, l := range c.bootLogsCopy() {
		if l.missed > 0 {
			s.cfg.Logf("Reboots: the boot poller missed %d reboot(s) of node %s/%s; its reboots are not judged", l.missed, c.ns, node)
			continue
		}
		var asked []time.Time
		for _, req := range reqs {
			if req.covers(node) {
				asked = append(asked, req.after)
				s.check(13)
			}
		}
		for _, b := range excessBoots(l, asked, c.nodeUpgrades(node, u)) {
			if b.i < len(l.staged) && l.staged[b.i] > 0 {
				continue // For a configuration: invariant 15.
			}
			s.violation(13, "%s: node %s rebooted at %s (it booted at %s before) without an upgrade, answering no reboot it had not answered yet (asked for: %v)",
				c.ns, node, b.at.Format(timeMillis), b.before.Format(timeMillis), reqs)
		}
	}
}

// boot is one reboot of a node, the i-th of its bootLog, and the boot
// before it.
type boot struct {
	before, at time.Time
	i          int
}

// excessBoots returns the reboots of a node that no upgrade made (no
// upgrade call since the boot before) and that answer no reboot asked for
// (after) that the node had not answered yet: the boot before it was at or
// before the time asked for, and it is after it. Boot times are kept to the
// second, and the times asked for are whole seconds.
func excessBoots(l bootLog, after, upgrades []time.Time) []boot {
	var out []boot
	before := l.first
	for i, at := range l.boots {
		// The boot before was at before or within the second after it, and
		// this one within the second after at.
		upgraded := upgradedBetween(upgrades, before, at)
		answers := slices.ContainsFunc(after, func(t time.Time) bool {
			return !before.After(t) && at.After(t)
		})
		if !upgraded && !answers {
			out = append(out, boot{before: before, at: at, i: i})
		}
		before = at
	}
	return out
}

// upgradedBetween reports whether an upgrade was made since the boot
// before and before the boot at, both kept to the second: at or after
// before, and before the second after at.
func upgradedBetween(upgrades []time.Time, before, at time.Time) bool {
	return slices.ContainsFunc(upgrades, func(call time.Time) bool {
		return !call.Before(before) && call.Before(at.Add(time.Second))
	})
}

// describeReboots logs how each request of the Cluster was answered: how
// many nodes it covers booted after it, by a Reboot or by an upgrade.
func (s *soak) describeReboots(c *soakCluster, reqs []rebootRequest, u *upgradev1.TalosUpgrade) {
	calls := c.sim.CallLog()
	for _, req := range reqs {
		covered, answered, upgraded := 0, 0, 0
		for _, n := range c.sim.Nodes() {
			if !req.covers(n.Name()) {
				continue
			}
			covered++
			if !rebootAnswered(n, req) {
				continue
			}
			answered++
			if slices.ContainsFunc(calls, func(call talossim.Call) bool {
				return call.Node == n.Name() && (call.RPC == talossim.RPCUpgrade || call.RPC == talossim.RPCLegacyUpgrade) && !call.Time.Before(req.after)
			}) {
				upgraded++
			}
		}
		s.cfg.Logf("Reboots: %s/%s: the %s: %d of %d nodes booted after it, %d of them upgraded since (rollout %s)", c.ns, c.name, req, answered, covered, upgraded, u.Status.Phase)
	}
}
