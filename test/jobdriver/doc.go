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

// Package jobdriver plays the part of the Job controller and the kubelet in a
// workload cluster that has neither: the envtest control planes of Tollgate's
// tests and of the local sandbox run only an apiserver and etcd.
//
// A Driver watches the Jobs of a workload cluster. For each new Job it
// creates the Pod the Job controller would create (the Job's Pod template
// labels, which carry batch.kubernetes.io/job-name and controller-uid, and a
// controller owner reference to the Job), marks the Job started and, after a
// delay, ends it the way the real controllers do: the Pod's containers
// terminated with an exit code and a termination message, then the Job's
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
// The driver records every Job it saw, with the environment of its
// containers, so tests can assert what Tollgate injected. It also plays the
// garbage collector for the Pods it created: when their Job is gone, so are
// they.
package jobdriver
