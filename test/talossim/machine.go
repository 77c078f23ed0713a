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
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// bootIDPath is the file talosctl reads to prove a reboot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// machineService implements the MachineService RPCs Tollgate and talosctl
// use; the others answer Unimplemented.
type machineService struct {
	machine.UnimplementedMachineServiceServer

	*apiServer
}

func (s *machineService) Version(ctx context.Context, _ *emptypb.Empty) (*machine.VersionResponse, error) {
	t := target(ctx)

	return &machine.VersionResponse{Messages: []*machine.Version{{
		Metadata: responseMetadata(t),
		Version: &machine.VersionInfo{
			Tag:       t.node.Version(),
			Sha:       "talossim",
			Built:     time.Now().UTC().Format(time.RFC3339),
			GoVersion: runtime.Version(),
			Os:        "linux",
			Arch:      runtime.GOARCH,
		},
		Platform: &machine.PlatformInfo{Name: t.node.platform, Mode: "metal"},
	}}}, nil
}

func (s *machineService) Read(req *machine.ReadRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	t := target(srv.Context())

	if req.GetPath() != bootIDPath {
		return status.Errorf(codes.PermissionDenied, "talossim: reading %q is not simulated", req.GetPath())
	}

	return srv.Send(&common.Data{Metadata: responseMetadata(t), Bytes: []byte(t.node.BootID() + "\n")})
}

// SystemStat answers with the node's boot time; the CPU and process
// counters of a real node are not simulated.
func (s *machineService) SystemStat(ctx context.Context, _ *emptypb.Empty) (*machine.SystemStatResponse, error) {
	t := target(ctx)

	return &machine.SystemStatResponse{Messages: []*machine.SystemStat{{
		Metadata: responseMetadata(t),
		BootTime: uint64(t.node.BootTime().Unix()), //nolint:gosec // a time after the epoch.
	}}}, nil
}

func (s *machineService) Reboot(ctx context.Context, req *machine.RebootRequest) (*machine.RebootResponse, error) {
	t := target(ctx)
	actorID := uuid.NewString()

	t.node.recordRebootMode(req.GetMode().String())
	t.node.reboot(actorID)

	return &machine.RebootResponse{Messages: []*machine.Reboot{{Metadata: responseMetadata(t), ActorId: actorID}}}, nil
}

// Upgrade is the legacy upgrade (Talos before 1.13, deprecated after): it
// pulls the installer (Faults.PullDelay), acknowledges, installs in the
// background and reboots by itself.
func (s *machineService) Upgrade(ctx context.Context, req *machine.UpgradeRequest) (*machine.UpgradeResponse, error) {
	t := target(ctx)
	n := t.node
	actorID := uuid.NewString()

	staged, err := parseInstaller(req.GetImage())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	n.recordRebootMode(req.GetRebootMode().String())

	// Talos pulls the installer image before it acknowledges the upgrade.
	if err := sleepCtx(ctx, n.Faults().PullDelay); err != nil {
		return nil, err
	}

	n.sim.after(50*time.Millisecond, func() {
		n.mu.Lock()
		if n.upgrading {
			// One sequence at a time: a second call finds the machine
			// locked and starts none.
			n.emitLocked(actorID, &machine.SequenceEvent{
				Sequence: "upgrade",
				Action:   machine.SequenceEvent_NOOP,
				Error:    &common.Error{Code: common.Code_FATAL, Message: "sequence not started: locked"},
			})
			n.mu.Unlock()

			return
		}

		n.upgrading = true
		n.emitLocked(actorID, &machine.SequenceEvent{Sequence: "upgrade", Action: machine.SequenceEvent_START})
		n.setStageLocked(machine.MachineStatusEvent_UPGRADING, false)

		if code := n.faults.UpgradeExitCode; code != 0 {
			n.upgrading = false
			n.emitLocked(actorID, &machine.SequenceEvent{
				Sequence: "upgrade",
				Action:   machine.SequenceEvent_STOP,
				Error:    &common.Error{Code: common.Code_FATAL, Message: fmt.Sprintf("failed to run installer: exit code %d", code)},
			})
			n.setStageLocked(machine.MachineStatusEvent_RUNNING, true)
			n.mu.Unlock()

			return
		}

		n.staged = staged
		n.mu.Unlock()

		n.reboot(actorID)
	})

	return &machine.UpgradeResponse{Messages: []*machine.Upgrade{{
		Metadata: responseMetadata(t),
		Ack:      "Upgrade request received",
		ActorId:  actorID,
	}}}, nil
}

