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
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
)

// Invariant 15: a machine configuration change of the control plane passes
// the gate and is brought once. Every Cluster's TalosControlPlane rolls out
// OnDelete, so that a change of its patches replaces no Machine and Tollgate
// brings it to the nodes in place. The soak changes the patches as a user's
// GitOps does (a merge patch of the TalosControlPlane in the management
// apiserver), mid-rollout or once the rollout is over: a sysctl with a new
// value each time (Talos applies it without a reboot), a new file (Talos
// takes it only at a boot), and now and then a change of the pod network,
// which no running node may take (NotInPlace); once Tollgate said so, the
// user takes it back or leaves it.
//
//   - At rest, the node of every control-plane Machine present runs the
//     TalosControlPlane's current patches (machineconfig.Converged on the
//     configuration the simulator runs), unless its record is Failed or its
//     rollout stopped (Failed or Paused: it starts nothing more). No node
//     runs the refused change, whatever the rollout's phase, taken back or
//     not (a configuration taken is never undone); while it is among the
//     patches, the rollout's MachineConfigs condition is False with reason
//     NotInPlace (unless the rollout stopped), and it must say so before
//     the user takes it back. The round waits for it, as for the reboots
//     asked for.
//   - A boot for a configuration is one after a configuration staged for
//     the next boot (the boot poller reads each node's apply modes) with no
//     upgrade since the boot before: a node has at most one such boot per
//     change that needs one made before it. A change Talos applies without
//     a reboot is never staged but with an upgrade, so a node that got only
//     those has no such boot; and any other boot no upgrade made must answer
//     a reboot asked for (invariant 13).
//
// Invariant 1 counts a Configure record's disruptions as any other: its
// node is cordoned, and NotReady while it reboots.

// Configuration change kinds, played by the fleet loop.
const (
	faultConfigNoReboot = "controlplane-config-no-reboot"
	faultConfigReboot   = "controlplane-config-reboot"
	faultConfigRefused  = "controlplane-config-refused"
)

// configFaults are the configuration changes among the fleet events.
var configFaults = []string{faultConfigNoReboot, faultConfigReboot, faultConfigRefused}

// refusedPatch changes the pod network, which no running node may take:
// Tollgate refuses the patches with it (NotInPlace), and applies nothing of
// them.
const refusedPatch = "cluster:\n  network:\n    podSubnets:\n      - 10.250.0.0/16\n"

// sysctlPatch sets a sysctl, which Talos applies without a reboot.
func sysctlPatch(value int) string {
	return fmt.Sprintf("machine:\n  sysctls:\n    net.core.somaxconn: \"%d\"\n", value)
}

// filePatch adds a file, which Talos takes only at a boot; each revision is
// another file, so each is a change.
func filePatch(rev int) string {
	return fmt.Sprintf("machine:\n  files:\n    - content: soak revision %d\n      permissions: 0o644\n      path: /var/etc/soak/revision-%d\n      op: create\n", rev, rev)
}

// configChange is a change of the control plane's patches the soak made.
type configChange struct {
	// kind is one of configFaults; withdrawn is set for the change that
	// took the refused patch back.
	kind      string
	withdrawn bool
	at        time.Time
}

// cpConfig is what the soak set in a Cluster's TalosControlPlane patches.
type cpConfig struct {
	// sysctl is the sysctl's value, zero for none; file the file's
	// revision, zero for none; refused whether refusedPatch is among them.
	sysctl, file int
	refused      bool
	// changes are the changes made, in order.
	changes []configChange
}

// strategicPatches are the TalosControlPlane's strategicPatches for cfg.
func (cfg cpConfig) strategicPatches() []string {
	out := []string{}
	if cfg.sysctl > 0 {
		out = append(out, sysctlPatch(cfg.sysctl))
	}
	if cfg.file > 0 {
		out = append(out, filePatch(cfg.file))
	}
	if cfg.refused {
		out = append(out, refusedPatch)
	}
	return out
}

