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
	"errors"
	"slices"
	"sync"
)

// ManagementPool starts the management control planes of a suite whose
// tests each run one of their own, with the same options, and keeps each
// one a test released, emptied, for the next test. A management control
// plane with every CRD costs about 4s of CPU to start (6 to 10s of wall on a
// loaded 2-core machine), and each of its workload control planes 2 to 3s
// more: a suite of short tests that each started theirs spent a third of
// its CPU starting kube-apiservers.
//
// Released, a management is emptied back to what it held when it started
// (its CRDs and the kube-apiserver's own objects: see ReleaseWorkload for
// what empty means), and so is every workload control plane started from
// it, which stays with it: the next test's StartWorkload takes one of them.
// A test has its management to itself while it holds it, as it would a
// fresh one; tests that run in parallel hold one each, and the pool starts
// a new one when none is idle.
type ManagementPool struct {
	opts []ManagementOption

	mu     sync.Mutex
	idle   []*Management
	closed bool
}

// NewManagementPool returns a pool whose management control planes are
// started with opts. Close it when the suite ends.
func NewManagementPool(opts ...ManagementOption) *ManagementPool {
	return &ManagementPool{opts: opts}
}

// Start returns an idle management control plane of the pool, or starts
// one; its StartWorkload starts workloads that Release empties too.
func (p *ManagementPool) Start(ctx context.Context) (*Management, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		m := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return m, nil
	}
	p.mu.Unlock()
	m, err := StartManagement(p.opts...)
	if err != nil {
		return nil, err
	}
	if m.reuse, err = newReuse(ctx, &m.ControlPlane); err != nil {
		return nil, errors.Join(err, m.Stop())
	}
	m.ReuseWorkloads = true
	return m, nil
}

// Release ends a test's use of m, which Start returned: m and the workload
// control planes it started are emptied and kept for a later Start. Call it
// once nothing runs against them any more (CAPI core, the providers,
// managers, simulated nodes stopped), or what still runs could write into
// the next test. What cannot be emptied is stopped, and the error says why.
func (p *ManagementPool) Release(ctx context.Context, m *Management) error {
	if m.reuse == nil {
		return errors.Join(errors.New("the management control plane was not started by a ManagementPool: stopped instead"), m.Stop())
	}
	m.mu.Lock()
	var inUse []*Workload
	for _, w := range m.workloads {
		if !slices.Contains(m.idle, w) {
			inUse = append(inUse, w)
		}
	}
	m.mu.Unlock()
	var errs []error
	for _, w := range inUse {
		// A workload that cannot be emptied is stopped and forgotten.
		errs = append(errs, m.ReleaseWorkload(ctx, w))
	}
	if err := m.reuse.empty(ctx); err != nil {
		return errors.Join(append(errs, err, m.Stop())...)
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.idle = append(p.idle, m)
	}
	p.mu.Unlock()
	if closed {
		errs = append(errs, m.Stop())
	}
	return errors.Join(errs...)
}

// Close stops the idle management control planes and their workloads; a
// management released after it is stopped.
func (p *ManagementPool) Close() error {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	errs := make([]error, len(idle))
	var wg sync.WaitGroup
	for i, m := range idle {
		wg.Go(func() { errs[i] = m.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
