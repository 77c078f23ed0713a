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
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	"github.com/tollgate-dev/tollgate/test/providers/talos/controllers/taloscontrolplane"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Defaults of Options.
const (
	// DefaultRebootDuration is how long a simulated node takes to reboot.
	DefaultRebootDuration = 500 * time.Millisecond
	// DefaultJobDelay is how long a workload Job runs before it ends.
	DefaultJobDelay = 200 * time.Millisecond
	// ControllerUsername is the identity of the manager: the ServiceAccount
	// config/default runs it as, the only user the TalosUpgrade webhook
	// lets change a plan.
	ControllerUsername = envtest.ManagerUsername
)

// Options configure a Sandbox. The zero value is a sandbox without webhooks.
type Options struct {
	// Webhooks installs Tollgate's webhook configurations (config/webhook)
	// in the management cluster; StartManager then serves them.
	Webhooks bool

	// InstallerVersions are the Talos versions whose installer image is
	// pushed into the registry at start; PushInstaller adds more.
	InstallerVersions []string

	// RebootDuration is how long a simulated node's API is down during a
	// reboot; DefaultRebootDuration when zero. ClusterOptions.RebootDuration
	// overrides it for one Cluster.
	RebootDuration time.Duration

	// JobDelay is how long each workload Job runs before the Job driver
	// ends it, or its container's run before the Kubelet ends it:
	// DefaultJobDelay when zero; when negative, at once.
	JobDelay time.Duration

	// JobController runs the Jobs of every workload with the real Job
	// controller (kube-controller-manager from KUBEBUILDER_ASSETS, see
	// envtest.StartJobController) and a jobdriver.Kubelet, instead of the
	// Job driver: Jobs take about a second more, and retry as their
	// backoffLimit says.
	JobController bool

	// ReuseWorkloads gives a Cluster's workload control plane, once the
	// Cluster stops, to the next Cluster, emptied
	// (envtest.Management.ReleaseWorkload): for a suite whose tests each
	// make a Cluster of their own, most of whose CPU would otherwise go to
	// starting kube-apiservers. It is released when no manager runs (at
	// once, or when StopManager stops the running one), so that nothing of
	// one test reaches the next. It has no effect with JobController or
	// CAPI, whose workloads are stopped.
	ReuseWorkloads bool

	// TalosAPIPort is the port of every simulated node's Talos API, on its
	// own loopback address; talossim.DefaultPort when zero.
	TalosAPIPort int

	// CAPI runs Cluster API for real: CAPI core as its own process
	// (envtest.Management.StartCAPI, with envtest.CAPIFeatureGates), and,
	// in this process, the Talos-simulator infrastructure provider
	// (test/providers/infrastructure) and the stand-ins for the Talos bootstrap and
	// control-plane providers (test/providers/talos), whose CRDs the
	// management cluster then has. CreateCluster then applies a Cluster as
	// a user does (the objects of templates/cluster-template-talos.yaml) and
	// CAPI makes its Machines; see CreateCluster.
	CAPI bool

	// Hosts, with CAPI, run the machines the infrastructure provider
	// boots, shared with another sandbox: one cloud that two management
	// clusters reach, so that after `clusterctl move` the target's provider
	// finds the machines the source's booted (Boot of a machine that runs
	// changes nothing), as a cloud provider finds its instances by provider
	// ID. Their talossim.Options (port, reboot duration) are the caller's,
	// and the caller closes them after both sandboxes stopped. A sandbox
	// starts hosts of its own when nil.
	Hosts *hosts.Simulators

	// ControlPlaneScaleDown, with CAPI, is how the Talos control-plane
	// provider's stand-in takes a Machine out (talosproviders.Options):
	// taloscontrolplane.LeaveEtcdFirst, as the released provider, when
	// empty.
	ControlPlaneScaleDown taloscontrolplane.ScaleDown

	// Managements, when set, is where the management control plane comes
	// from, and where Stop gives it back, emptied with its workload control
	// planes, for the suite's next sandbox (envtest.ManagementPool): made
	// by NewManagementPool with the Webhooks and CAPI of these Options. A
	// Cluster stopped before the sandbox keeps its workload control plane
	// until then.
	Managements *envtest.ManagementPool

	// Extension serves Tollgate as CAPI's in-place update Runtime
	// Extension (needs CAPI and Webhooks): StartManager serves its hooks
	// (manager.Options.ExtensionPort, with the webhooks' certificate) and
	// registers them with CAPI core through the ExtensionConfig
	// ExtensionName, which serves the namespaces labelled
	// upgradev1.InPlaceUpdatesNamespaceLabel (ClusterOptions.InPlaceUpdates).
	Extension bool

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

	// CAPI is CAPI core, running as its own process: nil without
	// Options.CAPI. Its Output is its log.
	CAPI *envtest.CAPI

	// ControllerConfig is the rest.Config the manager uses: the manager's
	// ServiceAccount (ControllerUsername), with the RBAC of config/default
	// applied (envtest.ControlPlane.ManagerConfig), so that a request the
	// shipped RBAC does not allow fails as it would in a cluster.
	ControllerConfig *rest.Config

	opts     Options
	registry *httptest.Server
	// providers run the Clusters' Machines with Options.CAPI.
	providers *providers
	// extensionPort is where the manager serves CAPI's in-place update
	// hooks with Options.Extension, the same through its restarts.
	extensionPort int

	mu         sync.Mutex
	clusters   []*Cluster
	workloads  []*Workload
	simulators []*talossim.Simulator
	// routers route the node updates of each simulator NewSimulator
	// started to the workload of each node's Cluster.
	routers map[*talossim.Simulator]*nodeRouter
	stopMgr context.CancelFunc
	mgrDone chan error
	// released are the workloads of stopped Clusters that wait for the
	// manager to stop before they are emptied for reuse.
	released []*Workload
}

