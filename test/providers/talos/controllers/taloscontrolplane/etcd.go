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

package taloscontrolplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	talosclient "github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// TalosConfigSecretSuffix is appended to a Cluster's name to name the
	// Secret of its talosconfig, as the Talos bootstrap provider names it.
	TalosConfigSecretSuffix = "-talosconfig"
	// TalosConfigSecretKey is the key of the talosconfig in that Secret.
	TalosConfigSecretKey = "talosconfig"
	// DefaultTalosAPIPort is the port of the Talos API.
	DefaultTalosAPIPort = 50000
	// DefaultEtcdTimeout bounds the etcd member check through one node.
	DefaultEtcdTimeout = 10 * time.Second
)

// errNoAddress is returned for a Machine with no address to reach.
var errNoAddress = errors.New("the Machine has no address")

// EtcdMember is one etcd member, as a control-plane node reports it.
type EtcdMember struct {
	// ID is the member's ID.
	ID uint64
	// Hostname is the member's name, its node's name.
	Hostname string
	// Healthy is false when the member has an alarm raised.
	Healthy bool
}

// Etcd reads and changes the etcd members of a Cluster through the Talos
// API of its control-plane Machines, as CACPPT does (controllers/etcd.go).
type Etcd interface {
	// Members lists the etcd members as via's node sees them.
	Members(ctx context.Context, cluster *clusterv1.Cluster, via *clusterv1.Machine) ([]EtcdMember, error)
	// Leave takes the node of m out of etcd from the node itself: it
	// forfeits its leadership, then leaves (CACPPT's gracefulEtcdLeave).
	Leave(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine) error
	// Remove removes member id through via's node (CACPPT's
	// forceEtcdLeave), for a node that cannot leave itself.
	Remove(ctx context.Context, cluster *clusterv1.Cluster, via *clusterv1.Machine, id uint64) error
}

// TalosEtcd is the Etcd of the Talos API: it reads the Cluster's
// talosconfig Secret and asks a Machine's node for the members
// (EtcdMemberList) and their alarms (EtcdAlarmList), to forfeit its
// leadership and leave (EtcdForfeitLeadership, EtcdLeaveCluster), or to
// remove another member (EtcdRemoveMemberByID).
type TalosEtcd struct {
	// Reader reads the talosconfig Secret; pass an uncached reader.
	Reader client.Reader
	// Port is the Talos API port, DefaultTalosAPIPort when zero.
	Port int
	// Timeout bounds the calls, DefaultEtcdTimeout when zero.
	Timeout time.Duration
}

var _ Etcd = &TalosEtcd{}

// Members lists the etcd members as via's node sees them.
func (e *TalosEtcd) Members(ctx context.Context, cluster *clusterv1.Cluster, via *clusterv1.Machine) ([]EtcdMember, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()

	c, ctx, err := e.dial(ctx, cluster, via)
	if err != nil {
		return nil, err
	}
	defer c.Close() //nolint:errcheck // nothing to do about a failed close.

	list, err := c.EtcdMemberList(ctx, &machineapi.EtcdMemberListRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing the etcd members through Machine %s/%s: %w", via.Namespace, via.Name, err)
	}

	alarms, err := c.EtcdAlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the etcd alarms through Machine %s/%s: %w", via.Namespace, via.Name, err)
	}

	alarmed := map[uint64]bool{}

	for _, msg := range alarms.GetMessages() {
		for _, a := range msg.GetMemberAlarms() {
			if a.GetAlarm() != machineapi.EtcdMemberAlarm_NONE {
				alarmed[a.GetMemberId()] = true
			}
		}
	}

	var members []EtcdMember

	for _, msg := range list.GetMessages() {
		for _, m := range msg.GetMembers() {
			members = append(members, EtcdMember{ID: m.GetId(), Hostname: m.GetHostname(), Healthy: !alarmed[m.GetId()]})
		}
	}

	return members, nil
}

