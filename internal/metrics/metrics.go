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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

// Results of an upgrade call, the result label of tollgate_upgrade_calls_total.
const (
	// CallSucceeded is an upgrade call the node accepted (and, on the
	// lifecycle API, finished installing).
	CallSucceeded = "succeeded"
	// CallFailed is an upgrade call that returned an error.
	CallFailed = "failed"
	// CallNotMade is an upgrade call the Talos client refused to make: the
	// node's upgrade API would have rebooted it before its pre-reboot holds.
	CallNotMade = "notMade"
)

// Upgrade APIs, the api label of tollgate_upgrade_calls_total.
const (
	// APILifecycle is the LifecycleService upgrade of Talos 1.13 and later,
	// which installs without rebooting.
	APILifecycle = "lifecycle"
	// APILegacy is the MachineService upgrade before Talos 1.13, which
	// reboots the node by itself.
	APILegacy = "legacy"
)

var (
	upgradeCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_upgrade_calls_total",
		Help: "Talos upgrade calls made, by Cluster, upgrade API (lifecycle, legacy) and result (succeeded, failed, notMade).",
	}, []string{"namespace", "cluster", "api", "result"})

	healthCheckRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_health_check_runs_total",
		Help: "Runs of ClusterHealthCheck Jobs that ended, by Cluster, check and result (succeeded, failed, timedOut).",
	}, []string{"namespace", "cluster", "check", "result"})

	hookRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_hook_runs_total",
		Help: "Runs (attempts) of action hook Jobs that ended, by Cluster, hook, hook point and result (succeeded, failed, timedOut).",
	}, []string{"namespace", "cluster", "hook", "point", "result"})

	machinePhaseSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tollgate_machine_phase_duration_seconds",
		Help: "Time a Machine spent in a phase of its disruption (a Talos or Kubernetes upgrade, a reboot, a configuration change), observed when it leaves the phase, by policy and phase.",
		// From a quick hold to a long drain or a slow pull.
		Buckets: []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600},
	}, []string{"namespace", "policy", "phase"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(upgradeCalls, healthCheckRuns, hookRuns, machinePhaseSeconds, state)
}

// UpgradeCall counts an upgrade call of a Machine of Cluster namespace/cluster.
func UpgradeCall(namespace, cluster, api, result string) {
	upgradeCalls.WithLabelValues(namespace, cluster, api, result).Inc()
}

// MachinePhaseEnded records that a Machine of a rollout of policy spent d in
// phase.
func MachinePhaseEnded(namespace, policy string, phase upgradev1.MachinePhase, d time.Duration) {
	machinePhaseSeconds.WithLabelValues(namespace, policy, string(phase)).Observe(d.Seconds())
}

// JobRunEnded returns a workloadjob.Poller's Ended function that counts the
// runs of the health-check and hook Jobs of Cluster namespace/cluster, told
// apart by the Job's labels.
func JobRunEnded(namespace, cluster string) func(job *batchv1.Job, result string) {
	return func(job *batchv1.Job, result string) {
		labels := job.Labels
		switch labels[workloadjob.JobKindLabel] {
		case workloadjob.JobKindHealthCheck:
			healthCheckRuns.WithLabelValues(namespace, cluster, labels[workloadjob.HealthCheckLabel], result).Inc()
		case workloadjob.JobKindHook:
			hookRuns.WithLabelValues(namespace, cluster, labels[workloadjob.HookLabel], labels[workloadjob.HookPointLabel], result).Inc()
		}
	}
}
