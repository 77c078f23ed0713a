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
// stand-in Talos control-plane provider: the smallest controller that keeps
// CAPI's v1beta1 control-plane contract for the Talos CAPI templates.
//
// It creates the control-plane Machines (labelled
// cluster.x-k8s.io/control-plane and cluster.x-k8s.io/control-plane-name,
// owned by the TalosControlPlane, spec.version from the TalosControlPlane),
// each with an InfraMachine cloned from spec.infrastructureTemplate (CAPI's
// external.CreateFromTemplate, which sets the cluster.x-k8s.io/cloned-from-*
// annotations) and a TalosConfig of spec.controlPlaneConfig.controlplane (the
// first Machine's of .init when set). It changes one Machine at a time and
// waits for every Machine to have a node before the next change: it scales
// up and down to spec.replicas (never below one), and rolls out (RollingUpdate,
// maxSurge 1 or 0) a Machine whose spec.version or TalosConfig spec differs
// from the TalosControlPlane's; with the OnDelete rolloutStrategy it rolls
// out none, and replaces a Machine a user deleted with an up-to-date one. The decision is a pure function, plan.
//
// Before it deletes a control-plane Machine, it reads the etcd members
// through the Talos API of another control-plane node (Etcd; TalosEtcd reads
// the Cluster's <cluster>-talosconfig Secret) and refuses the deletion when
// the members left would not have a healthy quorum, or when no node
// answered (condition ScaleDownSafe). It does not remove the member itself:
// the Talos simulator of the test worlds serves no EtcdRemoveMemberByID or
// EtcdLeaveCluster, and a simulated node leaves etcd when its machine is
// removed. The real provider also forfeits leadership and removes the
// member, and reconciles the workload cluster's configuration; this one
// does neither.
//
// Status follows the contract: initialized once a Machine has a node
// (status.nodeRef), ready while one is Ready, replicas, readyReplicas,
// unavailableReplicas, the lowest version and the selector of the scale
// subresource. A Cluster or TalosControlPlane with the cluster.x-k8s.io/paused
// annotation (or a paused Cluster) is left alone.
package taloscontrolplane
