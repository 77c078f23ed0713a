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
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/cosi-project/runtime/pkg/state"
	"github.com/google/uuid"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Faults are the failures a node simulates. The zero value is a healthy
// node.
type Faults struct {
	// UpgradeExitCode, when non-zero, makes LifecycleService.Upgrade end
	// with this exit code and the legacy MachineService.Upgrade fail after
	// its acknowledgement, without installing anything or rebooting.
	UpgradeExitCode int32
	// PullDelay slows every image pull by this much, streaming progress
	// meanwhile.
	PullDelay time.Duration
	// InstallDelay makes LifecycleService.Upgrade write the inactive slot
	// for this long, holding the node's install lock; the install runs to
	// its end when its caller goes away meanwhile.
	InstallDelay time.Duration
	// HangRPCs are the RPCs (such as RPCVersion, or AllRPCs) that block
	// until the client gives up, as on a node that accepts connections but
	// does not answer.
	HangRPCs []string
	// DropRPCs are the RPCs (or AllRPCs) that fail with Unavailable before
	// they reach the node, as requests lost on their way: they are not
	// recorded in the call log and change nothing on the node.
	DropRPCs []string
	// LoseResponseRPCs are the RPCs (or AllRPCs) whose request reaches the
	// node and is acted on, but whose answer is lost on its way back: the
	// client gets Unavailable, as when a connection breaks after a request
	// was sent, and cannot tell whether the node acted.
	LoseResponseRPCs []string
	// Rollback makes the node boot back into the version it ran before an
	// upgrade (A/B rollback), with a new boot ID.
	Rollback bool
	// NeverComesBack keeps the node's API down after its next reboot.
	NeverComesBack bool
	// EtcdUnhealthy makes the node's etcd member report errors and raise
	// an alarm.
	EtcdUnhealthy bool
	// StaticPodNeverReady names the control-plane components (such as
	// ComponentAPIServer) whose static Pod never becomes Ready once it
	// (re)starts: after a change of its image or a boot while the fault is
	// set.
	StaticPodNeverReady []string
}

// AllRPCs in Faults.HangRPCs makes every RPC of the node hang.
const AllRPCs = "*"

// stagedImage is an upgrade installed but not booted yet.
type stagedImage struct {
	image     string
	version   string
	schematic string
}

// Node is one simulated Talos node.
type Node struct {
	sim          *Simulator
	name         string
	ip           net.IP
	controlPlane bool
	etcdCluster  string
	platform     string
	memberID     uint64
	// clusterName, kubernetesVersion and kubeletRepository are what a
	// generated machine configuration is made for.
	clusterName       string
	kubernetesVersion string
	kubeletRepository string
	// reportsKubernetes is whether the node's configuration decides its
	// kubelet version and static Pods in the workload cluster.
	reportsKubernetes bool
	// reportMu orders the reports of the kubelet to the NodeUpdater.
	reportMu sync.Mutex

	mu         sync.Mutex
	version    string
	schematic  string
	extensions []Extension
	bootID     string
	bootTime   time.Time
	staged     *stagedImage
	pulled     map[string]bool
	faults     Faults
	// loseNext are the RPCs whose next answer is lost, once.
	loseNext    map[string]bool
	up          bool
	server      *grpc.Server
	cosi        state.State
	events      []*machine.Event
	subscribers map[chan *machine.Event]struct{}
	boots       int
	rebootModes []string
	// upgrading is true from the start of an upgrade sequence (the legacy
	// upgrade call) to its failure or the node's next boot.
	upgrading bool
	// installing is true while LifecycleService.Upgrade runs: the
	// lifecycle service's lock, one install at a time.
	installing bool
	removed    bool
	// leftEtcd is true once the node left the etcd cluster (EtcdLeaveCluster
	// on it, or EtcdRemoveMemberByID of its member through another): its
	// etcd is stopped for good and it is no member.
	leftEtcd bool
	// active is the machine configuration the node runs, persistent the
	// one it boots with; nil until first needed (ensureConfig).
	active     talosconfig.Provider
	persistent talosconfig.Provider
	applyModes []string
	// tryGen counts the changes that end a pending try-mode rollback.
	tryGen int
	// kubelet is what the node's kubelet reports now; kubeletGen counts
	// its changes, so that a delayed settle of an older one is dropped.
	kubelet    Kubelet
	kubeletGen int
}

// Name is the node's hostname.
func (n *Node) Name() string { return n.name }

// Address is the node's IP address (without port).
func (n *Node) Address() string { return n.ip.String() }

