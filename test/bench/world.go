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

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Versions of every benchmark rollout: the legacy upgrade API of Talos 1.12,
// whose upgrade call installs and reboots.
const (
	FromVersion = "v1.12.4"
	ToVersion   = "v1.13.0"
)

// managementRoute is the proxy route of the management apiserver.
const managementRoute = "management"

// World is the sandbox the benchmarks run in.
type World struct {
	// Mgmt is the management cluster.
	Mgmt *envtest.Management
	// Workloads are the workload apiservers; several Clusters share one.
	// Their Job drivers run only while a scenario needs them.
	Workloads []*sandbox.Workload
	// Proxy counts the controller's requests.
	Proxy *Proxy
	// Sim runs the Talos nodes of every Cluster.
	Sim *talossim.Simulator
	// Nodes records when nodes went down and came back.
	Nodes *NodeRecorder
	// OutDir holds the controller binary, kubeconfig and logs.
	OutDir string
	// Webhooks is where the controller serves the webhooks installed in the
	// management cluster; nil when they are not installed.
	Webhooks *WebhookServing

	sb     *sandbox.Sandbox
	binary string

	mu sync.Mutex
	// talosconfig is the one talosconfig of every Cluster.
	talosconfig []byte
}

// WorldOptions configure NewWorld.
type WorldOptions struct {
	// Workloads is the number of workload apiservers.
	Workloads int
	// RebootDuration is how long a simulated node is down.
	RebootDuration time.Duration
	// TalosPort is the port of every simulated node's Talos API.
	TalosPort int
	// OutDir receives the controller binary and logs.
	OutDir string
	// Webhooks installs Tollgate's webhook configurations (config/webhook)
	// in the management cluster, served by the controller process, as in
	// the Deployment of config/default.
	Webhooks bool
	// Logf receives progress lines.
	Logf func(format string, args ...any)
}

// NewWorld builds the controller binary and starts the sandbox: the
// management and workload apiservers, the registry and the Talos
// simulator every Cluster shares.
func NewWorld(ctx context.Context, o WorldOptions) (_ *World, reterr error) {
	w := &World{OutDir: o.OutDir, Nodes: &NodeRecorder{down: map[string]time.Time{}, ready: map[string]time.Time{}}}
	defer func() {
		if reterr != nil {
			_ = w.Close()
		}
	}()
	o.Logf("Building the controller binary")
	var err error
	if w.binary, err = sandbox.BuildManager(ctx, o.OutDir); err != nil {
		return nil, err
	}

	o.Logf("Starting the management apiserver")
	// The Job driver ends each Job as soon as it sees it.
	w.sb, err = sandbox.Start(ctx, sandbox.Options{
		InstallerVersions: []string{ToVersion}, RebootDuration: o.RebootDuration, TalosAPIPort: o.TalosPort, JobDelay: -1, Webhooks: o.Webhooks,
	})
	if err != nil {
		return nil, err
	}
	w.Mgmt = w.sb.Management
	if o.Webhooks {
		wo := &w.Mgmt.Env.WebhookInstallOptions
		w.Webhooks = &WebhookServing{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir, Username: sandbox.ControllerUsername}
	}
	if w.Proxy, err = NewProxy(); err != nil {
		return nil, err
	}
	// The controller acts as its own user (ControllerUsername when the
	// webhooks are served).
	if err := w.Proxy.AddUpstream(managementRoute, w.sb.ControllerConfig); err != nil {
		return nil, err
	}
	kubeconfig, err := w.Proxy.ManagementKubeconfig(managementRoute)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(w.kubeconfigPath(), kubeconfig, 0o600); err != nil {
		return nil, err
	}

	o.Logf("Starting %d workload apiserver(s)", o.Workloads)
	w.Workloads = make([]*sandbox.Workload, o.Workloads)
	errs := make([]error, o.Workloads)
	var wg sync.WaitGroup
	for i := range o.Workloads {
		wg.Go(func() {
			w.Workloads[i], errs[i] = w.sb.StartWorkload(ctx, "bench-apiservers", fmt.Sprintf("apiserver-%d", i), sandbox.WorkloadOptions{ManualJobDriver: true})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, wl := range w.Workloads {
		if err := w.Proxy.AddUpstream(workloadRoute(i), wl.Config); err != nil {
			return nil, err
		}
	}
	if w.Sim, err = w.sb.NewSimulator(w.Nodes); err != nil {
		return nil, err
	}
	return w, nil
}

// Close stops everything NewWorld started.
func (w *World) Close() error {
	errs := []error{w.sb.Stop()}
	if w.Proxy != nil {
		errs = append(errs, w.Proxy.Close())
	}
	return errors.Join(errs...)
}

func (w *World) kubeconfigPath() string { return filepath.Join(w.OutDir, "controller.kubeconfig") }

// controllerKubeconfig returns the kubeconfig of a controller whose
// management requests go through route: the World's for managementRoute,
// else one written for the route, which is added to the proxy.
func (w *World) controllerKubeconfig(route string) (string, error) {
	if route == managementRoute {
		return w.kubeconfigPath(), nil
	}
	if err := w.Proxy.AddUpstream(route, w.sb.ControllerConfig); err != nil {
		return "", err
	}
	kubeconfig, err := w.Proxy.ManagementKubeconfig(route)
	if err != nil {
		return "", err
	}
	path := filepath.Join(w.OutDir, "controller-"+route+".kubeconfig")
	return path, os.WriteFile(path, kubeconfig, 0o600)
}

func workloadRoute(i int) string { return fmt.Sprintf("workload-%d", i) }

// ClusterSpec describes a benchmark Cluster.
type ClusterSpec struct {
	Namespace, Name        string
	ControlPlanes, Workers int
	// Workload is the index of the workload apiserver holding its Nodes.
	Workload int
	// Policy is the TalosUpgradePolicy it opts in to.
	Policy string
	// Shard, when not "", labels the Cluster cluster.x-k8s.io/watch-filter=<Shard>.
	Shard string
	// Converged creates the Cluster on ToVersion already, without Talos
	// nodes: nothing is left to upgrade.
	Converged bool
}

// CreateCluster creates a Cluster, its Machines, its Talos nodes and its
// workload Nodes (labelled with NodeClusterLabel), and points its
// kubeconfig Secret at the proxy.
func (w *World) CreateCluster(ctx context.Context, c ClusterSpec) error {
	version := FromVersion
	if c.Converged {
		version = ToVersion
	}
	var copts []builder.ClusterOption
	if c.Policy != "" {
		copts = append(copts, builder.WithPolicy(c.Policy))
	}
	if c.Shard != "" {
		copts = append(copts, func(cl *clusterv1.Cluster) { setShard(cl, c.Shard) })
	}
	_, err := w.sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: c.Namespace, Name: c.Name, ControlPlanes: c.ControlPlanes, Workers: c.Workers, TalosVersion: version,
		Workload: w.Workloads[c.Workload], Simulator: w.Sim, WithoutTalos: c.Converged,
		Kubeconfig: func(*sandbox.Workload) ([]byte, error) {
			return w.Proxy.WorkloadKubeconfig(workloadRoute(c.Workload), c.Name)
		},
		Talosconfig:    func() ([]byte, error) { return w.sharedTalosconfig(!c.Converged) },
		ClusterOptions: copts,
		NodeOptions:    []builder.NodeOption{func(n *corev1.Node) { n.Labels[NodeClusterLabel] = c.Name }},
	})
	return err
}

// sharedTalosconfig returns the one talosconfig of every Cluster, taken
// from the simulator by the first Cluster with Talos nodes (take), while it
// names few endpoints: the dialer sets the Machine's address itself. It is
// nil until then.
func (w *World) sharedTalosconfig(take bool) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.talosconfig == nil && take {
		tc, err := w.Sim.TalosConfig("bench")
		if err != nil {
			return nil, err
		}
		w.talosconfig = tc
	}
	return w.talosconfig, nil
}

