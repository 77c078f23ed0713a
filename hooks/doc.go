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

// Package hooks is the contract between Tollgate and everyone who needs a say
// in when a Machine may be disrupted. Tollgate gates five kinds of
// disruption of a workload cluster's node: a Talos upgrade, a Kubernetes
// upgrade in place (a control-plane node's static Pods, or a kubelet), a
// reboot asked for on its own, a change of its machine configuration, and
// its removal when CAPI deletes its Machine. The first four are Tollgate's
// own and pass the same points; a removal is CAPI's, and Tollgate holds it
// with CAPI's deletion hook. At each point two kinds of hooks apply: hold
// annotations, which other controllers and people set on the Machine, and
// action hooks, Jobs the policy runs in the workload cluster.
//
// # The points, and the state of the node at each
//
// A Machine that Tollgate disrupts passes these points in order; at each,
// the hold annotations of the point are checked first, then the action
// hooks of the point run:
//
//	point          hold annotation  hooks         the node is
//	before drain   pre-drain        preDrain      as it was, schedulable, serving
//	before reboot  pre-reboot       preReboot     cordoned, drained (on Talos 1.13+ the new image installed)
//	back, unproven post-upgrade     nodePreReady  Ready with the change, still cordoned
//	proven         (none)           nodeReady     uncordoned: it takes work again
//	removed        CAPI's pre-drain preRemoval    being deleted by CAPI, not drained yet
//
// A disruption without a reboot (a configuration Talos applies at once, a
// kubelet or a control-plane node's static Pods changed in place) skips the
// point before the reboot; a control-plane node's static Pods change with
// its Pods running, after its preDrain holds and hooks, without a drain. A
// node with several changes due at once passes the points once.
//
// While cordoned, no new Pod is scheduled on the node but those that
// tolerate the cordon (DaemonSet Pods, which are what usually proves a node:
// CNI, CSI, agents). Tollgate proves a node with the cordon rather than a
// taint of its own, which DaemonSets would not tolerate. A nodePreReady
// hook's own Pod is scheduled like any Pod (so not on the cordoned node,
// unless its template tolerates node.kubernetes.io/unschedulable): it checks
// the node from outside, for example that the DaemonSet Pods on
// TOLLGATE_NODE are Ready. From the drain to the uncordon the Machine also
// carries cluster.x-k8s.io/skip-remediation, so that a MachineHealthCheck
// does not replace a node that is only rebooting.
//
// # Hold annotations, for controllers and people
//
// Modelled on Cluster API's machine deletion hooks
// (pre-drain.delete.hook.machine.cluster.x-k8s.io/<owner>), a hold is an
// annotation on the CAPI Machine whose key is one of the prefixes below,
// followed by "/" and the name of its owner:
//
//	pre-drain.upgrade.hook.tollgate.dev/<owner>     before the node is cordoned
//	pre-reboot.upgrade.hook.tollgate.dev/<owner>    node drained, before the reboot
//	post-upgrade.upgrade.hook.tollgate.dev/<owner>  node back Ready with the change, still cordoned
//
// The names say "upgrade", and the holds gate every disruption Tollgate
// makes of the node: an upgrade, a reboot, a configuration or a Kubernetes
// change alike. For example, a backup operator that must finish a snapshot
// before a node goes down annotates the Machine with
// "pre-drain.upgrade.hook.tollgate.dev/backup-operator" (the value is free;
// a short reason helps whoever reads it) before the rollout reaches it, and
// removes the annotation when it is done; SetHold and ReleaseHold do both
// for a controller written in Go. While any hold exists at a point,
// the Machine waits there in phase WaitingForHold; the TalosUpgrade records
// the owners (status.machines[].heldBy) and says why it waits, for example
// `machine "cp-0" held at preDrain by "backup-operator"`. The rollout engine
// does not poll for holds: it watches Machines, so removing the annotation
// is enough to let the Machine go on.
//
// The rules, as for CAPI's deletion hooks:
//
//   - One owner, one annotation. Owners add and remove only their own.
//   - Tollgate never removes another owner's hold, and never times one out:
//     an abandoned hold stops the Machine until someone removes it, or until
//     an administrator tells the rollout to pass that owner's holds
//     (spec.bypass.holdOwners on the TalosUpgrade or its policy, with a
//     reason; the webhook records who asked). The annotations stay; each
//     pass is an event, and the bypass ends with the rollout.
//   - Only keys of the exact form <prefix>/<owner> count; the owner is the
//     name part of the key.
//   - A hold must be in place before the Machine reaches its point; adding
//     one later holds the next point, not the one already passed.
//
// # Action hooks, for the workload
//
// The hooks of a TalosUpgradePolicy (spec.hooks) are Jobs that Tollgate runs
// in the workload cluster, through the Cluster's kubeconfig, for each
// Machine at the points preDrain, preReboot, nodePreReady and nodeReady (and
// preRemoval, when CAPI deletes the Machine), for
// example to set Ceph's noout flag before a reboot and unset it once the node
// is back, or to check a node before it takes work again.
// Runner runs them. Every container and init container of the Job gets the
// context of the run as environment variables:
//
//	TOLLGATE_CLUSTER       the CAPI Cluster
//	TOLLGATE_MACHINE       the CAPI Machine
//	TOLLGATE_NODE          the workload Node
//	TOLLGATE_FROM_VERSION  the Talos version the node runs before the disruption
//	TOLLGATE_TO_VERSION    the Talos version it runs after (the same unless it is upgraded; empty for a removal)
//	TOLLGATE_HOOK          the point: preDrain, preReboot, nodePreReady, nodeReady or preRemoval
//	TOLLGATE_HOOK_NAME     the name of the hook in the policy
//	TOLLGATE_ACTION        the disruption: Upgrade, Kubernetes, Reboot, Configure or Removal
//
// so that one image can serve several points and tell the disruptions
// apart (for example, take Ceph OSDs out only before a Removal). The hooks
// at one point run at the same time, and the Machine waits until every one
// of them succeeded. A failed hook (its Job failed, or ran longer than the
// hook's timeout) runs again up to its retries, with exponential backoff;
// then the Machine fails with the tail of the hook's output as the reason.
// Hooks are idempotent from Tollgate's side: a hook that succeeded for a
// Machine and point is never run again for them, even across controller
// restarts. Anything the Job needs (ServiceAccount, RBAC) is the user's to
// deploy; Tollgate only sets the Job's name and labels.
//
// # Removals: CAPI's deletion hook
//
// Tollgate keeps its own CAPI pre-drain deletion hook, DeletionHookAnnotation
// (pre-drain.delete.hook.machine.cluster.x-k8s.io/tollgate), on every Machine
// of a Cluster that opted in to a policy. When CAPI deletes such a Machine
// (a scale-down, a rollout, a MachineHealthCheck remediation, a user), its
// Machine controller waits before the drain until Tollgate removed it: once
// the Machine's preRemoval hooks succeeded, the health checks passed and the
// disruption budget of its group has room, or once the plan's
// removal.timeout passed. CAPI waits for pre-drain hooks only when it would
// drain the Machine and delete its Node: not when it deletes the whole
// Cluster, nor for the last control-plane Machine or a Machine without a
// Node. Other owners keep their own deletion hooks (their own /<owner>
// suffix) as CAPI's contract says; Tollgate never touches them.
//
// Only Tollgate removes its hook, so while Tollgate is down or uninstalled
// those deletions wait. Tollgate removes it from every Machine of a Cluster
// that leaves its policy or whose TalosUpgrade is deleted, which is how it
// is uninstalled; when it was stopped first, `kubectl tollgate
// release-hooks CLUSTER` is the audited break-glass (ReleaseDeletionHook
// for each Machine, after a record of who, when and why). A Tollgate that
// runs again puts its hook back on every Machine of an opted-in Cluster that
// is not being deleted.
//
// # Reboots, configuration changes and Kubernetes upgrades
//
// A reboot asked for on its own (a policy's reboot.after, a Machine's
// upgrade.tollgate.dev/reboot-after annotation), a change of the node's
// machine configuration (new patches of an OnDelete template) and a
// Kubernetes upgrade (a policy's kubernetesVersion) go through the points of
// an upgrade, holds and hooks alike, with TOLLGATE_ACTION Reboot, Configure
// or Kubernetes, and TOLLGATE_FROM_VERSION and TOLLGATE_TO_VERSION both the
// Talos version the node runs. A change that comes with a Talos upgrade of
// the same node is part of it (TOLLGATE_ACTION=Upgrade): one drain and one
// reboot for both.
package hooks
