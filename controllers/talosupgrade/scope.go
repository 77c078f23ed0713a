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

package talosupgrade

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/inplace"
)

// scope holds what one reconcile of a TalosUpgrade reads and decides. The
// phases of reconcileNormal run in order and each fills the fields it names
// below; a phase that fails ends the reconcile, so that no later phase reads
// a field an earlier one could not fill.
type scope struct {
	// upgrade is the TalosUpgrade being reconciled, read live by Reconcile;
	// its status is patched at the end of the reconcile and whenever an
	// intent must be persisted.
	upgrade *upgradev1.TalosUpgrade
	// base is upgrade as last read or written; writeUpgrade patches the
	// difference, fenced by its resourceVersion.
	base *upgradev1.TalosUpgrade
	// now is the time of this reconcile.
	now time.Time
	// stop, set by a phase, ends the reconcile after that phase.
	stop bool

	// cluster is the CAPI Cluster of the rollout; filled by
	// reconcileCluster, nil while it does not exist.
	cluster *clusterv1.Cluster
	// policy is the TalosUpgradePolicy of the rollout; filled by
	// reconcileCluster, nil when it is gone.
	policy *upgradev1.TalosUpgradePolicy

	// machines are the Cluster's Machines, by name; filled by
	// reconcileMachines, which also brings the Machine records up to date.
	// nil until then: the records were not checked against the world.
	machines map[string]*clusterv1.Machine

	// handovers are, for a rollout whose target comes from CAPI, the
	// Machines CAPI handed over for an in-place update, by name, with what
	// their InfraMachines ask for; filled by reconcileMachines.
	handovers map[string]*inplace.Handover

	// templates are the templates the Cluster's new Machines come from,
	// for a rollout whose target comes from its policy; filled by
	// reconcileTemplates, nil when not read.
	templates []machineTemplate
	// configTargets are the machine configurations the Cluster's nodes
	// should run, by the objects that say so (the control plane's,
	// controlPlaneConfigSource, and each MachineDeployment's, by its
	// name); filled by reconcileConfigTargets, nil when not read.
	configTargets map[string]*configTarget
	// kubernetesVersions is the KubernetesVersions condition of a rollout
	// with a Kubernetes target; filled by reconcileKubernetesVersions.
	kubernetesVersions *metav1.Condition

	// inPlace is the InPlaceUpdatesReady condition of a rollout whose
	// target comes from CAPI; filled by reconcileInPlace, nil when not
	// read.
	inPlace *metav1.Condition

	// workload is a cached client of the workload cluster; filled by
	// reconcileWorkload, nil while the rollout does not hold the workload
	// connection (see connection.go) or the cluster cannot be reached.
	workload client.Client
	// clientset is a clientset of the workload cluster for the drain,
	// created on first use; see Reconciler.clientset.
	clientset kubernetes.Interface

	// checks are the ClusterHealthChecks the plan references, in plan
	// order, and unavailableChecks the referenced ones that do not exist;
	// filled by reconcileHealthCheckObjects.
	checks            []upgradev1.ClusterHealthCheck
	unavailableChecks []string

	// healthChecks is the HealthChecksPassing condition, and preflight the
	// PreflightSucceeded condition, as this reconcile found them; filled by
	// reconcileHealthChecks and reconcilePreflight, nil when not evaluated
	// (the conditions stay as they were).
	healthChecks *metav1.Condition
	preflight    *metav1.Condition

	// checksPassed is the verdict of the health checks that gate the next
	// disruption; filled by reconcileHealthChecks, false until then.
	checksPassed bool

	// requests are what the steps of the current round asked of the world,
	// reading what the requests of the round fill in and read what the
	// previous round's read, for this round's steps to decide on; all three
	// are kept by advanceAll (see rounds.go).
	requests []request
	reading  readings
	read     readings
	// clientsetMu guards clientset, which the side effects and drain
	// passes of a round use at once.
	clientsetMu sync.Mutex

	// blockedBy says what keeps the next Machine from starting, and
	// waitingReason is the Progressing condition's reason while blocked;
	// set by the first phase that blocks (see block).
	blockedBy     string
	waitingReason string
}

// block records what keeps the next Machine from starting; the first
// blocker wins.
func (s *scope) block(reason, message string) {
	if s.blockedBy == "" {
		s.blockedBy, s.waitingReason = message, reason
	}
}

// observed reports whether the Machine records were checked against the
// world in this reconcile.
func (s *scope) observed() bool { return s.machines != nil }

// pause says whether, and why, the rollout starts no new Machine because it,
// its policy or its Cluster is paused: the Paused condition's reason and
// message, or an empty reason. It is the one place that decides pausing.
func (s *scope) pause() (reason, message string) {
	u := s.upgrade
	switch {
	case s.cluster != nil && annotations.IsPaused(s.cluster, s.cluster):
		return upgradev1.ClusterPausedReason, fmt.Sprintf("Cluster %q is paused (spec.paused or the %s annotation); Tollgate does not touch it", s.cluster.Name, clusterv1.PausedAnnotation)
	case u.Spec.Paused:
		if _, ok := u.Annotations[pausedByFailureAnnotation]; ok {
			return upgradev1.FailurePolicyPausedReason, "the failure policy paused the rollout: " + s.failureMessage()
		}
		return upgradev1.RolloutPausedReason, "the rollout is paused"
	case s.policy != nil && s.policy.Spec.Paused:
		return upgradev1.RolloutPausedReason, fmt.Sprintf("TalosUpgradePolicy %q is paused", s.policy.Name)
	}
	return "", ""
}

// detached reports whether the Cluster no longer opts in to the rollout's
// policy: its policy label is gone or names another policy.
func (s *scope) detached() bool {
	return s.cluster != nil && s.cluster.Labels[upgradev1.PolicyLabel] != s.upgrade.Spec.PolicyName
}

// upgradingNode reports whether node is the node of a Machine of the rollout
// in flight: away for the moment, and back once upgraded.
func (s *scope) upgradingNode(node string) bool {
	for _, st := range s.upgrade.Status.Machines {
		if st.Node == node && st.Phase.InFlight() {
			return true
		}
	}
	return false
}

// hasPending reports whether a Machine has yet to start.
func (s *scope) hasPending() bool {
	for _, st := range s.upgrade.Status.Machines {
		if st.Phase == upgradev1.MachinePhasePending {
			return true
		}
	}
	return false
}
