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

// Package releasechannel implements the controller of ReleaseChannel: it
// moves the versions a channel carries through its stages of Clusters, one
// gate at a time, and keeps the durable record of every promotion in the
// channel's status.
//
// A reconcile reads the world first (members.go: the Clusters of each
// stage, through the policies that take their target from the channel, and
// their rollouts; follow.go: the releases of a followed repository), takes
// the analysis measurements that are due (analysis.go: PromQL queries and
// http or prometheus ClusterHealthChecks, through internal/probe), then
// leaves every decision to internal/channel's Plan, a pure function of what
// it read and of the record, and writes what Plan decided: the status in
// one patch (the gate openings with them: status.stages is what the
// policies read), the events, the metrics, and a copy of the record in the
// upgrade.tollgate.dev/promotion-log annotation, from which a channel
// created without its status (clusterctl move) is restored.
//
// The controller never writes a policy or a TalosUpgrade: the
// TalosUpgradePolicy controller gives each Cluster the version its stage is
// granted (targetFrom: Channel), and the rollouts report back through their
// status, which this controller watches.
package releasechannel