// Endpoint is the node's API address, host:port.
func (n *Node) Endpoint() string {
	return net.JoinHostPort(n.ip.String(), fmt.Sprint(n.sim.opts.Port))
}

// ControlPlane reports whether the node is a control-plane node.
func (n *Node) ControlPlane() bool { return n.controlPlane }

// EtcdMember reports whether the node is an etcd member: a control-plane
// node that has not left etcd.
func (n *Node) EtcdMember() bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.controlPlane && !n.leftEtcd
}

// leaveEtcd takes the node out of etcd; a node that is no member stays so.
func (n *Node) leaveEtcd() {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.controlPlane {
		n.leftEtcd = true
	}
}

// Version is the Talos version the node runs now.
func (n *Node) Version() string {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.version
}

// Schematic is the schematic ID the node runs now ("" for none).
func (n *Node) Schematic() string {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.schematic
}

// BootTime is when the node last booted, to the second, as its kernel
// says (the btime of /proc/stat).
func (n *Node) BootTime() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.bootTime
}

// BootID is the node's current boot ID.
func (n *Node) BootID() string {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.bootID
}

// Boots counts the completed reboots of the node: once it is incremented,
// the node's API is up again.
func (n *Node) Boots() int {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.boots
}

// RebootModes are the reboot modes ("DEFAULT", "POWERCYCLE") the node was
// asked for, in order: by Reboot calls, by legacy upgrade calls, which
// reboot the node, and ("DEFAULT") by configurations applied in REBOOT
// mode (or AUTO that picked it).
func (n *Node) RebootModes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()

	return append([]string(nil), n.rebootModes...)
}

// recordRebootMode records a reboot mode asked for.
func (n *Node) recordRebootMode(mode string) {
	n.mu.Lock()
	defer n.mu.Unlock()

	n.rebootModes = append(n.rebootModes, mode)
}

// StagedImage is the installer image installed but not booted yet, or "".
func (n *Node) StagedImage() string {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.staged == nil {
		return ""
	}

	return n.staged.image
}

// Up reports whether the node's API answers.
func (n *Node) Up() bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.up
}

// InjectFault replaces the node's faults with f.
func (n *Node) InjectFault(f Faults) {
	n.mu.Lock()
	defer n.mu.Unlock()

	n.faults = f
}

// LoseNextResponse loses the answer to the next call of rpc, once, after
// the node acted on it: a fault that ends by itself, for a test that must
// see one lost answer and then the node answer again.
func (n *Node) LoseNextResponse(rpc string) {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.loseNext == nil {
		n.loseNext = map[string]bool{}
	}
	n.loseNext[rpc] = true
}

// Faults returns the node's current faults.
func (n *Node) Faults() Faults {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.faults
}

// hangs reports whether rpc is made to hang.
func (n *Node) hangs(rpc string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	return matchesRPC(n.faults.HangRPCs, rpc)
}

// drops reports whether rpc is lost before it reaches the node.
func (n *Node) drops(rpc string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	return matchesRPC(n.faults.DropRPCs, rpc)
}

// losesResponse reports whether the answer to rpc is lost on its way back;
// a loss armed by LoseNextResponse is used up.
func (n *Node) losesResponse(rpc string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.loseNext[rpc] {
		delete(n.loseNext, rpc)
		return true
	}
	return matchesRPC(n.faults.LoseResponseRPCs, rpc)
}

// matchesRPC reports whether rpcs names rpc, or every RPC.
func matchesRPC(rpcs []string, rpc string) bool {
	for _, r := range rpcs {
		if r == AllRPCs || r == rpc {
			return true
		}
	}

	return false
}

// boot brings the node up on lis: fresh in-memory state, events of a
// completed boot, a new gRPC server. The caller must not hold n.mu.
func (n *Node) boot(lis net.Listener) error {
	tlsConfig, err := n.sim.ca.serverTLSConfig(n.ip, n.name)
	if err != nil {
		return err
	}

	n.mu.Lock()
	defer n.mu.Unlock()

	if n.removed {
		return fmt.Errorf("node %s was removed", n.name)
	}

	cosiState, err := newCOSIState(n.schematic, n.extensions)
	if err != nil {
		return err
	}

	n.cosi = cosiState
	n.publishConfigLocked()
	n.events = nil
	n.upgrading = false
	n.setStageLocked(machine.MachineStatusEvent_BOOTING, false)
	n.setStageLocked(machine.MachineStatusEvent_RUNNING, true)

	n.server = newGRPCServer(n.sim, n, tlsConfig)
	n.up = true

	srv := n.server

	go srv.Serve(lis) //nolint:errcheck // Serve returns when the server stops.

	return nil
}

