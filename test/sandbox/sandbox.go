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
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/envtest"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Defaults of Options.
const (
	// DefaultRebootDuration is how long a simulated node takes to reboot.
	DefaultRebootDuration = 500 * time.Millisecond
	// DefaultJobDelay is how long a workload Job runs before it ends.
	DefaultJobDelay = 200 * time.Millisecond
	// ControllerUsername is the identity of the manager when the webhooks
	// are served: the only user the TalosUpgrade webhook lets change a plan.
	ControllerUsername = "tollgate-sandbox-controller"
	// InstallerRepository is the repository of installer images in the
	// sandbox's registry.
	InstallerRepository = "siderolabs/installer"
)

var errManagerStarted = errors.New("the sandbox's manager is already started")

// Options configure a Sandbox. The zero value is a sandbox without webhooks.
type Options struct {
	// Webhooks installs Tollgate's webhook configurations (config/webhook)
	// in the management cluster; StartManager then serves them, and the
	// manager acts as ControllerUsername.
	Webhooks bool

	// InstallerVersions are the Talos versions whose installer image is
	// pushed into the registry at start; PushInstaller adds more.
	InstallerVersions []string

	// RebootDuration is how long a simulated node's API is down during a
	// reboot; DefaultRebootDuration when zero.
	RebootDuration time.Duration

	// JobDelay is how long each workload Job runs before the Job driver
	// ends it; DefaultJobDelay when zero.
	JobDelay time.Duration

	// TalosAPIPort is the port of every simulated node's Talos API, on its
	// own loopback address; talossim.DefaultPort when zero.
	TalosAPIPort int

	// Logf receives a line for each step of the sandbox's set-up; nothing
	// is reported when nil.
	Logf func(format string, args ...any)
}

// Sandbox is a running management cluster, registry and the Clusters
// created in it. Stop it when done.
type Sandbox struct {
	// Management is the management control plane.
	Management *envtest.Management

	// RegistryHost is the host:port of the in-process OCI registry (plain
	// HTTP on loopback).
	RegistryHost string

	// ControllerConfig is the rest.Config the manager uses: the
	// ControllerUsername user with webhooks, the administrator without.
	ControllerConfig *rest.Config

	opts     Options
	registry *httptest.Server

	mu        sync.Mutex
	clusters  []*Cluster
	workloads []*Workload
	stopMgr   context.CancelFunc
	mgrDone   chan error
}

// Start starts a sandbox: the management control plane, with the webhook
// configurations when asked, and the registry with the installer images of
// opts.InstallerVersions. On error, whatever was started is stopped.
func Start(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	if opts.RebootDuration <= 0 {
		opts.RebootDuration = DefaultRebootDuration
	}
	if opts.JobDelay <= 0 {
		opts.JobDelay = DefaultJobDelay
	}
	if opts.TalosAPIPort == 0 {
		opts.TalosAPIPort = talossim.DefaultPort
	}
	s := &Sandbox{opts: opts}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()

	start := time.Now()
	var mopts []envtest.ManagementOption
	if opts.Webhooks {
		mopts = append(mopts, envtest.WithWebhooks(filepath.Join(envtest.RepoRoot(), "config", "webhook")))
	}
	s.Management, err = envtest.StartManagement(mopts...)
	if err != nil {
		return nil, err
	}
	s.ControllerConfig = rest.CopyConfig(s.Management.Config)
	if opts.Webhooks {
		user, err := s.Management.Env.AddUser(crenvtest.User{Name: ControllerUsername, Groups: []string{"system:masters"}}, s.Management.Config)
		if err != nil {
			return nil, fmt.Errorf("adding the controller's user %s: %w", ControllerUsername, err)
		}
		s.ControllerConfig = user.Config()
		s.ControllerConfig.QPS, s.ControllerConfig.Burst = s.Management.Config.QPS, s.Management.Config.Burst
	}
	s.logf("Started the management control plane (kube-apiserver %s, CAPI and Tollgate CRDs%s) in %s",
		s.Management.Config.Host, map[bool]string{true: ", webhooks", false: ""}[opts.Webhooks], since(start))

	s.registry = httptest.NewServer(registry.New(registry.Logger(discardLogger())))
	s.RegistryHost = strings.TrimPrefix(s.registry.URL, "http://")
	for _, v := range opts.InstallerVersions {
		if err := s.PushInstaller(ctx, v); err != nil {
			return nil, err
		}
	}
	if len(opts.InstallerVersions) > 0 {
		s.logf("Pushed the installer image %s:%s to the in-process registry", s.InstallerRepository(), strings.Join(opts.InstallerVersions, ", :"))
	}
	return s, nil
}

