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
	"crypto/tls"
	"strings"

	cosiv1alpha1 "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The RPCs in the call log and in Faults.HangRPCs.
const (
	RPCVersion         = "MachineService/Version"
	RPCRead            = "MachineService/Read"
	RPCSystemStat      = "MachineService/SystemStat"
	RPCReboot          = "MachineService/Reboot"
	RPCEvents          = "MachineService/Events"
	RPCLegacyUpgrade   = "MachineService/Upgrade"
	RPCLegacyImagePull = "MachineService/ImagePull"
	RPCEtcdMemberList  = "MachineService/EtcdMemberList"
	RPCEtcdStatus      = "MachineService/EtcdStatus"
	RPCEtcdAlarmList   = "MachineService/EtcdAlarmList"
	// RPCEtcdForfeitLeadership, RPCEtcdLeaveCluster and
	// RPCEtcdRemoveMemberByID are how a control-plane provider takes a
	// member out of etcd: from the node itself, or through another member.
	RPCEtcdForfeitLeadership = "MachineService/EtcdForfeitLeadership"
	RPCEtcdLeaveCluster      = "MachineService/EtcdLeaveCluster"
	RPCEtcdRemoveMemberByID  = "MachineService/EtcdRemoveMemberByID"
	RPCApplyConfig           = "MachineService/ApplyConfiguration"
	RPCImagePull             = "ImageService/Pull"
	RPCUpgrade               = "LifecycleService/Upgrade"
	RPCResourceGet           = "State/Get"
	RPCResourceList          = "State/List"
	RPCResourceWatch         = "State/Watch"
)

// targetKey carries the node an RPC is for in its context.
type targetKey struct{}

// targetInfo is the node an RPC is for, and whether apid would add
// response metadata (one-to-many "nodes" mode).
type targetInfo struct {
	node         *Node
	withMetadata bool
}

func target(ctx context.Context) targetInfo {
	t, _ := ctx.Value(targetKey{}).(targetInfo)

	return t
}

// newGRPCServer builds the API server of one node: mTLS, every service
// registered, and interceptors that route by node metadata (as apid proxies
// to other nodes), record calls and apply the hang fault.
func newGRPCServer(sim *Simulator, entry *Node, tlsConfig *tls.Config) *grpc.Server {
	srv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(tlsConfig)),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx, err := sim.intercept(ctx, entry, info.FullMethod)
			if err != nil {
				return nil, err
			}

			resp, err := handler(ctx, req)
			if err = answer(ctx, info.FullMethod, err); err != nil {
				return nil, err
			}

			return resp, nil
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			ctx, err := sim.intercept(ss.Context(), entry, info.FullMethod)
			if err != nil {
				return err
			}

			// The messages of a stream already sent are kept; only its end
			// may be lost.
			return answer(ctx, info.FullMethod, handler(srv, &contextStream{ServerStream: ss, ctx: ctx}))
		}),
	)

	api := &apiServer{sim: sim}
	machine.RegisterMachineServiceServer(srv, &machineService{apiServer: api})
	machine.RegisterImageServiceServer(srv, &imageService{apiServer: api})
	machine.RegisterLifecycleServiceServer(srv, &lifecycleService{apiServer: api})
	cosiv1alpha1.RegisterStateServer(srv, &stateService{apiServer: api})

	return srv
}

// intercept resolves the target node of a call, applies the drop fault,
// records it and applies the hang fault.
func (s *Simulator) intercept(ctx context.Context, entry *Node, fullMethod string) (context.Context, error) {
	rpc := rpcName(fullMethod)

	t := targetInfo{node: entry}

	if md, ok := metadata.FromIncomingContext(ctx); ok {
		names := md.Get("node")
		if nodes := md.Get("nodes"); len(nodes) > 0 {
			names = nodes
			t.withMetadata = true
		}

		switch {
		case len(names) > 1:
			return nil, status.Error(codes.Unimplemented, "talossim: one-to-many requests are not simulated, name one node")
		case len(names) == 1 && names[0] != "":
			t.node = s.nodeByAddress(names[0])
			if t.node == nil {
				return nil, status.Errorf(codes.Unavailable, "connection error: no route to node %q", names[0])
			}
		}
	}

	if !t.node.Up() {
		return nil, status.Errorf(codes.Unavailable, "connection error: node %q is not reachable", t.node.name)
	}

	if t.node.drops(rpc) {
		return nil, status.Errorf(codes.Unavailable, "connection error: the request to node %q was lost", t.node.name)
	}

	s.record(t.node, rpc)

	if t.node.hangs(rpc) {
		<-ctx.Done()

		return nil, status.FromContextError(ctx.Err()).Err()
	}

	return context.WithValue(ctx, targetKey{}, t), nil
}

// answer is the error the client of a handled call sees: the handler's, or,
// when the node loses the answer of that RPC (Faults.LoseResponseRPCs), the
// Unavailable of a connection broken after the node acted on the request.
func answer(ctx context.Context, fullMethod string, err error) error {
	n := target(ctx).node
	if err != nil || !n.losesResponse(rpcName(fullMethod)) {
		return err
	}

	return status.Errorf(codes.Unavailable, "error reading from server: EOF (talossim: the answer of node %q was lost)", n.name)
}

type contextStream struct {
	grpc.ServerStream

	ctx context.Context //nolint:containedctx // the stream's context, replaced.
}

func (s *contextStream) Context() context.Context { return s.ctx }

// apiServer holds what every service needs.
type apiServer struct {
	sim *Simulator
}

// responseMetadata is the metadata apid adds in one-to-many mode.
func responseMetadata(t targetInfo) *common.Metadata {
	if !t.withMetadata {
		return nil
	}

	return &common.Metadata{Hostname: t.node.Address()}
}

// rpcName turns "/machine.MachineService/Version" into "MachineService/Version".
func rpcName(fullMethod string) string {
	service, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if i := strings.LastIndex(service, "."); i >= 0 {
		service = service[i+1:]
	}

	return service + "/" + method
}
