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

// kubectl-tollgate is Tollgate's kubectl plugin (kubectl tollgate): the view
// of rollouts that make demo shows, for a real management cluster, and the
// controls an operator uses on them.
//
//   - describe: a tree of TalosUpgradePolicies -> Clusters -> Machines with
//     each rollout's phase, progress and blocker, each Machine's phase, the
//     holds on it and its hooks that did not succeed, like clusterctl
//     describe cluster.
//   - watch CLUSTER: the live view of a Cluster's rollout (a line per
//     Machine, what blocks it) until it ends, then the summary table.
//   - pause, resume, cancel and bypass: set the fields of a TalosUpgrade or
//     a policy that a user may change (spec.paused, spec.cancel,
//     spec.bypass), through the API server, so that the admission webhook
//     checks them and records who asked for a bypass (spec.bypass.requestedBy).
//   - release-hooks CLUSTER: the break-glass for when Tollgate is down or
//     uninstalled. It removes Tollgate's CAPI pre-drain deletion hook from
//     the Cluster's Machines, so that CAPI's deletions of them go on; it
//     refuses while Tollgate's leader election Lease is held, is a dry run
//     without --yes, and records who, when and why (--reason) in an event
//     on the Cluster and in the TalosUpgrade's status.bypassHistory before
//     it releases anything.
//   - channel [NAME]: the pipeline of release channels, their stages and
//     where each version stands in each.
//   - approve CHANNEL STAGE: a decision on the version a stage waits for
//     (spec.approvals), with a reason; the webhook records who made it.
//
// Both views are package rolloutview's, the rendering make demo uses. The
// plugin takes kubectl's connection flags (--kubeconfig, --context, -n, ...)
// from k8s.io/cli-runtime, and needs no RBAC beyond reading the Tollgate
// objects and CAPI Machines, and patching what it changes (release-hooks
// also lists Leases and creates Events, and writes the TalosUpgrade's
// status).
package main