// InstallerRepository is the repository of the installer images in the
// registry, for a policy's installer.repository.
func (s *Sandbox) InstallerRepository() string {
	return s.RegistryHost + "/" + InstallerRepository
}

// PushInstaller pushes a small random image as the installer of the Talos
// version.
func (s *Sandbox) PushInstaller(ctx context.Context, version string) error {
	img, err := random.Image(512, 1)
	if err != nil {
		return fmt.Errorf("building an installer image: %w", err)
	}
	ref, err := name.ParseReference(s.InstallerRepository() + ":" + version)
	if err != nil {
		return fmt.Errorf("parsing the installer reference for %q: %w", version, err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %q: %w", ref, err)
	}
	return nil
}

// StartManager runs the production manager (cmd/manager.New, as
// main.go builds it) against the management cluster until Stop. It fills
// in what the sandbox decides: the Talos API port, the webhook server and
// the controller's username when the webhooks are installed, no leader
// election, metrics or probes unless o asks, and
// SkipControllerNameValidation. It returns once the caches are synced and
// the webhook server answers.
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
	s.logf("Started the manager (cmd/manager, as main.go%s) in %s",
		map[bool]string{true: ", webhooks on " + net.JoinHostPort(wopts.LocalServingHost, strconv.Itoa(wopts.LocalServingPort)), false: ""}[s.opts.Webhooks], since(start))
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
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the manager stopped with an error: %w", err)
	}
	return nil
}

// WriteKubeconfig writes an administrator kubeconfig of the management
// cluster into dir and returns its path.
func (s *Sandbox) WriteKubeconfig(dir string) (string, error) {
	user, err := s.Management.Env.AddUser(crenvtest.User{Name: "sandbox-admin", Groups: []string{"system:masters"}}, s.Management.Config)
	if err != nil {
		return "", fmt.Errorf("adding an administrator to the management cluster: %w", err)
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

// Stop stops the manager, the Job drivers, the simulators, every control
// plane and the registry.
func (s *Sandbox) Stop() error {
	if s == nil {
		return nil
	}
	errs := []error{s.StopManager()}
	s.mu.Lock()
	clusters, workloads := s.clusters, s.workloads
	s.clusters, s.workloads = nil, nil
	s.mu.Unlock()
	for _, w := range workloads {
		w.stopDriver()
	}
	for _, c := range clusters {
		errs = append(errs, c.Simulator.Close())
	}
	errs = append(errs, s.stopControlPlanes(workloads)...)
	if s.registry != nil {
		s.registry.Close()
	}
	return kerrors.NewAggregate(errs)
}

// stopControlPlanes stops the control planes at once: each may take the
// whole envtest stop timeout.
func (s *Sandbox) stopControlPlanes(workloads []*Workload) []error {
	if s.Management == nil {
		return nil
	}
	errs := make([]error, len(workloads)+1, len(workloads)+2)
	var wg sync.WaitGroup
	for i, w := range workloads {
		wg.Go(func() { errs[i] = w.Stop() })
	}
	wg.Go(func() { errs[len(workloads)] = s.Management.ControlPlane.Stop() })
	wg.Wait()
	// Stops nothing more: forgets the workloads it started.
	return append(errs, s.Management.Stop())
}

func (s *Sandbox) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
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

func since(t time.Time) time.Duration {
	return time.Since(t).Round(100 * time.Millisecond)
}

func discardLogger() *log.Logger {
	return log.New(io.Discard, "", 0)
}
