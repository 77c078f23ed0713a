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

// Package kubernetes is the node-level part of a Kubernetes upgrade of a
// Talos Cluster (issue 26): what changes in a node's machine configuration,
// in which order, and how Tollgate knows each change has taken, so that the
// engine can move Kubernetes one node at a time through its gate, as
// "talosctl upgrade-k8s" does from a workstation.
//
// On Talos, Kubernetes is the machine configuration: a control-plane node
// runs kube-apiserver, kube-controller-manager and kube-scheduler as static
// Pods of the images cluster.apiServer.image, cluster.controllerManager.image
// and cluster.scheduler.image, every node runs the kubelet of
// machine.kubelet.image, and kube-proxy is a DaemonSet Talos creates from
// its bootstrap manifests (cluster.proxy.image) once and never updates.
// Talos applies a change of these fields without a reboot: it restarts the
// static Pods and the kubelet on the new images.
//
// The package has:
//
//   - ImagePatches, the configuration that moves a node's control-plane
//     images (PartControlPlane) or its kubelet image (PartKubelet) to a
//     version, changing only each image's tag (a user's mirror stays), and
//     RunningVersions, what a node's configuration says it runs, read back
//     after applying. Both are pure.
//   - The checks of the workload cluster that say a step has taken:
//     StaticPodsReady (the mirror Pods of a node's static Pods run the
//     version and are Ready), KubeletAt (the Node reports the kubelet
//     version and is Ready), KubeProxyRolledOut.
//   - UpdateKubeProxy: the one change made through the Kubernetes API, the
//     image of the kube-proxy DaemonSet, which no machine configuration
//     change reaches.
//   - Steps, the order: each control-plane node's components one node at a
//     time, then kube-proxy, then the kubelets, control-plane nodes first.
//     Kubernetes' version skew policy decides it (see Steps).
//
// The engine applies a configuration with internal/talos
// (Client.ApplyConfiguration in ApplyModeNoReboot: a change that needs a
// reboot is refused, and none of these does), reads it back
// (Client.MachineConfig, RunningVersions) and waits for the step's check,
// under a timeout of its own: a check that never passes (a static Pod that
// never becomes Ready, an image that cannot be pulled) is reported in its
// message, never decided here.
//
// # What talosctl upgrade-k8s does that this package does not
//
//   - It pre-pulls the new images on every node before the first change.
//     Here a node pulls its images when its configuration changes; a pull
//     that fails shows as a static Pod or kubelet that does not come back,
//     which the checks report. Pre-pulling only shortens the window, and
//     needs an image pull call the narrow Talos client does not have.
//   - It refuses to start while the workload cluster holds objects of APIs
//     the target version removes (its pre-upgrade checks). That is a
//     decision about the whole Cluster, for the webhook or the rollout's
//     preflight, not for a node.
//   - It checks that every node's Talos version supports the target. Here
//     that is internal/talos (PlanVersions, CheckKubernetesSupported),
//     before any step.
//   - It moves kube-apiserver on every control-plane node, then
//     kube-controller-manager on every one, then kube-scheduler. Here one
//     configuration change moves a node's three components at once: one
//     apply and one wait per node. The controller-manager and scheduler of
//     a Talos node reach the apiserver of their own node only, which moves
//     in the same change.
//   - It syncs all of Talos' bootstrap manifests (CoreDNS, the CNI, RBAC,
//     kube-proxy's whole DaemonSet) with the Kubernetes API. Here only
//     kube-proxy's image changes: the other manifests are not versioned
//     with Kubernetes, and overwriting what an operator changed in them is
//     not a node-level decision.
//   - It takes images from flags (or Talos' defaults) and sets them whole.
//     Here each image keeps the repository the node's configuration names,
//     so that a Cluster pulling from a mirror keeps pulling from it; an
//     image pinned by digest is refused, as its digest cannot be changed
//     without the registry.
//
// # Secrets
//
// A machine configuration holds the cluster's CAs, keys and tokens. The
// errors of this package name fields and never carry a value (Talos'
// loader errors, which can quote one, are not wrapped), and the
// configurations ImagePatches returns must not be logged.
package kubernetes
