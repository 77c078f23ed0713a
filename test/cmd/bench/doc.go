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

// Command bench runs Tollgate's benchmarks (`make bench`): the controller's
// overhead per Machine, a fleet of Clusters under one controller (rolled
// out, or converged at one or several sizes, with a cold start at each; a
// converged fleet also split into --shards, one controller per shard),
// the cost of a converged fleet left idle, the latency of the admission
// webhooks with the fleet present, reconcile times while every installer
// pull is slow, and the time per Machine of CAPI's in-place update through
// Tollgate's extension against a policy's rollout (scenario 6, with CAPI
// core). It prints a table and writes JSON under --out. The
// scenarios are package test/bench; their world is test/sandbox's.
package main
