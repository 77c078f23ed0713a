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

// Package demo is `make demo`: it starts a sandbox (package sandbox) with a
// CAPI Cluster of simulated Talos nodes, a TalosUpgradePolicy with a
// ClusterHealthCheck and a preReboot/nodeReady hook pair, runs the
// production manager against it, shows the rollout live, one line per
// Machine, and ends with a summary table. test/cmd/demo is its main; the test
// runs it in-process.
//
// The live view and the summary are package rolloutview's, the ones kubectl
// tollgate watch shows on a real management cluster: they redraw in place
// when the output is a terminal and print a line per change otherwise, so
// that CI logs stay readable.
package demo