// reboot takes the node's API down after a short delay (so the reply of the
// RPC that asked for it gets out), then boots the staged image unless a
// fault says otherwise.
func (n *Node) reboot(actorID string) {
	n.mu.Lock()
	n.emitLocked(actorID, &machine.SequenceEvent{Sequence: "reboot", Action: machine.SequenceEvent_START})
	n.setStageLocked(machine.MachineStatusEvent_REBOOTING, false)
	n.mu.Unlock()

	n.sim.after(100*time.Millisecond, func() {
		n.mu.Lock()
		if !n.up {
			n.mu.Unlock()

			return
		}

		n.up = false
		srv := n.server
		n.server = nil
		n.closeSubscribersLocked()
		n.mu.Unlock()

		srv.Stop()
		n.sim.logf("Node %s rebooting", n.name)
		n.sim.notify(func(ctx context.Context, u NodeUpdater) error { return u.NodeRebooting(ctx, n.name) })

		n.sim.after(n.sim.getRebootDuration(), n.comeBack)
	})
}

// comeBack ends a reboot.
func (n *Node) comeBack() {
	n.mu.Lock()
	if n.removed {
		n.mu.Unlock()

		return
	}

	if n.faults.NeverComesBack {
		n.mu.Unlock()
		n.sim.logf("Node %s does not come back", n.name)

		return
	}

	if n.staged != nil && !n.faults.Rollback {
		n.version = n.staged.version
		if n.staged.schematic != "" {
			n.schematic = n.staged.schematic
		}
	}

	n.staged = nil
	n.bootID, n.bootTime = uuid.NewString(), time.Now().Truncate(time.Second)
	n.bootConfigLocked()
	version := n.version
	n.mu.Unlock()

	var (
		lis net.Listener
		err error
	)

	// The address was ours a moment ago; retry briefly should the kernel
	// still hold it.
	for range 50 {
		lis, err = net.Listen("tcp", n.Endpoint())
		if err == nil || n.sim.isClosed() {
			break
		}

		time.Sleep(20 * time.Millisecond)
	}

	if err != nil || n.sim.isClosed() {
		if lis != nil {
			_ = lis.Close()
		}

		n.sim.logf("Node %s cannot listen again: %v", n.name, err)

		return
	}

	if err := n.boot(lis); err != nil {
		_ = lis.Close()
		n.sim.logf("Node %s failed to boot: %v", n.name, err)

		return
	}

	n.mu.Lock()
	n.boots++
	n.mu.Unlock()

	n.sim.logf("Node %s back on %s", n.name, version)
	n.sim.notify(func(ctx context.Context, u NodeUpdater) error { return u.NodeBooted(ctx, n.name, version) })
	n.reportKubelet()
}

// shutdown stops the node for good.
func (n *Node) shutdown() {
	n.mu.Lock()
	srv := n.server
	n.server = nil
	n.up = false
	n.closeSubscribersLocked()
	n.mu.Unlock()

	if srv != nil {
		srv.Stop()
	}
}

// emitLocked records an event and sends it to the Events watchers.
func (n *Node) emitLocked(actorID string, payload proto.Message) {
	data, err := anypb.New(payload)
	if err != nil {
		return
	}

	// Talos events carry "talos/runtime/<message>" type URLs.
	data.TypeUrl = "talos/runtime/" + strings.TrimPrefix(data.TypeUrl, "type.googleapis.com/")

	ev := &machine.Event{Data: data, Id: uuid.NewString(), ActorId: actorID}
	n.events = append(n.events, ev)

	for ch := range n.subscribers {
		select {
		case ch <- ev:
		default: // a slow watcher loses events, as with the real ring buffer.
		}
	}
}

// subscribe returns the events to replay (tail as in EventsRequest) and a
// channel of the events to come.
func (n *Node) subscribe(tail int32) ([]*machine.Event, chan *machine.Event, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()

	var replay []*machine.Event

	switch {
	case tail < 0:
		replay = append(replay, n.events...)
	case tail > 0:
		start := max(len(n.events)-int(tail), 0)
		replay = append(replay, n.events[start:]...)
	}

	ch := make(chan *machine.Event, 64)
	if n.subscribers == nil {
		n.subscribers = map[chan *machine.Event]struct{}{}
	}

	n.subscribers[ch] = struct{}{}

	return replay, ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()

		if _, ok := n.subscribers[ch]; ok {
			delete(n.subscribers, ch)
			close(ch)
		}
	}
}

func (n *Node) closeSubscribersLocked() {
	for ch := range n.subscribers {
		delete(n.subscribers, ch)
		close(ch)
	}
}
