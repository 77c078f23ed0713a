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

package test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/webhooks"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

var (
	// mgmt is the management control plane, with the webhooks installed.
	mgmt *envtest.Management
	// cached is the manager's cached client, which the webhooks read from.
	cached client.Client
	// users are the rest configs of the users added so far, by name; the
	// tests do not run in parallel.
	users = map[string]*rest.Config{}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if envtest.NoteWithoutAssets("the webhook envtest suite") {
		return m.Run()
	}
	var err error
	mgmt, err = envtest.StartManagement(envtest.WithWebhooks(filepath.Join(envtest.RepoRoot(), "config", "webhook")))
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the management control plane: %v\n", err)
		return 1
	}
	defer func() {
		if err := mgmt.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the management control plane: %v\n", err)
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := startManager(ctx, mgmt.Env); err != nil {
		fmt.Fprintf(os.Stderr, "starting the webhook manager: %v\n", err)
		return 1
	}
	code := m.Run()
	if forbidden := mgmt.ForbiddenRequests(); len(forbidden) > 0 {
		fmt.Fprintf(os.Stderr, "the webhook manager made requests the RBAC of config/default forbids: %v\n", forbidden)
		code = 1
	}
	return code
}

// startManager starts a manager serving the webhooks where the apiserver
// expects them, and waits until it answers.
func startManager(ctx context.Context, env *crenvtest.Environment) error {
	opts := &env.WebhookInstallOptions
	// The webhooks read through the manager's cache, as the manager's
	// ServiceAccount, with the RBAC of config/default.
	cfg, err := mgmt.ManagerConfig(ctx)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  envtest.NewScheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    opts.LocalServingHost,
			Port:    opts.LocalServingPort,
			CertDir: opts.LocalServingCertDir,
		}),
	})
	if err != nil {
		return err
	}
	if err := index.Add(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := webhooks.SetupWebhooksWithManager(ctx, mgr, webhooks.WithControllerUsername(corpus.ControllerUsername)); err != nil {
		return err
	}
	cached = mgr.GetClient()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "the webhook manager stopped: %v\n", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("the manager's cache did not sync")
	}
	addr := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // A local test server with a self-signed certificate.
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook server did not answer on %s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond) // Polling a socket, not waiting for a condition.
	}
}

// warnings collects the admission warnings of a client's requests.
type warnings struct{ texts []string }

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.texts = append(w.texts, text)
}

// clientFor returns a client acting as username ("" for the administrator)
// that records admission warnings.
func clientFor(t *testing.T, username string) (client.Client, *warnings) {
	t.Helper()
	cfg := rest.CopyConfig(mgmt.Config)
	if username != "" {
		userConfig, ok := users[username]
		if !ok {
			user, err := mgmt.Env.AddUser(crenvtest.User{Name: username, Groups: []string{"system:masters"}}, mgmt.Config)
			if err != nil {
				t.Fatalf("adding the user %s: %v", username, err)
			}
			userConfig = user.Config()
			users[username] = userConfig
		}
		cfg = rest.CopyConfig(userConfig)
	}
	w := &warnings{}
	cfg.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{Scheme: envtest.NewScheme()})
	if err != nil {
		t.Fatalf("creating a client: %v", err)
	}
	return c, w
}

// envtestOnly skips a test of the suite, saying so and naming
// KUBEBUILDER_ASSETS, when the envtest binaries are not set: the suite's world
// was not started, and the tests of the package that need none still run
// (make test-unit).
func envtestOnly(t *testing.T) {
	t.Helper()
	envtest.SkipWithoutAssets(t)
}
