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

package talosupgrade

import (
	"context"
	"errors"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "how does a configuration change pass the gate": a node
// whose template's patches changed (configtargets.go) gets them through the
// steps of an upgrade. Once it is drained, the configuration is applied
// without a reboot when Talos allows it; else it is staged for the next
// boot, and the node is rebooted at its pre-reboot point like an upgraded
// one. A node that is upgraded too stages it before its install: one drain,
// one reboot. Applying the same configuration again changes nothing, so an
// apply whose outcome was lost (a restart, a lost answer) is made again.

// configure is the kind of a configuration change of a node that runs the
// target already.
type configure struct{}

var _ kind = configure{}

// drained records the node's version and boot ID; a node that turns out
// not to run the target is upgraded instead, and stages the configuration
// with its install.
func (configure) drained(w *world, st *upgradev1.MachineUpgradeStatus) decision {
	if d, onTarget := drainedOnTarget(w, st); !onTarget {
		return d
	}
	moveTo(w.now, st, upgradev1.MachinePhaseUpgrading, "", "applying the machine configuration of "+st.Config.Source)
	return decision{}
}

// act applies the configuration; the node then goes to its pre-reboot point
// when it takes it only at a boot or a reboot was asked for too, else to its
// verification.
func (configure) act(w *world, st *upgradev1.MachineUpgradeStatus) decision {
	d, done := applyConfig(w, st, false)
	if !done {
		return d
	}
	if st.Config.RebootRequired || !rebootAnswered(st) {
		moveTo(w.now, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
		return d
	}
	moveTo(w.now, st, upgradev1.MachinePhaseVerifying, "", "applied without a reboot; waiting for the node to be Ready")
	return d
}

// reboot reboots the node with a Reboot call.
func (configure) reboot(*world, *upgradev1.MachineUpgradeStatus) intent {
	return intentReboot
}

// rebooted fails a node that came back on another version, or without the
// configuration staged for its boot.
func (configure) rebooted(w *world, st *upgradev1.MachineUpgradeStatus, version string) string {
	if msg := (rebootOnly{}).rebooted(w, st, version); msg != "" {
		return msg
	}
	return bootedConfig(w, st)
}

// applyConfig decides the application of a record's configuration, before
// the node's install or reboot: it asks the round to apply it (staged only,
// for a node that reboots anyway) and decides on what the node said. It
// returns true once nothing is left to apply: the node runs the
// configuration, has it staged for its next boot, or it is refused.
func applyConfig(w *world, st *upgradev1.MachineUpgradeStatus, stagedOnly bool) (decision, bool) {
	cfg := st.Config
	if cfg == nil || cfg.State == upgradev1.MachineConfigConverged || cfg.State == upgradev1.MachineConfigApplied ||
		cfg.State == upgradev1.MachineConfigRefused || cfg.RebootRequired {
		return decision{}, true
	}
	in := intentApplyConfig
	if stagedOnly {
		in = intentStageConfig
	}
	a := w.apply
	if a == nil {
		// Written ahead of the call; an apply whose outcome was lost is
		// made again: it changes nothing more.
		if cfg.AppliedTime == nil {
			cfg.AppliedTime = ptrTime(w.now)
		}
		st.Message = "applying the machine configuration of " + cfg.Source
		return decision{intent: in}, false
	}
	var d decision
	switch {
	case errors.Is(a.err, talos.ErrInvalidConfig):
		return failMachine(w.now, st, fmt.Sprintf("node %q refused the machine configuration of %s: %v", st.Node, cfg.Source, a.err)), false
	case a.err != nil:
		return unreachable(w, st, a.err), false
	case a.refused != "":
		cfg.State, cfg.Message = upgradev1.MachineConfigRefused, a.refused
		d.warning("MachineConfigRefused", "Configure", "Machine %s: the patches of %s are not applied: %s", st.Machine, cfg.Source, a.refused)
	case a.staged:
		// Proven once the node is back (bootedConfig).
		cfg.State, cfg.RebootRequired, cfg.Hash = upgradev1.MachineConfigPending, true, a.hash
		d.normal("MachineConfigStaged", "Configure", "Machine %s: staged the machine configuration of %s for the node's next boot", st.Machine, cfg.Source)
	case a.state == upgradev1.MachineConfigConverged:
		cfg.State = upgradev1.MachineConfigConverged
	default:
		cfg.State, cfg.Hash = upgradev1.MachineConfigApplied, a.hash
		d.normal("MachineConfigApplied", "Configure", "Machine %s: applied the machine configuration of %s without a reboot", st.Machine, cfg.Source)
	}
	st.UnreachableSince = nil
	return d, true
}

// bootedConfig checks, once the node is back, that it runs the
// configuration staged for its boot; it returns why the Machine fails, or
// "".
func bootedConfig(w *world, st *upgradev1.MachineUpgradeStatus) string {
	cfg := st.Config
	if cfg == nil || !cfg.RebootRequired || cfg.State != upgradev1.MachineConfigPending {
		return ""
	}
	switch w.boot.config {
	case upgradev1.MachineConfigConverged, upgradev1.MachineConfigApplied, "":
		// "": the template's patches changed since they were staged; the
		// record of the newer ones checks them.
		cfg.State = upgradev1.MachineConfigApplied
		return ""
	}
	return fmt.Sprintf("node %q came back without the machine configuration of %s staged for its boot (%s)", st.Node, cfg.Source, w.boot.configMessage)
}

// applyRead is what a round's application of a configuration said.
type applyRead struct {
	// state is Converged when the node ran the configuration already, and
	// Applied when it took it without a reboot.
	state upgradev1.MachineConfigState
	// staged is set when the node takes it at its next boot.
	staged bool
	// hash is the hash of the patches applied.
	hash string
	// refused says why the patches cannot be applied in place.
	refused string
	err     error
}

// applyConfig applies to m's node the patches of its template, without a
// reboot unless stagedOnly or the node needs one for them, else staged for
// its next boot; a configuration applied without a reboot is read back.
func (r *Reconciler) applyConfig(ctx context.Context, s *scope, m *clusterv1.Machine, stagedOnly bool) applyRead {
	var a applyRead
	t := s.configTarget(m)
	if t == nil || t.err != nil {
		// The patches were removed from the template, or cannot be read
		// now: nothing is applied (the MachineConfigs condition says why).
		a.state = upgradev1.MachineConfigConverged
		if t != nil {
			a.err = t.err
		}
		return a
	}
	a.hash = t.hash
	tc, err := r.Dialer.Dial(ctx, s.cluster, m)
	if err != nil {
		a.err = err
		return a
	}
	defer tc.Close() //nolint:errcheck // Nothing is lost when closing a client.
	running, err := tc.MachineConfig(ctx)
	if err != nil {
		a.err = err
		return a
	}
	state, refused := configState(running, t.patches)
	switch state {
	case upgradev1.MachineConfigRefused:
		a.refused = refused
		return a
	case upgradev1.MachineConfigConverged:
		a.state = state
		return a
	}
	desired, err := machineconfig.Desired(running, t.patches)
	if err != nil {
		a.refused = err.Error()
		return a
	}
	if !stagedOnly {
		_, err := tc.ApplyConfiguration(ctx, desired, talos.ApplyModeNoReboot, false)
		switch {
		case err == nil:
			back, err := tc.MachineConfig(ctx)
			if err != nil {
				a.err = err
				return a
			}
			if converged, err := machineconfig.Converged(back, t.patches); err != nil || !converged {
				a.err = fmt.Errorf("the node took the configuration without a reboot but does not run it when read back")
				return a
			}
			a.state = upgradev1.MachineConfigApplied
			return a
		case !errors.Is(err, talos.ErrRebootRequired):
			a.err = err
			return a
		}
	}
	if _, err := tc.ApplyConfiguration(ctx, desired, talos.ApplyModeStaged, false); err != nil {
		a.err = err
		return a
	}
	a.staged = true
	return a
}

// readBootConfig reads, once m's node is back, where it stands with the
// patches staged for its boot: Converged when it runs them, "" when its
// template's patches changed since (the newer ones are another record's).
func (r *Reconciler) readBootConfig(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, tc talos.Client) (upgradev1.MachineConfigState, string, error) {
	t := s.configTarget(m)
	if t == nil || t.err != nil || t.hash != st.Config.Hash {
		return "", "", nil //nolint:nilerr // The patches changed: the record of the newer ones checks them.
	}
	running, err := tc.MachineConfig(ctx)
	if err != nil {
		return "", "", err
	}
	state, refused := configState(running, t.patches)
	if state == upgradev1.MachineConfigPending {
		refused = "it does not run them"
	}
	return state, refused, nil
}
