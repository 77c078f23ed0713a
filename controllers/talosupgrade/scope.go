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
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// scope holds what one reconcile of a TalosUpgrade reads and decides. The
// phases of reconcileNormal run in order and each fills the fields it names
// below; a phase that fails ends the reconcile, so that no later phase reads
// a field an earlier one could not fill.
type scope struct {
	// Rollout is the rollout as this reconcile observed it, for the
	// decisions of internal/disruption: Reconcile fills its Upgrade (read
	// live, its status patched at the end of the reconcile and whenever an
	// intent must be persisted) and Now; reconcileCluster its Cluster and
	// Policy; reconcileMachines its Machines and Handovers (and brings the
	// records up to date); reconcileConfigTargets its ConfigTargets;
	// reconcileKubernetesVersions its KubernetesVersions and
	// reconcilePreflight its Preflight.
	disruption.Rollout

	// base is the TalosUpgrade as last read or written; writeUpgrade
	// patches the difference, fenced by its resourceVersion.
	base *upgradev1.TalosUpgrade
	// stop, set by a phase, ends the reconcile after that phase.
	stop bool

	// templates are the templates the Cluster's new Machines come from,
	// for a rollout whose target comes from its policy; filled by
	// reconcileTemplates, nil when not read.
	templates []disruption.MachineTemplate

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

	// healthChecks is the HealthChecksPassing condition as this reconcile
	// found it; filled by reconcileHealthChecks, nil when not evaluated
	// (the condition stays as it was).
	healthChecks *metav1.Condition

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
