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
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// JobControllers are the controllers of kube-controller-manager that
// StartJobController runs: the Job controller; the garbage collector, which
// deletes the Pods of a deleted Job (Tollgate deletes its Jobs with
// background propagation); and the TTL-after-finished controller, which
// deletes a finished Job whose template sets ttlSecondsAfterFinished.
var JobControllers = []string{"job-controller", "garbage-collector-controller", "ttl-after-finished-controller"}

// jobControllerReady is what kube-controller-manager logs once the Job
// controller runs.
const jobControllerReady = `"Starting job controller"`

var errNoControllerManager = errors.New("kube-controller-manager is not in KUBEBUILDER_ASSETS: run `make test`, or export KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh), which builds it")

// JobController is a kube-controller-manager process running
// JobControllers against one control plane. Stop it before the control
// plane.
type JobController struct {
	*process
}

// StartJobController starts kube-controller-manager, from
// KUBEBUILDER_ASSETS (hack/envtest-assets.sh builds it from the same
// Kubernetes source as kube-apiserver), against c with only JobControllers,
// as an administrator of c, without leader election or a serving port, and
// waits until the Job controller runs.
func (c *ControlPlane) StartJobController() (*JobController, error) {
	binary := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	if _, err := os.Stat(binary); err != nil {
		return nil, errNoControllerManager
	}
	p, err := newProcess(c, "kube-controller-manager")
	if err != nil {
		return nil, err
	}
	if err := p.start(binary,
		"--kubeconfig="+p.kubeconfig(),
		"--controllers="+strings.Join(JobControllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		// Tests run many Jobs at once; the defaults (20 qps) would make
		// them measure the rate limiter.
		"--kube-api-qps=500", "--kube-api-burst=1000",
		"--concurrent-job-syncs=10",
		"--v=2",
	); err != nil {
		return nil, err
	}
	if err := p.waitReady(time.Minute, "starting the Job controller", func() bool {
		return strings.Contains(p.Output(), jobControllerReady)
	}); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return &JobController{process: p}, nil
}

// Stop stops kube-controller-manager and waits for it.
func (j *JobController) Stop() error {
	if j == nil {
		return nil
	}
	return j.process.Stop()
}