// ImagePull is the legacy pull of Talos before 1.13.
func (s *machineService) ImagePull(ctx context.Context, req *machine.ImagePullRequest) (*machine.ImagePullResponse, error) {
	t := target(ctx)

	if err := sleepCtx(ctx, t.node.Faults().PullDelay); err != nil {
		return nil, err
	}

	t.node.mu.Lock()
	t.node.pulled[req.GetReference()] = true
	t.node.mu.Unlock()

	return &machine.ImagePullResponse{Messages: []*machine.ImagePull{{Metadata: responseMetadata(t)}}}, nil
}

func (s *machineService) Events(req *machine.EventsRequest, srv grpc.ServerStreamingServer[machine.Event]) error {
	t := target(srv.Context())

	replay, ch, cancel := t.node.subscribe(req.GetTailEvents())
	defer cancel()

	// The first message of a watch is empty, as machined sends it.
	if err := srv.Send(&machine.Event{Metadata: responseMetadata(t)}); err != nil {
		return err
	}

	send := func(ev *machine.Event) error {
		if req.GetWithActorId() != "" && ev.GetActorId() != req.GetWithActorId() {
			return nil
		}

		out := &machine.Event{Metadata: responseMetadata(t), Data: ev.GetData(), Id: ev.GetId(), ActorId: ev.GetActorId()}

		return srv.Send(out)
	}

	for _, ev := range replay {
		if err := send(ev); err != nil {
			return err
		}
	}

	for {
		select {
		case <-srv.Context().Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				return status.Error(codes.Unavailable, "node is going down")
			}

			if err := send(ev); err != nil {
				return err
			}
		}
	}
}

// etcdRunning returns an error unless the target node runs etcd: a
// control-plane node that has not left the cluster.
func etcdRunning(t targetInfo) error {
	switch {
	case !t.node.controlPlane:
		return status.Error(codes.FailedPrecondition, "etcd is not running on a worker node")
	case !t.node.EtcdMember():
		return status.Error(codes.FailedPrecondition, "etcd is not running: the node left the etcd cluster")
	}

	return nil
}

// etcdMembers returns the members of the etcd cluster of node n.
func (s *machineService) etcdMembers(n *Node) []*Node {
	var members []*Node

	for _, m := range s.sim.Nodes() {
		if m.etcdCluster == n.etcdCluster && m.EtcdMember() {
			members = append(members, m)
		}
	}

	return members
}

func (s *machineService) EtcdMemberList(ctx context.Context, _ *machine.EtcdMemberListRequest) (*machine.EtcdMemberListResponse, error) {
	t := target(ctx)
	if err := etcdRunning(t); err != nil {
		return nil, err
	}

	var members []*machine.EtcdMember

	for _, n := range s.etcdMembers(t.node) {
		members = append(members, &machine.EtcdMember{
			Id:         n.memberID,
			Hostname:   n.name,
			PeerUrls:   []string{(&url.URL{Scheme: "https", Host: n.Address() + ":2380"}).String()},
			ClientUrls: []string{(&url.URL{Scheme: "https", Host: n.Address() + ":2379"}).String()},
		})
	}

	return &machine.EtcdMemberListResponse{Messages: []*machine.EtcdMembers{{Metadata: responseMetadata(t), Members: members}}}, nil
}

func (s *machineService) EtcdStatus(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdStatusResponse, error) {
	t := target(ctx)
	if err := etcdRunning(t); err != nil {
		return nil, err
	}

	st := &machine.EtcdMemberStatus{MemberId: t.node.memberID, ProtocolVersion: "3.6.0", StorageVersion: "3.6.0", DbSize: 20 << 20}
	if t.node.Faults().EtcdUnhealthy {
		st.Errors = []string{"etcdserver: simulated member failure"}
	}

	return &machine.EtcdStatusResponse{Messages: []*machine.EtcdStatus{{Metadata: responseMetadata(t), MemberStatus: st}}}, nil
}

