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

// Package talossim simulates Talos nodes that speak the real Talos API, so
// that Tollgate's production client (internal/talos) and talosctl itself
// can be tested against it.
//
// Each simulated node is a gRPC server registered with the machinery
// package's generated services (MachineService, ImageService,
// LifecycleService) and the COSI state service, served over mTLS on its own
// random loopback address (127.x.y.z) and the Talos API port, 50000 by
// default. The simulator's CA issues every node a server certificate for
// its address and name, and TalosConfig returns a talosconfig with an admin
// client certificate, in the shape the Talos CAPI bootstrap provider stores
// in the <cluster>-talosconfig Secret. Put it in that Secret and give each
// Machine the node's Address as InternalIP: the production dialer then
// reaches the node unchanged. Like apid, a node routes a request whose
// "node" metadata names another simulated node to that node.
//
// Typical use:
//
//	sim, err := talossim.New(talossim.Options{RebootDuration: 200 * time.Millisecond})
//	defer sim.Close()
//	cp, err := sim.AddNode(talossim.NodeConfig{Name: "cp-1", Version: "v1.12.4", ControlPlane: true})
//	secret, err := sim.TalosConfigSecret("default", "prod") // prod-talosconfig
//	// ... create it, and a Machine with InternalIP cp.Address() ...
//	cp.InjectFault(talossim.Faults{Rollback: true})
//	// ... run the rollout ...
//	g.Expect(sim.Calls("cp-1", talossim.RPCLegacyUpgrade)).To(Equal(1))
//
// What a node does:
//
//   - Version, boot ID (MachineService.Read of /proc/sys/kernel/random/boot_id),
//     events (MachineService.Events, as "talosctl --wait" watches them),
//     etcd members, status and alarms on control-plane nodes, and its
//     extensions as COSI ExtensionStatus resources, the schematic one named
//     "schematic" with the schematic ID as version.
//   - Talos 1.13 and later: ImageService.Pull streams progress;
//     LifecycleService.Upgrade installs a pulled image (streaming progress,
//     ending with an exit code) without rebooting. Older nodes answer
//     Unimplemented there and take the legacy MachineService.Upgrade, which
//     installs and reboots by itself.
//   - Reboot takes the node's API down for Options.RebootDuration; the node
//     then boots the installed version (and, for an Image Factory installer,
//     its schematic) with a new boot ID. A NodeUpdater (KubeNodeUpdater for
//     a workload envtest apiserver) marks the Kubernetes Node NotReady, then
//     Ready with osImage "Talos (<version>)".
//
// Faults, per node (Node.InjectFault): the upgrade exits non-zero, pulls are
// slow, RPCs hang until the client's deadline, are lost before they reach
// the node, or are acted on with their answer lost, the node boots back into
// its old version (A/B rollback), the node never comes back, the etcd member
// is unhealthy.
//
// Every RPC is recorded: CallLog returns them in order, Calls counts them
// per node and RPC, so that tests can assert "exactly one upgrade per node".
package talossim