// Leave takes m's node out of etcd from the node itself.
func (e *TalosEtcd) Leave(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()

	c, ctx, err := e.dial(ctx, cluster, m)
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck // nothing to do about a failed close.

	if _, err := c.EtcdForfeitLeadership(ctx, &machineapi.EtcdForfeitLeadershipRequest{}); err != nil {
		return fmt.Errorf("forfeiting the etcd leadership of Machine %s/%s: %w", m.Namespace, m.Name, err)
	}

	if err := c.EtcdLeaveCluster(ctx, &machineapi.EtcdLeaveClusterRequest{}); err != nil {
		return fmt.Errorf("leaving etcd from Machine %s/%s: %w", m.Namespace, m.Name, err)
	}

	return nil
}

// Remove removes member id through via's node.
func (e *TalosEtcd) Remove(ctx context.Context, cluster *clusterv1.Cluster, via *clusterv1.Machine, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()

	c, ctx, err := e.dial(ctx, cluster, via)
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck // nothing to do about a failed close.

	if err := c.EtcdRemoveMemberByID(ctx, &machineapi.EtcdRemoveMemberByIDRequest{MemberId: id}); err != nil {
		return fmt.Errorf("removing etcd member %x through Machine %s/%s: %w", id, via.Namespace, via.Name, err)
	}

	return nil
}

func (e *TalosEtcd) timeout() time.Duration {
	if e.Timeout == 0 {
		return DefaultEtcdTimeout
	}

	return e.Timeout
}

// dial returns a Talos client of the Machine's node, with the Cluster's
// talosconfig, and ctx aimed at the node.
func (e *TalosEtcd) dial(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine) (*talosclient.Client, context.Context, error) {
	address := machineAddress(m)
	if address == "" {
		return nil, ctx, fmt.Errorf("%w: Machine %s/%s", errNoAddress, m.Namespace, m.Name)
	}

	key := client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Name + TalosConfigSecretSuffix}

	secret := &corev1.Secret{}
	if err := e.Reader.Get(ctx, key, secret); err != nil {
		return nil, ctx, fmt.Errorf("reading the talosconfig Secret %s: %w", key, err)
	}

	cfg, err := clientconfig.FromBytes(secret.Data[TalosConfigSecretKey])
	if err != nil {
		return nil, ctx, fmt.Errorf("reading the talosconfig of Secret %s: %w", key, err)
	}

	configContext, ok := cfg.Contexts[cfg.Context]
	if !ok {
		return nil, ctx, fmt.Errorf("the talosconfig of Secret %s has no context %q", key, cfg.Context)
	}

	port := e.Port
	if port == 0 {
		port = DefaultTalosAPIPort
	}

	c, err := talosclient.New(ctx,
		talosclient.WithConfigContext(configContext),
		talosclient.WithEndpoints(net.JoinHostPort(address, strconv.Itoa(port))),
	)
	if err != nil {
		return nil, ctx, fmt.Errorf("creating the Talos client of Machine %s/%s: %w", m.Namespace, m.Name, err)
	}

	return c, talosclient.WithNode(ctx, address), nil
}

// machineAddress is the Machine's first internal address, else its first.
func machineAddress(m *clusterv1.Machine) string {
	for _, a := range m.Status.Addresses {
		if a.Type == clusterv1.MachineInternalIP && a.Address != "" {
			return a.Address
		}
	}

	for _, a := range m.Status.Addresses {
		if a.Address != "" {
			return a.Address
		}
	}

	return ""
}

// removalKeepsQuorum reports whether removing the member hostname leaves a
// healthy quorum among the members left, and says why.
func removalKeepsQuorum(members []EtcdMember, hostname string) (bool, string) {
	var (
		found   bool
		left    int
		healthy int
	)

	for _, m := range members {
		if m.Hostname == hostname {
			found = true

			continue
		}

		left++

		if m.Healthy {
			healthy++
		}
	}

	switch {
	case !found:
		return true, fmt.Sprintf("%s is not an etcd member", hostname)
	case left == 0:
		return false, fmt.Sprintf("%s is the last etcd member", hostname)
	}

	quorum := left/2 + 1
	if healthy < quorum {
		return false, fmt.Sprintf("removing %s would leave %d healthy etcd members of %d, below their quorum of %d", hostname, healthy, left, quorum)
	}

	return true, fmt.Sprintf("removing %s leaves %d healthy etcd members of %d, quorum %d", hostname, healthy, left, quorum)
}
