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

// Package probe runs the ClusterHealthChecks that need no Job: an http
// check (a request whose status code and body say whether it passes) and a
// prometheus check (a PromQL instant query whose result says so), and
// validates them for the webhook and the ClusterHealthCheck controller.
//
// It exists because most "is it safe to take a node down" questions are
// already answered by an endpoint (Ceph's manager, an application's /health,
// Prometheus' alerts); asking it with a Job would schedule a Pod, pull an
// image and need a ServiceAccount in the workload cluster for one request.
//
// A check is sent to an endpoint (upgradev1.HealthCheckEndpoint): a Service
// of the workload cluster, reached through the workload apiserver's Service
// proxy with the Cluster's kubeconfig (CAPI's <cluster>-kubeconfig Secret),
// or a URL the manager reaches itself, with TLS verification on unless the
// check turns it off. Headers come from a Secret and are never logged.
// Redirects are followed within the same host only. Prober.Run runs a check
// once for one Cluster and returns an Outcome: a pass, or a failure and its
// reason, at most MaxMessageLength characters. An endpoint that cannot be
// reached, a Secret that cannot be read, an answer that cannot be judged are
// all failures with their reason, never a pass.
//
// The ClusterHealthCheck controller runs the checks on their interval for
// every rollout that needs them and records the outcomes in the check's
// status.results (healthchecks.RecordProbe); the rollout's health-check gate
// (healthchecks.Evaluator) reads them there.
package probe
