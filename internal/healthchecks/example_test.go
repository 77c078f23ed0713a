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

package healthchecks_test

import (
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/healthchecks"
)

func ExampleJobName() {
	fmt.Println(healthchecks.JobName("ceph", "prod-1"))
	long := healthchecks.JobName("ceph-"+strings.Repeat("replication-", 6), "prod-1")
	fmt.Println(len(long) <= 63, long == healthchecks.JobName("ceph-"+strings.Repeat("replication-", 6), "prod-1"))
	// Output:
	// tollgate-hc-ceph-prod-1
	// true true
}
