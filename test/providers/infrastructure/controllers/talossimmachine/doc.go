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

// Package talossimmachine reconciles the InfraMachines of the
// Talos-simulator infrastructure provider, one Reconciler per kind
// (MachineKind, TalosSimMachine; CloudMachineKind, TalosSimCloudMachine).
//
// Once its owner Machine exists, its Cluster's infrastructure is
// provisioned and its bootstrap data Secret is written, a machine boots its
// simulated Talos node (hosts.Hosts) on the Talos version and schematic of
// its image (hosts.ParseImage), registers the node's Node in the workload
// cluster (named after the machine, Ready, with the provider ID,
// the addresses and the osImage of what the node runs, the control-plane
// role label on control-plane machines), and reports spec.providerID,
// status.addresses and status.initialization.provisioned, from which CAPI's
// Machine controller finds the Node and fills the Machine's nodeRef and
// nodeInfo. Deleting it removes the node and its Node, as a cloud's node
// lifecycle controller would, before CAPI deletes the Node too.
//
// The workload cluster is reached through the Cluster's <cluster>-kubeconfig
// Secret; one client per Cluster is kept and replaced when the Secret
// changes.
package talossimmachine
