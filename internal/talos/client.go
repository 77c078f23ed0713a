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
}

// UpgradeResult is the outcome of a successful Upgrade.
type UpgradeResult struct {
	// RebootsItself is true when the node reboots without a Reboot call
	// (the legacy upgrade API of Talos before 1.13).
	RebootsItself bool
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
)
