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

// Package capi holds the tests of the test world that runs Cluster API's
// own core controllers (envtest.Management.StartCAPI) with the
// Talos-simulator infrastructure provider (test/providers/infrastructure): CAPI, not
// the tests, creates the Machines of a MachineDeployment and fills their
// nodeRef, nodeInfo and addresses from the workload Nodes.
//
// Each test builds a world of its own (a management and a workload control
// plane, CAPI core, the providers, Tollgate's manager) and shares nothing
// with the others, so the tests run in parallel (t.Parallel, as many at once
// as go test's -parallel, GOMAXPROCS by default): most of a test's time is
// CAPI's and the nodes' waits, not its CPU.
package capi
