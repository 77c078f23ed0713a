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

package jobdriver_test

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// A health check that fails twice, then passes; every other Job succeeds
// after 100ms.
func ExampleDriver() {
	var workload client.Client // A client of an envtest workload cluster.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	d := jobdriver.New(workload, jobdriver.Options{Delay: 100 * time.Millisecond})
	d.Script(jobdriver.NamePrefix("tollgate-hc-ceph-"),
		jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN: 3 pgs degraded"},
		jobdriver.Outcome{Fail: true, Message: "ceph is HEALTH_WARN: 1 pgs degraded"},
		jobdriver.Outcome{},
	)
	d.Start(ctx)

	// ... run the code under test, then look at what ran:
	for _, job := range d.Seen() {
		fmt.Println(job.Name, job.Env["main"]["TOLLGATE_HOOK"], job.Outcome.Fail)
	}
}
