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

package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/controllers/clusterhealthcheck"
	"github.com/tollgate-dev/tollgate/controllers/releasechannel"
	"github.com/tollgate-dev/tollgate/controllers/talosupgrade"
	"github.com/tollgate-dev/tollgate/controllers/talosupgradepolicy"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/metrics"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/webhooks"
)

// Defaults of the manager, read by the flags of main.go and by New for the
// zero values of Options: the one place they are stated.
const (
	// DefaultConcurrency is the number of TalosUpgrades reconciled at once.
	DefaultConcurrency = 10
	// DefaultPolicyConcurrency is the number of TalosUpgradePolicies (and
	// ClusterHealthChecks) reconciled at once.
	DefaultPolicyConcurrency = 2
	// DefaultLeaderElectionID is the name of the leader election Lease.
	DefaultLeaderElectionID = "tollgate-controller-leader"
	// DefaultTalosConfigCacheTTL is how long a parsed talosconfig is reused.
	DefaultTalosConfigCacheTTL = 30 * time.Second
	// DefaultSyncPeriod is the resync period of the caches.
	DefaultSyncPeriod = 10 * time.Minute
	// EventSource names Tollgate's controllers in the events they record.
	EventSource = "tollgate-controller"
)

// Options configures the manager. The zero value of a field means its default.
type Options struct {
	// MetricsBindAddress is the address of the metrics endpoint; "0" disables it.
	MetricsBindAddress string
	// HealthProbeBindAddress is the address of /healthz and /readyz; "0" disables them.
	HealthProbeBindAddress string
	// LeaderElection enables leader election, so that only one replica acts.
	LeaderElection bool
	// LeaderElectionID is the name of the leader election Lease;
	// DefaultLeaderElectionID when empty.
	LeaderElectionID string
	// LeaderElectionNamespace is the namespace of the Lease; the in-cluster namespace when empty.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// WebhookPort is the port the webhooks are served on; 0 disables them.
	WebhookPort int
	// WebhookHost is the address the webhooks listen on.
	WebhookHost string
	// WebhookCertDir holds tls.crt and tls.key for the webhook server.
	WebhookCertDir string
	// ExtensionPort is the port CAPI's in-place update hooks
	// (CanUpdateMachineSet, CanUpdateMachine, UpdateMachine) are served on,
	// with the webhooks' host and certificate; 0 disables them.
	ExtensionPort int
	// ExtensionRetryAfter is how long CAPI waits before it asks again about
	// a Machine whose in-place update is not done;
	// inplace.DefaultRetryAfter when zero.
	ExtensionRetryAfter time.Duration
	// ControllerUsername is the identity of the controller as the API
	// server sees it, allowed to change every field of a TalosUpgrade.
	ControllerUsername string
	// WatchFilterValue restricts reconciliation to objects labelled
	// cluster.x-k8s.io/watch-filter=<value>, to shard a fleet across
	// several managers; empty for all.
	WatchFilterValue string
	// Concurrency is the number of TalosUpgrades reconciled at once;
	// DefaultConcurrency when zero.
	Concurrency int
	// PolicyConcurrency is the number of TalosUpgradePolicies reconciled at
	// once; DefaultPolicyConcurrency when zero.
	PolicyConcurrency int
	// TalosAPIPort is the port of the Talos API on every node;
	// talos.DefaultAPIPort when zero.
	TalosAPIPort int
	// TalosCallTimeout bounds each Talos API call but pulls and upgrades;
	// talos.DefaultCallTimeout when zero.
	TalosCallTimeout time.Duration
	// TalosInstallTimeout bounds an image pull and an upgrade call, which
	// download the installer image; talos.DefaultInstallTimeout when zero.
	TalosInstallTimeout time.Duration
	// TalosConfigCacheTTL is how long a parsed talosconfig is reused before
	// its Secret is read again; DefaultTalosConfigCacheTTL when zero, never
	// cached when negative.
	TalosConfigCacheTTL time.Duration
	// ProfilerAddress serves net/http/pprof when set, for example
	// "localhost:6060".
	ProfilerAddress string
	// SyncPeriod is the resync period of the caches; controller-runtime's
	// default when zero.
	SyncPeriod time.Duration
	// Namespace, when set, restricts the manager to the objects of one
	// namespace; all namespaces when empty.
	Namespace string
	// SkipControllerNameValidation lets several managers run in one process
	// (tests, the sandbox).
	SkipControllerNameValidation bool
	// Dialer replaces the Talos dialer; nil for the production dialer.
	Dialer talos.Dialer
	// CheckImage replaces the check that an installer image exists in its
	// registry (with the credentials of its pull Secret, if any); nil for
	// the production check. Tests use it for registries they cannot reach,
	// such as the Image Factory's.
	CheckImage func(ctx context.Context, ref string, pullSecret *corev1.Secret) error
}