// PolicySpec describes a benchmark TalosUpgradePolicy.
type PolicySpec struct {
	Namespace, Name       string
	MaxUnavailable        int
	MaxClustersInProgress int
	// HealthCheck, when set, names a ClusterHealthCheck created with the
	// policy, whose Job passes at once, run at HealthCheckInterval.
	HealthCheck         string
	HealthCheckInterval time.Duration
	// Shard, when not "", labels the policy cluster.x-k8s.io/watch-filter=<Shard>.
	Shard string
}

// setShard labels o for the controller of shard (--watch-filter=<shard>).
func setShard(o client.Object, shard string) {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[clusterv1.WatchLabel] = shard
	o.SetLabels(labels)
}

// CreatePolicy creates a policy to ToVersion (and its health check).
func (w *World) CreatePolicy(ctx context.Context, p PolicySpec) error {
	if err := w.CreateNamespace(ctx, p.Namespace); err != nil {
		return err
	}
	policy := w.sb.Policy(p.Namespace, p.Name, ToVersion, func(policy *upgradev1.TalosUpgradePolicy) {
		mu := intstr.FromInt(p.MaxUnavailable)
		clusters := int32(max(p.MaxClustersInProgress, 1)) //nolint:gosec // Sized by a flag, far below 2^31.
		policy.Spec.Rollout.Workers.MaxUnavailable = &mu
		policy.Spec.Rollout.MaxClustersInProgress = &clusters
		if p.Shard != "" {
			setShard(policy, p.Shard)
		}
	})
	if p.HealthCheck != "" {
		if err := w.Mgmt.Client.Create(ctx, sandbox.HealthCheck(p.Namespace, p.HealthCheck, p.HealthCheckInterval, "true")); err != nil {
			return fmt.Errorf("creating ClusterHealthCheck %s: %w", p.HealthCheck, err)
		}
		policy.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: p.HealthCheck}}
	}
	if err := w.Mgmt.Client.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating TalosUpgradePolicy %s: %w", p.Name, err)
	}
	return nil
}

// Upgrades lists the TalosUpgrades of a namespace ("" for all).
func (w *World) Upgrades(ctx context.Context, namespace string) ([]upgradev1.TalosUpgrade, error) {
	list := &upgradev1.TalosUpgradeList{}
	var opts []client.ListOption
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := w.Mgmt.Client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// NodeRecorder records when each node went down and came back Ready; the
// sandbox has updated its Node in the workload apiserver already.
type NodeRecorder struct {
	mu    sync.Mutex
	down  map[string]time.Time
	ready map[string]time.Time
}

var _ talossim.NodeUpdater = &NodeRecorder{}

// NodeRebooting records when the node went down.
func (r *NodeRecorder) NodeRebooting(_ context.Context, node string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down[node] = time.Now()
	return nil
}

// NodeBooted records when the node was marked Ready.
func (r *NodeRecorder) NodeBooted(_ context.Context, node, _ string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready[node] = time.Now()
	return nil
}

// Ready returns when the node was last marked Ready after a reboot.
func (r *NodeRecorder) Ready(node string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.ready[node]
	return t, ok
}

// Down returns when the node last went down.
func (r *NodeRecorder) Down(node string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.down[node]
	return t, ok
}

// CreateNamespace creates a namespace in the management cluster.
func (w *World) CreateNamespace(ctx context.Context, ns string) error {
	if err := w.Mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Namespace %s: %w", ns, err)
	}
	return nil
}
