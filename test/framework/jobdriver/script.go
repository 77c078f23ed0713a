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

package jobdriver

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Outcome is what one run of a Job's container comes to: with the Driver,
// the whole Job; with the Kubelet, one Pod (or, for a Pod that restarts
// OnFailure, one run of its container).
type Outcome struct {
	// Fail makes the run fail; otherwise it succeeds.
	Fail bool

	// Message is the termination message of the Job's first container: with
	// FallbackToLogsOnError, the tail of its output.
	Message string

	// ExitCode is the exit code of the first container. When zero, it is 1
	// for a failing run and 0 otherwise.
	ExitCode int32

	// Delay, when set, overrides the Options' Delay for this run.
	Delay *time.Duration

	// Hang leaves the run going for ever, for testing timeouts.
	Hang bool
}

// exitCode is the exit code of the first container.
func (o Outcome) exitCode() int32 {
	if o.ExitCode == 0 && o.Fail {
		return 1
	}
	return o.ExitCode
}

// Matcher selects the Jobs a script applies to.
type Matcher func(job *batchv1.Job) bool

// NamePrefix matches Jobs whose name starts with prefix.
func NamePrefix(prefix string) Matcher {
	return func(job *batchv1.Job) bool { return strings.HasPrefix(job.Name, prefix) }
}

// HasLabels matches Jobs that carry every label of set.
func HasLabels(set map[string]string) Matcher {
	return func(job *batchv1.Job) bool {
		for k, v := range set {
			if job.Labels[k] != v {
				return false
			}
		}
		return true
	}
}

// Runner is what a test scripts and reads, whichever runs the Jobs: a Driver
// alone, or a Kubelet beside the real Job controller.
type Runner interface {
	// Script gives the Jobs match selects the outcomes in turn, then the
	// default outcome.
	Script(match Matcher, outcomes ...Outcome)
	// Seen returns the Jobs seen, in the order they were first seen.
	Seen() []SeenJob
	// SeenMatching returns the Jobs seen that match selects.
	SeenMatching(match Matcher) []SeenJob
	// Start runs the Runner until ctx is done, in its own goroutine.
	Start(ctx context.Context)
}

// SeenJob is the record of a Job that ran.
type SeenJob struct {
	// Namespace and Name identify the Job.
	Namespace, Name string

	// UID is the Job's UID: a Job re-created with the same name is another
	// SeenJob.
	UID types.UID

	// Labels and Annotations are the Job's.
	Labels, Annotations map[string]string

	// PodLabels are the labels of the Job's Pod template.
	PodLabels map[string]string

	// Env is the environment (literal values only) of every container and
	// init container, by container name.
	Env map[string]map[string]string

	// Outcome is the outcome scripted for the Job's first run.
	Outcome Outcome

	// Runs is the number of runs (Pods, and restarts of their container)
	// the Job took so far: 1 with the Driver.
	Runs int

	// Finished is true once the Job has its terminal condition (Complete or
	// Failed), seen at FinishedAt; Failed says which.
	Finished   bool
	FinishedAt time.Time
	Failed     bool
}

type script struct {
	match    Matcher
	outcomes []Outcome
	used     int
}

// next returns the script's next outcome, or def once it is used up.
func (s *script) next(def Outcome) Outcome {
	if s == nil || s.used >= len(s.outcomes) {
		return def
	}
	o := s.outcomes[s.used]
	s.used++
	return o
}

// book holds the scripts and the records of the Jobs seen, for a Driver or
// a Kubelet. It is safe for concurrent use.
type book struct {
	def Outcome

	mu      sync.Mutex
	scripts []*script
	seen    map[types.UID]*seenRecord
	order   []types.UID
}

type seenRecord struct {
	job *SeenJob
	// script is the script that matched the Job, nil for none: further
	// runs of the Job take its next outcomes.
	script *script
	// first is the outcome of the first run, until that run takes it.
	first *Outcome
}

func newBook(def Outcome) *book {
	return &book{def: def, seen: map[types.UID]*seenRecord{}}
}

// Script gives the Jobs match selects, in the order they are first seen,
// the outcomes in turn; once they are used up, the default outcome applies.
// The first script that matches a Job decides its outcomes.
func (b *book) Script(match Matcher, outcomes ...Outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.scripts = append(b.scripts, &script{match: match, outcomes: outcomes})
}

// Seen returns the Jobs seen, in the order they were first seen.
func (b *book) Seen() []SeenJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]SeenJob, 0, len(b.order))
	for _, uid := range b.order {
		out = append(out, *b.seen[uid].job)
	}
	return out
}

// SeenMatching returns the Jobs seen that match selects.
func (b *book) SeenMatching(match Matcher) []SeenJob {
	var out []SeenJob
	for _, s := range b.Seen() {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: s.Labels, Annotations: s.Annotations}}
		if match(job) {
			out = append(out, s)
		}
	}
	return out
}

// record records job the first time it is seen, picking the outcome of its
// first run, and returns its record.
func (b *book) record(job *batchv1.Job) SeenJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	return *b.recordLocked(job).job
}

func (b *book) recordLocked(job *batchv1.Job) *seenRecord {
	if r, ok := b.seen[job.UID]; ok {
		return r
	}
	var matched *script
	for _, s := range b.scripts {
		if s.match(job) {
			matched = s
			break
		}
	}
	first := matched.next(b.def)
	env := map[string]map[string]string{}
	spec := job.Spec.Template.Spec
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		vars := map[string]string{}
		for _, e := range c.Env {
			vars[e.Name] = e.Value
		}
		env[c.Name] = vars
	}
	r := &seenRecord{
		job: &SeenJob{
			Namespace:   job.Namespace,
			Name:        job.Name,
			UID:         job.UID,
			Labels:      maps.Clone(job.Labels),
			Annotations: maps.Clone(job.Annotations),
			PodLabels:   maps.Clone(job.Spec.Template.Labels),
			Env:         env,
			Outcome:     first,
		},
		script: matched,
		first:  &first,
	}
	b.seen[job.UID] = r
	b.order = append(b.order, job.UID)
	return r
}

// nextRun returns the outcome of the next run of job: the first run takes
// the outcome picked when the Job was first seen, later runs (retries of
// the Job controller) the next outcomes of the same script.
func (b *book) nextRun(job *batchv1.Job) Outcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.recordLocked(job)
	r.job.Runs++
	if r.first != nil {
		o := *r.first
		r.first = nil
		return o
	}
	return r.script.next(b.def)
}

// finished records that the Job uid reached its terminal condition.
func (b *book) finished(uid types.UID, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.seen[uid]
	if !ok || r.job.Finished {
		return
	}
	r.job.Finished, r.job.FinishedAt, r.job.Failed = true, time.Now(), failed
}