// rebootChangesBefore counts the changes that need a reboot made before t.
func (cfg cpConfig) rebootChangesBefore(t time.Time) int {
	n := 0
	for _, ch := range cfg.changes {
		if ch.kind == faultConfigReboot && ch.at.Before(t) {
			n++
		}
	}
	return n
}

// configState returns what the soak set in the Cluster's patches.
func (c *soakCluster) configState() cpConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg := c.config
	cfg.changes = slices.Clone(cfg.changes)
	return cfg
}

// refusedReportTimeout bounds the wait for Tollgate to say that a refused
// change is not applied, before the user takes it back.
const refusedReportTimeout = 90 * time.Second

// changeConfig changes the patches of the Cluster's TalosControlPlane as
// kind says: at once (mid-rollout), or, chosen by rng, once the rollout is
// over (0 to 5s after, so that the changes of one Cluster spread); a sysctl
// or a file once or twice, 2 to 6s apart. A refused change is taken back,
// chosen by rng, once Tollgate said it is refused.
func (s *soak) changeConfig(ctx context.Context, c *soakCluster, kind string, rng *rand.Rand) error {
	mode := "mid-rollout"
	if rng.IntN(2) == 0 {
		mode = "once the rollout was over"
		if err := s.waitOver(ctx, c); err != nil {
			return err
		}
		if !sleep(ctx, time.Duration(rng.Int64N(int64(5*time.Second)))) {
			return ctx.Err()
		}
	}
	times := 1
	if kind != faultConfigRefused {
		times += rng.IntN(2)
	}
	for i := range times {
		if i > 0 && !sleep(ctx, 2*time.Second+time.Duration(rng.Int64N(int64(4*time.Second)))) {
			return ctx.Err()
		}
		if err := s.changeConfigOnce(ctx, c, kind, mode, rng); err != nil {
			return err
		}
	}
	if kind != faultConfigRefused || rng.IntN(2) == 0 {
		return nil
	}
	if !s.waitRefusalSaid(ctx, c) {
		s.cfg.Logf("Fleet: %s/%s: the refused change is left in place: Tollgate did not say it is refused within %s (invariant 15 judges it at rest)", c.ns, c.name, refusedReportTimeout)
		return nil
	}
	s.check(15) // Said before it is taken back: judged here, not at rest.
	if err := s.patchControlPlane(context.WithoutCancel(ctx), c, func(cfg *cpConfig) configChange {
		cfg.refused = false
		return configChange{kind: kind, withdrawn: true}
	}); err != nil {
		return err
	}
	s.cfg.Logf("Fleet: the refused change of %s/%s taken back once Tollgate said NotInPlace", c.ns, c.name)
	return nil
}

// changeConfigOnce makes one change of kind in the Cluster's patches.
func (s *soak) changeConfigOnce(ctx context.Context, c *soakCluster, kind, mode string, rng *rand.Rand) error {
	var what string
	err := s.patchControlPlane(ctx, c, func(cfg *cpConfig) configChange {
		switch kind {
		case faultConfigNoReboot:
			cfg.sysctl = 1024 + rng.IntN(60000)
			what = fmt.Sprintf("sysctl net.core.somaxconn=%d (no reboot)", cfg.sysctl)
		case faultConfigReboot:
			cfg.file++
			what = fmt.Sprintf("file revision %d (a reboot)", cfg.file)
		case faultConfigRefused:
			cfg.refused = true
			what = "pod subnet (refused: not in place)"
		}
		return configChange{kind: kind}
	})
	if err != nil {
		return err
	}
	s.cfg.Logf("Fleet: the control plane's patches of %s/%s changed (%s): %s", c.ns, c.name, mode, what)
	return nil
}