// Start starts a sandbox: the management control plane, with the webhook
// configurations when asked, and the registry with the installer images of
// opts.InstallerVersions. On error, whatever was started is stopped.
func Start(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	if opts.RebootDuration <= 0 {
		opts.RebootDuration = DefaultRebootDuration
	}
	switch {
	case opts.JobDelay == 0:
		opts.JobDelay = DefaultJobDelay
	case opts.JobDelay < 0:
		opts.JobDelay = 0
	}
	if opts.TalosAPIPort == 0 {
		opts.TalosAPIPort = talossim.DefaultPort
	}
	if opts.Extension && (!opts.CAPI || !opts.Webhooks) {
		return nil, errors.New("a sandbox serves Tollgate's in-place update extension (Options.Extension) only with Options.CAPI and Options.Webhooks: CAPI core calls it, and it is served with the webhooks' certificate")
	}
	s := &Sandbox{opts: opts, routers: map[*talossim.Simulator]*nodeRouter{}}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()

	start := time.Now()
	if opts.Managements != nil {
		s.Management, err = opts.Managements.Start(ctx)
	} else {
		s.Management, err = envtest.StartManagement(managementOptions(opts)...)
	}
	if err != nil {
		return nil, err
	}
	if opts.Managements == nil {
		s.Management.ReuseWorkloads = opts.ReuseWorkloads && !opts.JobController && !opts.CAPI
	}
	if s.ControllerConfig, err = s.Management.ManagerConfig(ctx); err != nil {
		return nil, fmt.Errorf("giving the manager its ServiceAccount: %w", err)
	}
	s.logf("Started the management control plane (kube-apiserver %s, CAPI and Tollgate CRDs%s%s, the RBAC of config/default) in %s",
		s.Management.Config.Host, map[bool]string{true: ", the providers' CRDs", false: ""}[opts.CAPI],
		map[bool]string{true: ", webhooks", false: ""}[opts.Webhooks], since(start))
	if opts.CAPI {
		if err := s.startCAPI(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Extension {
		if s.extensionPort, err = envtest.FreePort(); err != nil {
			return nil, err
		}
	}

	if err := s.startRegistry(ctx, opts.InstallerVersions); err != nil {
		return nil, err
	}
	if len(opts.InstallerVersions) > 0 {
		s.logf("Pushed the installer image %s:%s to the in-process registry", s.InstallerRepository(), strings.Join(opts.InstallerVersions, ", :"))
	}
	return s, nil
}

// managementOptions are those of the management control plane of a
// sandbox started with opts.
func managementOptions(opts Options) []envtest.ManagementOption {
	var mopts []envtest.ManagementOption
	if opts.Webhooks {
		mopts = append(mopts, envtest.WithWebhooks(filepath.Join(envtest.RepoRoot(), "config", "webhook")))
	}
	if opts.CAPI {
		mopts = append(mopts, envtest.WithCRDDirectories(capiCRDDirectories()...))
	}
	return mopts
}

// NewManagementPool returns a pool of the management control planes of
// sandboxes started with opts (Options.Webhooks and Options.CAPI say what
// they hold), for Options.Managements. The suite closes it when it ends.
func NewManagementPool(opts Options) *envtest.ManagementPool {
	return envtest.NewManagementPool(managementOptions(opts)...)
}

// Stop stops the manager, what runs the Jobs, CAPI core and the providers,
// the simulators, every control plane and the registry; with
// Options.Managements, the management control plane and the workload
// control planes started from it are given back to the pool, emptied,
// instead.
func (s *Sandbox) Stop() error {
	if s == nil {
		return nil
	}
	errs := []error{s.StopManager()}
	s.mu.Lock()
	clusters, workloads, simulators := s.clusters, slices.Concat(s.workloads, s.released), s.simulators
	s.clusters, s.workloads, s.simulators, s.released = nil, nil, nil, nil
	s.mu.Unlock()
	for _, w := range workloads {
		w.stopDriver()
	}
	// CAPI core and the providers stop before the control planes they
	// watch.
	errs = append(errs, s.stopCAPI()...)
	for _, c := range clusters {
		if c.ownSimulator {
			errs = append(errs, c.Simulator.Close())
		}
	}
	for _, sim := range simulators {
		errs = append(errs, sim.Close())
	}
	if s.opts.Managements != nil && s.Management != nil {
		errs = append(errs, s.opts.Managements.Release(context.Background(), s.Management))
	} else {
		errs = append(errs, s.stopControlPlanes(workloads)...)
	}
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

func since(t time.Time) time.Duration {
	return time.Since(t).Round(100 * time.Millisecond)
}
