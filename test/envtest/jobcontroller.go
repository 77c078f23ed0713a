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
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	cmd  *exec.Cmd
	dir  string
	done chan struct{}

	mu  sync.Mutex
	log bytes.Buffer
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
	user, err := c.AddAdmin("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of kube-controller-manager: %w", err)
	}
	dir, err := os.MkdirTemp("", "tollgate-kcm-")
	if err != nil {
		return nil, fmt.Errorf("creating a directory for kube-controller-manager: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	j := &JobController{dir: dir, done: make(chan struct{})}
	j.cmd = exec.Command(binary, //nolint:gosec // The binary of KUBEBUILDER_ASSETS, as envtest runs kube-apiserver.
		"--kubeconfig="+path,
		"--controllers="+strings.Join(JobControllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		// Tests run many Jobs at once; the defaults (20 qps) would make
		// them measure the rate limiter.
		"--kube-api-qps=500", "--kube-api-burst=1000",
		"--concurrent-job-syncs=10",
		"--v=2",
	)
	j.cmd.Stdout, j.cmd.Stderr = j, j
	dieWithParent(j.cmd)
	if err := j.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	go func() {
		_ = j.cmd.Wait()
		close(j.done)
	}()
	if err := j.waitReady(time.Minute); err != nil {
		_ = j.Stop()
		return nil, err
	}
	return j, nil
}

// Write keeps the process's output, for waitReady and for the error of a
// process that exits.
func (j *JobController) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	// Keep the last 64 KiB once the log passes 1 MiB: how it ended.
	if j.log.Len() > 1<<20 {
		tail := bytes.Clone(j.log.Bytes()[j.log.Len()-64<<10:])
		j.log.Reset()
		j.log.Write(tail)
	}
	return j.log.Write(p)
}

func (j *JobController) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.log.String()
}

func (j *JobController) waitReady(timeout time.Duration) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if strings.Contains(j.output(), jobControllerReady) {
			return nil
		}
		select {
		case <-j.done:
			return fmt.Errorf("kube-controller-manager exited: %s", lastLines(j.output(), 20))
		case <-deadline:
			return fmt.Errorf("kube-controller-manager did not start the Job controller within %s: %s", timeout, lastLines(j.output(), 20))
		case <-tick.C: // Polling the process's log, not waiting for a condition of the tests.
		}
	}
}

// Stop stops kube-controller-manager and waits for it.
func (j *JobController) Stop() error {
	if j == nil {
		return nil
	}
	defer func() { _ = os.RemoveAll(j.dir) }()
	select {
	case <-j.done:
		return nil
	default:
	}
	_ = j.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.done:
	case <-time.After(5 * time.Second):
		_ = j.cmd.Process.Kill()
		<-j.done
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
