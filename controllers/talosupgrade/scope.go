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
	"time"

	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// scope holds what one reconcile of a TalosUpgrade reads and decides.
type scope struct {
	// upgrade is the TalosUpgrade being reconciled; its status is patched at
	// the end of the reconcile and whenever an intent must be persisted.
	upgrade *upgradev1.TalosUpgrade
	// base is upgrade as last read or written; writeUpgrade patches the
	// difference, fenced by its resourceVersion.
	base *upgradev1.TalosUpgrade
	// now is the time of this reconcile.
	now time.Time
	// stop, set by a phase, ends the reconcile after that phase.
	stop bool

	// policy is the TalosUpgradePolicy of the rollout; nil when it is gone.
	policy *upgradev1.TalosUpgradePolicy

	// cluster is the CAPI Cluster of the rollout.
	cluster *clusterv1.Cluster
	// machines are the Cluster's Machines, by name.
	machines map[string]*clusterv1.Machine

	// workload is a cached client of the workload cluster; nil while it
	// cannot be reached.
	workload client.Client
	// clientset is a clientset of the workload cluster for the drain,
	// created on first use; see Reconciler.clientset.
	clientset kubernetes.Interface

	// checks are the ClusterHealthChecks the plan references, in plan order.
	checks []upgradev1.ClusterHealthCheck
	// missingChecks are the referenced ClusterHealthChecks that do not exist.
	missingChecks []string

	// checksPassed is the verdict of the health checks that gate the next
	// disruption, set by reconcileHealthChecks.
	checksPassed bool

	// blockedBy says what keeps the next Machine from starting.
	blockedBy string
	// waitingReason is the Progressing condition's reason while blocked.
	waitingReason string
}

// requeueAfter returns a result that requeues after d.
func requeueAfter(d time.Duration) ctrl.Result {
	if d <= 0 {
		d = time.Second
	}
	return ctrl.Result{RequeueAfter: d}
}

// inFlight reports whether a Machine in phase p has started and not ended.
func inFlight(p upgradev1.MachinePhase) bool {
	switch p {
	case upgradev1.MachinePhaseWaitingForHold, upgradev1.MachinePhaseDraining, upgradev1.MachinePhaseUpgrading,
		upgradev1.MachinePhaseRebooting, upgradev1.MachinePhaseVerifying:
		return true
	}
	return false
}

// done reports whether a Machine in phase p has ended.
func done(p upgradev1.MachinePhase) bool {
	return p == upgradev1.MachinePhaseCompleted || p == upgradev1.MachinePhaseFailed
}
