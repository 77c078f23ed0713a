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
	"context"
	"sync"
	"time"
)

// Peaks are the largest values the sampler saw.
type Peaks struct {
	// Heap and RSS are go_memstats_heap_alloc_bytes and
	// process_resident_memory_bytes.
	Heap, RSS float64
	// QueueDepth is the talosupgrade workqueue's depth.
	QueueDepth float64
	// Connections is tollgate_workload_connections.
	Connections float64
	// Admitted is the rollouts admitted and not finished (the bench's
	// informers), and Asked the Clusters carrying the workload connection
	// annotation.
	Admitted, Asked int
	// ConnectionsOverAdmitted is the largest excess of Connections over
	// Admitted in one sample: connections kept by rollouts that finished
	// and are cleaning up while the next ones are admitted.
	ConnectionsOverAdmitted float64
}

// observe adds one sample.
func (p *Peaks) observe(m Metrics, n rolloutCounts, asked int) {
	connections := m.Sum(workloadConnectionsMetric)
	p.Heap = max(p.Heap, m.Sum("go_memstats_heap_alloc_bytes"))
	p.RSS = max(p.RSS, m.Sum("process_resident_memory_bytes"))
	p.QueueDepth = max(p.QueueDepth, m.Sum("workqueue_depth", `name="talosupgrade"`))
	p.Connections = max(p.Connections, connections)
	p.Admitted = max(p.Admitted, n.Admitted)
	p.Asked = max(p.Asked, asked)
	p.ConnectionsOverAdmitted = max(p.ConnectionsOverAdmitted, connections-float64(n.Admitted))
}

// workloadConnectionsMetric is Tollgate's gauge of open workload
// connections.
const workloadConnectionsMetric = "tollgate_workload_connections"

// sampler scrapes the controllers' metrics (one, or one per shard) and
// counts the admitted rollouts every second.
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// peaks are of the controllers' metrics added up, shardPeaks of each
	// one's, by shard.
	peaks      Peaks
	shardPeaks []Peaks
	last       Sample
	// scrapes counts the rounds: a scrape of every controller.
	scrapes int
}

// Sample is the sampler's latest reading.
type Sample struct {
	Connections float64
	Admitted    int
	Asked       int
}

// sample starts sampling cs, and obs when not nil.
func sample(ctx context.Context, cs []*Controller, obs *observer) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{}), shardPeaks: make([]Peaks, len(cs))}
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			s.once(ctx, cs, obs)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) once(ctx context.Context, cs []*Controller, obs *observer) {
	each := make([]Metrics, len(cs))
	for k, c := range cs {
		m, err := c.Scrape(ctx)
		if err != nil {
			return
		}
		each[k] = m
	}
	m := sumMetrics(each)
	var (
		n     rolloutCounts
		asked int
	)
	if obs != nil {
		n, _ = obs.rollouts(ctx)
		asked, _ = obs.connectionsAsked(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scrapes++
	s.peaks.observe(m, n, asked)
	for k := range each {
		s.shardPeaks[k].observe(each[k], n, asked)
	}
	s.last = Sample{Connections: m.Sum(workloadConnectionsMetric), Admitted: n.Admitted, Asked: asked}
}

// stop stops sampling; it may be called more than once.
func (s *sampler) stop() {
	s.cancel()
	<-s.done
}

// result returns the peaks of the controllers together and by shard, and
// the number of rounds of scrapes so far.
func (s *sampler) result() (Peaks, []Peaks, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peaks, append([]Peaks(nil), s.shardPeaks...), s.scrapes
}

// latest returns the latest sample.
func (s *sampler) latest() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// scrapeCost measures the controller's CPU time per scrape of its metrics:
// n scrapes in a row, so that the share of the bench's own scrapes in a
// CPU figure can be told.
func scrapeCost(ctx context.Context, c *Controller, n int) (float64, error) {
	before, err := c.Scrape(ctx)
	if err != nil {
		return 0, err
	}
	for range n - 1 {
		if _, err := c.Scrape(ctx); err != nil {
			return 0, err
		}
	}
	after, err := c.Scrape(ctx)
	if err != nil {
		return 0, err
	}
	// process_cpu_seconds_total moves in steps of 10ms: n should be large.
	return (after.Sum("process_cpu_seconds_total") - before.Sum("process_cpu_seconds_total")) / float64(n), nil
}