// withDefaults returns o with its zero values replaced by their defaults.
func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.PolicyConcurrency <= 0 {
		o.PolicyConcurrency = DefaultPolicyConcurrency
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = DefaultLeaderElectionID
	}
	if o.TalosAPIPort == 0 {
		o.TalosAPIPort = talos.DefaultAPIPort
	}
	if o.TalosConfigCacheTTL == 0 {
		o.TalosConfigCacheTTL = DefaultTalosConfigCacheTTL
	}
	if o.CheckImage == nil {
		o.CheckImage = checkImage
	}
	return o
}

// NewScheme returns the scheme of the manager.
func NewScheme() (*kruntime.Scheme, error) {
	s := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, runtimev1.AddToScheme, upgradev1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// New builds the manager with every controller and, when o.WebhookPort is
// set, the webhooks; when o.ExtensionPort is set, CAPI's in-place update
// hooks. Start it with mgr.Start. Each part is set up by its own function,
// in the order CAPI's core main.go sets up its own.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	o = o.withDefaults()
	mgr, err := newManager(cfg, o)
	if err != nil {
		return nil, err
	}
	if err := setupChecks(ctx, mgr); err != nil {
		return nil, err
	}
	clusterCache, err := setupClusterCache(ctx, mgr, o)
	if err != nil {
		return nil, err
	}
	if err := setupMetrics(mgr, clusterCache); err != nil {
		return nil, err
	}
	if err := setupReconcilers(ctx, mgr, clusterCache, o); err != nil {
		return nil, err
	}
	if err := setupWebhooks(ctx, mgr, o); err != nil {
		return nil, err
	}
	if o.ExtensionPort > 0 {
		if err := setupExtension(mgr, o); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// UsePriorityQueue is whether the controllers queue their requests in
// controller-runtime's priority queue (its default) rather than client-go's
// rate-limited work queue. It is off: the priority queue of controller-runtime
// v0.24.1 can deadlock when its controller stops (kubernetes-sigs/
// controller-runtime#3538, fixed on release-0.24 by #3549 after v0.24.1): a
// worker that returns on shutdown leaves the queue handing it an item while
// holding the lock that the other workers' Done waits for, so the manager
// waits out its graceful shutdown timeout and exits with an error when a
// SIGTERM meets the race. Turn it on with the controller-runtime release that
// carries the fix. The managers of the test providers and harness use the
// same value.
const UsePriorityQueue = false

// newManager creates the controller-runtime manager: its scheme, caches,
// leader election and servers.
func newManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	var syncPeriod *time.Duration
	if o.SyncPeriod > 0 {
		syncPeriod = &o.SyncPeriod
	}
	var webhookServer webhook.Server
	if o.WebhookPort > 0 {
		webhookServer = webhook.NewServer(webhook.Options{Port: o.WebhookPort, Host: o.WebhookHost, CertDir: o.WebhookCertDir})
	}
	var namespaces map[string]cache.Config
	if o.Namespace != "" {
		namespaces = map[string]cache.Config{o.Namespace: {}}
	}
	mgrOptions := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: orDefault(o.MetricsBindAddress, "0")},
		HealthProbeBindAddress:  orDefault(o.HealthProbeBindAddress, "0"),
		PprofBindAddress:        o.ProfilerAddress,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		WebhookServer:           webhookServer,
		Controller: config.Controller{
			SkipNameValidation: ptr.To(o.SkipControllerNameValidation),
			UsePriorityQueue:   ptr.To(UsePriorityQueue),
		},
		Cache: cache.Options{
			SyncPeriod:        syncPeriod,
			DefaultNamespaces: namespaces,
			// managedFields are never read: do not keep them in memory.
			DefaultTransform: cache.TransformStripManagedFields(),
			// Of a fleet's Machines and Clusters only what Tollgate reads
			// (see cache.go).
			ByObject: map[client.Object]cache.ByObject{
				&clusterv1.Machine{}: {Transform: stripMachine},
				&clusterv1.Cluster{}: {Transform: stripCluster},
			},
		},
		Client: client.Options{Cache: &client.CacheOptions{
			// No cluster-wide Secret informer: Secrets are read live, one at a time.
			DisableFor: []client.Object{&corev1.Secret{}},
		}},
	}
	if o.LeaseDuration > 0 {
		mgrOptions.LeaseDuration, mgrOptions.RenewDeadline, mgrOptions.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
	}
	mgr, err := ctrl.NewManager(cfg, mgrOptions)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, nil
}

