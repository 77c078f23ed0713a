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
	"errors"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// DefaultAPIPort is the port of the Talos API (apid) on every node.
const DefaultAPIPort = 50000

// Client is the narrow view of a Talos node that Tollgate needs. Every call
// runs under its own timeout. A Client talks to one node and must be closed.
type Client interface {
	// Version returns the Talos version the node runs, for example "v1.12.4".
	Version(ctx context.Context) (string, error)

	// BootID returns the node's boot ID (/proc/sys/kernel/random/boot_id);
	// it changes on every boot, which is how a reboot is proven.
	BootID(ctx context.Context) (string, error)

	// BootTime returns when the node last booted, as its kernel says
	// (MachineService.SystemStat, the btime of /proc/stat): whether a node
	// rebooted after a reboot was asked for is read from the node.
	BootTime(ctx context.Context) (time.Time, error)

	// Stage returns the stage of the node's machine as Talos reports it
	// (the COSI resource MachineStatus, namespace runtime, id machine, as
	// "talosctl get machinestatus" reads it): StageUpgrading while an
	// upgrade sequence runs on it, StageRunning once it is up and runs
	// none. A node that does not report it (before Talos 1.2) returns an
	// error.
	Stage(ctx context.Context) (MachineStage, error)

	// UpgradeStarted reports whether an upgrade sequence started on the
	// node's current boot, read from its event log (MachineService.Events
	// from the oldest event machined keeps, as "talosctl events --tail -1"
	// reads it; machined keeps the events of the current boot only). The
	// log is read until it has been quiet for a moment: the events it
	// keeps come at once.
	UpgradeStarted(ctx context.Context) (bool, error)

	// Schematic returns the Image Factory schematic ID the node runs, read
	// from its "schematic" extension, or "" when it has none (the default
	// schematic).
	Schematic(ctx context.Context) (string, error)

	// Upgrade installs image on the node. On Talos 1.13 and later it pulls
	// the image, installs it through the LifecycleService and does not
	// reboot: the caller reboots with Reboot. On older nodes it makes the
	// legacy MachineService.Upgrade call, after which the node reboots by
	// itself; RebootsItself in the result says which happened. Which API
	// the node has is read from the node itself: unless opts allow a node
	// that reboots itself, such a node gets no call and Upgrade returns
	// ErrRebootsItself, so that a caller never reboots a node by surprise.
	Upgrade(ctx context.Context, image string, opts UpgradeOptions) (UpgradeResult, error)

	// Reboot reboots the node, the way mode says.
	Reboot(ctx context.Context, mode upgradev1.RebootMode) error

	// EtcdHealth reports the health of the etcd cluster as seen from a
	// control-plane node.
	EtcdHealth(ctx context.Context) (EtcdHealth, error)

	// MachineConfig returns the machine configuration the node runs, as
	// YAML, read from its COSI resource MachineConfig (namespace config,
	// id v1alpha1) as "talosctl get machineconfig -o yaml" reads it: a
	// configuration staged for the next boot is not in it until that boot,
	// and one applied in try mode is, until it is rolled back.
	MachineConfig(ctx context.Context) ([]byte, error)

	// ApplyConfiguration sends cfg, a whole machine configuration, to the
	// node (MachineService.ApplyConfiguration) in mode; with dryRun the
	// node only says what it would do (ApplyResult.Details has the diff).
	// The node refuses a configuration that does not load or validate
	// (ErrInvalidConfig) and, in ApplyModeNoReboot, a change that needs a
	// reboot (ErrRebootRequired): nothing is applied then. ApplyModeReboot,
	// and ApplyModeAuto when the change needs a reboot, make the node
	// reboot by itself at once; ApplyResult.Mode says which mode the node
	// used. A call whose answer is lost may have been applied
	// (ErrApplyInterrupted): read the configuration back.
	ApplyConfiguration(ctx context.Context, cfg []byte, mode ApplyMode, dryRun bool) (ApplyResult, error)

	// Close releases the connection.
	Close() error
}

// UpgradeOptions are the options of an Upgrade call.
type UpgradeOptions struct {
	// AllowSelfReboot lets Upgrade make the legacy call of a node before
	// Talos 1.13, which reboots the node. Without it such a node gets no
	// call and Upgrade returns ErrRebootsItself.
	AllowSelfReboot bool

	// RebootMode is how the legacy call reboots the node.
	RebootMode upgradev1.RebootMode

	// BootID, when set, is the boot the call is meant for: a node that
	// booted since gets no call and Upgrade returns ErrBootedSince. It is
	// read in the same connection right before the call.
	BootID string
}

// MachineStage is the stage of a node's machine, as Talos names it
// (runtime.MachineStage of the Talos machinery, lower case).
type MachineStage string

const (
	// StageRunning is a node up that runs no sequence (upgrade, reboot,
	// reset...).
	StageRunning MachineStage = "running"
	// StageUpgrading is a node whose upgrade sequence runs: it installs,
	// and reboots when it is done.
	StageUpgrading MachineStage = "upgrading"
)

// UpgradeResult is the outcome of a successful Upgrade.
type UpgradeResult struct {
	// RebootsItself is true when the node reboots without a Reboot call
	// (the legacy upgrade API of Talos before 1.13).
	RebootsItself bool
}

// ApplyMode is how a node applies a machine configuration, the modes of
// "talosctl apply-config --mode" that Tollgate uses (not "try").
type ApplyMode string

