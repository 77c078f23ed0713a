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

package disruption

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
)

// Rollout is one Cluster's rollout as the controller observed it: the value
// the decisions of a reconcile read, as KCP's ControlPlane holds a control
// plane's Machines. The controller fills it, in the order of its phases;
// each field says when it is unknown.
type Rollout struct {
	// Upgrade is the TalosUpgrade, read live: its status holds the
	// Machines' records, the rollout's write-ahead log.
	Upgrade *upgradev1.TalosUpgrade
	// Now is the time of the reconcile.
	Now time.Time

	// Cluster is the CAPI Cluster of the rollout, nil while it does not
	// exist; Policy its TalosUpgradePolicy, nil when it is gone.
	Cluster *clusterv1.Cluster
	Policy  *upgradev1.TalosUpgradePolicy

	// Machines are the Cluster's Machines, by name; nil until they were
	// read, and the records not checked against them.
	Machines map[string]*clusterv1.Machine
	// Reachable is set once the workload cluster's cache answers, and
	// Nodes are then where its Nodes stand, by name: all it lists, so that
	// a node missing from Nodes is gone (see NodeGone); while the workload
	// cluster cannot be reached, no node could be read.
	Reachable bool
	Nodes     map[string]NodeState
	// Handovers are, for a rollout whose target comes from CAPI, what the
	// Machines CAPI handed over for an in-place update are to run, by name.
	Handovers map[string]*Handover
	// CAPIRollingOut names, for a rollout whose target comes from CAPI, what
	// CAPI is still rolling out and may hand over next (a Machine marked for
	// an in-place update, a MachineDeployment rolling out its Machines one
	// after the other); empty when CAPI is at rest.
	CAPIRollingOut string

	// Declared are the Talos versions the Cluster's control plane and
	// MachineDeployments declare (see TargetOf); nil when none does or they
	// were not read.
	Declared Declared

	// ConfigTargets are the machine configurations the Cluster's nodes
	// should run, by the objects that say so (ControlPlaneConfigSource,
	// and each MachineDeployment's, by its name); nil when not read.
	ConfigTargets map[string]*ConfigTarget
	// KubernetesVersions is the KubernetesVersions condition of a rollout
	// with a Kubernetes target, and Preflight the PreflightSucceeded
	// condition, as this reconcile found them; nil when not evaluated.
	KubernetesVersions *metav1.Condition
	Preflight          *metav1.Condition
}

// Handover is what a Machine CAPI handed over for an in-place update is to
// run.
type Handover struct {
	// Version is the Talos version its InfraMachine asks for.
	Version string
	// KubernetesVersion is the version its spec.version asks for, which
	// CAPI wrote before it handed it over; empty for none.
	KubernetesVersion string
}

// ControlPlaneConfigSource is the key of the control plane's target in
// Rollout.ConfigTargets, beside the MachineDeployments' names (which hold no
// space).
const ControlPlaneConfigSource = "control plane"

// ConfigTarget is the machine configuration the nodes made from one
// template should run: the template's patches.
type ConfigTarget struct {
	// Source names the template, for example "TalosConfigTemplate
	// alpha-md-0-v2 of MachineDeployment alpha-md-0".
	Source string
	// Patches are the template's patches and Hash their hash; a template
	// with no patches has no target.
	Patches machineconfig.Patches
	Hash    string
	// Err says why the template's patches could not be read.
	Err error
}

// Observed reports whether the Machine records were checked against the
// world in this reconcile.
func (r *Rollout) Observed() bool { return r.Machines != nil }

