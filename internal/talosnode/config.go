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

package talosnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file is how a node gets its configuration changes: the patches of
// its template and the images of a Kubernetes version, in one machine
// configuration. Once the node is drained, the configuration is applied
// without a reboot when Talos allows it; else it is staged for the next
// boot, and the node is rebooted at its pre-reboot point like an upgraded
// one. A node that is upgraded too stages it before its install: one
// drain, one reboot. Applying the same configuration again changes
// nothing, so an apply whose outcome was lost (a restart, a lost answer)
// is made again. Where a node stands with its changes is read before it
// may start (ReadNode). A configuration holds secrets: what is said of it
// names fields, never values.

// ApplyConfig applies to m's node, in one configuration, the patches of t,
// its template's (withConfig), and the images of k (nil for none), without
// a reboot unless stagedOnly or the node needs one for them, else staged
// for its next boot; what is applied without a reboot is read back.
func (n Nodes) ApplyConfig(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, t *disruption.ConfigTarget, withConfig bool, k *upgradev1.MachineKubernetesStatus, stagedOnly bool) disruption.ApplyRead {
	var a disruption.ApplyRead
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
	a.Err = n.With(ctx, cluster, m, func(tc talos.Client) error {
		return applyConfigTo(ctx, tc, &a, t, withConfig, k, stagedOnly)
	})
	return a
}

// applyConfigTo is ApplyConfig on the client of m's node: it reads the
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

// readBootConfig reads, once st's node is back, where it stands with the
// patches staged for its boot: Converged when it runs them, "" when its
// template's patches changed since (the newer ones are another record's).
func readBootConfig(ctx context.Context, st *upgradev1.MachineUpgradeStatus, t *disruption.ConfigTarget, tc talos.Client) (upgradev1.MachineConfigState, string, error) {
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

// NodeRead is what a node said of a record that waits for it.
type NodeRead struct {
	// BootTime is when the node last booted; zero when not read.
	BootTime time.Time
	// Config is where the node stands with its template's patches, and
	// Refused why they cannot be applied to it; empty when not read.
	Config  upgradev1.MachineConfigState
	Refused string
	// Kubernetes is where the node stands with its record's Kubernetes
	// change, and KubernetesRefused why it cannot be made; empty when not
	// read.
	Kubernetes        upgradev1.MachineConfigState
	KubernetesRefused string
	// Err is why the node could not be read.
	Err error
}

// ReadNode reads what st waits for from m's node: when it booted, whether
// it runs the patches of t, its template's, and its Kubernetes change.
func (n Nodes) ReadNode(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, st *upgradev1.MachineUpgradeStatus, t *disruption.ConfigTarget) NodeRead {
	var read NodeRead
	readsConfig := st.Config != nil && st.Config.State == upgradev1.MachineConfigUnknown
	readsKubernetes := st.Kubernetes != nil && st.Kubernetes.State == upgradev1.MachineConfigUnknown
	var running []byte
	read.Err = n.With(ctx, cluster, m, func(tc talos.Client) error {
		var err error
		if st.RebootAfter != nil && st.BootTime == nil {
			if read.BootTime, err = tc.BootTime(ctx); err != nil {
				return err
			}
		}
		if readsConfig || readsKubernetes {
			running, err = tc.MachineConfig(ctx)
		}
		return err
	})
	if read.Err != nil || !readsConfig && !readsKubernetes {
		return read
	}
	if readsKubernetes {
		read.Kubernetes, read.KubernetesRefused = kubernetesState(running, st.Kubernetes)
	}
	if readsConfig {
		if t == nil || t.Hash != st.Config.Hash {
			read.Err = errors.New("its template's patches changed while it was read")
			return read
		}
		read.Config, read.Refused = configState(running, t.Patches)
	}
	return read
}

// configState says where a node running running stands with patches: it
// runs them, or they are to be applied, or they cannot be and why. The
// answer names fields, never values: a configuration holds secrets.
func configState(running []byte, patches machineconfig.Patches) (upgradev1.MachineConfigState, string) {
	desired, err := machineconfig.Desired(running, patches)
	if err != nil {
		return upgradev1.MachineConfigRefused, err.Error()
	}
	if err := machineconfig.CheckInPlace(running, desired); err != nil {
		return upgradev1.MachineConfigRefused, err.Error()
	}
	converged, err := machineconfig.Converged(running, patches)
	switch {
	case err != nil:
		return upgradev1.MachineConfigRefused, err.Error()
	case converged:
		return upgradev1.MachineConfigConverged, ""
	}
	return upgradev1.MachineConfigPending, ""
}

// kubernetesPart is the part of internal/kubernetes a record changes.
func kubernetesPart(k *upgradev1.MachineKubernetesStatus) kubernetes.Part {
	if k.Part == upgradev1.KubernetesPartControlPlane {
		return kubernetes.PartControlPlane
	}
	return kubernetes.PartKubelet
}

// kubernetesState says where a node running running stands with k: it runs
// the version already, or it is to be applied, or it cannot be and why
// (an image pinned by digest, say). It names fields, never values.
func kubernetesState(running []byte, k *upgradev1.MachineKubernetesStatus) (upgradev1.MachineConfigState, string) {
	_, changes, err := kubernetes.ImagePatches(running, kubernetesPart(k), k.Version)
	switch {
	case err != nil:
		return upgradev1.MachineConfigRefused, err.Error()
	case len(changes) == 0:
		return upgradev1.MachineConfigConverged, ""
	}
	return upgradev1.MachineConfigPending, ""
}

// withKubernetes returns desired with the images of k's part at its
// version; desired unchanged when they are.
func withKubernetes(desired []byte, k *upgradev1.MachineKubernetesStatus) ([]byte, error) {
	patched, changes, err := kubernetes.ImagePatches(desired, kubernetesPart(k), k.Version)
	if err != nil || len(changes) == 0 {
		return desired, err
	}
	return patched, nil
}
