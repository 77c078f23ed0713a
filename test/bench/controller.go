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

package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// LeaseNamespace is the namespace of the controller's leader election
// Lease: outside a Pod the manager has no namespace of its own, so it is
// given the one of config/default, where its Role lets it hold Leases.
const LeaseNamespace = envtest.ManagerNamespace

// LeaderElectionID is the manager's default Lease name (main.go).
const LeaderElectionID = "tollgate-controller-leader"

// ControllerOptions configure a controller process. The bench runs the
// controller as the Deployment of config/default does (leader election,
// webhooks served) unless told otherwise.
type ControllerOptions struct {
	// Name names the log file: out/bench/controller-<name>.log.
	Name string
	// Reconcilers is --talosupgrade-concurrency.
	Reconcilers int
	// QPS and Burst are --kube-api-qps and --kube-api-burst.
	QPS, Burst int
	// LeaderElection runs with --leader-elect, the manager's default; its
	// Lease is in LeaseNamespace.
	LeaderElection bool
	// Profile serves net/http/pprof (--profiler-address) on a loopback
	// port, for Controller.Profile.
	Profile bool
	// WatchFilter is --watch-filter: the shard of a sharded fleet, "" for
	// none. A shard's process talks to the management apiserver through its
	// own proxy route (managementRoute-<shard>), so that its requests are
	// counted apart.
	WatchFilter string
	// LeaderElectionID is --leader-election-id, LeaderElectionID when "":
	// each shard elects its own leader.
	LeaderElectionID string
	// SkipWebhooks serves no webhooks (--webhook-port=0) although the World
	// installed them: another process of the fleet serves them.
	SkipWebhooks bool
	// ExtraArgs are passed as they are.
	ExtraArgs []string
}

// WebhookServing is where the controller serves its webhooks: what
// envtest installed the webhook configurations for.
type WebhookServing struct {
	Host    string
	Port    int
	CertDir string
	// Username is the controller's user, the one the TalosUpgrade webhook
	// lets change a plan (--controller-username).
	Username string
}

// Controller is a running controller process.
type Controller struct {
	cmd     *exec.Cmd
	log     *os.File
	metrics string
	// pprof is the base URL of net/http/pprof, when served.
	pprof string
	// leaderElection is true when the process elects a leader, and lease
	// its Lease's name.
	leaderElection bool
	lease          string
	// route is its proxy route to the management apiserver.
	route string
	// Started is when the process was started.
	Started time.Time
	done    chan struct{}
	// exitErr is what the process exited with, once done is closed.
	exitErr error
}

// controllerArgs returns the manager's flags: metrics on metricsAddr,
// pprof on pprofAddr when not empty, the webhooks served as webhooks says
// (none when nil), the Talos API on talosPort.
func controllerArgs(o ControllerOptions, metricsAddr, pprofAddr string, webhooks *WebhookServing, talosPort int) []string {
	args := []string{
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=0",
		fmt.Sprintf("--leader-elect=%t", o.LeaderElection),
		fmt.Sprintf("--talos-api-port=%d", talosPort),
		// The simulator answers in milliseconds; a call that fails fails fast.
		"--talos-call-timeout=5s",
		fmt.Sprintf("--talosupgrade-concurrency=%d", o.Reconcilers),
		fmt.Sprintf("--kube-api-qps=%d", o.QPS),
		fmt.Sprintf("--kube-api-burst=%d", o.Burst),
	}
	if o.LeaderElection {
		args = append(args, "--leader-election-namespace="+LeaseNamespace, "--leader-election-id="+o.leaseName())
	}
	if o.WatchFilter != "" {
		args = append(args, "--watch-filter="+o.WatchFilter)
	}
	if webhooks != nil {
		// The server listens on every address, the host's included.
		args = append(args, fmt.Sprintf("--webhook-port=%d", webhooks.Port), "--webhook-cert-dir="+webhooks.CertDir,
			"--controller-username="+webhooks.Username)
	} else {
		args = append(args, "--webhook-port=0")
	}
	if pprofAddr != "" {
		args = append(args, "--profiler-address="+pprofAddr)
	}
	return append(args, o.ExtraArgs...)
}

