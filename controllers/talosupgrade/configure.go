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
	"strings"

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
// target already: new patches of its template, new images of its
// Kubernetes components (kubernetes.go), or both.
type configure struct{}

var _ kind = configure{}

// drained records the node's version and boot ID; a node that turns out
// not to run the target is upgraded instead, and stages the configuration
// with its install.
func (configure) drained(w *world, st *upgradev1.MachineUpgradeStatus) decision {
	if d, onTarget := drainedOnTarget(w, st); !onTarget {
		return d
	}
	moveTo(w.now, st, upgradev1.MachinePhaseUpgrading, "", "applying "+applying(st, configApplied(st.Config)))
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
	if (st.Config != nil && st.Config.RebootRequired) || !rebootAnswered(st) {
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
// the node's install or reboot: the patches of its template and the images
// of its Kubernetes change, applied together. It asks the round to apply
// them (staged only, for a node that reboots anyway) and decides on what
// the node said. It returns true once nothing is left to apply: the node
// runs them, has them staged for its next boot, or they are refused.
func applyConfig(w *world, st *upgradev1.MachineUpgradeStatus, stagedOnly bool) (decision, bool) {
	cfg, k := st.Config, st.Kubernetes
	configDone := configApplied(cfg)
	if configDone && !kubernetesPending(st) {
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
		if !configDone && cfg.AppliedTime == nil {
			cfg.AppliedTime = ptrTime(w.now)
		}
		if k != nil && k.AppliedTime == nil {
			k.AppliedTime = ptrTime(w.now)
		}
		st.Message = "applying " + applying(st, configDone)
		return decision{intent: in}, false
	}
	var d decision
	switch {
	case errors.Is(a.err, talos.ErrInvalidConfig):
		return failMachine(w.now, st, fmt.Sprintf("node %q refused %s: %v", st.Node, applying(st, configDone), a.err)), false
	case a.err != nil:
		return unreachable(w, st, a.err), false
	case a.kubernetesRefused != "":
		return failMachine(w.now, st, fmt.Sprintf("Kubernetes %s cannot be applied to node %q: %s", k.Version, st.Node, a.kubernetesRefused)), false
	case a.staged && configDone && !stagedOnly:
		// Talos takes the images only at a boot, which nothing else of the
		// record asks for.
		return failMachine(w.now, st, fmt.Sprintf("node %q takes Kubernetes %s only with a reboot, which Talos does not ask for a change of images; not retried automatically", st.Node, k.Version)), false
	}
	if !configDone {
		switch {
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
	}
	if kubernetesPending(st) {
		switch a.kubernetes {
		case upgradev1.MachineConfigConverged:
			k.State = upgradev1.MachineConfigConverged
		default:
			// Proven by what runs (kubernetesProven).
			k.State = upgradev1.MachineConfigApplied
			how := "without a reboot"
			if a.staged {
				how = "for the node's next boot"
			}
			d.normal("KubernetesApplied", "Kubernetes", "Machine %s: set the %s images of the node's machine configuration to %s %s", st.Machine, k.Part, k.Version, how)
		}
	}
	st.UnreachableSince = nil
	return d, true
}

// configApplied reports whether nothing of cfg is left to apply.
func configApplied(cfg *upgradev1.MachineConfigStatus) bool {
	return cfg == nil || cfg.State == upgradev1.MachineConfigConverged || cfg.State == upgradev1.MachineConfigApplied ||
		cfg.State == upgradev1.MachineConfigRefused || cfg.RebootRequired
}

// applying says what a record applies to its node, for messages.
func applying(st *upgradev1.MachineUpgradeStatus, configDone bool) string {
	var what []string
	if !configDone {
		what = append(what, "the machine configuration of "+st.Config.Source)
	}
	if k := st.Kubernetes; kubernetesPending(st) {
		what = append(what, fmt.Sprintf("the %s images of Kubernetes %s", k.Part, k.Version))
	}
	return strings.Join(what, " and ")
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
	// state is Converged when the node ran the template's patches already,
	// and Applied when it took them without a reboot.
	state upgradev1.MachineConfigState
	// kubernetes is Converged when the node's configuration named the
	// Kubernetes change's version already, and Applied when it names it
	// now.
	kubernetes upgradev1.MachineConfigState
	// staged is set when the node takes them at its next boot.
	staged bool
	// hash is the hash of the patches applied.
	hash string
	// refused says why the patches cannot be applied in place, and
	// kubernetesRefused why the images cannot be changed.
	refused, kubernetesRefused string
	err                        error
}

// applyConfig applies to m's node, in one configuration, the patches of its
// template (withConfig) and the images of k (nil for none), without a
// reboot unless stagedOnly or the node needs one for them, else staged for
// its next boot; what is applied without a reboot is read back.
func (r *Reconciler) applyConfig(ctx context.Context, s *scope, m *clusterv1.Machine, withConfig bool, k *upgradev1.MachineKubernetesStatus, stagedOnly bool) applyRead {
	var a applyRead
	t := s.configTarget(m)
	if withConfig && (t == nil || t.err != nil) {
		// The patches were removed from the template, or cannot be read
		// now: they are not applied (the MachineConfigs condition says
		// why).
		a.state, withConfig = upgradev1.MachineConfigConverged, false
		if t != nil && k == nil {
			a.err = t.err
			return a
		}
	}
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
	desired := running
	if withConfig {
		a.hash = t.hash
		state, refused := configState(running, t.patches)
		switch state {
		case upgradev1.MachineConfigRefused:
			a.refused, withConfig = refused, false
		case upgradev1.MachineConfigConverged:
			a.state, withConfig = state, false
		default:
			if desired, err = machineconfig.Desired(running, t.patches); err != nil {
				a.refused, withConfig, desired = err.Error(), false, running
			}
		}
	}
	if k != nil {
		state, refused := kubernetesState(desired, k)
		switch state {
		case upgradev1.MachineConfigRefused:
			a.kubernetesRefused = refused
			return a
		case upgradev1.MachineConfigConverged:
			a.kubernetes, k = state, nil
		default:
			if desired, err = withKubernetes(desired, k); err != nil {
				a.kubernetesRefused = err.Error()
				return a
			}
		}
	}
	if !withConfig && k == nil {
		return a // Nothing changes.
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
			if withConfig {
				if converged, err := machineconfig.Converged(back, t.patches); err != nil || !converged {
					a.err = fmt.Errorf("the node took the configuration without a reboot but does not run it when read back")
					return a
				}
				a.state = upgradev1.MachineConfigApplied
			}
			if k != nil {
				if state, _ := kubernetesState(back, k); state != upgradev1.MachineConfigConverged {
					a.err = fmt.Errorf("the node took the Kubernetes %s images without a reboot but does not name them when read back", k.Version)
					return a
				}
				a.kubernetes = upgradev1.MachineConfigApplied
			}
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
	if k != nil {
		a.kubernetes = upgradev1.MachineConfigApplied
	}
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