// setupChecks adds the field indexes the controllers and the webhooks list
// by, and the health probes.
func setupChecks(ctx context.Context, mgr ctrl.Manager) error {
	if err := index.Add(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", healthz.Ping)
}

// setupClusterCache sets up CAPI's ClusterCache, which holds the
// connections to the workload clusters, and stops its caches with the
// manager.
func setupClusterCache(ctx context.Context, mgr ctrl.Manager, o Options) (clustercache.ClusterCache, error) {
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient:     mgr.GetAPIReader(),
		WatchFilterValue: o.WatchFilterValue,
		// Only the workload clusters a rollout needs are connected: a
		// converged fleet costs no connection, no cache and no probe.
		ClusterFilter: talosupgrade.WorkloadConnectionFilter,
		Cache: clustercache.CacheOptions{
			DefaultTransform: cache.TransformStripManagedFields(),
			// Only Tollgate's own Jobs are cached in a workload cluster.
			ByObject: map[client.Object]cache.ByObject{
				&batchv1.Job{}: {Label: labels.SelectorFromSet(labels.Set{workloadjob.ManagedByLabel: workloadjob.ManagedByValue})},
				// Of the Nodes only readiness, schedulability and versions.
				&corev1.Node{}: {Transform: stripNode},
			},
		},
		Client: clustercache.ClientOptions{
			UserAgent: EventSource,
			// Pods are read live, only to read a failed Job's output.
			Cache: clustercache.ClientCacheOptions{DisableFor: []client.Object{&corev1.Pod{}}},
		},
	}, controller.Options{MaxConcurrentReconciles: o.Concurrency, SkipNameValidation: ptr.To(o.SkipControllerNameValidation)})
	if err != nil {
		return nil, fmt.Errorf("setting up the ClusterCache: %w", err)
	}
	// The ClusterCache's caches live beyond the manager's context; stop
	// them with the manager, so that a process running managers one after
	// the other (tests, the sandbox, the soak) leaves no watch behind on the
	// workload clusters.
	if stopper, ok := clusterCache.(interface{ Shutdown() }); ok {
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			stopper.Shutdown()
			return nil
		})); err != nil {
			return nil, err
		}
	}
	return clusterCache, nil
}

// setupMetrics reads Tollgate's state series from this manager's cache
// while it runs (see internal/metrics).
func setupMetrics(mgr ctrl.Manager, clusterCache clustercache.ClusterCache) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		unset := metrics.SetStateSource(metrics.StateSource{
			Reader: mgr.GetClient(),
			Connected: func(ctx context.Context, cluster client.ObjectKey) bool {
				_, err := clusterCache.GetClient(ctx, cluster)
				return err == nil
			},
		})
		<-ctx.Done()
		unset()
		return nil
	}))
}

// setupReconcilers sets up the controllers of TalosUpgradePolicy,
// ClusterHealthCheck, ReleaseChannel and TalosUpgrade.
func setupReconcilers(ctx context.Context, mgr ctrl.Manager, clusterCache clustercache.ClusterCache, o Options) error {
	skip := ptr.To(o.SkipControllerNameValidation)
	dialer := o.Dialer
	if dialer == nil {
		dialer = talos.NewDialer(mgr.GetAPIReader(), talos.WithPort(o.TalosAPIPort), talos.WithTimeout(o.TalosCallTimeout),
			talos.WithInstallTimeout(o.TalosInstallTimeout), talos.WithConfigCacheTTL(max(o.TalosConfigCacheTTL, 0)))
	}
	if err := (&talosupgradepolicy.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), WatchFilterValue: o.WatchFilterValue, Recorder: mgr.GetEventRecorder(EventSource)}).
		SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: o.PolicyConcurrency, SkipNameValidation: skip}); err != nil {
		return err
	}
	if err := (&clusterhealthcheck.Reconciler{Client: mgr.GetClient(), WatchFilterValue: o.WatchFilterValue}).
		SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: o.PolicyConcurrency, SkipNameValidation: skip}); err != nil {
		return err
	}
	if err := (&releasechannel.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), WatchFilterValue: o.WatchFilterValue, Recorder: mgr.GetEventRecorder(EventSource)}).
		SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: o.PolicyConcurrency, SkipNameValidation: skip}); err != nil {
		return err
	}
	return (&talosupgrade.Reconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		ClusterCache:     clusterCache,
		Dialer:           dialer,
		CheckImage:       o.CheckImage,
		Recorder:         mgr.GetEventRecorder(EventSource),
		WatchFilterValue: o.WatchFilterValue,
		Templates:        mgr.GetCache(),
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: o.Concurrency, SkipNameValidation: skip})
}

// setupWebhooks serves the validating and defaulting webhooks, when
// o.WebhookPort is set.
func setupWebhooks(ctx context.Context, mgr ctrl.Manager, o Options) error {
	if o.WebhookPort <= 0 {
		return nil
	}
	var opts []webhooks.Option
	if o.ControllerUsername != "" {
		opts = append(opts, webhooks.WithControllerUsername(o.ControllerUsername))
	}
	if err := webhooks.SetupWebhooksWithManager(ctx, mgr, opts...); err != nil {
		return fmt.Errorf("setting up the webhooks: %w", err)
	}
	return nil
}

// checkImage checks an installer image with the credentials of its pull
// Secret, if any, else anonymously.
func checkImage(ctx context.Context, ref string, pullSecret *corev1.Secret) error {
	var keychain authn.Keychain = authn.DefaultKeychain
	if pullSecret != nil {
		kc, err := talos.KeychainFromSecret(pullSecret)
		if err != nil {
			return err
		}
		keychain = kc
	}
	return talos.CheckImage(ctx, ref, keychain)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
