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

// Package jobdriver scripts what the health-check and hook Jobs of a
// workload cluster come to, in the envtest control planes of Tollgate's
// tests and of the local sandbox, which run no scheduler and no kubelet. It
// does so in one of two ways, with the same scripts and records (Runner):
//
//   - a Kubelet runs beside the real Job controller (kube-controller-manager,
//     started by envtest.StartJobController): it plays the scheduler and the
//     kubelet for the Pods of Jobs, binding each to one node, starting its
//     containers and ending each run with the exit code and termination
//     message the script asks for; the Job controller creates the Pods,
//     retries them and writes every Job condition. The health-check and hook
//     suites, the demo and the soak run this way.
//   - a Driver plays the Job controller and the kubelet at once, for tests
//     that need exact timing (a Job ends when its delay ends; the Job
//     controller batches Pod updates for 1s and waits 10s and more before a
//     retry).
//
// A Driver watches the Jobs of a workload cluster (it polls them only with a
// client that cannot watch, or while its watch cannot be opened). For each
// new Job it creates the Pod the Job controller would create (the Job's Pod
// template labels, which carry batch.kubernetes.io/job-name and
// controller-uid, and a controller owner reference to the Job), marks the
// Job started and, after a delay, ends it the way the real controllers do:
// the Pod's containers terminated with an exit code and a termination
// message (sidecars stopped with the exit code of SIGTERM), then the Job's
// status written through the status subresource in two steps,
// SuccessCriteriaMet then Complete (with startTime, completionTime and
// succeeded: 1), or FailureTarget then Failed (failed: 1). The apiserver
// validates these transitions, so what the driver writes is what a real
// cluster would show.
//
// What each Job comes to is scripted by the test:
//
//	d := jobdriver.New(workload, jobdriver.Options{Delay: 100 * time.Millisecond})
//	d.Script(jobdriver.NamePrefix("tollgate-hc-ceph"),
//		jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN: 3 pgs degraded"},
//		jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN: 1 pgs degraded"},
//		jobdriver.Outcome{}, // passes; so do later runs (the default outcome)
//	)
//	d.Start(ctx)
//
// Both record every Job they saw, with the environment of its containers,
// so tests can assert what Tollgate injected. The Driver also plays the
// garbage collector for the Pods it created: when their Job is gone, so are
// they.
//
// What the Driver leaves out of the Job controller, as
// TestDriverAgreesWithTheJobController finds it: it runs one Pod per Job
// whatever backoffLimit says (a Job the Job controller retries may pass on
// its retry, and fails with the message of its last Pod); it ignores
// activeDeadlineSeconds (the Job controller fails the Job, DeadlineExceeded,
// and deletes its Pod), podFailurePolicy (the reason of a Job failed by a
// FailJob rule is PodFailurePolicy) and restartPolicy OnFailure (the kubelet
// restarts the container in the Pod, the Job controller counts the restart
// against backoffLimit and deletes the Pod, so the container's output is
// lost and the Job's condition message is what Tollgate shows); and it
// ends a Job at once where the Job controller takes a second. Both
// stop the sidecars of a Pod whose containers ended as the kubelet does,
// with SIGTERM (exit code 143): the comparison found that
// workloadjob.FailureMessage then reported the sidecar's stop instead of
// the container's output, and it now reads sidecars last.
package jobdriver
