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

package disruption

import (
	"errors"
	"fmt"
	"strings"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "how does a configuration change pass the gate": a node
// whose template's patches changed gets them through the
// steps of an upgrade. Once it is drained, the configuration is applied
// without a reboot when Talos allows it; else it is staged for the next
// boot, and the node is rebooted at its pre-reboot point like an upgraded
// one. A node that is upgraded too stages it before its install: one drain,
// one reboot. Applying the same configuration again changes nothing, so an
// apply whose outcome was lost (a restart, a lost answer) is made again.

// configure is the kind of a configuration change of a node that runs the
// target already: new patches of its template, new images of its
// Kubernetes components (kubernetes.go), or both. Its words are those of a
// configuration change or of a Kubernetes change.
type configure struct {
	words Words
}

var _ Kind = configure{}

// drained records the node's version and boot ID; a node that turns out
// not to run the target is upgraded instead, and stages the configuration
// with its install.
func (configure) drained(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	if d, onTarget := drainedOnTarget(w, st); !onTarget {
		return d
	}
	MoveTo(w.Now, st, upgradev1.MachinePhaseUpgrading, "", "applying "+applying(st, ConfigApplied(st.Config)))
	return Decision{}
}

// act applies the configuration; the node then goes to its pre-reboot point
// when it takes it only at a boot or a reboot was asked for too, else to its
// verification.
func (configure) act(w *Observation, st *upgradev1.MachineUpgradeStatus) Decision {
	d, done := applyConfig(w, st, false)
	if !done {
		return d
	}
	if (st.Config != nil && st.Config.RebootRequired) || !RebootAnswered(st) {
		MoveTo(w.Now, st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot, "")
		return d
	}
	MoveTo(w.Now, st, upgradev1.MachinePhaseVerifying, "", "applied without a reboot; waiting for the node to be Ready")
	return d
}

// reboot reboots the node with a Reboot call.
func (configure) reboot(*Observation, *upgradev1.MachineUpgradeStatus) Intent {
	return IntentReboot
}

// rebooted fails a node that came back on another version, or without the
// configuration staged for its boot.
func (configure) rebooted(w *Observation, st *upgradev1.MachineUpgradeStatus, version string) string {
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
func applyConfig(w *Observation, st *upgradev1.MachineUpgradeStatus, stagedOnly bool) (Decision, bool) {
	cfg, k := st.Config, st.Kubernetes
	configDone := ConfigApplied(cfg)
	if configDone && !KubernetesPending(st) {
		return Decision{}, true
	}
	in := IntentApplyConfig
	if stagedOnly {
		in = IntentStageConfig
	}
	a := w.Apply
	if a == nil {
		// Written ahead of the call; an apply whose outcome was lost is
		// made again: it changes nothing more.
		if !configDone && cfg.AppliedTime == nil {
			cfg.AppliedTime = ptrTime(w.Now)
		}
		if k != nil && k.AppliedTime == nil {
			k.AppliedTime = ptrTime(w.Now)
		}
		st.Message = "applying " + applying(st, configDone)
		return Decision{Intent: in}, false
	}
	var d Decision
	switch {
	case errors.Is(a.Err, talos.ErrInvalidConfig):
		return Fail(w.Now, st, fmt.Sprintf("node %q refused %s: %v", st.Node, applying(st, configDone), a.Err)), false
	case a.Err != nil:
		return unreachable(w, st, a.Err), false
	case a.KubernetesRefused != "":
		return Fail(w.Now, st, fmt.Sprintf("Kubernetes %s cannot be applied to node %q: %s", k.Version, st.Node, a.KubernetesRefused)), false
	case a.Staged && configDone && !stagedOnly:
		// Talos takes the images only at a boot, which nothing else of the
		// record asks for.
		return Fail(w.Now, st, fmt.Sprintf("node %q takes Kubernetes %s only with a reboot, which Talos does not ask for a change of images; not retried automatically", st.Node, k.Version)), false
	}
	if !configDone {
		switch {
		case a.Refused != "":
			cfg.State, cfg.Message = upgradev1.MachineConfigRefused, a.Refused
			d.warningOf("MachineConfigRefused", string(wordsConfigure.Action), "Machine %s: the patches of %s are not applied: %s", st.Machine, cfg.Source, a.Refused)
		case a.Staged:
			// Proven once the node is back (bootedConfig).
			cfg.State, cfg.RebootRequired, cfg.Hash = upgradev1.MachineConfigPending, true, a.Hash
			d.normalOf("MachineConfigStaged", string(wordsConfigure.Action), "Machine %s: staged the machine configuration of %s for the node's next boot", st.Machine, cfg.Source)
		case a.State == upgradev1.MachineConfigConverged:
			cfg.State = upgradev1.MachineConfigConverged
		default:
			cfg.State, cfg.Hash = upgradev1.MachineConfigApplied, a.Hash
			d.normalOf("MachineConfigApplied", string(wordsConfigure.Action), "Machine %s: applied the machine configuration of %s without a reboot", st.Machine, cfg.Source)
		}
	}
	if KubernetesPending(st) {
		switch a.Kubernetes {
		case upgradev1.MachineConfigConverged:
			k.State = upgradev1.MachineConfigConverged
		default:
			// Proven by what runs (kubernetesProven).
			k.State = upgradev1.MachineConfigApplied
			how := "without a reboot"
			if a.Staged {
				how = "for the node's next boot"
			}
			d.normalOf("KubernetesApplied", string(wordsKubernetes.Action), "Machine %s: set the %s images of the node's machine configuration to %s %s", st.Machine, k.Part, k.Version, how)
		}
	}
	st.UnreachableSince = nil
	return d, true
}

// ConfigApplied reports whether nothing of cfg is left to apply.
func ConfigApplied(cfg *upgradev1.MachineConfigStatus) bool {
	return cfg == nil || cfg.State == upgradev1.MachineConfigConverged || cfg.State == upgradev1.MachineConfigApplied ||
		cfg.State == upgradev1.MachineConfigRefused || cfg.RebootRequired
}

// applying says what a record applies to its node, for messages.
func applying(st *upgradev1.MachineUpgradeStatus, configDone bool) string {
	var what []string
	if !configDone {
		what = append(what, "the machine configuration of "+st.Config.Source)
	}
	if k := st.Kubernetes; KubernetesPending(st) {
		what = append(what, fmt.Sprintf("the %s images of Kubernetes %s", k.Part, k.Version))
	}
	return strings.Join(what, " and ")
}

// bootedConfig checks, once the node is back, that it runs the
// configuration staged for its boot; it returns why the Machine fails, or
// "".
func bootedConfig(w *Observation, st *upgradev1.MachineUpgradeStatus) string {
	cfg := st.Config
	if cfg == nil || !cfg.RebootRequired || cfg.State != upgradev1.MachineConfigPending {
		return ""
	}
	switch w.Boot.Config {
	case upgradev1.MachineConfigConverged, upgradev1.MachineConfigApplied, "":
		// "": the template's patches changed since they were staged; the
		// record of the newer ones checks them.
		cfg.State = upgradev1.MachineConfigApplied
		return ""
	}
	return fmt.Sprintf("node %q came back without the machine configuration of %s staged for its boot (%s)", st.Node, cfg.Source, w.Boot.ConfigMessage)
}

// Words name a configuration change, or a Kubernetes change.
func (c configure) Words() Words { return c.words }

// done says what the node runs now.
func (configure) done(st *upgradev1.MachineUpgradeStatus) string {
	var what []string
	if cfg := st.Config; cfg != nil && (cfg.State == upgradev1.MachineConfigApplied || cfg.State == upgradev1.MachineConfigConverged) {
		what = append(what, "the patches of "+cfg.Source)
	}
	if k := kubernetesDone(st); k != "" {
		what = append(what, k)
	}
	if !RebootAnswered(st) || (st.Config != nil && st.Config.RebootRequired) {
		return fmt.Sprintf("runs %s after a reboot on %s", orNothingNew(what), st.FromVersion)
	}
	return "runs " + orNothingNew(what)
}

// orNothingNew joins what a node runs now, for a message.
func orNothingNew(what []string) string {
	if len(what) == 0 {
		return "what it ran (nothing was left to apply)"
	}
	return strings.Join(what, " and ")
}
