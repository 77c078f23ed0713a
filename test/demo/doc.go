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

// Package demo is `make demo`: it starts a sandbox (package sandbox) with
// Cluster API core and the providers (sandbox.Options.CAPI), applies a CAPI
// Cluster of simulated Talos nodes whose Machines CAPI makes, a
// TalosUpgradePolicy with a ClusterHealthCheck and a preReboot/nodeReady
// hook pair, runs the production manager against it, shows the rollout
// live, one line per Machine, and ends with a summary table and the Talos
// CAPI reports in each Machine's status.nodeInfo. With --capi-driven,
// Tollgate serves as CAPI's in-place update extension, the policy has
// targetFrom: CAPI, and the demo changes the workers' MachineDeployment to a
// template with the target installer: CAPI updates the workers in place
// through Tollgate's gates, and the demo checks that the Machines are the
// same before and after. With --channel, a ReleaseChannel moves the
// release through three stages of Clusters (lab, dev, prod), each in its
// namespace: lab soaks it, dev soaks it while an analysis measures every
// Cluster's error ratio in a real Prometheus engine (test/promserver), and
// prod waits for an approval, which the demo gives as alice; a line per
// change, then the pipeline as kubectl tollgate channel draws it.
// test/cmd/demo is its main; the tests run it in-process.
//
// The live view and the summary are package rolloutview's, the ones kubectl
// tollgate watch shows on a real management cluster: they redraw in place
// when the output is a terminal and print a line per change otherwise, so
// that CI logs stay readable.
package demo
