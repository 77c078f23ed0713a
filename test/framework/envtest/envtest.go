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

package envtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
)

// capiModule is the Go module whose CRDs the management cluster installs.
const capiModule = "sigs.k8s.io/cluster-api"

// NewScheme returns a scheme with the Kubernetes built-in kinds, CAPI's core
// kinds and Tollgate's kinds.
func NewScheme() *kruntime.Scheme {
	s := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, upgradev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("building the test scheme: %v", err)) // Programming error: the schemes are static.
		}
	}
	return s
}

// RepoRoot returns the root of the Tollgate repository.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

var (
	capiModuleOnce sync.Once
	capiDir        string
	capiVersion    string
	capiModuleErr  error
)

// capiModuleInfo returns the module directory and the version of
// sigs.k8s.io/cluster-api that Tollgate is built against.
func capiModuleInfo() (dir, version string, err error) {
	capiModuleOnce.Do(func() {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", capiModule)
		cmd.Dir = RepoRoot()
		out, err := cmd.Output()
		if err != nil {
			capiModuleErr = fmt.Errorf("finding the module directory of %s with go list: %w", capiModule, err)
			return
		}
		var ok bool
		if capiDir, capiVersion, ok = strings.Cut(strings.TrimSpace(string(out)), " "); !ok || capiDir == "" {
			capiModuleErr = fmt.Errorf("go list -m %s printed %q, not a directory and a version", capiModule, out)
		}
	})
	return capiDir, capiVersion, capiModuleErr
}

// CRDDirectories returns the directories of the CRDs the management cluster
// needs: Tollgate's (config/crd/bases) and CAPI's core CRDs from the module
// directory of sigs.k8s.io/cluster-api.
func CRDDirectories() ([]string, error) {
	dir, _, err := capiModuleInfo()
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(RepoRoot(), "config", "crd", "bases"),
		filepath.Join(dir, "core", "config", "crd", "bases"),
	}, nil
}

// ControlPlane is a running kube-apiserver and etcd.
type ControlPlane struct {
	// Env is the envtest environment that runs the control plane.
	Env *crenvtest.Environment
	// Config is an admin rest.Config for the control plane.
	Config *rest.Config
	// Client is an uncached admin client with NewScheme, which can watch.
	Client client.WithWatch
}

// Stop stops the control plane.
func (c *ControlPlane) Stop() error {
	if c == nil || c.Env == nil {
		return nil
	}
	return c.Env.Stop()
}

// AddAdmin adds a user named name to the system:masters group of the
// control plane; its Config and KubeConfig authenticate as that user.
func (c *ControlPlane) AddAdmin(name string) (*crenvtest.AuthenticatedUser, error) {
	user, err := c.Env.AddUser(crenvtest.User{Name: name, Groups: []string{"system:masters"}}, c.Config)
	if err != nil {
		return nil, fmt.Errorf("adding the administrator %s: %w", name, err)
	}
	return user, nil
}

// StartControlPlane starts a bare control plane, with no CRDs: a workload
// cluster for the tests of a package that needs no management cluster.
func StartControlPlane() (*ControlPlane, error) {
	return startControlPlane(&crenvtest.Environment{})
}

// StopTimeout is how long a test control plane's processes are given to
// stop before they are killed.
const StopTimeout = 30 * time.Second

// Configure readies env, before its Start, to run a test control plane: its
// start and stop timeouts, and a kube-apiserver that stops within seconds
// while clients still watch it.
func Configure(env *crenvtest.Environment) {
	// Fail fast and readably instead of waiting a minute on a broken apiserver.
	env.ControlPlaneStartTimeout = 2 * time.Minute
	// A stopped test control plane holds no data worth a graceful shutdown,
	// but on a loaded machine (a load average of 50 on 2 cores) an apiserver
	// takes more than 5s to stop: it is then killed, and envtest reports the
	// stop as failed.
	env.ControlPlaneStopTimeout = StopTimeout
	// A kube-apiserver told to stop closes its listener, then waits for its
	// HTTP connections to end: up to its request timeout, a minute, while a
	// client keeps a watch open, as a suite's manager does on the workload of
	// a Cluster a test stops. envtest then killed it after StopTimeout, 30s a
	// Cluster (12 times, 6 minutes, in a make test). With
	// --shutdown-send-retry-after it answers requests that arrive meanwhile
	// with a 429 and a Retry-After, then gives its connections 2s, as a real
	// one behind a load balancer does.
	env.ControlPlane.GetAPIServer().Configure().Set("shutdown-send-retry-after", "true")
}

