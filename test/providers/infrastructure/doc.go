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

// Package infrastructure is a CAPI infrastructure provider for tests whose
// machines are simulated Talos nodes (test/talossim), run in-process beside
// Tollgate and CAPI core.
//
// Its kinds (api/v1alpha1: TalosSimCluster, TalosSimMachine,
// TalosSimMachineTemplate) keep CAPI's v1beta2 infrastructure contract, so
// that CAPI's Cluster, Machine, MachineSet and MachineDeployment
// controllers create, read and delete them as any provider's; their CRDs
// are in CRDDirectory. When CAPI creates a TalosSimMachine, the provider
// boots a simulated node on the Talos version of the machine's image (from
// its template, as a cloud image's would) and registers its workload Node,
// which the node keeps up to date through its reboots; CAPI's Machine
// controller then sets the Machine's nodeRef, nodeInfo and addresses
// itself. Deleting the TalosSimMachine removes both.
//
// Typical use, with a manager of the management cluster:
//
//	machines := hosts.NewSimulators(hosts.SimulatorsOptions{Simulator: talossim.Options{RebootDuration: time.Second}})
//	defer machines.Close()
//	err := infrastructure.Setup(ctx, mgr, infrastructure.Options{Hosts: machines})
//	// ... a Cluster whose infrastructureRef is a TalosSimCluster, a
//	// MachineDeployment whose infrastructure template is a
//	// TalosSimMachineTemplate with image ghcr.io/siderolabs/installer:v1.12.4 ...
//	sim, err := machines.Simulator(client.ObjectKey{Namespace: "default", Name: "prod"})
//	secret, err := sim.TalosConfigSecret("default", "prod") // reaches the Cluster's nodes
package infrastructure
