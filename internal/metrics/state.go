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

package metrics

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

var (
	rolloutsDesc = prometheus.NewDesc("tollgate_rollouts",
		"TalosUpgrades (rollouts) by policy and phase; every phase is reported, 0 included.",
		[]string{"namespace", "policy", "phase"}, nil)
	machinesDesc = prometheus.NewDesc("tollgate_machines",
		"Machines of the rollouts by policy, Cluster, action (Upgrade, Reboot or Configure) and phase; phases without a Machine are left out.",
		[]string{"namespace", "policy", "cluster", "action", "phase"}, nil)
	removalsDesc = prometheus.NewDesc("tollgate_removals",
		"Machines CAPI deletes that Tollgate's deletion hook holds or released, by policy, Cluster, cause and phase; phases without a Machine are left out.",
		[]string{"namespace", "policy", "cluster", "cause", "phase"}, nil)
	connectionsDesc = prometheus.NewDesc("tollgate_workload_connections",
		"Workload clusters Tollgate is connected to: Clusters whose rollout holds the workload connection and whose ClusterCache connection is up.",
		nil, nil)
)

// rolloutPhases are the phases tollgate_rollouts reports, 0 included; a
// rollout not reconciled yet has no phase and counts as Pending.
var rolloutPhases = []upgradev1.UpgradePhase{
	upgradev1.UpgradePhasePending, upgradev1.UpgradePhasePreflight, upgradev1.UpgradePhaseWaitingForHealthChecks,
	upgradev1.UpgradePhaseInProgress, upgradev1.UpgradePhasePaused, upgradev1.UpgradePhaseCompleted,
	upgradev1.UpgradePhaseFailed, upgradev1.UpgradePhaseDetached,
}

// StateSource is where the state series are read from at scrape time.
type StateSource struct {
	// Reader reads TalosUpgrades and Clusters, from the manager's cache.
	Reader client.Reader
	// Connected reports whether the ClusterCache is connected to the
	// workload cluster of a Cluster.
	Connected func(ctx context.Context, cluster client.ObjectKey) bool
}

// stateCollector reports the state series of the current source. There is
// one, registered with the package; the manager sets its source.
type stateCollector struct {
	mu     sync.Mutex
	source *StateSource
}

var state = &stateCollector{}

// SetStateSource makes src the source of the state series, until the
// returned function is called (when the manager stops). A process that
// runs managers one after the other (tests, the sandbox) reports the state
// of the last one started.
func SetStateSource(src StateSource) (unset func()) {
	state.mu.Lock()
	defer state.mu.Unlock()
	p := &src
	state.source = p
	return func() {
		state.mu.Lock()
		defer state.mu.Unlock()
		if state.source == p {
			state.source = nil
		}
	}
}

// scrapeTimeout bounds the reads of one scrape; they come from a cache.
const scrapeTimeout = 5 * time.Second

// Describe sends the descriptions of the state series.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rolloutsDesc
	ch <- machinesDesc
	ch <- removalsDesc
	ch <- connectionsDesc
}

// Collect reads the state and sends its series. A failed read leaves its
// series out of this scrape (and is logged), so that no wrong figure is
// reported.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.source
	c.mu.Unlock()
	if src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	log := ctrl.Log.WithName("metrics")

	upgrades := &upgradev1.TalosUpgradeList{}
	if err := src.Reader.List(ctx, upgrades, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "Listing TalosUpgrades for the metrics")
	} else {
		collectRollouts(ch, upgrades.Items)
	}

	clusters := &clusterv1.ClusterList{}
	if err := src.Reader.List(ctx, clusters, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "Listing Clusters for the metrics")
		return
	}
	open := 0
	for i := range clusters.Items {
		cl := &clusters.Items[i]
		if _, ok := cl.Annotations[upgradev1.WorkloadConnectionAnnotation]; ok && src.Connected != nil && src.Connected(ctx, client.ObjectKeyFromObject(cl)) {
			open++
		}
	}
	ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.GaugeValue, float64(open))
}

// policyKey identifies a policy.
type policyKey struct{ namespace, policy string }

// machineKey identifies the Machines of one action and phase of one
// rollout.
type machineKey struct {
	namespace, policy, cluster string
	action                     upgradev1.MachineAction
	phase                      upgradev1.MachinePhase
}

// removalKey identifies the removals of one cause and phase of one rollout.
type removalKey struct {
	namespace, policy, cluster string
	cause                      upgradev1.RemovalCause
	phase                      upgradev1.RemovalPhase
}

// collectRollouts sends tollgate_rollouts, tollgate_machines and
// tollgate_removals.
func collectRollouts(ch chan<- prometheus.Metric, upgrades []upgradev1.TalosUpgrade) {
	rollouts := map[policyKey]map[upgradev1.UpgradePhase]int{}
	machines := map[machineKey]int{}
	removals := map[removalKey]int{}
	for i := range upgrades {
		u := &upgrades[i]
		pk := policyKey{u.Namespace, u.Spec.PolicyName}
		if rollouts[pk] == nil {
			rollouts[pk] = map[upgradev1.UpgradePhase]int{}
		}
		phase := u.Status.Phase
		if phase == "" {
			phase = upgradev1.UpgradePhasePending
		}
		rollouts[pk][phase]++
		for _, st := range u.Status.Machines {
			action := st.Action
			if action == "" {
				action = upgradev1.MachineActionUpgrade
			}
			machines[machineKey{u.Namespace, u.Spec.PolicyName, u.Spec.ClusterName, action, st.Phase}]++
		}
		for _, r := range u.Status.Removals {
			removals[removalKey{u.Namespace, u.Spec.PolicyName, u.Spec.ClusterName, r.Cause, r.Phase}]++
		}
	}
	keys := make([]policyKey, 0, len(rollouts))
	for k := range rollouts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].namespace < keys[j].namespace || keys[i].namespace == keys[j].namespace && keys[i].policy < keys[j].policy
	})
	for _, k := range keys {
		for _, phase := range rolloutPhases {
			ch <- prometheus.MustNewConstMetric(rolloutsDesc, prometheus.GaugeValue, float64(rollouts[k][phase]), k.namespace, k.policy, string(phase))
		}
	}
	for k, n := range machines {
		ch <- prometheus.MustNewConstMetric(machinesDesc, prometheus.GaugeValue, float64(n), k.namespace, k.policy, k.cluster, string(k.action), string(k.phase))
	}
	for k, n := range removals {
		ch <- prometheus.MustNewConstMetric(removalsDesc, prometheus.GaugeValue, float64(n), k.namespace, k.policy, k.cluster, string(k.cause), string(k.phase))
	}
}