const (
	// ApplyModeAuto applies without a reboot when the change allows it,
	// else applies and reboots the node.
	ApplyModeAuto ApplyMode = "auto"
	// ApplyModeNoReboot applies without a reboot, or refuses the change
	// with ErrRebootRequired.
	ApplyModeNoReboot ApplyMode = "no-reboot"
	// ApplyModeReboot applies and reboots the node.
	ApplyModeReboot ApplyMode = "reboot"
	// ApplyModeStaged stores the configuration for the node's next boot.
	ApplyModeStaged ApplyMode = "staged"
)

// ApplyResult is the outcome of a successful ApplyConfiguration.
type ApplyResult struct {
	// Mode is the mode the node applied the configuration with (for a dry
	// run, would apply it with): ApplyModeAuto resolved to
	// ApplyModeNoReboot or ApplyModeReboot.
	Mode ApplyMode
	// RebootRequired is true when the configuration takes effect only at
	// the node's next boot: the node reboots by itself (ApplyModeReboot)
	// or waits for a reboot (ApplyModeStaged).
	RebootRequired bool
	// Details is the node's account of what it did; for a dry run, the
	// diff of the configuration it runs and cfg, which holds values of
	// both, secrets among them: never log it or put it in a status.
	Details string
	// Warnings are the node's warnings about the configuration.
	Warnings []string
}

// EtcdHealth is the health of the etcd cluster.
type EtcdHealth struct {
	// Members are the etcd members, by name.
	Members []EtcdMember
}

// EtcdMember is one etcd member.
type EtcdMember struct {
	// Name is the member's name (the node's hostname).
	Name string
	// Healthy is whether the member answers and has no alarm.
	Healthy bool
	// Message says why an unhealthy member is unhealthy.
	Message string
}

// Dialer opens a Client to the node of a Machine, with the credentials of the
// Machine's Cluster.
type Dialer interface {
	Dial(ctx context.Context, cluster *clusterv1.Cluster, machine *clusterv1.Machine) (Client, error)
}

// Typed errors, to be tested with errors.Is.
var (
	// ErrTalosConfigNotFound is returned when the <cluster>-talosconfig Secret is missing.
	ErrTalosConfigNotFound = errors.New("talosconfig Secret not found")
	// ErrTalosConfigInvalid is returned when the talosconfig cannot be parsed or lacks credentials.
	ErrTalosConfigInvalid = errors.New("talosconfig is invalid")
	// ErrNoAddress is returned when the Machine has no InternalIP or ExternalIP.
	ErrNoAddress = errors.New("machine has no address")
	// ErrNotDialed is returned, beside its cause, by every error of Dial:
	// the node was not reached, because what dialing it needs (its
	// talosconfig Secret, its Machine's address) could not be read or
	// used. It says nothing of the node; the errors of talking to the node
	// come from the Client's calls.
	ErrNotDialed = errors.New("the node was not dialed")
	// ErrTLS is returned when the TLS handshake fails (wrong CA, bad certificate).
	ErrTLS = errors.New("TLS handshake with the Talos API failed")
	// ErrUnreachable is returned when the node's Talos API does not answer.
	ErrUnreachable = errors.New("unreachable Talos API")
	// ErrDeadlineExceeded is returned when a call does not finish in time.
	ErrDeadlineExceeded = errors.New("timed out waiting for the Talos API")
	// ErrUpgradeInterrupted is returned, beside ErrUnreachable or
	// ErrDeadlineExceeded, when the upgrade request was sent and its answer
	// never came: the node may have received it and be installing (or,
	// before Talos 1.13, rebooting). Only the node's boot ID and version
	// tell, later.
	ErrUpgradeInterrupted = errors.New("the upgrade call was interrupted after its request was sent")
	// ErrUpgradeFailed is returned when the upgrade exits non-zero.
	ErrUpgradeFailed = errors.New("upgrade failed")
	// ErrRebootsItself is returned, and no call is made, when an Upgrade
	// not allowed to reboot the node reaches a node whose upgrade API
	// reboots it (Talos before 1.13).
	ErrRebootsItself = errors.New("the node's upgrade API reboots the node")
	// ErrInstallInProgress is returned when a node of Talos 1.13 or later
	// refuses an install because another one runs on it (its lifecycle
	// service installs one image at a time): nothing was done, and the
	// install may be asked for again once that one ended.
	ErrInstallInProgress = errors.New("another install runs on the node")
	// ErrBootedSince is returned, and no call is made, when an Upgrade
	// meant for one boot of the node (UpgradeOptions.BootID) finds it on
	// another: it rebooted since.
	ErrBootedSince = errors.New("the node booted since the call was decided")
	// ErrRebootRequired is returned when the node refuses to apply a
	// configuration without a reboot because the change needs one (the
	// error carries Talos' diff of what needs it); nothing was applied.
	ErrRebootRequired = errors.New("the configuration change needs a reboot")
	// ErrInvalidConfig is returned when the node refuses a configuration
	// that does not load or validate (Talos' error says why); nothing was
	// applied.
	ErrInvalidConfig = errors.New("the machine configuration is invalid")
	// ErrApplyInterrupted is returned, beside ErrUnreachable or
	// ErrDeadlineExceeded, when the ApplyConfiguration request was sent
	// and its answer never came: the node may have applied it (and, in
	// reboot mode, be rebooting). Only reading the configuration back
	// tells.
	ErrApplyInterrupted = errors.New("the apply-config call was interrupted after its request was sent")
)
