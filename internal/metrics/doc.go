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

// Package metrics holds Tollgate's own Prometheus metrics, served on the
// manager's /metrics endpoint beside controller-runtime's and CAPI's
// ClusterCache's. Like those, they are registered in controller-runtime's
// registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry) when the
// package is imported.
//
// Two kinds of series:
//
//   - events, counted where they happen: upgrade calls
//     (tollgate_upgrade_calls_total), runs of health-check and hook Jobs
//     (tollgate_health_check_runs_total, tollgate_hook_runs_total) and the
//     time each Machine spent in each phase of its disruption, an upgrade,
//     a reboot or a configuration change alike
//     (tollgate_machine_phase_duration_seconds);
//   - state, read at scrape time from the manager's cache by a Collector:
//     rollouts by phase per policy (tollgate_rollouts), Machines by phase
//     per policy and Cluster (tollgate_machines), and the workload
//     connections open (tollgate_workload_connections). Reading state at
//     scrape time leaves no stale series behind when a rollout or a Cluster
//     goes.
//
// The release channels' series (channel.go) follow the same split: their
// promotion events and analysis measurements counted where they happen, the
// stages' grants and the versions' phases read from the cache at scrape
// time.
//
// The book's Metrics page (docs/book/src/operations/metrics.md) documents
// every series and its labels.
package metrics
