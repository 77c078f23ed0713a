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

	cosiv1alpha1 "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/resource/meta"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	"github.com/cosi-project/runtime/pkg/state/protobuf/server"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/extensions"
	"github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc"
)

// SchematicExtensionName is the name of the extension through which an
// Image Factory image reports its schematic ID (as its version).
const SchematicExtensionName = "schematic"

// newCOSIState builds a node's resource state: the resource definitions of
// ExtensionStatus, MachineStatus and MachineConfig (so that "talosctl get
// extensions", "talosctl get machinestatus" and "talosctl get
// machineconfig" resolve their aliases) and one ExtensionStatus per
// extension, the schematic first. The node adds its MachineStatus
// (setStageLocked) and MachineConfig resources (publishConfigLocked).
func newCOSIState(schematic string, exts []Extension) (state.State, error) {
	ctx := context.Background()
	st := state.WrapCore(namespaced.NewState(inmem.Build))

	for _, spec := range []meta.ResourceDefinitionSpec{
		runtime.ExtensionStatusExtension{}.ResourceDefinition(),
		runtime.MachineStatusExtension{}.ResourceDefinition(),
		(&config.MachineConfig{}).ResourceDefinition(),
	} {
		rd, err := meta.NewResourceDefinition(spec)
		if err != nil {
			return nil, err
		}

		if err := st.Create(ctx, rd); err != nil {
			return nil, err
		}
	}

	all := exts
	if schematic != "" {
		all = append([]Extension{{Name: SchematicExtensionName, Version: schematic}}, exts...)
	}

	for i, ext := range all {
		res := runtime.NewExtensionStatus(runtime.NamespaceName, fmt.Sprint(i))
		res.TypedSpec().Image = ext.Name + ".sqsh"
		res.TypedSpec().Metadata = extensions.Metadata{
			Name:        ext.Name,
			Version:     ext.Version,
			Author:      "talossim",
			Description: "simulated extension",
		}

		if err := st.Create(ctx, res); err != nil {
			return nil, err
		}
	}

	return st, nil
}

// stateService serves the COSI state of the target node (read-only). The
// node's machine configuration is generated, if it has none yet, before a
// read of MachineConfig resources: it is there as on a real node, and a
// node whose configuration nobody reads costs nothing.
type stateService struct {
	cosiv1alpha1.UnimplementedStateServer

	*apiServer
}

func (s *stateService) backend(ctx context.Context, typ string) *server.State {
	n := target(ctx).node

	if typ == config.MachineConfigType {
		if err := n.ensureConfig(); err != nil {
			n.sim.logf("Node %s: %v", n.name, err)
		}
	}

	n.mu.Lock()
	defer n.mu.Unlock()

	return server.NewState(n.cosi)
}

func (s *stateService) Get(ctx context.Context, req *cosiv1alpha1.GetRequest) (*cosiv1alpha1.GetResponse, error) {
	return s.backend(ctx, req.GetType()).Get(ctx, req)
}

func (s *stateService) List(req *cosiv1alpha1.ListRequest, srv grpc.ServerStreamingServer[cosiv1alpha1.ListResponse]) error {
	return s.backend(srv.Context(), req.GetType()).List(req, srv)
}

func (s *stateService) Watch(req *cosiv1alpha1.WatchRequest, srv grpc.ServerStreamingServer[cosiv1alpha1.WatchResponse]) error {
	return s.backend(srv.Context(), req.GetType()).Watch(req, srv)
}

// setStageLocked moves the node's machine to stage, as machined reports it:
// with a MachineStatusEvent and in the MachineStatus resource (namespace
// runtime, id machine).
func (n *Node) setStageLocked(stage machine.MachineStatusEvent_MachineStage, ready bool) {
	n.emitLocked("", &machine.MachineStatusEvent{Stage: stage, Status: &machine.MachineStatusEvent_MachineStatus{Ready: ready}})

	if n.cosi == nil {
		return
	}

	ctx := context.Background()
	res := runtime.NewMachineStatus()
	res.TypedSpec().Stage = runtime.MachineStage(stage)
	res.TypedSpec().Status.Ready = ready

	old, err := n.cosi.Get(ctx, res.Metadata())

	switch {
	case state.IsNotFoundError(err):
		err = n.cosi.Create(ctx, res)
	case err == nil:
		res.Metadata().SetVersion(old.Metadata().Version())
		err = n.cosi.Update(ctx, res)
	}

	if err != nil {
		n.sim.logf("Node %s: publishing the machine status failed: %v", n.name, err)
	}
}
