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

// Package healthchecks runs the ClusterHealthChecks of a rollout as Jobs in
// the workload cluster and says whether the next Machine may be disrupted.
//
// It exists so that users can hold an upgrade while their own workloads are
// not ready for a node to go down (Ceph rebalancing, a database catching up
// on replication) with nothing more than a Job that fails while it is not
// safe. The rollout engine calls Evaluator.Evaluate once per reconcile, before
// it starts the next Machine, with the checks that gate that Machine (the
// engine applies HealthCheckRef.gate and the admin bypass) and the statuses
// it persisted from the previous call. Evaluate never blocks: it creates a Job
// when a check is due, reads the Jobs that run, deletes the finished ones and
// returns the new statuses, which the engine persists in
// TalosUpgrade.status.healthChecks. Nothing is kept in memory, so a restarted
// controller carries on where it stopped.
//
// The life of a check:
//
//   - A check is due when it never ran or its nextRunTime has passed. A due
//     check gets a Job (named by JobName, labelled for workloadjob.Cleanup);
//     while it runs the check is in flight (status.jobName set, nextRunTime
//     unset) and holds the rollout.
//   - A Job that completes is deleted and counts as a pass; a Job that fails,
//     or runs longer than the check's timeout (measured from lastRunTime), is
//     deleted and fails the check with the tail of the container's output as
//     message. Either way nextRunTime becomes now + interval. A Job whose
//     template sets a backoffLimit above 0 may fail and then pass within one
//     run (the Job controller retries its Pod): it counts as a pass, and the
//     message says at which attempt it passed (workloadjob.Attempts).
//   - A check is Passed once it passed successThreshold times in a row. A
//     pass gates the next Machine only while it is fresh, until its
//     nextRunTime: a check whose pass is older than its interval runs again
//     before the next Machine may start.
//   - A check's result stays the last verdict while a new run is in flight,
//     so a failing check keeps showing why it failed until it passes; a
//     check without a verdict yet (its first run, or fewer passes in a row
//     than successThreshold) is Running.
//
// Jobs of checks the rollout no longer references are deleted on the next
// Evaluate; workloadjob.Cleanup deletes every Job of a rollout once it ends.
//
// An http or prometheus check (ClusterHealthCheckSpec.IsProbe) runs no Job:
// the ClusterHealthCheck controller runs it (package probe) on its interval
// in every Cluster whose unfinished rollout lists it in its status, and
// records each run with RecordProbe in the check's status.results, with the
// same rules: passes in a row up to successThreshold, a failure's reason, a
// next run time an interval later. Evaluate copies the Cluster's result into
// the rollout's status and applies the same gate: a pass gates the next
// Machine until its nextRunTime; a result of an earlier spec of the check
// (status.observedGeneration behind) does not count. It never waits for a
// request: the check's status update brings the rollout back.
package healthchecks
