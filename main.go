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

// Tollgate is a Cluster API add-on that rolls Talos Linux upgrades across
// the workload clusters of a management cluster, one Machine at a time (or N
// at a time, within a budget), only while the workloads say it is safe.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	// Mozilla's CA roots, embedded: used when the host has none, as in the
	// release image, so that the installer image checks can reach registries.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/webhooks"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	o := manager.Options{}
	var qps float32
	var burst int
	fs := pflag.CommandLine
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "Address of the metrics endpoint; 0 disables it.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":9440", "Address of the /healthz and /readyz probes.")
	fs.BoolVar(&o.LeaderElection, "leader-elect", true, "Elect a leader, so that only one replica acts at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", manager.DefaultLeaderElectionID, "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease; the Pod's namespace when empty.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a leader holds the lease without renewing it.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader tries to renew before giving up.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to take the lease.")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port of the webhook server; 0 disables the webhooks.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding tls.crt and tls.key of the webhook server.")
	fs.IntVar(&o.ExtensionPort, "extension-port", 0, "Port of the runtime extension server answering CAPI's in-place update hooks (CanUpdateMachineSet, CanUpdateMachine, UpdateMachine), with the certificate of --webhook-cert-dir; 0 disables it.")
	fs.StringVar(&o.ControllerUsername, "controller-username", webhooks.DefaultControllerUsername, "Username of the controller's service account, the only one allowed to change a TalosUpgrade's plan.")
	fs.StringVar(&o.WatchFilterValue, "watch-filter", "", "Reconcile only objects labelled cluster.x-k8s.io/watch-filter=<value>; run several managers with different values to shard a large fleet.")
	fs.StringVar(&o.Namespace, "namespace", "", "Reconcile only the objects of this namespace; all namespaces when empty.")
	fs.IntVar(&o.Concurrency, "talosupgrade-concurrency", manager.DefaultConcurrency, "Number of TalosUpgrades (Clusters) reconciled at once.")
	fs.IntVar(&o.PolicyConcurrency, "talosupgradepolicy-concurrency", manager.DefaultPolicyConcurrency, "Number of TalosUpgradePolicies reconciled at once.")
	fs.IntVar(&o.TalosAPIPort, "talos-api-port", talos.DefaultAPIPort, "Port of the Talos API on every node.")
	fs.DurationVar(&o.TalosCallTimeout, "talos-call-timeout", talos.DefaultCallTimeout, "Timeout of each Talos API call but image pulls and upgrades.")
	fs.DurationVar(&o.TalosInstallTimeout, "talos-install-timeout", talos.DefaultInstallTimeout, "Timeout of a Talos image pull and of an upgrade call, which download the installer image.")
	fs.DurationVar(&o.TalosConfigCacheTTL, "talosconfig-cache-ttl", manager.DefaultTalosConfigCacheTTL, "How long a parsed talosconfig is reused before its Secret is read again; a TLS failure drops it at once.")
	fs.StringVar(&o.ProfilerAddress, "profiler-address", "", "Serve net/http/pprof on this address, for example localhost:6060; off when empty.")
	fs.DurationVar(&o.SyncPeriod, "sync-period", manager.DefaultSyncPeriod, "Resync period of the caches.")
	fs.Float32Var(&qps, "kube-api-qps", 50, "Maximum queries per second to the management API server.")
	fs.IntVar(&burst, "kube-api-burst", 100, "Maximum burst of queries to the management API server.")
	printVersion := fs.Bool("version", false, "Print the version and exit.")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	pflag.Parse()

	if *printVersion {
		fmt.Println(version)
		return
	}
	// Request and response bodies, logged by client-go from -v=8, may hold
	// the Secrets Tollgate reads: never log them.
	redact.Install()
	ctrl.SetLogger(klog.Background())
	log := ctrl.Log.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Unable to load the kubeconfig")
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = manager.EventSource + "/" + version

	ctx := ctrl.SetupSignalHandler()
	mgr, err := manager.New(ctx, cfg, o)
	if err != nil {
		log.Error(err, "Unable to set up the manager")
		os.Exit(1)
	}
	log.Info("Starting manager", "version", version)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
}
