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

// Package webhooks holds Tollgate's admission webhooks, served by the
// manager: defaulting and validation of TalosUpgradePolicy, TalosUpgrade,
// ReleaseChannel and ClusterHealthCheck, and validation of the policy label
// on CAPI Clusters.
// SetupWebhooksWithManager registers them all. An unsafe plan is refused
// when it is applied, with a message that names the field, says what is
// wrong and what to do instead, rather than discovered halfway through a
// fleet upgrade.
//
// The rules of a plan and of a health check live in internal/plan, shared
// with the controllers, which check again because a webhook can be bypassed
// or down: the TalosUpgrade preflight checks the plan against the Cluster's
// Machines (plan.ValidateForCluster), a TalosUpgradePolicy's Ready
// condition reports plan.ValidatePolicy, and a ClusterHealthCheck's Ready
// condition reports plan.ValidateClusterHealthCheck. This package adds what
// only admission knows: the previous object, the requesting user, and the
// other objects of the namespace.
//
// Decisions worth knowing:
//
//   - A ClusterHealthCheck that a policy references but that does not exist
//     yet is a warning, not a rejection: GitOps tools apply objects in any
//     order. The controller's preflight holds every rollout of the policy
//     until the check exists.
//   - An update of a TalosUpgradePolicy that leaves the plan as it is (paused,
//     bypass) is always admitted, whatever the state of the world, so that a
//     rollout can always be paused. A change of talosVersion or installer is
//     refused while a rollout of the policy is in progress (phase
//     InProgress, Paused or WaitingForHealthChecks, or a Machine started).
//   - A TalosUpgrade is owned by the controller. Requests whose user is the
//     controller's (WithControllerUsername, by default
//     DefaultControllerUsername) may change its plan; everybody else may only
//     change paused, cancel and bypass, cancel cannot be undone, and only the
//     controller may set the admitted annotation (one created by anybody
//     else, clusterctl move included, loses it and is admitted again by its
//     policy). Every new TalosUpgrade is refused while another active one
//     covers the same Cluster; one created by hand is also checked against
//     its Cluster's Machines (a Cluster that does not exist yet is a
//     warning), while one the controller creates is left to the preflight,
//     whose condition (UnsupportedVersionStep) shows on the object.
//   - Clusters select policies through the single label
//     upgrade.tollgate.dev/policy, so two policies cannot select one Cluster
//     at once; what remains is moving a Cluster to another policy while a
//     rollout of the first runs there, which the Cluster webhook refuses.
//   - The policy label should name an existing policy; one that does not
//     exist yet is a warning, not a refusal (GitOps tools and clusterctl move
//     apply objects in any order), and the controller waits for it. Once the
//     policy exists, its plan must be able to upgrade the Cluster's Machines
//     (version step, Kubernetes support). The policy webhook checks the
//     Clusters that already select it.
//   - The Cluster webhook has failurePolicy Ignore so that a Tollgate outage
//     never blocks CAPI, and it admits at once every request that does not
//     add or change the policy label (controller-gen cannot generate an
//     objectSelector). Removing the label is always allowed.
//   - A ReleaseChannel is refused when a policy would be in two channels or
//     twice in one, its stages' order has a cycle, a soak time or window
//     cannot be met, a query does not parse, or an approval is for a stage
//     that is not waiting for one (read from the channel's status); a
//     policy a stage names that does not exist yet, or a channel a policy
//     names, is a warning. The defaulting webhook records who made each
//     approval, as it records who asked for a bypass.
//   - Bypassing health checks, drain settings that force Pods out, a plan
//     without health checks and a Cluster with a single control-plane
//     Machine are admission warnings.
package webhooks
