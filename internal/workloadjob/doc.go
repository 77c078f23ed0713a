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

// Package workloadjob is the one place that knows how Tollgate runs a user's
// Job in a workload cluster. Health checks (internal/healthchecks) and action
// hooks (hooks) both hand it a user's batchv1.JobTemplateSpec and get back:
//
//   - a Job whose identity is Tollgate's: a stable DNS-1123 name (Name), the
//     namespace of the template ("default" when unset), Tollgate's labels and
//     annotations on the Job and its Pods (Build);
//   - a Job that runs once: backoffLimit 0 and restartPolicy Never unless the
//     template says otherwise, because retries are Tollgate's business;
//   - a Job whose failure explains itself: containers that set no
//     terminationMessagePolicy get FallbackToLogsOnError, so the kubelet puts
//     the tail of the output in the terminated container's message, which
//     FailureMessage reads back from the Job's Pod and truncates to its last
//     MaxMessageLength characters, where a check writes its verdict.
//
// It also owns the labels every Tollgate Job carries, so that Cleanup can find
// and delete every Job a rollout left in a workload cluster.
package workloadjob
