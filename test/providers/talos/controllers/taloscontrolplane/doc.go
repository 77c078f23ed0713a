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

// Package taloscontrolplane is the TalosControlPlane controller of the
// stand-in Talos control-plane provider. It keeps CAPI's v1beta1
// control-plane contract for the Talos CAPI templates and follows the real
// provider (siderolabs/cluster-api-control-plane-provider-talos v0.5.12,
// controllers/taloscontrolplane_controller.go reconcileMachines,
// upgrade.go upgradeControlPlane, scale.go scaleDownControlPlane,
// controlplane.go MachinesNeedingRollout) where Tollgate meets it.
//
// It creates the control-plane Machines (labelled
// cluster.x-k8s.io/control-plane and cluster.x-k8s.io/control-plane-name,
// owned by the TalosControlPlane, spec.version from the TalosControlPlane),
// each with an InfraMachine cloned from spec.infrastructureTemplate (CAPI's
// external.CreateFromTemplate, which sets the cluster.x-k8s.io/cloned-from-*
// annotations) and a TalosConfig of spec.controlPlaneConfig.controlplane
// (the first Machine's of .init when set). It scales to spec.replicas
// (never below one) and rolls out (RollingUpdate, maxSurge 1 or 0; none
// with OnDelete) a Machine whose spec.version differs from the
// TalosControlPlane's, whose InfraMachine was cloned from another template
// than spec.infrastructureTemplate, or whose TalosConfig spec differs from
// the TalosControlPlane's, as the real provider decides it: a new Machine
// first while there are fewer than replicas+maxSurge (counting those being
// deleted), then the scale-down of the delete-annotated outdated Machine,
// the delete-annotated, the outdated, the oldest. The decision is a pure
// function, plan.
//
// A scale-down (ScaleDown) is the real provider's, the part Tollgate's
// removal gate meets:
//
//   - LeaveEtcdFirst (the released v0.5.x, the default): the chosen
//     Machine's node leaves etcd over the Talos API (EtcdForfeitLeadership,
//     EtcdLeaveCluster; a failed leave is ignored), then the Machine is
//     deleted, then its workload Node, before CAPI consults any deletion
//     hook: a pre-drain hook (Tollgate's) holds a Machine that already left
//     etcd and whose Node is gone. While it is not gone, every scale-down
//     deletes its Node again and removes no other Machine.
//   - PreTerminateHook (the unreleased variant, siderolabs PR #270 and the
//     sidero-community fork's controllers/preterminate.go): every Machine
//     carries the pre-terminate hook PreTerminateHookAnnotation; a
//     scale-down only deletes the Machine; once CAPI has drained it and
//     waits at the hook, its node leaves etcd (or its member is removed
//     through another node) and the hook is removed; CAPI deletes the Node.
//
// Before it takes a Machine out, it reads the etcd members through the Talos
// API of another control-plane node (Etcd; TalosEtcd reads the Cluster's
// <cluster>-talosconfig Secret) and waits while the members left would not
// have a healthy quorum, or no node answered (condition ScaleDownSafe): the
// stand-in's reading of the real provider's EtcdClusterHealthy gate.
//
// What it does not do, unlike the real provider: audit etcd for members
// without a Machine (auditEtcd), bootstrap etcd or reconcile the workload
// cluster's configuration and kubeconfig; it creates a Machine only once
// every Machine has a node (v0.5.x does not wait; the variant's preflight
// does), and at the pre-terminate hook it never gives up (the variant
// releases the hook after two minutes of failed etcd calls).
//
// Status follows the contract: initialized once a Machine has a node
// (status.nodeRef), ready while one is Ready, replicas, readyReplicas,
// unavailableReplicas, the lowest version and the selector of the scale
// subresource. A Cluster or TalosControlPlane with the cluster.x-k8s.io/paused
// annotation (or a paused Cluster) is left alone.
package taloscontrolplane
