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
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

const (
	// managerSyncTimeout bounds the wait for a manager's caches.
	managerSyncTimeout = time.Minute
	// stallReportAfter is how long a stopping manager runs before
	// RunManager reports its goroutines, well within controller-runtime's
	// default grace period of 30s.
	stallReportAfter = 10 * time.Second
)

// RunManager runs mgr, built against the control plane (with a
// ManagerConfig, or the sandbox's controller config), for the rest of tb:
// it returns once the manager's caches synced, and when tb ends it stops the
// manager and fails tb if the manager stopped with an error or made a
// request the RBAC of config/default forbids. It is the one way a test runs
// a manager of its own; a suite that runs one for all its tests uses
// sandbox.StartManager. The manager's context is cancelled with stop,
// which RunManager also returns for a test that stops the manager early,
// as a crash would.
func (c *ControlPlane) RunManager(tb testing.TB, mgr manager.Manager) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	before := len(c.ForbiddenRequests())
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		var err error
		select {
		case err = <-done:
		case <-time.After(stallReportAfter):
			// A runnable that outlives its context is a leak the
			// grace period turns into an error: name it while it runs.
			tb.Logf("The manager has not stopped %s after its context was cancelled; what it still runs:\n%s", stallReportAfter, managerGoroutines())
			err = <-done
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			tb.Errorf("The manager stopped with an error: %v", err)
		}
	}
	tb.Cleanup(func() {
		stop()
		if forbidden := c.ForbiddenRequests()[before:]; len(forbidden) > 0 {
			tb.Errorf("The manager made %d requests the RBAC of config/default forbids: %v", len(forbidden), forbidden)
		}
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, managerSyncTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		tb.Fatalf("The manager's caches did not sync within %s", managerSyncTimeout)
	}
	return stop
}

// managerGoroutines returns the stacks of the goroutines that run
// controller-runtime, client-go or Tollgate code, the ones a stopping
// manager may wait for.
func managerGoroutines() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var kept []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "sigs.k8s.io/controller-runtime") || strings.Contains(g, "k8s.io/client-go") || strings.Contains(g, "github.com/tollgate-dev/tollgate") {
			kept = append(kept, g)
		}
	}
	return strings.Join(kept, "\n\n")
}