// leaseName is the process's Lease.
func (o ControllerOptions) leaseName() string {
	if o.LeaderElectionID != "" {
		return o.LeaderElectionID
	}
	return LeaderElectionID
}

// route is the process's proxy route to the management apiserver.
func (o ControllerOptions) route() string {
	if o.WatchFilter == "" {
		return managementRoute
	}
	return managementRoute + "-" + o.WatchFilter
}

// StartController runs the production controller against the proxy.
func (w *World) StartController(o ControllerOptions) (*Controller, error) {
	kubeconfig, err := w.controllerKubeconfig(o.route())
	if err != nil {
		return nil, err
	}
	// Every process listens on ports of its own: metrics and pprof on free
	// ports, no health probes, and the webhooks (on the port the webhook
	// configurations name) in one process only.
	port, err := envtest.FreePort()
	if err != nil {
		return nil, err
	}
	pprofAddr := ""
	if o.Profile {
		pp, err := envtest.FreePort()
		if err != nil {
			return nil, err
		}
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", pp)
	}
	logFile, err := os.Create(filepath.Join(w.OutDir, "controller-"+o.Name+".log"))
	if err != nil {
		return nil, err
	}
	webhooks := w.Webhooks
	if o.SkipWebhooks {
		webhooks = nil
	}
	args := controllerArgs(o, fmt.Sprintf("127.0.0.1:%d", port), pprofAddr, webhooks, w.Sim.Port())
	cmd := exec.Command(w.binary, args...) //nolint:gosec // The binary we just built.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	c := &Controller{cmd: cmd, log: logFile, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), done: make(chan struct{}),
		leaderElection: o.LeaderElection, lease: o.leaseName(), route: o.route()}
	if pprofAddr != "" {
		c.pprof = "http://" + pprofAddr + "/debug/pprof/"
	}
	if err := c.start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	return c, nil
}

// start starts the process and records its exit in exitErr and done.
func (c *Controller) start() error {
	c.Started = time.Now()
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("starting the controller: %w", err)
	}
	go func() {
		c.exitErr = c.cmd.Wait()
		close(c.done)
	}()
	return nil
}

// Profile saves a pprof profile of the controller (profile is "heap",
// "allocs", "goroutine" or "profile?seconds=30") to path; it does nothing
// when the controller serves no profiles.
func (c *Controller) Profile(ctx context.Context, profile, path string) error {
	if c.pprof == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.pprof+profile, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reading the %s profile: %w", profile, err)
	}
	defer resp.Body.Close() //nolint:errcheck // Read-only.
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading the %s profile: %s", profile, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Stop stops the controller with SIGTERM, then SIGKILL after 15s.
func (c *Controller) Stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	_ = c.log.Close()
}

// Exited returns nil while the process runs, else an error that says how
// it exited and the last line of its log: a manager that loses its Lease
// (an apiserver too slow to answer its renewals) exits, as in production,
// and nothing restarts it here.
func (c *Controller) Exited() error {
	select {
	case <-c.done:
	default:
		return nil
	}
	why := fmt.Sprintf("the last line of %s: %s", c.log.Name(), lastLine(c.log.Name()))
	if c.exitErr == nil {
		return fmt.Errorf("the controller exited with status 0; %s", why)
	}
	return fmt.Errorf("the controller exited (%w); %s", c.exitErr, why)
}

// lastLine returns the last line of the file at path, at most 400 bytes
// of it, or "" when it cannot be read.
func lastLine(path string) string {
	data, err := os.ReadFile(path) //nolint:gosec // The bench's own log file.
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	last := lines[len(lines)-1]
	return last[:min(len(last), 400)]
}

// Memory returns the resident set size and its peak (VmRSS, VmHWM), bytes.
func (c *Controller) Memory() (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close() //nolint:errcheck // Read-only.
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	return rss, peak, sc.Err()
}

// Scrape reads the controller's metrics.
func (c *Controller) Scrape(ctx context.Context) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck // Read-only.
	return parseMetrics(resp.Body)
}