// Pause says whether, and why, the rollout starts no new Machine because it,
// its policy or its Cluster is paused: the Paused condition's reason and
// message, or an empty reason. It is the one place that decides pausing.
func (r *Rollout) Pause() (reason, message string) {
	u := r.Upgrade
	switch {
	case r.Cluster != nil && annotations.IsPaused(r.Cluster, r.Cluster):
		return upgradev1.ClusterPausedReason, fmt.Sprintf("Cluster %q is paused (spec.paused or the %s annotation); Tollgate does not touch it", r.Cluster.Name, clusterv1.PausedAnnotation)
	case u.Spec.Paused:
		if _, ok := u.Annotations[PausedByFailureAnnotation]; ok {
			return upgradev1.FailurePolicyPausedReason, "the failure policy paused the rollout: " + r.FailureMessage()
		}
		return upgradev1.RolloutPausedReason, "the rollout is paused"
	case r.Policy != nil && r.Policy.Spec.Paused:
		return upgradev1.RolloutPausedReason, fmt.Sprintf("TalosUpgradePolicy %q is paused", r.Policy.Name)
	}
	return "", ""
}

// Detached reports whether the Cluster no longer opts in to the rollout's
// policy: its policy label is gone or names another policy.
func (r *Rollout) Detached() bool {
	return r.Cluster != nil && r.Cluster.Labels[upgradev1.PolicyLabel] != r.Upgrade.Spec.PolicyName
}

// UpgradingNode reports whether node is the node of a Machine of the rollout
// in flight: away for the moment, and back once upgraded.
func (r *Rollout) UpgradingNode(node string) bool {
	for _, st := range r.Upgrade.Status.Machines {
		if st.Node == node && st.Phase.InFlight() {
			return true
		}
	}
	return false
}

// HasPending reports whether a Machine has yet to start.
func (r *Rollout) HasPending() bool {
	for _, st := range r.Upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhasePending {
			return true
		}
	}
	return false
}

// NeedsWorkload reports whether the rollout needs its workload cluster: a
// Machine is in flight or still cordoned, a removal is held, CAPI is still
// rolling out Machines it may hand over (a rollout whose target comes from
// CAPI, see CAPIRollingOut), or the rollout is admitted, not paused, and
// has Machines to start (its preflight, its health checks and its Machines
// run there). A rollout whose Machines all run the target, that is
// over (cancelled, detached, halted), or that is paused with no Machine in
// flight (by its user, its policy or its failure policy) needs none: it
// starts nothing until it is resumed, a change of it or of its policy's
// Admitting condition that brings it back (see admittingChanged).
func (r *Rollout) NeedsWorkload() bool {
	u := r.Upgrade
	for _, st := range u.Status.Machines {
		if st.Phase.InFlight() || st.Cordoned {
			return true
		}
	}
	if r.HoldsRemovals() {
		return true // See removal.go.
	}
	if !u.DeletionTimestamp.IsZero() {
		return false
	}
	if u.Spec.CAPIDriven() && r.CAPIRollingOut != "" {
		// CAPI hands its Machines over one after the other, and the
		// rollout ends between two of them: the connection is kept for the
		// next, rather than made again (the workload cache listed and
		// watched anew) between CAPI's mark and the upgrade call.
		return true
	}
	if u.Annotations[upgradev1.AdmittedAnnotation] == "" || r.Over() {
		return false
	}
	paused, _ := r.Pause()
	return paused == ""
}

// NodeGone reports whether the workload Node name is gone: the workload
// cluster answers, and lists no Node of that name. False while it cannot be
// reached.
func (r *Rollout) NodeGone(name string) bool {
	if !r.Reachable {
		return false
	}
	_, ok := r.Nodes[name]
	return !ok
}

// Connected reports whether the Cluster carries the workload connection
// annotation.
func (r *Rollout) Connected() bool {
	return r.Cluster != nil && hasConnection(r.Cluster)
}

// hasConnection reports whether the Cluster carries the workload connection
// annotation: the ClusterCache connects to its workload cluster.
func hasConnection(c *clusterv1.Cluster) bool {
	_, ok := c.Annotations[upgradev1.WorkloadConnectionAnnotation]
	return ok
}

// SortedNames returns the names of machines, sorted.
func SortedNames(machines map[string]*clusterv1.Machine) []string {
	names := make([]string, 0, len(machines))
	for name := range machines {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
