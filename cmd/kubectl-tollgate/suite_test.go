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

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// The plugin's tests run it, in-process, against a sandbox (package
// sandbox): a management control plane with Tollgate's webhooks, served by
// the production manager, Cluster API core and the providers, and Clusters
// of simulated Talos nodes whose Machines CAPI makes (sandbox.Options.CAPI).
var (
	// sb is the sandbox of the package's tests.
	sb *sandbox.Sandbox
	// kubeconfigs are the kubeconfig files of the users the tests run the
	// plugin as, by username; every one is a cluster administrator.
	kubeconfigs = map[string]string{}
)

// users of the tests; alice and bob are operators.
const (
	alice = "alice"
	bob   = "bob"
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if envtest.NoteWithoutAssets("the kubectl-tollgate tests that need a sandbox") {
		return m.Run()
	}
	logf.SetLogger(logr.Discard())
	ctx := context.Background()
	var err error
	sb, err = sandbox.Start(ctx, sandbox.Options{Webhooks: true, CAPI: true, InstallerVersions: []string{"v1.13.0"}, RebootDuration: 300 * time.Millisecond})
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
	dir, err := os.MkdirTemp("", "kubectl-tollgate-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a directory for the kubeconfigs: %v\n", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	for _, name := range []string{alice, bob} {
		user, err := sb.Management.AddAdmin(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "adding the user %s: %v\n", name, err)
			return 1
		}
		data, err := user.KubeConfig()
		if err != nil {
			fmt.Fprintf(os.Stderr, "writing the kubeconfig of %s: %v\n", name, err)
			return 1
		}
		kubeconfigs[name] = filepath.Join(dir, name+".kubeconfig")
		if err := os.WriteFile(kubeconfigs[name], data, 0o600); err != nil {
			fmt.Fprintf(os.Stderr, "writing %s: %v\n", kubeconfigs[name], err)
			return 1
		}
	}
	return m.Run()
}

// skipWithoutAssets skips a test that needs the sandbox.
func skipWithoutAssets(t *testing.T) {
	t.Helper()
	envtest.SkipWithoutAssets(t)
}

// result is what a run of the plugin printed and its exit code.
type result struct {
	out, err string
	code     int
}

// kubectl runs the plugin as user with args, as kubectl tollgate args
// --kubeconfig <user's>, and returns what it printed.
func kubectl(ctx context.Context, t *testing.T, user string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(ctx, append([]string{"--kubeconfig", kubeconfigs[user]}, args...), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	return result{out: out.String(), err: errOut.String(), code: code}
}
