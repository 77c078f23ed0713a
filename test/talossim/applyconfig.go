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

package talossim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configdiff"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ApplyConfiguration applies a machine configuration the way machined does
// (Talos 1.13, internal/app/machined/internal/server/v1alpha1): the
// configuration is loaded and validated (codes.InvalidArgument with Talos'
// error otherwise); NO_REBOOT and TRY refuse a change that cannot be
// applied immediately (canApplyImmediate), AUTO picks NO_REBOOT or REBOOT
// by it; a dry run answers with the mode and the diff and changes nothing.
// NO_REBOOT runs and persists the configuration, STAGED persists it for the
// next boot, REBOOT persists it and reboots the node, TRY runs it without
// persisting and rolls back after its timeout (a minute by default) unless
// another apply or a boot comes first.
func (s *machineService) ApplyConfiguration(ctx context.Context, req *machine.ApplyConfigurationRequest) (*machine.ApplyConfigurationResponse, error) {
	t := target(ctx)
	n := t.node

	if err := n.ensureConfig(); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}

	if req.GetMode() != machine.ApplyConfigurationRequest_TRY {
		n.cancelTryRollback()
	}

	cfg, warnings, err := loadConfig(req.GetData())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	out, err := n.applyConfig(req, cfg)
	if err != nil {
		return nil, err
	}

	if out.reboot {
		n.reboot(uuid.NewString())
	}

	if req.GetDryRun() {
		warnings = nil
	}

	return &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{{
		Metadata:    responseMetadata(t),
		Mode:        out.mode,
		Warnings:    warnings,
		ModeDetails: out.details,
	}}}, nil
}

// applyOutcome is what applying a configuration did.
type applyOutcome struct {
	// mode is the mode applied, AUTO resolved.
	mode machine.ApplyConfigurationRequest_Mode
	// details is machined's ModeDetails.
	details string
	// reboot is whether the node reboots now.
	reboot bool
}

// applyConfig applies cfg in the mode of req, or for a dry run tells what
// it would do.
func (n *Node) applyConfig(req *machine.ApplyConfigurationRequest, cfg talosconfig.Provider) (applyOutcome, error) {
	n.mu.Lock()
	defer n.mu.Unlock()

	out := applyOutcome{mode: req.GetMode(), details: "Applied configuration with a reboot"}
	modeName := out.mode.String()
	modeErr := ""

	//nolint:exhaustive // the other modes are refused below, as machined does.
	switch out.mode {
	case machine.ApplyConfigurationRequest_TRY, machine.ApplyConfigurationRequest_NO_REBOOT:
		if err := canApplyImmediate(n.active, cfg); err != nil {
			return out, status.Error(codes.InvalidArgument, err.Error())
		}

		out.details = "Applied configuration without a reboot"
	case machine.ApplyConfigurationRequest_STAGED:
		out.details = "Staged configuration to be applied after the next reboot"
	case machine.ApplyConfigurationRequest_AUTO:
		if err := canApplyImmediate(n.active, cfg); err != nil {
			out.mode = machine.ApplyConfigurationRequest_REBOOT
			modeErr = ": " + err.Error()
		} else {
			out.mode = machine.ApplyConfigurationRequest_NO_REBOOT
			out.details = "Applied configuration without a reboot"
		}

		modeName = fmt.Sprintf("%s(%s)", modeName, out.mode)
	}

	if req.GetDryRun() {
		diff, err := configdiff.DiffConfigs(n.active, cfg)
		if err != nil {
			return out, fmt.Errorf("failed to generate diff: %w", err)
		}

		if diff == "" {
			diff = "No changes."
		}

		out.details = fmt.Sprintf("Dry run summary:\n%s (skipped in dry-run).\nConfig diff:\n\n%s", out.details, diff)

		return out, nil
	}

	//nolint:exhaustive // AUTO was resolved above.
	switch out.mode {
	case machine.ApplyConfigurationRequest_TRY:
		timeout := constants.ConfigTryTimeout
		if req.GetTryModeTimeout() != nil {
			timeout = req.GetTryModeTimeout().AsDuration()
		}

		out.details += fmt.Sprintf("\nThe config is applied in 'try' mode and will be automatically reverted back in %s", timeout)

		n.rollbackAfterLocked(timeout)
		n.setActiveLocked(cfg)
	case machine.ApplyConfigurationRequest_NO_REBOOT:
		n.persistent = cfg
		n.setActiveLocked(cfg)
	case machine.ApplyConfigurationRequest_STAGED:
		n.persistent = cfg
		n.publishConfigLocked()
	case machine.ApplyConfigurationRequest_REBOOT:
		n.persistent = cfg
		n.publishConfigLocked()
		n.rebootModes = append(n.rebootModes, machine.RebootRequest_DEFAULT.String())
		out.reboot = true
	default:
		return out, fmt.Errorf("incorrect mode '%s' specified for the apply config call", out.mode)
	}

	out.details += modeErr
	n.applyModes = append(n.applyModes, modeName)
	n.sim.logf("Node %s: apply config request: mode %s", n.name, modeName)

	return out, nil
}

