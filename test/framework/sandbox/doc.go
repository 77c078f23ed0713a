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

// Package sandbox is the one place that assembles Tollgate's world, in one
// process, with no cluster and no container engine: a management control
// plane (envtest kube-apiserver and etcd) with CAPI's and Tollgate's CRDs
// and, optionally, Tollgate's webhooks; an in-process OCI registry holding
// installer images; and, per CAPI Cluster, a workload control plane, a
// Talos node simulator per Machine and what runs the workload's Jobs: a Job
// driver that plays the Job controller and the kubelet, or with
// Options.JobController the real Job controller (kube-controller-manager)
// and a stand-in kubelet (see package jobdriver). StartManager runs the
// production manager (cmd/manager, the wiring of main.go) in-process
// against it; BuildManager builds main.go for the worlds that run it as a
// process of its own.
//
// Everything that needs a world builds it here: `make demo` (package demo,
// test/cmd/demo), the benchmarks (test/bench), the soak (test/soak), the
// TalosUpgrade controller's suite and regression tests, and the
// clusterctl move test (test/integration/move). A sandbox in a few lines:
//
//	sb, err := sandbox.Start(ctx, sandbox.Options{Webhooks: true, InstallerVersions: []string{"v1.13.0"}})
//	defer sb.Stop()
//	err = sb.StartManager(ctx, manager.Options{})
//	err = sb.Management.Client.Create(ctx, sb.Policy("demo", "to-1-13", "v1.13.0"))
//	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "demo", Name: "alpha", ControlPlanes: 3, Workers: 3, Policy: "to-1-13"})
//	u, err := sb.Upgrade(ctx, "demo", "alpha") // the TalosUpgrade the controller made
//
// A Cluster opts in to its policy (the label) only once its Machines, Nodes
// and talosconfig exist, as with a real CAPI Cluster whose policy is applied
// after provisioning; the webhooks require the policy to exist first.
//
// The parts can be shared and adjusted: several Clusters may share a
// workload control plane (StartWorkload, ClusterOptions.Workload) and a
// simulator (NewSimulator, ClusterOptions.Simulator), as the benchmarks'
// fleets do; a Cluster's kubeconfig Secret may point through a proxy
// (ClusterOptions.Kubeconfig), as the soak's gates and fault proxies and the
// benchmarks' counting proxy do, and its Secrets may carry planted canaries
// (ClusterOptions.Secret). A suite whose tests each make a Cluster of their
// own reuses their workload control planes (Options.ReuseWorkloads): a
// stopped Cluster's, emptied once no manager runs, serves the next, as the
// TalosUpgrade suite does; a suite whose tests each start a sandbox of their
// own takes its management control plane from a pool (Options.Managements,
// NewManagementPool), given back emptied with its workloads when the sandbox
// stops, as the CAPI core suite does. What a world measures or breaks
// (proxies, gates, controller processes) stays with the program that
// measures or breaks it.
//
// The manager, in-process (StartManager, ControllerConfig) or built
// (WriteManagerKubeconfig), acts as its ServiceAccount bound to the RBAC of
// config/default (envtest.ControlPlane.ManagerConfig), so that a request
// that RBAC does not allow fails as in a cluster; the workload clusters are
// reached as their kubeconfig Secrets say, as an administrator there.
//
// With Options.CAPI, Cluster API runs for real: CAPI core as its own process
// (envtest.Management.StartCAPI, with the RuntimeSDK and InPlaceUpdates
// gates; its exit fails whoever waits on it at once, with its last log
// lines), and in this process the Talos-simulator infrastructure provider
// (test/providers/infrastructure) and the stand-ins for the Talos bootstrap and
// control-plane providers (test/providers/talos). CreateCluster then applies
// what a user applies from templates/cluster-template-talos.yaml (a Cluster
// with a TalosSimCluster, a TalosControlPlane and a MachineDeployment with
// their templates) and CAPI makes the Machines, which the provider boots
// and CAPI gives their nodeRef and nodeInfo; CAPI names them
// (Cluster.MachineNames), and after a rollout CAPI reports the new Talos in
// every Machine's status.nodeInfo. With Options.Extension too, StartManager
// serves Tollgate as CAPI's in-place update extension and registers it
// (ExtensionConfig ExtensionName), ClusterOptions.InPlaceUpdates opts a
// Cluster's namespace in, and Cluster.SetWorkersTalosVersion changes the
// workers' template as a user's Git change does. With Options.Hosts two
// sandboxes share one cloud of machines, as clusterctl move between them
// needs. Clusters made with CAPI may share a workload control plane and
// reach it through a proxy (ClusterOptions.Workload, Kubeconfig), as the
// soak's do; their nodes' stand-in kubelets still report to it directly.
// `make demo`, the kubectl plugin's tests, test/integration/move and the soak
// (test/soak) run so; the other worlds still make Clusters by hand
// (builder): Machines with the status a test writes, a controlPlaneRef to a
// control plane that does not exist, and no CAPI controller.
//
// Every simulated node listens on its own loopback address and the Talos API
// port of Options.TalosAPIPort, so one manager reaches the nodes of every
// Cluster. The sandbox needs KUBEBUILDER_ASSETS (hack/envtest-assets.sh).
package sandbox
