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

package healthchecks

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

var (
	// workload is a client of the envtest workload cluster of the package.
	workload client.Client
	// driver plays the kubelet of the workload cluster, beside the real Job
	// controller; tests script the outcome of each run by Job.
	driver jobdriver.Runner
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		// make test-unit: without envtest binaries, run the tests that need
		// no workload apiserver (all but the Evaluator's).
		fmt.Println("KUBEBUILDER_ASSETS is not set: skipping the tests of the Evaluator (^TestEvaluate, ^TestCleanup), which need a workload apiserver")
		flag.Parse()
		_ = flag.Set("test.skip", "^(TestEvaluate|TestCleanup)")
		os.Exit(m.Run())
	}
	os.Exit(envtest.RunWithJobController(m, func(c client.Client, k *jobdriver.Kubelet) { workload, driver = c, k }))
}

// newFakeClock returns a clock tests move by hand, at a whole second.
func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Now().Truncate(time.Second))
}
