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
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/builder"
	"github.com/tollgate-dev/tollgate/test/envtest"
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
	Workloads []*envtest.Workload
	// Proxy counts the controller's requests.
	Proxy *Proxy
	// Sim runs the Talos nodes of every Cluster.
	Sim *talossim.Simulator
	// Nodes records when nodes went down and came back.
	Nodes *NodeRecorder
	// RegistryHost is the host of the in-process OCI registry.
	RegistryHost string
	// OutDir holds the controller binary, kubeconfig and logs.
	OutDir string

	registry    *httptest.Server
	talosconfig []byte
	binary      string
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
	// Logf receives progress lines.
	Logf func(format string, args ...any)
}

// NewWorld builds the controller binary and starts the management and
// workload apiservers, the registry and the Talos simulator.
func NewWorld(ctx context.Context, o WorldOptions) (_ *World, reterr error) {
	w := &World{OutDir: o.OutDir, Nodes: &NodeRecorder{byNode: map[string]int{}, down: map[string]time.Time{}, ready: map[string]time.Time{}}}
	defer func() {
		if reterr != nil {
			_ = w.Close()
		}
	}()
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	o.Logf("Building the controller binary")
	w.binary = filepath.Join(o.OutDir, "tollgate-controller")
	build := exec.CommandContext(ctx, "go", "build", "-o", w.binary, ".")
	build.Dir = envtest.RepoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the controller: %w", err)
	}

	o.Logf("Starting the management apiserver")
	var err error
	if w.Mgmt, err = envtest.StartManagement(); err != nil {
		return nil, err
	}
	if w.Proxy, err = NewProxy(); err != nil {
		return nil, err
	}
	if err := w.Proxy.AddUpstream(managementRoute, w.Mgmt.Config); err != nil {
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
	w.Workloads = make([]*envtest.Workload, o.Workloads)
	errs := make([]error, o.Workloads)
	var wg sync.WaitGroup
	for i := range o.Workloads {
		wg.Go(func() {
			w.Workloads[i], errs[i] = w.Mgmt.StartWorkload(ctx, "bench-apiservers", fmt.Sprintf("apiserver-%d", i))
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
		w.Nodes.updaters = append(w.Nodes.updaters, &talossim.KubeNodeUpdater{Client: wl.Client})
	}

	w.registry = httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	w.RegistryHost = strings.TrimPrefix(w.registry.URL, "http://")
	if err := pushInstaller(w.RegistryHost, ToVersion); err != nil {
		return nil, err
	}
	if w.Sim, err = talossim.New(talossim.Options{Port: o.TalosPort, RebootDuration: o.RebootDuration, NodeUpdater: w.Nodes}); err != nil {
		return nil, err
	}
	return w, nil
}

// Close stops everything NewWorld started.
func (w *World) Close() error {
	var errs []error
	if w.Sim != nil {
		errs = append(errs, w.Sim.Close())
	}
	if w.registry != nil {
		w.registry.Close()
	}
	if w.Proxy != nil {
		errs = append(errs, w.Proxy.Close())
	}
	if w.Mgmt != nil {
		errs = append(errs, w.Mgmt.Stop())
	}
	return errors.Join(errs...)
}

func (w *World) kubeconfigPath() string { return filepath.Join(w.OutDir, "controller.kubeconfig") }

func workloadRoute(i int) string { return fmt.Sprintf("workload-%d", i) }

// pushInstaller pushes a random image as the installer of version.
func pushInstaller(host, version string) error {
	img, err := random.Image(512, 1)
	if err != nil {
		return err
	}
	ref, err := name.ParseReference(fmt.Sprintf("%s/siderolabs/installer:%s", host, version))
	if err != nil {
		return err
	}
	return remote.Write(ref, img)
}

// ClusterSpec describes a benchmark Cluster.
type ClusterSpec struct {
	Namespace, Name        string
	ControlPlanes, Workers int
	// Workload is the index of the workload apiserver holding its Nodes.
	Workload int
	// Policy is the TalosUpgradePolicy it opts in to.
	Policy string
	// Converged creates the Cluster on ToVersion already, without Talos
	// nodes: nothing is left to upgrade.
	Converged bool
}

// CreateCluster creates a Cluster, its Machines, its Talos nodes and its
// workload Nodes, and points its kubeconfig Secret at the proxy.
func (w *World) CreateCluster(ctx context.Context, c ClusterSpec) error {
	total := c.ControlPlanes + c.Workers
	version := FromVersion
	if c.Converged {
		version = ToVersion
	}
	addresses := make(map[string]string, total)
	for i := range total {
		machine := fmt.Sprintf("%s-cp-%d", c.Name, i)
		if i >= c.ControlPlanes {
			machine = fmt.Sprintf("%s-worker-%d", c.Name, i-c.ControlPlanes)
		}
		addresses[machine] = ""
		if c.Converged {
			continue
		}
		n, err := w.Sim.AddNode(talossim.NodeConfig{Name: machine, Version: version, ControlPlane: i < c.ControlPlanes})
		if err != nil {
			return fmt.Errorf("adding Talos node %s: %w", machine, err)
		}
		addresses[machine] = n.Address()
		w.Nodes.assign(machine, c.Workload)
	}
	if w.talosconfig == nil && !c.Converged {
		// One talosconfig for every Cluster, taken while it names few
		// endpoints: the dialer sets the Machine's address itself.
		tc, err := w.Sim.TalosConfig("bench")
		if err != nil {
			return err
		}
		w.talosconfig = tc
	}
	if _, err := builder.Create(ctx, w.Mgmt.Client, nil, builder.ClusterFixture{
		Namespace: c.Namespace, Name: c.Name, Policy: c.Policy, ControlPlanes: c.ControlPlanes, Workers: c.Workers,
		TalosVersion: version,
		Address:      func(_ int, machine string) string { return addresses[machine] },
	}); err != nil {
		return err
	}
	workload := w.Workloads[c.Workload].Client
	for machine := range addresses {
		opts := []builder.NodeOption{builder.WithNodeOSImage(version), func(n *corev1.Node) { n.Labels[NodeClusterLabel] = c.Name }}
		if strings.Contains(machine, "-cp-") {
			opts = append(opts, builder.WithNodeControlPlane())
		}
		if err := builder.CreateNode(ctx, workload, builder.Node(machine, opts...)); err != nil {
			return err
		}
	}
	if w.talosconfig != nil {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name + "-talosconfig", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": c.Name}},
			Data:       map[string][]byte{"talosconfig": w.talosconfig},
		}
		if err := w.Mgmt.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("creating the talosconfig Secret of %s/%s: %w", c.Namespace, c.Name, err)
		}
	}
	kubeconfig, err := w.Proxy.WorkloadKubeconfig(workloadRoute(c.Workload), c.Name)
	if err != nil {
		return err
	}
	return w.Mgmt.StoreKubeconfig(ctx, c.Namespace, c.Name, kubeconfig)
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
}

