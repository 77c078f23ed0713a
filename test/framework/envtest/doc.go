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

// Package envtest is the test harness shared by Tollgate's integration
// suites, the sandbox behind `make demo` and the benchmarks. It starts a
// management control plane (a real kube-apiserver and etcd from
// controller-runtime's envtest) with Tollgate's and CAPI's CRDs, and on
// demand workload control planes, each its own apiserver, whose kubeconfig is
// stored in the management cluster exactly as CAPI stores it.
// ControlPlane.StartJobController runs the real Job controller of a workload
// (kube-controller-manager from KUBEBUILDER_ASSETS, with the garbage
// collector and the TTL-after-finished controller only).
// ControlPlane.ManagerConfig gives the manager the identity it has once
// installed: its ServiceAccount, bound to the RBAC of config/default. The
// apiserver authorizes with RBAC (envtest's --authorization-mode=RBAC), so a
// request that RBAC does not allow is Forbidden, as in a cluster.
//
// The kube-apiserver and etcd binaries come from KUBEBUILDER_ASSETS, which
// `make test` sets from hack/envtest-assets.sh.
package envtest
