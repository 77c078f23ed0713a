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

package envtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// RunWithJobDriver runs the tests of a package against a bare workload
// control plane whose Jobs a Job driver plays out, and returns the exit code
// for os.Exit. use receives the workload client and the driver before the
// tests run.
func RunWithJobDriver(m *testing.M, use func(workload client.Client, driver *jobdriver.Driver)) int {
	cp, err := StartControlPlane()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the workload control plane: %v\n", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	driver := jobdriver.New(cp.Client, jobdriver.Options{PollInterval: 20 * time.Millisecond})
	driver.Start(ctx)
	use(cp.Client, driver)
	return m.Run()
}

// RunWithJobController runs the tests of a package against a bare workload
// control plane whose Jobs the real Job controller runs (kube-controller-
// manager, StartJobController) and whose Pods a jobdriver.Kubelet runs, and
// returns the exit code for os.Exit. use receives the workload client and
// the Kubelet, which scripts the outcome of each run, before the tests run.
func RunWithJobController(m *testing.M, use func(workload client.Client, kubelet *jobdriver.Kubelet)) int {
	cp, err := StartControlPlane()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the workload control plane: %v\n", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	jc, err := cp.StartJobController()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the Job controller: %v\n", err)
		return 1
	}
	defer func() { _ = jc.Stop() }()
	kubelet, err := jobdriver.NewKubelet(cp.Config, jobdriver.KubeletOptions{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the Kubelet: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kubelet.Start(ctx)
	use(cp.Client, kubelet)
	return m.Run()
}