// waitOver waits until the Cluster's rollout is over.
func (s *soak) waitOver(ctx context.Context, c *soakCluster) error {
	for {
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil && over(u) {
			return nil
		}
		if !sleep(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// waitRefusalSaid waits, for refusedReportTimeout, until the Cluster's
// rollout says that its control plane's patches are not applied.
func (s *soak) waitRefusalSaid(ctx context.Context, c *soakCluster) bool {
	deadline := time.Now().Add(refusedReportTimeout)
	for time.Now().Before(deadline) {
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil && notInPlaceSaid(u) {
			return true
		}
		if !sleep(ctx, 500*time.Millisecond) {
			return false
		}
	}
	return false
}

// notInPlaceSaid reports whether the rollout's MachineConfigs condition
// says that patches are not applied in place.
func notInPlaceSaid(u *upgradev1.TalosUpgrade) bool {
	cond := conditions.Get(u, upgradev1.MachineConfigsCondition)
	return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == upgradev1.MachineConfigNotInPlaceReason
}

// patchControlPlane changes what the soak set in the Cluster's patches with
// change, notes the change, and writes the patches in the Cluster's
// TalosControlPlane with a merge patch, as a user's GitOps does. Changes of
// one Cluster are made one at a time.
func (s *soak) patchControlPlane(ctx context.Context, c *soakCluster, change func(*cpConfig) configChange) error {
	mgmt := s.world.mgmt.Client
	cluster := &clusterv1.Cluster{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cluster); err != nil {
		return fmt.Errorf("reading Cluster %s/%s: %w", c.ns, c.name, err)
	}
	ref := cluster.Spec.ControlPlaneRef
	c.configMu.Lock()
	defer c.configMu.Unlock()
	cfg := c.configState()
	ch := change(&cfg)
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"controlPlaneConfig": map[string]any{"controlplane": map[string]any{
		"strategicPatches": cfg.strategicPatches(),
	}}}})
	if err != nil {
		return err
	}
	tcp := &unstructured.Unstructured{}
	tcp.SetAPIVersion(machineconfig.ControlPlaneGroup + "/v1alpha3")
	tcp.SetKind(ref.Kind)
	tcp.SetNamespace(c.ns)
	tcp.SetName(ref.Name)
	// Its time is taken before the patch: Tollgate may act on it before
	// Patch returns. It is noted once made: the patches at rest are judged
	// against what the soak set.
	ch.at = time.Now()
	cfg.changes = append(cfg.changes, ch)
	if err := mgmt.Patch(ctx, tcp, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", ref.Kind, c.ns, ref.Name, err)
	}
	c.mu.Lock()
	c.config = cfg
	c.mu.Unlock()
	return nil
}

// readControlPlanePatches reads the patches of the Cluster's
// TalosControlPlane, as Tollgate reads them.
func (s *soak) readControlPlanePatches(ctx context.Context, c *soakCluster) (machineconfig.Patches, error) {
	mgmt := s.world.mgmt.Client
	cluster := &clusterv1.Cluster{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cluster); err != nil {
		return machineconfig.Patches{}, fmt.Errorf("reading Cluster %s/%s: %w", c.ns, c.name, err)
	}
	ref := cluster.Spec.ControlPlaneRef
	tcp := &unstructured.Unstructured{}
	tcp.SetAPIVersion(machineconfig.ControlPlaneGroup + "/v1alpha3")
	tcp.SetKind(ref.Kind)
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: ref.Name}, tcp); err != nil {
		return machineconfig.Patches{}, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, c.ns, ref.Name, err)
	}
	return machineconfig.Read(tcp)
}

// cpNode is what invariant 15 reads of one control-plane Machine at rest.
type cpNode struct {
	machine, node string
	// running is the configuration the node runs.
	running []byte
	// exempt says why the node need not run the patches (its record is
	// Failed, its rollout stopped); empty when it must.
	exempt string
}