// rollbackAfterLocked brings back the configuration the node runs now
// after timeout, unless the try ends first (cancelTryRollback, a boot).
func (n *Node) rollbackAfterLocked(timeout time.Duration) {
	n.tryGen++
	gen, previous := n.tryGen, n.active

	n.sim.after(timeout, func() {
		n.mu.Lock()
		defer n.mu.Unlock()

		if n.tryGen != gen {
			return
		}

		n.sim.logf("Node %s: rolling back the configuration", n.name)
		n.setActiveLocked(previous)
	})
}

// cancelTryRollback ends a pending try-mode rollback, as every apply of
// another mode does.
func (n *Node) cancelTryRollback() {
	n.mu.Lock()
	defer n.mu.Unlock()

	n.tryGen++
}

// canApplyImmediate is machined's Runtime.CanApplyImmediate (Talos 1.13,
// internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_runtime.go): a change
// of the v1alpha1 document outside the fields below needs a reboot; the
// error, its diff included, is Talos' own. Changes allowed immediately:
// .debug, .cluster (all of it: images, the CA, ...), and under .machine: ca,
// acceptedCAs, time, certSANs, install, network, sysfs, sysctls, logging,
// controlPlane, kubelet, kernel, registries, pods, seccompProfiles,
// nodeAnnotations, nodeLabels, nodeTaints and the features
// kubernetesTalosAPIAccess, kubePrism, hostDNS, imageCache and
// nodeAddressSortAlgorithm. Everything else (machine.type, token, files,
// env, disks, udev, ...) needs a reboot. Other documents than v1alpha1 are
// not compared.
func canApplyImmediate(current, next talosconfig.Provider) error {
	if current == nil || current.RawV1Alpha1() == nil {
		return errors.New("no current config")
	}

	if next.RawV1Alpha1() == nil {
		return errors.New("new config is not v1alpha1")
	}

	cur := current.RawV1Alpha1()
	cfg := next.RawV1Alpha1().DeepCopy()

	cfg.ConfigDebug = cur.ConfigDebug
	cfg.ClusterConfig = cur.ClusterConfig

	if cfg.MachineConfig != nil && cur.MachineConfig != nil {
		m, c := cfg.MachineConfig, cur.MachineConfig
		m.MachineCA = c.MachineCA
		m.MachineAcceptedCAs = c.MachineAcceptedCAs
		m.MachineTime = c.MachineTime //nolint:staticcheck // Talos compares it, deprecated or not.
		m.MachineCertSANs = c.MachineCertSANs
		m.MachineInstall = c.MachineInstall
		m.MachineNetwork = c.MachineNetwork //nolint:staticcheck // Talos compares it, deprecated or not.
		m.MachineSysfs = c.MachineSysfs
		m.MachineSysctls = c.MachineSysctls
		m.MachineLogging = c.MachineLogging
		m.MachineControlPlane = c.MachineControlPlane
		m.MachineKubelet = c.MachineKubelet
		m.MachineKernel = c.MachineKernel
		m.MachineRegistries = c.MachineRegistries //nolint:staticcheck // Talos compares it, deprecated or not.
		m.MachinePods = c.MachinePods
		m.MachineSeccompProfiles = c.MachineSeccompProfiles
		m.MachineNodeAnnotations = c.MachineNodeAnnotations
		m.MachineNodeLabels = c.MachineNodeLabels
		m.MachineNodeTaints = c.MachineNodeTaints

		if m.MachineFeatures != nil && c.MachineFeatures != nil {
			m.MachineFeatures.KubernetesTalosAPIAccessConfig = c.MachineFeatures.KubernetesTalosAPIAccessConfig
			m.MachineFeatures.KubePrismSupport = c.MachineFeatures.KubePrismSupport
			m.MachineFeatures.HostDNSSupport = c.MachineFeatures.HostDNSSupport
			m.MachineFeatures.ImageCacheSupport = c.MachineFeatures.ImageCacheSupport
			m.MachineFeatures.FeatureNodeAddressSortAlgorithm = c.MachineFeatures.FeatureNodeAddressSortAlgorithm
		}
	}

	if !reflect.DeepEqual(cur, cfg) {
		diff, err := configdiff.DiffConfigs(container.NewV1Alpha1(cur), container.NewV1Alpha1(cfg))
		if err != nil {
			return fmt.Errorf("error calculating diff: %w", err)
		}

		return fmt.Errorf("this config change can't be applied in immediate mode\ndiff:\n%s", diff)
	}

	return nil
}
