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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a controller binary of KUBEBUILDER_ASSETS (kube-controller-
// manager, CAPI core) running against a control plane as one of its
// administrators, with a directory of its own for its kubeconfig and
// certificates. It keeps its output, so that a process that exits or does
// not become ready fails with its last log lines.
type process struct {
	name string
	cmd  *exec.Cmd
	dir  string
	done chan struct{}

	mu  sync.Mutex
	log bytes.Buffer
}

// newProcess adds the administrator name to c and writes its kubeconfig to
// <dir>/kubeconfig, in a new directory the process owns.
func newProcess(c *ControlPlane, name string) (*process, error) {
	user, err := c.AddAdmin(name)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of %s: %w", name, err)
	}
	dir, err := os.MkdirTemp("", "tollgate-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("creating a directory for %s: %w", name, err)
	}
	p := &process{name: name, dir: dir, done: make(chan struct{})}
	if err := os.WriteFile(p.kubeconfig(), kubeconfig, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("writing %s: %w", p.kubeconfig(), err)
	}
	return p, nil
}

// kubeconfig is the path of the process's kubeconfig.
func (p *process) kubeconfig() string { return filepath.Join(p.dir, "kubeconfig") }

// start starts binary with args; the process dies with the test process.
func (p *process) start(binary string, args ...string) error {
	p.cmd = exec.Command(binary, args...) //nolint:gosec // A binary of KUBEBUILDER_ASSETS, as envtest runs kube-apiserver.
	p.cmd.Stdout, p.cmd.Stderr = p, p
	dieWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		_ = os.RemoveAll(p.dir)
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return nil
}

// Write keeps the process's output, for waitReady and for the error of a
// process that exits.
func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Keep the last 64 KiB once the log passes 1 MiB: how it ended.
	if p.log.Len() > 1<<20 {
		tail := bytes.Clone(p.log.Bytes()[p.log.Len()-64<<10:])
		p.log.Reset()
		p.log.Write(tail)
	}
	return p.log.Write(b)
}

// Output is what the process has logged (its last 64 KiB to 1 MiB).
func (p *process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Exited is closed when the process has exited.
func (p *process) Exited() <-chan struct{} { return p.done }

// ExitError is nil while the process runs; once it has exited, an error
// that says how (its exit status) with its last log lines: for a world
// that must fail at once, and say why, when one of its processes is gone.
func (p *process) ExitError() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	how := "exited"
	if state := p.cmd.ProcessState; state != nil {
		how = "exited (" + state.String() + ")"
	}
	return fmt.Errorf("%s %s: %s", p.name, how, lastLines(p.Output(), 20))
}

// waitReady polls ready until it says true, and fails at once, with the
// process's last log lines, when the process exits or timeout passes.
func (p *process) waitReady(timeout time.Duration, what string, ready func() bool) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before %s: %s", p.name, what, lastLines(p.Output(), 20))
		case <-deadline:
			return fmt.Errorf("%s did not get to %s within %s: %s", p.name, what, timeout, lastLines(p.Output(), 20))
		case <-tick.C: // Polling the process, not waiting for a condition of the tests.
		}
	}
}

// Stop stops the process (SIGTERM, then SIGKILL after 5s) and waits for it.
func (p *process) Stop() error {
	if p == nil {
		return nil
	}
	defer func() { _ = os.RemoveAll(p.dir) }()
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
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