// configProblems judges, at rest, the control-plane nodes of a Cluster
// against the patches of its TalosControlPlane (invariant 15): none runs
// the refused change, whatever the rollout's phase (a configuration taken is
// never undone, so this judges every refused change made, taken back or
// not); each runs the patches unless exempt or refused (refusedPatch is
// among them); and while refused, unless the rollout stopped, cond (its
// MachineConfigs condition) says NotInPlace.
func configProblems(nodes []cpNode, patches machineconfig.Patches, refused, stopped bool, cond *metav1.Condition) []string {
	var out []string
	for _, n := range nodes {
		has, err := machineconfig.Converged(n.running, machineconfig.Patches{Source: "the refused change", StrategicPatches: []string{refusedPatch}})
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("Machine %s: reading what node %s runs: %v", n.machine, n.node, err))
			continue
		case has:
			out = append(out, fmt.Sprintf("Machine %s: node %s runs the change of the pod network, which no running node may take (NotInPlace)", n.machine, n.node))
		}
		if refused || n.exempt != "" {
			continue
		}
		converged, err := machineconfig.Converged(n.running, patches)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("Machine %s: node %s, against %s: %v", n.machine, n.node, patches, err))
		case !converged:
			out = append(out, fmt.Sprintf("Machine %s: node %s does not run the %s", n.machine, n.node, patches))
		}
	}
	if refused && !stopped {
		switch {
		case cond == nil:
			out = append(out, "the patches are refused and the rollout has no MachineConfigs condition")
		case cond.Status != metav1.ConditionFalse || cond.Reason != upgradev1.MachineConfigNotInPlaceReason:
			out = append(out, fmt.Sprintf("the patches are refused and the rollout's MachineConfigs condition is %s/%s, not False/%s: %q",
				cond.Status, cond.Reason, upgradev1.MachineConfigNotInPlaceReason, cond.Message))
		}
	}
	return out
}

// unconfigured lists what stands against invariant 15 at rest on the
// Cluster, whose TalosUpgrade is u: nothing until the soak changed its
// patches.
func (s *soak) unconfigured(ctx context.Context, c *soakCluster, u *upgradev1.TalosUpgrade) ([]string, error) {
	cfg := c.configState()
	if len(cfg.changes) == 0 {
		return nil, nil
	}
	patches, err := s.readControlPlanePatches(ctx, c)
	if err != nil {
		return nil, err
	}
	if want := cfg.strategicPatches(); !slices.Equal(patches.StrategicPatches, want) {
		return nil, fmt.Errorf("the TalosControlPlane of %s/%s has %d strategicPatches, not the %d the soak set", c.ns, c.name, len(patches.StrategicPatches), len(want))
	}
	machines := &clusterv1.MachineList{}
	if err := s.world.mgmt.Client.List(ctx, machines, client.InNamespace(c.ns), client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return nil, err
	}
	stopped := u.Status.Phase == upgradev1.UpgradePhaseFailed || u.Status.Phase == upgradev1.UpgradePhasePaused
	records := map[string]upgradev1.MachineUpgradeStatus{}
	for _, st := range u.Status.Machines {
		records[st.Machine] = st
	}
	var nodes []cpNode
	var errs []error
	for i := range machines.Items {
		m := &machines.Items[i]
		n := c.sim.Node(m.Status.NodeRef.Name)
		if !m.DeletionTimestamp.IsZero() || n == nil {
			continue
		}
		running, err := n.MachineConfig()
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the configuration of node %s: %w", n.Name(), err))
			continue
		}
		cn := cpNode{machine: m.Name, node: n.Name(), running: running}
		switch {
		case stopped:
			cn.exempt = "rollout " + string(u.Status.Phase)
		case records[m.Name].Phase == upgradev1.MachinePhaseFailed:
			cn.exempt = "its record is Failed"
		}
		nodes = append(nodes, cn)
	}
	out := configProblems(nodes, patches, cfg.refused, stopped, conditions.Get(u, upgradev1.MachineConfigsCondition))
	for i := range out {
		out[i] = fmt.Sprintf("%s/%s: %s (rollout %s; record: %s)", c.ns, c.name, out[i], u.Status.Phase, describeConfigRecords(u))
	}
	return out, errors.Join(errs...)
}

