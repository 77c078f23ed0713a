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
	"time"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure"
	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	talosproviders "github.com/tollgate-dev/tollgate/test/providers/talos"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// capiCRDDirectories are the CRDs a sandbox with Options.CAPI installs
// beside CAPI's and Tollgate's: the test infrastructure provider's and the
// Talos providers' stand-ins'.
func capiCRDDirectories() []string {
	return []string{infrastructure.CRDDirectory(), talosproviders.CRDDirectory()}
}

// capiWebhookDirectories are the webhook configurations of the providers
// a sandbox with Options.CAPI runs.
func capiWebhookDirectories() []string {
	return []string{infrastructure.WebhookDirectory(), talosproviders.WebhookDirectory()}
}

// capiScheme is envtest.NewScheme with the kinds of the providers a sandbox
// with Options.CAPI runs, and CAPI's ExtensionConfig.
func capiScheme() *kruntime.Scheme {
	s := envtest.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{infrav1.AddToScheme, talosproviders.AddToScheme, runtimev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("building the sandbox's scheme: %v", err)) // Programming error: the schemes are static.
		}
	}
	return s
}

// providers is the controller-runtime manager that runs the test
// infrastructure provider and the Talos providers' stand-ins against the
// management cluster, and the simulated machines it boots.
type providers struct {
	// hosts runs each Cluster's machines on a Talos simulator of its own.
	hosts *hosts.Simulators
	// webhooks are the providers' webhook configurations, served by the
	// manager.
	webhooks *envtest.Webhooks
	// hooks are the call observers and direct kubelet clients of the
	// Clusters that asked for them (see clusterHooks).
	hooks *clusterHooks
	// stop stops the manager; done is closed when it has ended, err
	// (written before) says how.
	stop context.CancelFunc
	done chan struct{}
	err  error
}

// startCAPI starts CAPI core, as its own process, and the providers'
// controllers, in this one, and gives the sandbox's management client the
// providers' kinds.
func (s *Sandbox) startCAPI(ctx context.Context) error {
	start := time.Now()
	scheme := capiScheme()
	c, err := client.NewWithWatch(s.Management.Config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating a client of the management cluster: %w", err)
	}
	s.Management.Client = c
	if s.CAPI, err = s.Management.StartCAPI(envtest.CAPIOptions{}); err != nil {
		return fmt.Errorf("starting Cluster API core: %w", err)
	}

	hooks := &clusterHooks{}
	s.providers = &providers{
		hosts: hosts.NewSimulators(hosts.SimulatorsOptions{Simulator: talossim.Options{
			Port:           s.opts.TalosAPIPort,
			RebootDuration: s.opts.RebootDuration,
			OnCall:         hooks.observe,
		}}),
		hooks: hooks,
		done:  make(chan struct{}),
	}
	if s.opts.Hosts != nil {
		// Shared with another sandbox; the Simulators made above start
		// nothing until a machine boots.
		s.providers.hosts = s.opts.Hosts
	}
	// The providers' webhooks, as strict as the real providers', served by
	// their manager.
	if s.providers.webhooks, err = s.Management.ServeWebhooks(capiWebhookDirectories()...); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(s.Management.Config, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Tollgate's manager may run in this process too.
		Controller:    config.Controller{SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(manager.UsePriorityQueue)},
		WebhookServer: webhook.NewServer(s.providers.webhooks.ServerOptions()),
	})
	if err != nil {
		return fmt.Errorf("creating the providers' manager: %w", err)
	}
	mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.providers.stop = cancel
	if err := errors.Join(
		infrastructure.Setup(mgrCtx, mgr, infrastructure.Options{Hosts: kubeletHosts{Simulators: s.providers.hosts, hooks: hooks}}),
		talosproviders.Setup(mgrCtx, mgr, talosproviders.Options{TalosAPIPort: s.opts.TalosAPIPort, ScaleDown: s.opts.ControlPlaneScaleDown}),
	); err != nil {
		cancel()
		s.providers.err = context.Canceled
		close(s.providers.done)
		return fmt.Errorf("setting up the providers' controllers: %w", err)
	}
	go func() {
		s.providers.err = mgr.Start(mgrCtx)
		close(s.providers.done)
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("the providers' caches did not sync")
	}
	if err := envtest.WaitForWebhookServer(ctx, mgr.GetWebhookServer()); err != nil {
		return fmt.Errorf("the providers' webhooks: %w", err)
	}
	s.logf("Started Cluster API core (its own process, feature gates %s) and, in this process, the Talos-simulator infrastructure provider and the stand-ins for the Talos bootstrap and control-plane providers in %s",
		envtest.CAPIFeatureGates, since(start))
	return nil
}

// capiAlive returns an error, saying how, when CAPI core or the providers'
// manager has exited: a world without them makes no more progress, and
// whoever waits on it fails at once instead of at a timeout.
func (s *Sandbox) capiAlive() error {
	if err := s.CAPI.ExitError(); err != nil {
		return fmt.Errorf("CAPI core is gone: %w", err)
	}
	select {
	case <-s.providers.done:
		if err := s.providers.err; err != nil {
			return fmt.Errorf("the providers' manager stopped: %w", err)
		}
		return errors.New("the providers' manager stopped")
	default:
		return nil
	}
}

// stopCAPI stops the providers' manager, CAPI core and the simulated
// machines, before the control planes stop.
func (s *Sandbox) stopCAPI() []error {
	var errs []error
	if p := s.providers; p != nil {
		if p.stop != nil {
			p.stop()
			<-p.done
			if p.err != nil && !errors.Is(p.err, context.Canceled) {
				errs = append(errs, fmt.Errorf("the providers' manager stopped with an error: %w", p.err))
			}
		}
		if s.opts.Hosts == nil {
			errs = append(errs, p.hosts.Close())
		}
		errs = append(errs, p.webhooks.Cleanup())
	}
	if s.CAPI != nil {
		errs = append(errs, s.CAPI.Stop())
	}
	return errs
}
