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

// Package soak proves that Tollgate never takes down more than it promised,
// whatever happens to it: it runs many rollouts on a test/framework/sandbox world
// (envtest control planes, Cluster API core as its own process with the
// Talos-simulator infrastructure provider and the Talos providers'
// stand-ins, the real Job controller with a stand-in kubelet, the Talos
// node simulator, an in-process registry) with two replicas of the real
// manager binary under leader election, and injects faults at random, from
// a printed seed that replays the run. Each Cluster is made as a user makes
// it (a TalosControlPlane and a MachineDeployment, whose Machines CAPI
// makes) and has a MachineHealthCheck on its workers; no Machine is made,
// deleted or given its status by the soak. The faults:
//
//   - every controller process SIGKILLed and restarted; the leader alone
//     SIGKILLed, the other replica taking over;
//   - the management or a workload apiserver unreachable for a few seconds
//     (each sits behind a Gate, a TCP relay that drops every connection
//     and refuses new ones, as a stopped apiserver would; its etcd keeps
//     its data, as a restarted one does);
//   - request-level faults all along: behind each gate a FaultProxy fails
//     a share of the requests (500, 429 with Retry-After, timeouts, some
//     after the apiserver did the work) and cuts a share of the watches;
//   - Talos faults: an upgrade that exits non-zero, calls that time out, a
//     node that boots back into its old version, a node that never comes
//     back from its reboot, a node whose Talos API goes silent for good
//     once its drain began, an etcd member briefly unhealthy;
//   - a living fleet, through CAPI: a MachineDeployment scaled up (CAPI
//     makes a Machine, booted on its template's version) or down by one
//     or two (CAPI picks the Machines; Tollgate's removal gate holds each
//     with its deletion hook until its preRemoval hook ran and the budget
//     has room, then CAPI drains and deletes it), a worker's node dying
//     for good (its MachineHealthCheck remediates it, its MachineSet
//     replaces it), a MachineDeployment's template changed mid-rollout
//     (CAPI replaces its workers); a Cluster leaves its policy and
//     re-joins it, a new target is set once a rollout completed;
//   - reboots asked for, as users ask for them: a rolling reboot of a
//     Cluster (spec.reboot.after on its policy), mid-rollout or once the
//     rollout is over, and the reboot of one Machine's node (the
//     upgrade.tollgate.dev/reboot-after annotation);
//   - machine configuration changes, as a user's GitOps makes them: every
//     TalosControlPlane rolls out OnDelete, so that Tollgate brings a
//     change of its patches to the control-plane nodes in place, and the
//     soak changes them mid-rollout or once the rollout is over: a sysctl
//     with a new value (applied without a reboot), a new file (taken at a
//     boot), now and then a change of the pod network that no running node
//     may take (refused, NotInPlace), taken back or left;
//   - Kubernetes upgrades in place: about a third of the Clusters, chosen
//     by the seed, are Kubernetes-capable (their MachineDeployment rolls
//     out OnDelete too; the template rollout is played on the others), and
//     once a rollout of one completed the fleet sets a Kubernetes target
//     one minor up on its policy, alone or with the next Talos target, and
//     changes the TalosControlPlane's spec.version and the
//     MachineDeployment's spec.template.spec.version, before or after the
//     policy, as a user's GitOps does (kubernetes.go);
//   - in-place updates through CAPI: with Config.ExtensionPercent, a share
//     of the Clusters whose rollout can complete opt in to Tollgate's
//     in-place update extension (both replicas serve it, behind a relay),
//     and their workers' template is changed mid-round, with a change
//     Tollgate claims (the image bumped to the policy's installer at the
//     target: CAPI hands the Machines over) or one it does not (an opaque
//     image nothing declares: CAPI replaces them); invariant 18 checks
//     that no Machine is left handed over and unfinished (extension.go);
//   - a health check that flaps, a hook that fails once, pre-drain and
//     pre-reboot holds.
//
// An observer with its own clients samples the workload Nodes, the
// Machines, the TalosUpgrades and the health-check Jobs every 250ms, and
// counts every disruption against the budget whatever its cause (a node
// cordoned or NotReady for an upgrade, a reboot or a configuration change,
// a Machine whose removal Tollgate released to CAPI's drain); a poller
// records every boot of every node and the configurations staged for it;
// every upgrade and reboot call is checked against the world when it
// reaches the node; the simulator's call log, the boots against the
// reboots asked for and the configuration changes, the configuration each
// control-plane node runs against its TalosControlPlane's patches (or, for
// a refused change, the rollout's word that it is refused), each node's
// Kubernetes changes (the kubelet version and static Pods' images the
// poller reads from the simulator: at most one of each per Kubernetes
// target, none with a boot no upgrade made, no configuration staged for and no reboot asked for,
// none before the policy and the CAPI objects agree) and, at rest, the Nodes' kubelets, the static Pods and
// the Machines' spec.version against a Completed Kubernetes target, the
// preRemoval hook runs and the end state are
// checked after each round, and every line the controllers log (at -v=10) is searched for
// canary values planted in the Secrets and for slices of their keys; once a
// round is over and CAPI is done too, the Machines, Clusters, TalosUpgrades
// and policies must not change for 30s. The invariants are numbered as in
// Invariants; Run returns a Report.
//
// `make soak` (test/cmd/soak) runs a large soak, sized by flags;
// TestSoakShort (`make soak-short`, outside `make test`) runs a short one
// that injects every fault kind once. Bugs the soak found and that are not fixed yet are
// listed in KnownBugs, each with a deterministic reproducer beside the code
// it concerns; the reproducers of the bugs fixed so far are regression
// tests in controllers/talosupgrade and internal/redact.
package soak
