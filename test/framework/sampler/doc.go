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

// Package sampler records what a rollout does to a workload cluster's
// Nodes, for the tests that assert a budget: the most Nodes disrupted
// (cordoned or NotReady) at once, control plane and workers apart, and the
// order they were first disrupted in.
//
// It watches (Watch), where the tests polled before: it sees every change the
// apiserver reports, in the order of their resourceVersions, not only the
// states that last until the next list, and a workload apiserver serves one
// watch instead of a list every 20ms. It leaves out what a watch cannot see
// either: two changes of one Node written in one request.
package sampler
