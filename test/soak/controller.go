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

package soak

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// acquiredLease is what client-go's leader election logs when a replica
// becomes the leader.
const acquiredLease = "successfully acquired lease"

// ControllerOptions configure the controller replicas.
type ControllerOptions struct {
	// Binary is the manager built from main.go.
	Binary string
	// Kubeconfig is the management kubeconfig, through the gate.
	Kubeconfig string
	// TalosAPIPort is the port of the simulated nodes.
	TalosAPIPort int
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// LogDir receives one log file per process started.
	LogDir string
}

func (o ControllerOptions) args() []string {
	return []string{
		"--webhook-port=0", "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--leader-elect", "--leader-election-namespace=" + envtest.ManagerNamespace, "--leader-election-id=tollgate-soak",
		"--leader-elect-lease-duration=" + o.LeaseDuration.String(),
		"--leader-elect-renew-deadline=" + o.RenewDeadline.String(),
		"--leader-elect-retry-period=" + o.RetryPeriod.String(),
		fmt.Sprintf("--talos-api-port=%d", o.TalosAPIPort),
		"--talos-call-timeout=2s", "--sync-period=1m",
		"-v=10",
	}
}

// Replica is one controller process slot: it is started, killed and
// started again.
type Replica struct {
	name string
	opts ControllerOptions
	scan *Canaries
	// reconciles, when set, records the reconciles the process logs, and
	// connects the waits after failed workload connections it logs.
	reconciles *reconciles
	connects   *connectRetries
	// extra are flags of this slot alone (its extension port).
	extra []string

	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
	starts     int
	leader     bool
	acquiredAt time.Time
	// exits counts the exits the soak did not cause (lost leadership).
	exits  int
	killed bool
}

// Start starts a new process in the slot, unless one runs.
func (r *Replica) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return nil
	}
	r.starts++
	path := filepath.Join(r.opts.LogDir, fmt.Sprintf("controller-%s-%d.log", r.name, r.starts))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	w := &lineWriter{file: f, onLine: r.line}
	cmd := exec.Command(r.opts.Binary, append(r.opts.args(), r.extra...)...) //nolint:gosec // The manager the soak built.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.opts.Kubeconfig)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("starting controller %s: %w", r.name, err)
	}
	done := make(chan struct{})
	r.cmd, r.done, r.killed, r.leader = cmd, done, false, false
	go func() {
		_ = cmd.Wait()
		w.flush()
		_ = f.Close()
		r.mu.Lock()
		if !r.killed {
			r.exits++
		}
		if r.cmd == cmd {
			r.cmd, r.leader = nil, false
		}
		r.mu.Unlock()
		close(done)
	}()
	return nil
}

// Kill sends SIGKILL and waits for the process to be gone.
func (r *Replica) Kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.killed = true
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Running reports whether a process runs in the slot.
func (r *Replica) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// Leader reports whether the process logged that it acquired the lease, and
// when.
func (r *Replica) Leader() (bool, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leader, r.acquiredAt
}

func (r *Replica) line(l string) {
	r.scan.Check(r.name, l)
	if r.reconciles != nil {
		r.reconciles.line(l, time.Now())
	}
	if r.connects != nil {
		r.connects.line(l, time.Now())
	}
	if strings.Contains(strings.ToLower(l), acquiredLease) {
		r.mu.Lock()
		r.leader, r.acquiredAt = true, time.Now()
		r.mu.Unlock()
	}
}

// lineWriter writes a process's output to a file and hands every complete
// line to onLine.
type lineWriter struct {
	mu     sync.Mutex
	file   *os.File
	buf    []byte
	onLine func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.onLine(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return w.file.Write(p)
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.onLine(string(w.buf))
		w.buf = nil
	}
}

// Canaries are strings that must never appear in a controller's log: the
// planted canary values of the Secrets, in clear and base64, and slices of
// the key material of every talosconfig and kubeconfig.
type Canaries struct {
	mu      sync.Mutex
	strs    map[string]string // canary -> what it stands for
	leaks   []string
	scanned int64
	// described are the canaries whose first leak is described.
	described map[string]bool
	// dumps accumulate the text of a hex-dumped body, per source.
	dumps map[string]*strings.Builder
}

// Add registers a secret value; what names it in the report.
func (c *Canaries) Add(what string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.strs == nil {
		c.strs = map[string]string{}
	}
	c.strs[string(value)] = what
	c.strs[base64.StdEncoding.EncodeToString(value)] = what + " (base64)"
}

// AddKeyMaterial registers, for every line of a talosconfig or kubeconfig
// that holds a key ("key:", "client-key-data:", "token:"), a 32-character
// slice of its value.
func (c *Canaries) AddKeyMaterial(what string, config []byte) {
	for _, line := range strings.Split(string(config), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if (k == "key" || k == "client-key-data" || k == "token") && len(v) >= 64 {
			c.Add(what+" "+k, []byte(v[16:48]))
		}
	}
}

// Check looks for every canary in a log line. client-go logs binary
// (protobuf) bodies as a hex dump, 16 bytes a line: the text columns of
// consecutive dump lines are joined and searched as one line.
func (c *Canaries) Check(source, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scanned++
	if c.dumps == nil {
		c.dumps = map[string]*strings.Builder{}
	}
	if text, ok := hexDumpText(line); ok {
		if c.dumps[source] == nil {
			c.dumps[source] = &strings.Builder{}
		}
		c.dumps[source].WriteString(text)
		return
	}
	if d := c.dumps[source]; d != nil && d.Len() > 0 {
		c.checkLocked(source+" (hex dump of a body)", d.String())
		d.Reset()
	}
	c.checkLocked(source, line)
}

// hexDumpText returns the text column of a line of encoding/hex.Dump
// output, as client-go logs it: a tab, the offset, the bytes, |text|.
func hexDumpText(line string) (string, bool) {
	l := strings.TrimLeft(line, "\t ")
	if len(l) < 12 || l[8] != ' ' || !strings.HasSuffix(l, "|") {
		return "", false
	}
	if _, err := strconv.ParseUint(l[:8], 16, 32); err != nil {
		return "", false
	}
	i := strings.IndexByte(l, '|')
	if i < 0 || i == len(l)-1 {
		return "", false
	}
	return l[i+1 : len(l)-1], true
}

func (c *Canaries) checkLocked(source, line string) {
	for s, what := range c.strs {
		if !strings.Contains(line, s) {
			continue
		}
		if c.described == nil {
			c.described = map[string]bool{}
		}
		if c.described[what] {
			c.leaks = append(c.leaks, "")
			continue
		}
		c.described[what] = true
		c.leaks = append(c.leaks, fmt.Sprintf("%s logged %s: %.300s", source, what, line))
	}
}

// Leaks returns a description of the first leak of each canary, the number
// of leaks, and how many lines were scanned.
func (c *Canaries) Leaks() (leaks []string, count int, scanned int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.leaks {
		if l != "" {
			leaks = append(leaks, l)
		}
	}
	return leaks, len(c.leaks), c.scanned
}

// RestartIfExited starts the slot again when its process exited without
// being killed by the soak (it lost its lease, or crashed).
func (r *Replica) RestartIfExited() (bool, error) {
	r.mu.Lock()
	exited := r.cmd == nil && !r.killed && r.starts > 0
	r.mu.Unlock()
	if !exited {
		return false, nil
	}
	return true, r.Start()
}
