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

package talos

import (
	"context"
	"fmt"
	"strings"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/config"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// immediateModeRefusal is how machined's error begins when a change cannot
// be applied without a reboot (Runtime.CanApplyImmediate); a diff follows.
const immediateModeRefusal = "this config change can't be applied in immediate mode"

// talosApplyModes maps Tollgate's apply modes to Talos'.
var talosApplyModes = map[ApplyMode]machine.ApplyConfigurationRequest_Mode{
	ApplyModeAuto:     machine.ApplyConfigurationRequest_AUTO,
	ApplyModeNoReboot: machine.ApplyConfigurationRequest_NO_REBOOT,
	ApplyModeReboot:   machine.ApplyConfigurationRequest_REBOOT,
	ApplyModeStaged:   machine.ApplyConfigurationRequest_STAGED,
}

func (c *nodeClient) MachineConfig(ctx context.Context) ([]byte, error) {
	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	mc, err := safe.StateGetByID[*config.MachineConfig](ctx, c.talos.COSI, config.ActiveID)
	if err != nil {
		return nil, c.wrap(ctx, "reading the machine configuration", err)
	}

	data, err := mc.Provider().Bytes()
	if err != nil {
		return nil, fmt.Errorf("encoding the machine configuration of node %s: %w", c.node, err)
	}

	return data, nil
}

func (c *nodeClient) ApplyConfiguration(ctx context.Context, cfg []byte, mode ApplyMode, dryRun bool) (ApplyResult, error) {
	talosMode, ok := talosApplyModes[mode]
	if !ok {
		return ApplyResult{}, fmt.Errorf("apply mode %q is not one of %q, %q, %q or %q",
			mode, ApplyModeAuto, ApplyModeNoReboot, ApplyModeReboot, ApplyModeStaged)
	}

	ctx, cancel := c.callContext(ctx, c.timeout)
	defer cancel()

	resp, err := c.talos.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: cfg, Mode: talosMode, DryRun: dryRun})
	if err != nil {
		return ApplyResult{}, c.applyError(ctx, err)
	}

	for _, msg := range resp.GetMessages() {
		applied := applyModeOf(msg.GetMode())

		return ApplyResult{
			Mode:           applied,
			RebootRequired: applied == ApplyModeReboot || applied == ApplyModeStaged,
			Details:        msg.GetModeDetails(),
			Warnings:       msg.GetWarnings(),
		}, nil
	}

	return ApplyResult{}, fmt.Errorf("applying the machine configuration on node %s: empty answer", c.node)
}

// applyModeOf is the ApplyMode of a mode a node answered with.
func applyModeOf(mode machine.ApplyConfigurationRequest_Mode) ApplyMode {
	for m, talosMode := range talosApplyModes {
		if talosMode == mode {
			return m
		}
	}

	return ApplyMode(strings.ToLower(mode.String()))
}

// applyError maps the error of an ApplyConfiguration call: a refusal of the
// node to ErrRebootRequired or ErrInvalidConfig, a transport error after
// the request was sent to ErrApplyInterrupted. The refusal of a change that
// needs a reboot keeps Talos' first line only: the diff that follows it
// holds values of the configuration, secrets among them.
func (c *nodeClient) applyError(ctx context.Context, err error) error {
	const op = "applying the machine configuration"

	if status.Code(err) != codes.InvalidArgument {
		return interruptedAs(ErrApplyInterrupted, c.wrap(ctx, op, err))
	}

	msg := status.Convert(err).Message()
	if strings.HasPrefix(msg, immediateModeRefusal) {
		return fmt.Errorf("%s on node %s: %w: %s", op, c.node, ErrRebootRequired, immediateModeRefusal)
	}

	return fmt.Errorf("%s on node %s: %w: %s", op, c.node, ErrInvalidConfig, msg)
}
