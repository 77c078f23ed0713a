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

// Package rolloutview draws what a rollout looks like to a person: the live
// view of one Cluster's TalosUpgrade (a header with the phase, a progress
// bar and what blocks the rollout, the health checks, a line per Machine),
// the summary table at its end (from -> to, the time in each phase), and the
// tree of a fleet (policies -> Clusters -> Machines with their phase, holds,
// blockers and hook failures, read like clusterctl describe cluster).
//
// It is the one rendering of a rollout: make demo (test/demo) and
// the kubectl plugin (cmd/kubectl-tollgate: describe and watch) both draw
// with it, so that what the demo shows is what an operator sees on a real
// management cluster. Follow watches a TalosUpgrade and its Machines and
// feeds the live view; the rest are functions of the objects, with no
// client, so that they are tested without an apiserver.
//
// The live view redraws in place on a terminal and prints a line per change
// otherwise (CI logs, pipes); colour is a separate choice, off whenever the
// output is not a terminal.
package rolloutview
