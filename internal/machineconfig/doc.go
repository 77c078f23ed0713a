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

// Package machineconfig decides which Talos machine configuration a node
// should run according to its Cluster API objects, and whether the change
// can be made on the running node: the pure foundation of config changes
// passing Tollgate's gate (issue 27). It reads objects given to it and
// configurations as bytes; it has no client and makes no call.
//
// # Where the configuration comes from
//
// The configuration has one source of truth, CAPI's objects: the patches of
// the Talos bootstrap provider's (CABPT) TalosConfigTemplate of a
// MachineDeployment, or of the Talos control-plane provider's (CACPPT)
// TalosControlPlane (spec.controlPlaneConfig.controlplane), which new
// Machines get too. Tollgate keeps no second copy. A node's running
// configuration is read from the node, or from the CAPI bootstrap Secret
// its Machine booted with (its TalosConfig's status.dataSecretName, key
// value).
//
// The engine uses the package in this order:
//
//  1. Read the Patches of the object; Patches.Hash tells when a user
//     edited them.
//  2. Desired: the configuration a node should run, the patches applied to
//     the one it runs as CABPT applies them when it renders one; Converged:
//     whether the node already runs it.
//  3. CheckInPlace: refuse a change a running node cannot take (a
//     ChangeError says which field and what to do instead), or a desired
//     configuration that does not load or validate.
//  4. Apply through the gate: the engine asks the node to apply the
//     configuration without a reboot, and when Talos answers that the
//     change needs one, stages it and reboots the node through the
//     upgrade's flow; then reads the configuration back and checks
//     Converged.
//
// # What Talos applies without a reboot
//
// Talos 1.13 (machined's CanApplyImmediate, mirrored by the simulator in
// test/talossim/applyconfig.go) applies without a reboot a change of
// .debug, of all of .cluster, and under .machine of ca, acceptedCAs, time,
// certSANs, install, network, sysfs, sysctls, logging, controlPlane,
// kubelet, kernel, registries (registry auth only takes effect on
// containerd's next start), pods, seccompProfiles, nodeAnnotations,
// nodeLabels, nodeTaints, and the features kubernetesTalosAPIAccess,
// kubePrism, hostDNS, imageCache and nodeAddressSortAlgorithm. Any other
// change of the v1alpha1 document (machine.type, token, files, env, disks,
// udev, the other features, ...) needs a reboot. Documents other than
// v1alpha1 (network, volume, extension configs, ...) are not compared by
// that rule: Talos applies them without a reboot. The engine does not
// decide this from the list: it asks the node.
//
// Talos would apply a change of .cluster or of machine.ca at once; that
// does not make it safe. CheckInPlace refuses, for the reasons its rules
// give, the changes that split a cluster when made one node at a time: the
// CAs and secrets every Machine shares (CABPT takes them from the Cluster's
// secrets bundle), the node's role, the control-plane endpoint (from the
// CAPI Cluster) and the cluster's networks and DNS domain.
//
// # What the providers let change
//
// CABPT's webhooks make the spec of a TalosConfigTemplate and of a
// TalosConfig immutable: a MachineDeployment's patches change when it is
// pointed at a new TalosConfigTemplate, which CAPI rolls out by replacing
// Machines unless the MachineDeployment's rollout strategy is OnDelete.
// CAPI's in-place update extension cannot take the change: CAPI writes the
// new spec to the Machine's TalosConfig before it asks the extension, and
// CABPT refuses it. CACPPT replaces every control-plane Machine whose
// TalosConfig spec differs from spec.controlPlaneConfig.controlplane,
// unless its rolloutStrategy is OnDelete. The patches of either are what
// Read reads; the engine brings those of the objects that roll out
// OnDelete to the running nodes.
//
// # Limits
//
// The node's running configuration already has the patches it was made
// with, and neither Talos nor Tollgate keeps the configuration they were
// first applied to. Desired therefore adds what patches say and takes
// nothing away that a former patch set (say so with $patch: delete or a
// JSON patch remove); it drops list items a patch repeats, and refuses
// patches that change the configuration again each time they apply
// (ErrNotIdempotent), such as a JSON patch that removes a list item by
// index or a strategic patch that deletes a whole document. Like CABPT,
// it cannot apply configPatches (JSON patches) to a configuration of
// several documents, which Talos 1.12 and later generate.
//
// # Secrets
//
// A machine configuration holds the cluster's CAs and keys, its tokens and
// its encryption secrets. The errors of this package name fields and never
// carry a value: those of Talos' loader and of the patch libraries are
// scrubbed of the values of the configurations and patches they are about.
// Patches print counts, not patches. The configurations Desired returns
// hold secrets, and must not be logged or put in a status.
package machineconfig
