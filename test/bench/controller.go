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
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ControllerOptions configure a controller process.
type ControllerOptions struct {
	// Name names the log file: out/bench/controller-<name>.log.
	Name string
	// Reconcilers is --talosupgrade-concurrency.
	Reconcilers int
	// QPS and Burst are --kube-api-qps and --kube-api-burst.
	QPS, Burst int
	// ExtraArgs are passed as they are.
	ExtraArgs []string
}

// Controller is a running controller process.
type Controller struct {
	cmd     *exec.Cmd
	log     *os.File
	metrics string
	// Started is when the process was started.
	Started time.Time
	done    chan struct{}
	// exitErr is what the process exited with, once done is closed.
	exitErr error
	// sampler, when set, samples the controller's metrics.
	sampler *sampler
}

// StartController runs the production controller against the proxy.
func (w *World) StartController(o ControllerOptions) (*Controller, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(w.OutDir, "controller-"+o.Name+".log"))
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, 9+len(o.ExtraArgs))
	args = append(args,
		"--metrics-bind-address="+fmt.Sprintf("127.0.0.1:%d", port),
		"--health-probe-bind-address=0",
		"--leader-elect=false",
		"--webhook-port=0",
		fmt.Sprintf("--talos-api-port=%d", w.Sim.Port()),
		"--talos-call-timeout=5s",
		fmt.Sprintf("--talosupgrade-concurrency=%d", o.Reconcilers),
		fmt.Sprintf("--kube-api-qps=%d", o.QPS),
		fmt.Sprintf("--kube-api-burst=%d", o.Burst),
	)
	args = append(args, o.ExtraArgs...)
	cmd := exec.Command(w.binary, args...) //nolint:gosec // The binary we just built.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+w.kubeconfigPath())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	c := &Controller{cmd: cmd, log: logFile, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), done: make(chan struct{})}
	c.Started = time.Now()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting the controller: %w", err)
	}
	go func() {
		c.exitErr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
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

// Metrics are the samples of one scrape, by "name{labels}".
type Metrics map[string]float64

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

func parseMetrics(r io.Reader) (Metrics, error) {
	m := Metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// Sum adds the samples of metric whose labels contain every one of labels
// (as `key="value"`).
func (m Metrics) Sum(metric string, labels ...string) float64 {
	total := 0.0
	for k, v := range m {
		name, lbls, _ := strings.Cut(k, "{")
		if name != metric {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(lbls, l) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// Quantile estimates a quantile of a histogram from the difference of two
// scrapes, interpolating linearly within a bucket.
func Quantile(after, before Metrics, metric string, q float64, labels ...string) float64 {
	return histogramOf(after, before, metric, labels...).quantile(q)
}

// LabelValues returns the values label takes in the samples of metric,
// sorted.
func (m Metrics) LabelValues(metric, label string) []string {
	seen := map[string]bool{}
	for k := range m {
		name, lbls, _ := strings.Cut(k, "{")
		if name != metric {
			continue
		}
		i := strings.Index(lbls, label+`="`)
		if i < 0 {
			continue
		}
		v := lbls[i+len(label)+2:]
		seen[v[:strings.IndexByte(v, '"')]] = true
	}
	values := make([]string, 0, len(seen))
	for v := range seen {
		values = append(values, v)
	}
	sort.Strings(values)
	return values
}

// histogram is a Prometheus histogram between two scrapes: cumulative
// counts by upper bound, ascending, the last bound +Inf.
type histogram []bucket

type bucket struct{ le, count float64 }

// histogramOf reads the buckets of metric whose labels contain every one of
// labels; several label sets (controllers) sharing a bound are added up.
func histogramOf(after, before Metrics, metric string, labels ...string) histogram {
	var buckets []bucket
	for k := range after {
		name, lbls, _ := strings.Cut(k, "{")
		if name != metric+"_bucket" {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(lbls, l) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		i := strings.Index(lbls, `le="`)
		if i < 0 {
			continue
		}
		leStr := lbls[i+4:]
		leStr = leStr[:strings.IndexByte(leStr, '"')]
		le, err := strconv.ParseFloat(leStr, 64)
		if err != nil {
			continue
		}
		buckets = append(buckets, bucket{le: le, count: after[k] - before[k]})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	merged := histogram{}
	for _, b := range buckets {
		if n := len(merged); n > 0 && merged[n-1].le == b.le {
			merged[n-1].count += b.count
			continue
		}
		merged = append(merged, b)
	}
	return merged
}

// quantile estimates the q-quantile, interpolating linearly within a
// bucket; past the last finite bound it returns that bound.
func (h histogram) quantile(q float64) float64 {
	if len(h) == 0 {
		return 0
	}
	total := h[len(h)-1].count
	if total <= 0 {
		return 0
	}
	rank := q * total
	prevLe, prevCount := 0.0, 0.0
	for _, b := range h {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return prevLe
			}
			if b.count == prevCount {
				return b.le
			}
			return prevLe + (b.le-prevLe)*(rank-prevCount)/(b.count-prevCount)
		}
		prevLe, prevCount = b.le, b.count
	}
	return prevLe
}

// countAtMost returns how many observations were at most the largest bound
// not above le.
func (h histogram) countAtMost(le float64) float64 {
	count := 0.0
	for _, b := range h {
		if b.le <= le {
			count = b.count
		}
	}
	return count
}

// lastBound returns the largest finite bound.
func (h histogram) lastBound() float64 {
	for i := len(h) - 1; i >= 0; i-- {
		if !math.IsInf(h[i].le, 1) {
			return h[i].le
		}
	}
	return 0
}

func freePort() (int, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer lis.Close() //nolint:errcheck // Only its port is wanted.
	return lis.Addr().(*net.TCPAddr).Port, nil
}
