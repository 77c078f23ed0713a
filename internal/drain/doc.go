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

// Package drain cordons, uncordons and drains workload Nodes before their
// Talos upgrade.
//
// The choice of what to evict is the one users know from `kubectl drain`
// and from Cluster API's own Machine drain: the same filters for DaemonSet,
// mirror, emptyDir and unmanaged Pods as kubectl (driven by the policy's
// DrainSpec instead of flags), then CAPI's MachineDrainRules and its Pod
// label cluster.x-k8s.io/drain, which skip a Pod, wait for it to complete,
// or drain it in an order (RulesFor picks the rules of a Machine; Drain
// applies them). What this package adds is the shape a controller needs, as
// Cluster API's Machine drain does: Drain never waits. Each call evicts (or,
// when PodDisruptionBudgets are not respected, deletes) every Pod of the
// lowest order still to go once, and reports whether the Node is done and,
// if not, what it waits for: Pods terminating, Pods whose eviction a
// PodDisruptionBudget refuses, Pods waited for until they complete, Pods of
// a later order, Pods the DrainSpec does not allow to evict. The caller
// calls Drain again until Done, and owns the drain timeout: its deadline is
// stored on the TalosUpgrade, not here. The caller also honours CAPI's
// machine.cluster.x-k8s.io/exclude-node-draining annotation by not calling
// Drain at all.
package drain
