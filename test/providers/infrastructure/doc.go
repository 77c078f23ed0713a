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
// TalosSimCloudMachine and their templates) keep CAPI's v1beta2
// infrastructure contract, so that CAPI's Cluster, Machine, MachineSet and
// MachineDeployment controllers create, read and delete them as any
// provider's; their CRDs are in CRDDirectory. When CAPI creates a machine,
// the provider boots a simulated node on the Talos version of the machine's
// image (from its template, as a real image's would) and registers its
// workload Node, which the node keeps up to date through its reboots; CAPI's
// Machine controller then sets the Machine's nodeRef, nodeInfo and addresses
// itself. Deleting the machine removes both.
//
// The machines come in the two families of real infrastructure providers
// (../shared/PROVIDERS.md), as strict as they are:
//
//   - TalosSimMachine, the family of Metal3, Proxmox and Nutanix: its image
//     is mutable (no webhook refuses a change, as CAPM3's Metal3Machine
//     webhook checks the URL's syntax only and CAPMOX's ProxmoxMachine
//     webhook keeps only its tags), and may name the Talos version (an
//     installer tag, an Image Factory disk image URL) or be an opaque image
//     ID (a template's VMID);
//   - TalosSimCloudMachine, the family of AWS, Azure, GCP, vSphere,
//     OpenStack and Hetzner: its image is an opaque ID (an AMI ID), and its
//     webhook (package webhooks, after CAPA's AWSMachine.ValidateUpdate)
//     answers 422 to any change of the spec of an existing machine, and of a
//     template.
//
// Both read their image when they boot: a later change upgrades nothing.
// The webhooks run in the test process's manager: serve WebhookDirectory
// with envtest.Management.ServeWebhooks.
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