// describeConfigRecords says what the records of a rollout say of the
// control plane's configuration, for a message.
func describeConfigRecords(u *upgradev1.TalosUpgrade) string {
	var out []string
	for _, st := range u.Status.Machines {
		if cfg := st.Config; cfg != nil {
			out = append(out, fmt.Sprintf("%s: action %q, phase %s, config %s (reboot %t) %q", st.Machine, st.Action, st.Phase, cfg.State, cfg.RebootRequired, cfg.Message))
		}
	}
	if len(out) == 0 {
		return "none with a configuration"
	}
	return fmt.Sprint(out)
}

// judgeConfigs checks invariant 15 on every Cluster of the round, once its
// rollouts are over: the patches at rest, and the boots for a
// configuration.
func (s *soak) judgeConfigs(ctx context.Context, clusters []*soakCluster) {
	for _, c := range clusters {
		cfg := c.configState()
		if len(cfg.changes) == 0 {
			continue
		}
		s.check(15)
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
			s.violation(15, "%s: reading the TalosUpgrade: %v", c.ns, err)
			continue
		}
		left, err := s.unconfigured(ctx, c, u)
		if err != nil {
			s.violation(15, "%s: %v", c.ns, err)
		}
		for _, l := range left {
			s.violation(15, "at rest: %s", l)
		}
		boots := s.judgeConfigBoots(c, cfg, u)
		s.cfg.Logf("Configs: %s/%s: %d change(s) of the control plane's patches (%s); %d boot(s) for a configuration alone; rollout %s; records: %s",
			c.ns, c.name, len(cfg.changes), describeChanges(cfg.changes), boots, u.Status.Phase, describeConfigRecords(u))
	}
}

func describeChanges(changes []configChange) string {
	out := make([]string, 0, len(changes))
	for _, ch := range changes {
		k := ch.kind
		if ch.withdrawn {
			k += " taken back"
		}
		out = append(out, k+" at "+ch.at.Format(timeMillis))
	}
	return fmt.Sprint(out)
}

// judgeConfigBoots checks that no node of the Cluster booted for a
// configuration more often than the changes that need a reboot made before
// it; it returns how many boots were for a configuration alone.
func (s *soak) judgeConfigBoots(c *soakCluster, cfg cpConfig, u *upgradev1.TalosUpgrade) int {
	n := 0
	for node, l := range c.bootLogsCopy() {
		if l.missed > 0 {
			continue // Said by judgeBoots.
		}
		upgrades := c.nodeUpgrades(node, u)
		n += len(configBoots(l, upgrades))
		for _, b := range extraConfigBoots(l, upgrades, cfg) {
			s.violation(15, "%s: node %s booted at %s (it booted at %s before) for a configuration staged for its boot, without an upgrade, its reboot #%d for a configuration when %d change(s) that need one were made before it (changes: %s)",
				c.ns, node, b.at.Format(timeMillis), b.before.Format(timeMillis), b.n, cfg.rebootChangesBefore(b.at), describeChanges(cfg.changes))
		}
	}
	return n
}

// configBoot is a boot for a configuration: the n-th of its node.
type configBoot struct {
	boot
	n int
}

// configBoots returns the boots of a node for a configuration alone: after
// a configuration staged for it, with no upgrade since the boot before.
func configBoots(l bootLog, upgrades []time.Time) []configBoot {
	var out []configBoot
	before := l.first
	for i, at := range l.boots {
		if i < len(l.staged) && l.staged[i] > 0 && !upgradedBetween(upgrades, before, at) {
			out = append(out, configBoot{boot: boot{before: before, at: at, i: i}, n: len(out) + 1})
		}
		before = at
	}
	return out
}

// extraConfigBoots returns the boots of a node for a configuration alone
// (configBoots) beyond one per change that needs a reboot made before it.
func extraConfigBoots(l bootLog, upgrades []time.Time, cfg cpConfig) []configBoot {
	var out []configBoot
	for _, b := range configBoots(l, upgrades) {
		if b.n > cfg.rebootChangesBefore(b.at.Add(time.Second)) {
			out = append(out, b)
		}
	}
	return out
}
