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

// Package channel decides the promotions of a ReleaseChannel: which stage a
// Cluster belongs to (StageOf), the order of the stages (NewGraph), which
// versions enter the channel and which supersede others, when a stage's
// gate opens for a version, when its soak and analysis let it pass, and
// what an approval does (Plan). It is the pure half of
// controllers/releasechannel: it reads what the controller observed (the
// Clusters of each stage and their rollouts, the windows, the time) and the
// durable record in the channel's status, and returns the record's next
// state, the events to record and when to look again. It imports no client
// and reads no clock, so that every branch is a table test.
//
// The policies of the stages read the same record through StageOf and
// ReleaseChannel.StageGrant: a Cluster is granted a version only once it is
// in status.stages, which the controller writes in the status patch that
// records the gate opening. That is the whole contract between the channel
// and the rollouts: the channel never writes a policy or a TalosUpgrade.
//
// The analysis of a soak is judged here too (Judge, Expand, ValidateQuery):
// what a PromQL result means for a measurement, with the placeholders a
// query may use; the controller runs the queries (internal/probe).
package channel
