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
	"fmt"
	"slices"
	"strings"

	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// Nodes reads from and acts on the nodes of the Machines over their Talos
// API.
type Nodes struct {
	// Dialer opens Talos API clients to the Machines' nodes.
	Dialer talos.Dialer
}

// With dials the Talos API of Machine m's node in cluster (n.Dialer), runs
// call with the client, and closes it. It returns the error of dialing
// (talos.ErrNotDialed beside its cause, and call is not run) or call's
// error, as they are. An error of closing the client is logged at
// verbosity 4 and not returned: what the calls answered was read before,
// and the connection is gone either way.
func (n Nodes) With(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, call func(tc talos.Client) error) error {
	tc, err := n.Dialer.Dial(ctx, cluster, m)
	if err != nil {
		return err
	}
	defer func() {
		if err := tc.Close(); err != nil {
			ctrl.LoggerFrom(ctx).V(4).Info("Closing the Talos API client of a node failed", "Machine", klog.KObj(m), "err", err.Error())
		}
	}()
	return call(tc)
}

// versionAndBoot reads the Talos version a node runs and its boot ID: what
// tells whether it rebooted, and into what.
func versionAndBoot(ctx context.Context, tc talos.Client) (version, bootID string, err error) {
	if version, err = tc.Version(ctx); err != nil {
		return "", "", err
	}
	if bootID, err = tc.BootID(ctx); err != nil {
		return version, "", err
	}
	return version, bootID, nil
}

// Reboot asks m's node to reboot, unless it runs another boot than bootID
// (when set): a reboot asked for again, or after an install, on a read of
// the boot ID made a moment before must not reboot a node that came back
// since, from the first ask whose answer was lost. The boot ID is read again
// in the same connection right before the call; a read that fails leaves
// the call to be made, as before. The intent is recorded: the call is
// finished even if the manager is shutting down. An error is only logged:
// the reboot may have started, the boot ID tells, and rebootTimeout bounds
// the wait.
func (n Nodes) Reboot(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, mode upgradev1.RebootMode, bootID string) {
	callCtx := context.WithoutCancel(ctx)
	log := ctrl.LoggerFrom(ctx)
	err := n.With(callCtx, cluster, m, func(tc talos.Client) error {
		if bootID != "" {
			now, err := tc.BootID(callCtx)
			switch {
			case err != nil:
				log.V(4).Info("Reading the boot ID before the reboot call failed; rebooting", "err", err.Error())
			case now != bootID:
				log.Info("Not rebooting node: it booted since the reboot was asked for", "bootID", now)
				return nil
			}
		}
		log.Info("Rebooting node", "mode", mode)
		return tc.Reboot(callCtx, mode)
	})
	if err != nil {
		log.Info("Reboot call returned an error; checking the boot ID", "err", err.Error())
	}
}

// ReadBoot reads the version and boot ID of st's node, and, once it is back
// on a new boot, where it stands with a configuration staged for that boot
// (the patches of t, its template's). With askUpgrade, a node still on its
// old boot is also asked whether it runs an upgrade, or started one on that
// boot (see callUnknown in internal/disruption); a node that cannot say
// leaves it unknown.
func (n Nodes) ReadBoot(ctx context.Context, cluster *clusterv1.Cluster, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, t *disruption.ConfigTarget, askUpgrade bool) disruption.BootRead {
	var read disruption.BootRead
	read.Err = n.With(ctx, cluster, m, func(tc talos.Client) error {
		var err error
		if read.Version, read.BootID, err = versionAndBoot(ctx, tc); err != nil {
			return err
		}
		if askUpgrade && read.BootID == st.BootID {
			read.Stage, read.UpgradeStarted = readUpgrade(ctx, tc)
		}
		if read.BootID != st.BootID && st.Config != nil && st.Config.RebootRequired && st.Config.State == upgradev1.MachineConfigPending {
			read.Config, read.ConfigMessage, err = readBootConfig(ctx, st, t, tc)
		}
		return err
	})
	return read
}

