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
//     etcd members, status and alarms on control-plane nodes, a member
//     leaving (EtcdForfeitLeadership and EtcdLeaveCluster on the node, as
//     the Talos control-plane provider calls them on a scale-down, or
//     EtcdRemoveMemberByID through another member: the node runs on without
//     etcd and answers no etcd call), its machine stage as the COSI
//     MachineStatus resource ("talosctl get machinestatus": running, then
//     upgrading while a legacy upgrade sequence runs, rebooting), and its
//     extensions as COSI ExtensionStatus resources, the schematic one named
//     "schematic" with the schematic ID as version.
//   - Talos 1.13 and later: ImageService.Pull streams progress;
//     LifecycleService.Upgrade installs a pulled image (streaming progress,
//     ending with an exit code) without rebooting, one install at a time (a
//     second call meanwhile is refused, FailedPrecondition "another
//     installation/upgrade is already in progress"), and runs an install to
//     its end when its caller goes away, as the lifecycle service of
//     machined does (siderolabs/talos internal/app/lifecycle/lifecycle.go
//     and container.go: a lock, and the installer's task waited for on a
//     context detached from the request).
//     Older nodes answer
//     Unimplemented there and take the legacy MachineService.Upgrade, which
//     installs and reboots by itself; a second call while its upgrade
//     sequence runs starts none (the sequence lock of machined).
//   - Reboot takes the node's API down for Options.RebootDuration; the node
//     then boots the installed version (and, for an Image Factory installer,
//     its schematic) with a new boot ID. A NodeUpdater (KubeNodeUpdater for
//     a workload envtest apiserver) marks the Kubernetes Node NotReady, then
//     Ready with osImage "Talos (<version>)".
//   - A real Talos machine configuration: NodeConfig.MachineConfig, or the
//     one Talos' generator makes for the node's role, Talos version and
//     NodeConfig.KubernetesVersion (one secrets bundle per cluster name,
//     generated when first needed). It is served as the COSI resources
//     MachineConfig "v1alpha1" (running) and "persistent" (booted next),
//     as "talosctl get machineconfig" reads them.
//   - MachineService.ApplyConfiguration as machined 1.13 runs it: Talos'
//     loader and validation (their errors, codes.InvalidArgument); which
//     changes apply without a reboot is Talos' CanApplyImmediate (all of
//     .cluster, the CAs, install, kernel, kubelet, network, sysctls, labels,
//     taints, ... do; machine.files, env, type, token, disks ... do not);
//     NO_REBOOT and TRY refuse the others with Talos' error, AUTO picks
//     NO_REBOOT or REBOOT, REBOOT reboots through the reboot above, STAGED
//     takes effect at the next boot, TRY rolls back after its timeout, a dry
//     run answers with the mode and the diff. Node.ApplyModes records them.
//   - The kubelet of a node added with a MachineConfig or a
//     KubernetesVersion, told to a KubeletReporter (KubeNodeUpdater): the
//     Node's kubeletVersion follows machine.kubelet.image once the kubelet
//     restarted (Options.StaticPodStartDelay after the change, no reboot);
//     a control-plane node has mirror Pods kube-apiserver-<node>,
//     kube-controller-manager-<node>, kube-scheduler-<node> in kube-system
//     (mirror annotation, owned by the Node) with the images of its
//     configuration, replaced NotReady when an image changes or the node
//     boots and Ready after the start delay; the kube-proxy DaemonSet of
//     cluster.proxy.image is created if missing and never updated, as
//     Talos' bootstrap manifests are.
//
// Not modelled: the other documents of a multi-document configuration are
// applied but not compared for a reboot; a change applied without a reboot
// does nothing to the node but the above (no files written, no network,
// sysctls or labels applied: the Node's labels and taints do not follow
// the configuration); a static Pod restarts only when its image changes
// (not on other changes of its component's configuration); the kube-proxy
// Pods, CoreDNS and the other bootstrap manifests; maintenance mode and
// the insecure API; role-based access (every caller is an admin).
//
// Faults, per node (Node.InjectFault): the upgrade exits non-zero, pulls and
// installs are slow, RPCs hang until the client's deadline, are lost before they reach
// the node, or are acted on with their answer lost, the node boots back into
// its old version (A/B rollback), the node never comes back, the etcd member
// is unhealthy, a static Pod never becomes Ready.
//
// Every RPC is recorded, with the boot of the node that handled it: CallLog
// returns them in order, Calls counts them per node and RPC, so that tests
// can assert "exactly one upgrade per node".
package talossim