func startControlPlane(env *crenvtest.Environment) (*ControlPlane, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" && env.BinaryAssetsDirectory == "" {
		return nil, ErrNoAssets
	}
	env.Scheme = NewScheme()
	Configure(env)
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting an envtest control plane: %w", err)
	}
	// Tests and controllers run many requests; the client-go defaults (5 qps)
	// would make the tests measure the rate limiter.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating a client for the envtest control plane: %w", err)
	}
	return &ControlPlane{Env: env, Config: cfg, Client: c}, nil
}

// Management is the management cluster: a control plane with Tollgate's and
// CAPI's CRDs, and the workload control planes started from it.
type Management struct {
	ControlPlane

	// ReuseWorkloads makes StartWorkload start workload control planes
	// that ReleaseWorkload can empty and keep for the next StartWorkload,
	// and StartWorkload take such a one when there is one.
	ReuseWorkloads bool

	mu        sync.Mutex
	workloads []*Workload
	// idle are the released workloads, emptied.
	idle []*Workload
	// reuse, for a management a ManagementPool started, empties it for
	// the pool's next test.
	reuse *reuse
}

// ManagementOption configures StartManagement.
type ManagementOption func(*crenvtest.Environment)

// WithWebhooks installs the webhook configurations found in paths (for
// example config/webhook) so that the apiserver calls the webhooks served on
// the environment's WebhookInstallOptions host, port and certificates.
func WithWebhooks(paths ...string) ManagementOption {
	return func(env *crenvtest.Environment) {
		env.WebhookInstallOptions.Paths = append(env.WebhookInstallOptions.Paths, paths...)
	}
}

// WithCRDDirectories installs the CRDs of more directories, for example the
// Talos CAPI provider CRDs.
func WithCRDDirectories(dirs ...string) ManagementOption {
	return func(env *crenvtest.Environment) {
		env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, dirs...)
	}
}

// StartManagement starts a management control plane with Tollgate's and
// CAPI's CRDs installed.
func StartManagement(opts ...ManagementOption) (*Management, error) {
	dirs, err := CRDDirectories()
	if err != nil {
		return nil, err
	}
	env := &crenvtest.Environment{
		CRDDirectoryPaths:     dirs,
		ErrorIfCRDPathMissing: true,
	}
	for _, opt := range opts {
		opt(env)
	}
	cp, err := startControlPlane(env)
	if err != nil {
		return nil, err
	}
	return &Management{ControlPlane: *cp}, nil
}

// IndexedClient returns a client that reads, as the manager's does, from a
// cache holding Tollgate's field indexes (index.Add), and writes to the
// apiserver: what a webhook or a reconciler under test is given. The cache
// stops with ctx.
func (m *Management) IndexedClient(ctx context.Context) (client.Client, error) {
	c, err := cache.New(m.Config, cache.Options{Scheme: m.Client.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating the cache: %w", err)
	}
	if err := index.Add(ctx, c); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.New("the cache did not sync")
	}
	return client.New(m.Config, client.Options{Scheme: m.Client.Scheme(), Cache: &client.CacheOptions{Reader: c}})
}