// readUpgrade reads whether a node runs an upgrade (its machine stage) and,
// when it runs none, whether one started on its current boot; the stage is
// empty when the node could not say.
func readUpgrade(ctx context.Context, tc talos.Client) (talos.MachineStage, bool) {
	log := ctrl.LoggerFrom(ctx)
	stage, err := tc.Stage(ctx)
	if err != nil {
		log.V(4).Info("Reading the machine stage of a node failed", "err", err.Error())
		return "", false
	}
	if stage != talos.StageRunning {
		return stage, false
	}
	started, err := tc.UpgradeStarted(ctx)
	if err != nil {
		log.V(4).Info("Reading the events of a node failed", "err", err.Error())
		return "", false
	}
	return stage, started
}

// ReadDrained reads what the install of a drained node needs: the Talos
// version it runs, its boot ID, and, when the installer image is made for
// the running schematic, that schematic.
func (n Nodes) ReadDrained(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, installer upgradev1.InstallerSpec, obs *disruption.DrainPass) error {
	return n.With(ctx, cluster, m, func(tc talos.Client) error {
		var err error
		if obs.Version, obs.BootID, err = versionAndBoot(ctx, tc); err != nil {
			return err
		}
		if talos.NeedsRunningSchematic(installer) {
			obs.Schematic, err = tc.Schematic(ctx)
		}
		return err
	})
}

// InstallerImages dials the Machine's node and resolves its installer image
// of each version.
func (n Nodes) InstallerImages(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, installer upgradev1.InstallerSpec, versions []string) ([]string, error) {
	schematic := ""
	if err := n.With(ctx, cluster, m, func(tc talos.Client) error {
		if _, err := tc.Version(ctx); err != nil {
			return err
		}
		if !talos.NeedsRunningSchematic(installer) {
			return nil
		}
		var err error
		schematic, err = tc.Schematic(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	images := make([]string, 0, len(versions))
	for _, v := range versions {
		image, err := talos.InstallerImage(installer, v, schematic)
		if err != nil {
			return nil, err
		}
		images = append(images, image)
	}
	return images, nil
}

// KubeletRepository reads the repository of the kubelet image of the
// Machine's node from its machine configuration.
func (n Nodes) KubeletRepository(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine) (string, error) {
	var running []byte
	if err := n.With(ctx, cluster, m, func(tc talos.Client) error {
		var err error
		running, err = tc.MachineConfig(ctx)
		return err
	}); err != nil {
		return "", err
	}
	return kubernetes.KubeletRepository(running)
}

// EtcdHealthy reads the etcd member health from a control-plane node: the
// first of the Cluster's control-plane Machines with a node that answers,
// those not being deleted first. Every one is asked, whether the rollout
// has a record of it or not (a rollout whose target comes from CAPI has
// records of the Machines CAPI handed over only). It returns the members'
// names too, nil when no node answered.
func (n Nodes) EtcdHealthy(ctx context.Context, cluster *clusterv1.Cluster, machines map[string]*clusterv1.Machine) (bool, string, []string) {
	var controlPlane []*clusterv1.Machine
	for _, m := range machines {
		if disruption.IsControlPlane(m) && m.Status.NodeRef.IsDefined() {
			controlPlane = append(controlPlane, m)
		}
	}
	if len(controlPlane) == 0 {
		return false, "waiting for etcd health: no control-plane Machine has a node to ask", nil
	}
	slices.SortFunc(controlPlane, func(a, b *clusterv1.Machine) int {
		if da, db := !a.DeletionTimestamp.IsZero(), !b.DeletionTimestamp.IsZero(); da != db {
			if da {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Name, b.Name)
	})
	var lastErr error
	for _, m := range controlPlane {
		var health talos.EtcdHealth
		err := n.With(ctx, cluster, m, func(tc talos.Client) error {
			var err error
			health, err = tc.EtcdHealth(ctx)
			return err
		})
		if err != nil {
			lastErr = err
			continue
		}
		names := make([]string, 0, len(health.Members))
		for _, member := range health.Members {
			names = append(names, member.Name)
		}
		for _, member := range health.Members {
			if !member.Healthy {
				return false, fmt.Sprintf("waiting for etcd member %q to be healthy: %s", member.Name, member.Message), names
			}
		}
		return true, "", names
	}
	return false, fmt.Sprintf("waiting for etcd health: no control-plane node answered: %v", lastErr), nil
}
