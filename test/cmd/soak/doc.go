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

// Command soak runs Tollgate's fault-injecting soak (`make soak`): many
// rollouts on a test/framework/sandbox world with Cluster API core running for real
// (CAPI makes, scales, remediates and replaces the Machines) while
// controller processes are killed, the leader fails over, apiservers
// become unreachable and the simulated Talos nodes, health checks and hooks
// misbehave; it prints what it injected and every invariant violation, and
// exits 1 on any that is not a known bug (soak.KnownBugs). The soak itself
// is package test/soak.
package main
