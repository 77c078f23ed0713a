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
	"github.com/tollgate-dev/tollgate/internal/disruption"
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

// applyConfig applies to m's node, in one configuration, the patches of its
// template (withConfig) and the images of k (nil for none), without a
// reboot unless stagedOnly or the node needs one for them, else staged for
// its next boot; what is applied without a reboot is read back.
func (r *Reconciler) applyConfig(ctx context.Context, s *scope, m *clusterv1.Machine, withConfig bool, k *upgradev1.MachineKubernetesStatus, stagedOnly bool) disruption.ApplyRead {
	var a disruption.ApplyRead
	t := s.ConfigTargetOf(m)
	if withConfig && (t == nil || t.Err != nil) {
		// The patches were removed from the template, or cannot be read
		// now: they are not applied (the MachineConfigs condition says
		// why).
		a.State, withConfig = upgradev1.MachineConfigConverged, false
		if t != nil && k == nil {
			a.Err = t.Err
			return a
		}
	}
	a.Err = r.withTalos(ctx, s.Cluster, m, func(tc talos.Client) error {
		return applyConfigTo(ctx, tc, &a, t, withConfig, k, stagedOnly)
	})
	return a
}

// applyConfigTo is applyConfig on the client of m's node: it reads the
// running configuration, applies to it the patches of t (withConfig) and
// the images of k, and records in a what was applied, staged or refused.
func applyConfigTo(ctx context.Context, tc talos.Client, a *disruption.ApplyRead, t *disruption.ConfigTarget, withConfig bool, k *upgradev1.MachineKubernetesStatus, stagedOnly bool) error {
	running, err := tc.MachineConfig(ctx)
	if err != nil {
		return err
	}
	desired := running
	if withConfig {
		a.Hash = t.Hash
		state, refused := configState(running, t.Patches)
		switch state {
		case upgradev1.MachineConfigRefused:
			a.Refused, withConfig = refused, false
		case upgradev1.MachineConfigConverged:
			a.State, withConfig = state, false
		default:
			if desired, err = machineconfig.Desired(running, t.Patches); err != nil {
				a.Refused, withConfig, desired = err.Error(), false, running
			}
		}
	}
	if k != nil {
		state, refused := kubernetesState(desired, k)
		switch state {
		case upgradev1.MachineConfigRefused:
			a.KubernetesRefused = refused
			return nil
		case upgradev1.MachineConfigConverged:
			a.Kubernetes, k = state, nil
		default:
			if desired, err = withKubernetes(desired, k); err != nil {
				a.KubernetesRefused = err.Error()
				return nil //nolint:nilerr // A refusal is recorded in a, and said by the rollout: the node was not at fault.
			}
		}
	}
	if !withConfig && k == nil {
		return nil // Nothing changes.
	}
	if !stagedOnly {
		_, err := tc.ApplyConfiguration(ctx, desired, talos.ApplyModeNoReboot, false)
		switch {
		case err == nil:
			back, err := tc.MachineConfig(ctx)
			if err != nil {
				return err
			}
			if withConfig {
				if converged, err := machineconfig.Converged(back, t.Patches); err != nil || !converged {
					return fmt.Errorf("the node took the configuration without a reboot but does not run it when read back")
				}
				a.State = upgradev1.MachineConfigApplied
			}
			if k != nil {
				if state, _ := kubernetesState(back, k); state != upgradev1.MachineConfigConverged {
					return fmt.Errorf("the node took the Kubernetes %s images without a reboot but does not name them when read back", k.Version)
				}
				a.Kubernetes = upgradev1.MachineConfigApplied
			}
			return nil
		case !errors.Is(err, talos.ErrRebootRequired):
			return err
		}
	}
	if _, err := tc.ApplyConfiguration(ctx, desired, talos.ApplyModeStaged, false); err != nil {
		return err
	}
	a.Staged = true
	if k != nil {
		a.Kubernetes = upgradev1.MachineConfigApplied
	}
	return nil
}

// readBootConfig reads, once m's node is back, where it stands with the
// patches staged for its boot: Converged when it runs them, "" when its
// template's patches changed since (the newer ones are another record's).
func (r *Reconciler) readBootConfig(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, tc talos.Client) (upgradev1.MachineConfigState, string, error) {
	t := s.ConfigTargetOf(m)
	if t == nil || t.Err != nil || t.Hash != st.Config.Hash {
		return "", "", nil //nolint:nilerr // The patches changed: the record of the newer ones checks them.
	}
	running, err := tc.MachineConfig(ctx)
	if err != nil {
		return "", "", err
	}
	state, refused := configState(running, t.Patches)
	if state == upgradev1.MachineConfigPending {
		refused = "it does not run them"
	}
	return state, refused, nil
}
