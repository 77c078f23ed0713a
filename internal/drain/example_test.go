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

package drain_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/drain"
)

// How a reconcile drives a drain: cordon once, then one Drain call per
// reconcile until it is done; the deadline is the caller's.
func ExampleDrain() {
	var cs kubernetes.Interface // A clientset of the workload cluster.
	ctx := context.Background()

	if err := drain.Cordon(ctx, cs, "worker-0"); err != nil {
		fmt.Println("requeue with backoff:", err)
		return
	}
	res, err := drain.Drain(ctx, cs, "worker-0", upgradev1.DrainSpec{})
	switch {
	case err != nil:
		fmt.Println("requeue with backoff:", err)
	case !res.Done:
		fmt.Println("still draining:", res.Message) // Requeue, unless the drain deadline passed.
	default:
		fmt.Println("drained")
	}
}