func (s *machineService) EtcdAlarmList(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdAlarmListResponse, error) {
	t := target(ctx)
	if err := etcdRunning(t); err != nil {
		return nil, err
	}

	var alarms []*machine.EtcdMemberAlarm

	for _, n := range s.etcdMembers(t.node) {
		if n.Faults().EtcdUnhealthy {
			alarms = append(alarms, &machine.EtcdMemberAlarm{MemberId: n.memberID, Alarm: machine.EtcdMemberAlarm_CORRUPT})
		}
	}

	return &machine.EtcdAlarmListResponse{Messages: []*machine.EtcdAlarm{{Metadata: responseMetadata(t), MemberAlarms: alarms}}}, nil
}

// EtcdForfeitLeadership hands the leadership to another member, as
// machined does before the node leaves: leadership is not modelled, so it
// answers the node's name and changes nothing.
func (s *machineService) EtcdForfeitLeadership(ctx context.Context, _ *machine.EtcdForfeitLeadershipRequest) (*machine.EtcdForfeitLeadershipResponse, error) {
	t := target(ctx)
	if err := etcdRunning(t); err != nil {
		return nil, err
	}

	return &machine.EtcdForfeitLeadershipResponse{Messages: []*machine.EtcdForfeitLeadership{{Metadata: responseMetadata(t), Member: t.node.name}}}, nil
}

// EtcdLeaveCluster takes the node out of the etcd cluster and stops its
// etcd, for good: the other members no longer list it, and it answers no
// etcd call. The last member cannot leave.
func (s *machineService) EtcdLeaveCluster(ctx context.Context, _ *machine.EtcdLeaveClusterRequest) (*machine.EtcdLeaveClusterResponse, error) {
	t := target(ctx)
	if err := etcdRunning(t); err != nil {
		return nil, err
	}

	if len(s.etcdMembers(t.node)) == 1 {
		return nil, status.Error(codes.FailedPrecondition, "etcd: the last member cannot leave the cluster")
	}

	t.node.leaveEtcd()
	s.sim.logf("Node %s left etcd", t.node.name)

	return &machine.EtcdLeaveClusterResponse{Messages: []*machine.EtcdLeaveCluster{{Metadata: responseMetadata(t)}}}, nil
}

// EtcdRemoveMemberByID removes another node's member through this one, as
// "talosctl etcd remove-member" does for a node that cannot leave itself.
func (s *machineService) EtcdRemoveMemberByID(ctx context.Context, req *machine.EtcdRemoveMemberByIDRequest) (*machine.EtcdRemoveMemberByIDResponse, error) {
	t := target(ctx)
	if err := etcdRunning(t); err != nil {
		return nil, err
	}

	for _, n := range s.etcdMembers(t.node) {
		if n.memberID != req.GetMemberId() {
			continue
		}

		if n == t.node {
			return nil, status.Error(codes.InvalidArgument, "etcd: a member cannot remove itself; use EtcdLeaveCluster")
		}

		n.leaveEtcd()
		s.sim.logf("Node %s was removed from etcd through %s", n.name, t.node.name)

		return &machine.EtcdRemoveMemberByIDResponse{Messages: []*machine.EtcdRemoveMemberByID{{Metadata: responseMetadata(t)}}}, nil
	}

	return nil, status.Errorf(codes.NotFound, "etcd: member %x not found", req.GetMemberId())
}

// parseInstaller derives what an installer image installs: the version from
// its tag and, for an Image Factory image, the schematic from its path.
func parseInstaller(image string) (*stagedImage, error) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return nil, fmt.Errorf("installer image %q has no tag", image)
	}

	repo, tag := image[:i], image[i+1:]
	if j := strings.Index(tag, "@"); j >= 0 {
		tag = tag[:j]
	}

	staged := &stagedImage{image: image, version: tag}

	if strings.HasPrefix(repo, "factory.talos.dev/") {
		parts := strings.Split(repo, "/")
		staged.schematic = parts[len(parts)-1]
	}

	return staged, nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}

	t := time.NewTimer(d)
	defer t.Stop()

	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}
