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

package workloadjob_test

import (
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

func ExampleName() {
	fmt.Println(workloadjob.Name("tollgate-hc", "ceph", "prod-1"))
	fmt.Println(workloadjob.Name("tollgate-hc", "ceph.health", "prod-1"))
	fmt.Println(len(workloadjob.Name("tollgate-hc", strings.Repeat("x", 80), "prod-1")))
	// Output:
	// tollgate-hc-ceph-prod-1
	// tollgate-hc-ceph-health-prod-1-dba3405d
	// 63
}

func ExampleTruncateMessage() {
	fmt.Println(workloadjob.TruncateMessage("HEALTH_WARN 3 pgs degraded\n  pg 1.2 is active+undersized\n"))
	// Output: HEALTH_WARN 3 pgs degraded | pg 1.2 is active+undersized
}