// Stop stops the workload control planes started from m, then m.
func (m *Management) Stop() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	workloads := m.workloads
	m.workloads, m.idle = nil, nil
	m.mu.Unlock()
	// At once: each may take the whole stop timeout.
	errs := make([]error, len(workloads)+1)
	var wg sync.WaitGroup
	for i, w := range workloads {
		wg.Go(func() { errs[i] = w.Stop() })
	}
	wg.Go(func() { errs[len(workloads)] = m.ControlPlane.Stop() })
	wg.Wait()
	return kerrors.NewAggregate(errs)
}

// Workload is a workload cluster's control plane.
type Workload struct {
	ControlPlane

	// Kubeconfig is an admin kubeconfig for the workload control plane, as
	// stored in the management cluster's <cluster>-kubeconfig Secret.
	Kubeconfig []byte

	// reuse, with Management.ReuseWorkloads, empties it for reuse.
	reuse *reuse
}

// StartWorkload starts a workload control plane for the CAPI Cluster
// namespace/clusterName and stores its kubeconfig in the management cluster
// the way CAPI does: Secret <cluster>-kubeconfig, key "value", type
// cluster.x-k8s.io/secret, labelled cluster.x-k8s.io/cluster-name. When the
// Cluster exists, the Secret is owned by it.
func (m *Management) StartWorkload(ctx context.Context, namespace, clusterName string) (*Workload, error) {
	if w := m.reused(); w != nil {
		if err := m.StoreKubeconfig(ctx, namespace, clusterName, w.Kubeconfig); err != nil {
			m.forget(w)
			return nil, errors.Join(err, w.Stop())
		}
		return w, nil
	}
	cp, err := startControlPlane(&crenvtest.Environment{})
	if err != nil {
		return nil, err
	}
	w := &Workload{ControlPlane: *cp}
	m.mu.Lock()
	m.workloads = append(m.workloads, w)
	m.mu.Unlock()

	user, err := cp.AddAdmin("tollgate-admin")
	if err != nil {
		return nil, fmt.Errorf("adding an admin user to the workload control plane of %s/%s: %w", namespace, clusterName, err)
	}
	w.Kubeconfig, err = user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of the workload control plane of %s/%s: %w", namespace, clusterName, err)
	}
	if m.ReuseWorkloads {
		if w.reuse, err = newReuse(ctx, &w.ControlPlane); err != nil {
			return nil, err
		}
	}
	if err := m.StoreKubeconfig(ctx, namespace, clusterName, w.Kubeconfig); err != nil {
		return nil, err
	}
	return w, nil
}

// StoreKubeconfig creates or replaces the <cluster>-kubeconfig Secret of the
// Cluster namespace/clusterName, with CAPI's own helper. Several Clusters may
// point at one workload control plane. mutate adjusts the Secret (more keys,
// for example) before it is written.
func (m *Management) StoreKubeconfig(ctx context.Context, namespace, clusterName string, data []byte, mutate ...func(*corev1.Secret)) error {
	if err := m.ensureNamespace(ctx, namespace); err != nil {
		return err
	}
	cluster := &clusterv1.Cluster{}
	owner := metav1.OwnerReference{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, cluster); err == nil {
		owner = metav1.OwnerReference{
			APIVersion: clusterv1.GroupVersion.String(),
			Kind:       "Cluster",
			Name:       cluster.Name,
			UID:        cluster.UID,
		}
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Cluster %s/%s: %w", namespace, clusterName, err)
	}
	secret := kubeconfig.GenerateSecretWithOwner(client.ObjectKey{Namespace: namespace, Name: clusterName}, data, owner)
	if owner.UID == "" {
		secret.OwnerReferences = nil
	}
	for _, fn := range mutate {
		fn(secret)
	}
	if err := m.Client.Create(ctx, secret); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
		existing := &corev1.Secret{}
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(secret), existing); err != nil {
			return fmt.Errorf("reading Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
		existing.Data = secret.Data
		if err := m.Client.Update(ctx, existing); err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
	}
	return nil
}

func (m *Management) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := m.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Namespace %s: %w", name, err)
	}
	return nil
}
