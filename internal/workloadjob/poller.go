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

package workloadjob

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultPollInterval is how often a running Job is looked at again, unless
// its deadline comes first, when Poller.PollInterval is zero.
const DefaultPollInterval = 5 * time.Second

// Poller is what a runner of Jobs in one workload cluster holds: the
// clients, the clock and the pace at which it looks at a running Job again.
// hooks.Runner and healthchecks.Evaluator are Pollers, so they are built
// with the same fields, for example hooks.Runner{Client: c, Now: clock.Now}.
type Poller struct {
	// Client is a client of the workload cluster. It may read from a cache
	// of Jobs.
	Client client.Client

	// APIReader reads the Pods of failed Jobs, to find why they failed;
	// Client when nil. Give an uncached reader (for example the
	// ClusterCache's uncached client) when Client is cached, lest reading
	// Pods start an informer on every Pod of the workload cluster.
	APIReader client.Reader

	// Now returns the current time; time.Now when nil. Tests inject a clock.
	Now func() time.Time

	// PollInterval is how often a running Job is looked at again;
	// DefaultPollInterval when zero. Tests and demos with quick Jobs may
	// shorten it.
	PollInterval time.Duration

	// Ended, when set, is told of every run of a Job that ends, with how it
	// ended: RunSucceeded, RunFailed or RunTimedOut. Tollgate's metrics
	// count the runs with it.
	Ended func(job *batchv1.Job, result string)
}

// How a run of a Job ended, as Poller.Ended is told.
const (
	// RunSucceeded is a run whose Job completed.
	RunSucceeded = "succeeded"
	// RunFailed is a run whose Job failed.
	RunFailed = "failed"
	// RunTimedOut is a run whose Job did not end within its timeout.
	RunTimedOut = "timedOut"
)

// RunEnded tells Ended, if set, that the run of job ended with result.
func (p *Poller) RunEnded(job *batchv1.Job, result string) {
	if p.Ended != nil {
		p.Ended(job, result)
	}
}

// Time returns the current time by the Poller's clock.
func (p *Poller) Time() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// NextPoll returns when to look again at a running Job that has remaining
// time before its deadline: after the poll interval, or at the deadline when
// that comes first.
func (p *Poller) NextPoll(remaining time.Duration) time.Duration {
	interval := p.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	return min(interval, remaining)
}

// PodReader returns the reader of the Pods of failed Jobs, for
// FailureMessage: APIReader, else Client.
func (p *Poller) PodReader() client.Reader {
	if p.APIReader != nil {
		return p.APIReader
	}
	return p.Client
}