// CreatePolicy creates a policy to ToVersion (and its health check).
func (w *World) CreatePolicy(ctx context.Context, p PolicySpec) error {
	if err := w.Mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	mu := intstr.FromInt(p.MaxUnavailable)
	clusters := int32(max(p.MaxClustersInProgress, 1)) //nolint:gosec // Sized by a flag, far below 2^31.
	policy := &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: ToVersion,
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: w.RegistryHost + "/siderolabs/installer"},
			Rollout: upgradev1.RolloutSpec{
				Workers:               upgradev1.WorkerRollout{MaxUnavailable: &mu},
				MaxClustersInProgress: &clusters,
			},
		}},
	}
	if p.HealthCheck != "" {
		check := &upgradev1.ClusterHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.HealthCheck},
			Spec: upgradev1.ClusterHealthCheckSpec{
				Interval: &metav1.Duration{Duration: p.HealthCheckInterval},
				Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "check", Image: "busybox:1.37", Command: []string{"true"}}},
				}}}},
			},
		}
		if err := w.Mgmt.Client.Create(ctx, check); err != nil {
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

// NodeRecorder passes the simulator's node events to the right workload
// apiserver and records when each node went down and came back Ready.
type NodeRecorder struct {
	updaters []*talossim.KubeNodeUpdater

	mu     sync.Mutex
	byNode map[string]int
	down   map[string]time.Time
	ready  map[string]time.Time
}

var _ talossim.NodeUpdater = &NodeRecorder{}

func (r *NodeRecorder) assign(node string, workload int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byNode[node] = workload
}

func (r *NodeRecorder) updater(node string) *talossim.KubeNodeUpdater {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updaters[r.byNode[node]]
}

// NodeRebooting marks the Node NotReady.
func (r *NodeRecorder) NodeRebooting(ctx context.Context, node string) error {
	err := r.updater(node).NodeRebooting(ctx, node)
	r.mu.Lock()
	r.down[node] = time.Now()
	r.mu.Unlock()
	return err
}

// NodeBooted marks the Node Ready on version and records when.
func (r *NodeRecorder) NodeBooted(ctx context.Context, node, version string) error {
	err := r.updater(node).NodeBooted(ctx, node, version)
	r.mu.Lock()
	r.ready[node] = time.Now()
	r.mu.Unlock()
	return err
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
