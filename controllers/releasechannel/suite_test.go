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

package releasechannel_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/promserver"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// The tests run release channels in a sandbox (package sandbox) with Cluster
// API core and the providers (sandbox.Options.CAPI) and the production
// manager with its webhooks: CAPI makes the Clusters' Machines, Tollgate's
// policies give them the versions the channels grant, and the rollouts
// upgrade the simulated Talos nodes. The analyses query a real Prometheus
// engine (test/framework/promserver).
var (
	// sb is the sandbox of the package's tests.
	sb *sandbox.Sandbox
	// prom is the Prometheus the analyses query.
	prom *promserver.Server
)

// installerVersions are the releases the sandbox's registry holds.
var installerVersions = []string{"v1.13.0", "v1.13.1"}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if envtest.NoteWithoutAssets("the ReleaseChannel controller's tests, which need a sandbox with CAPI core") {
		return m.Run()
	}
	logf.SetLogger(logr.Discard())
	ctx := context.Background()
	var err error
	if prom, err = promserver.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting Prometheus: %v\n", err)
		return 1
	}
	defer func() { _ = prom.Close() }()
	sb, err = sandbox.Start(ctx, sandbox.Options{Webhooks: true, CAPI: true, InstallerVersions: installerVersions, RebootDuration: 300 * time.Millisecond})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the sandbox: %v\n", err)
		return 1
	}
	defer func() {
		if err := sb.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the sandbox: %v\n", err)
		}
	}()
	if err := sb.StartManager(ctx, manager.Options{}); err != nil {
		fmt.Fprintf(os.Stderr, "starting the manager: %v\n", err)
		return 1
	}
	return m.Run()
}
