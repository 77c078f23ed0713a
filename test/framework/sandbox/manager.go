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

package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

var errManagerStarted = errors.New("the sandbox's manager is already started")

// BuildManager builds the production manager binary (main.go) into dir and
// returns its path, for the worlds that run the controller as a process of
// its own: to measure it alone, to kill it, or to read its log.
func BuildManager(ctx context.Context, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	binary := filepath.Join(dir, "manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, ".")
	build.Dir = envtest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w: %s", err, out)
	}
	return binary, nil
}

// StartManager runs the production manager (cmd/manager.New, as
// main.go builds it) against the management cluster until Stop. It fills
// in what the sandbox decides: the Talos API port, the webhook server and
// the controller's username when the webhooks are installed, no leader
// election, metrics or probes unless o asks, and
// SkipControllerNameValidation; with Options.Extension, the in-place update
// extension (serveExtension). It returns once the caches are synced and the
// webhook server answers and, with Options.Extension, once CAPI core has
// discovered the extension's hooks (ExtensionConfig ExtensionName, created
// at the first start).
func (s *Sandbox) StartManager(ctx context.Context, o manager.Options) error {
	s.mu.Lock()
	if s.stopMgr != nil {
		s.mu.Unlock()
		return errManagerStarted
	}
	s.mu.Unlock()
	start := time.Now()
	o.TalosAPIPort = s.opts.TalosAPIPort
	o.SkipControllerNameValidation = true
	o.LeaderElection = false
	wopts := &s.Management.Env.WebhookInstallOptions
	if s.opts.Webhooks {
		o.WebhookPort, o.WebhookHost, o.WebhookCertDir = wopts.LocalServingPort, wopts.LocalServingHost, wopts.LocalServingCertDir
		o.ControllerUsername = ControllerUsername
	} else {
		o.WebhookPort = 0
	}
	if s.opts.Extension {
		s.serveExtension(&o)
	}
	mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	mgr, err := manager.New(mgrCtx, rest.CopyConfig(s.ControllerConfig), o)
	if err != nil {
		cancel()
		return fmt.Errorf("building the manager: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	s.mu.Lock()
	s.stopMgr, s.mgrDone = cancel, done
	s.mu.Unlock()

	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("the manager's caches did not sync")
	}
	if s.opts.Webhooks {
		if err := waitForTLS(ctx, net.JoinHostPort(wopts.LocalServingHost, strconv.Itoa(wopts.LocalServingPort))); err != nil {
			return err
		}
	}
	if s.opts.Extension {
		if err := s.registerExtension(ctx); err != nil {
			return err
		}
	}
	s.logf("Started the manager (cmd/manager, as main.go%s%s) in %s",
		map[bool]string{true: ", webhooks on " + net.JoinHostPort(wopts.LocalServingHost, strconv.Itoa(wopts.LocalServingPort)), false: ""}[s.opts.Webhooks],
		map[bool]string{true: ", CAPI's in-place update extension on port " + strconv.Itoa(s.extensionPort) + ", registered as ExtensionConfig " + ExtensionName, false: ""}[s.opts.Extension],
		since(start))
	return nil
}

// StopManager stops the manager, as a crash would, and waits for it. A
// later StartManager starts a new one.
func (s *Sandbox) StopManager() error {
	s.mu.Lock()
	stop, done := s.stopMgr, s.mgrDone
	s.stopMgr, s.mgrDone = nil, nil
	s.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	var errs []error
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, fmt.Errorf("the manager stopped with an error: %w", err))
	}
	s.mu.Lock()
	released := s.released
	s.released = nil
	s.mu.Unlock()
	for _, w := range released {
		errs = append(errs, s.Management.ReleaseWorkload(context.Background(), w.Workload))
	}
	return errors.Join(errs...)
}

// WriteKubeconfig writes an administrator kubeconfig of the management
// cluster into dir, as management.kubeconfig, and returns its path: for
// kubectl (WriteManagerKubeconfig is the manager's).
func (s *Sandbox) WriteKubeconfig(dir string) (string, error) {
	user, err := s.Management.AddAdmin("sandbox-admin")
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("writing the management kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "management.kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// WriteManagerKubeconfig writes a kubeconfig of the management cluster that
// acts as the manager's ServiceAccount, as ControllerConfig does (the
// administrator's credentials, impersonating ControllerUsername), into dir,
// as manager.kubeconfig, and returns its path: for a manager binary run with
// KUBECONFIG.
func (s *Sandbox) WriteManagerKubeconfig(dir string) (string, error) {
	user, err := s.Management.AddAdmin("sandbox-manager")
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("writing the manager's kubeconfig: %w", err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return "", fmt.Errorf("reading the manager's kubeconfig: %w", err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = s.ControllerConfig.Impersonate.UserName
		auth.ImpersonateGroups = s.ControllerConfig.Impersonate.Groups
	}
	if data, err = clientcmd.Write(*cfg); err != nil {
		return "", fmt.Errorf("writing the manager's kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "manager.kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// waitForTLS waits until a TLS server answers on addr.
func waitForTLS(ctx context.Context, addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // A local server with a self-signed certificate, only probed.
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the webhook server did not answer on %s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond) // Polling a socket, not waiting for a condition.
	}
}
