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

package soak

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/test/envtest"
	"github.com/tollgate-dev/tollgate/test/jobdriver"
)

// world is what a soak runs on: the management control plane behind its
// gate, the workload control planes behind theirs with a Job driver each,
// an in-process registry with the installer images, and the manager binary.
type world struct {
	mgmt      *envtest.Management
	mgmtGate  *Gate
	mgmtProxy *FaultProxy
	workloads []*workload
	registry  *httptest.Server
	regHost   string
	binary    string
	// kubeconfig is the management kubeconfig the controllers use, through
	// the gate.
	kubeconfig string
	canaries   *Canaries
	faults     requestFaultOptions
	stopDriver context.CancelFunc
}

// workload is a workload control plane shared by several Clusters.
type workload struct {
	*envtest.Workload
	gate   *Gate
	proxy  *FaultProxy
	driver *jobdriver.Driver
	// kubeconfig is the admin kubeconfig through the gate and the fault
	// proxy, as stored in the <cluster>-kubeconfig Secrets.
	kubeconfig []byte
}

// requestFaultOptions configure the fault proxies in front of the
// apiservers.
type requestFaultOptions struct {
	seed                  uint64
	percent, watchPercent float64
	count                 func(kind string)
}

func startWorld(ctx context.Context, dir, manager string, workloads int, versions []string, canaries *Canaries, rf requestFaultOptions) (_ *world, err error) {
	w := &world{canaries: canaries, faults: rf}
	defer func() {
		if err != nil {
			_ = w.stop()
		}
	}()
	w.binary = manager
	if w.binary == "" {
		w.binary = filepath.Join(dir, "manager")
		build := exec.CommandContext(ctx, "go", "build", "-o", w.binary, ".")
		build.Dir = envtest.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the manager: %w: %s", err, out)
		}
	}
	if w.mgmt, err = envtest.StartManagement(); err != nil {
		return nil, err
	}
	admin, err := w.mgmt.Env.AddUser(crenvtest.User{Name: "soak-controller", Groups: []string{"system:masters"}}, w.mgmt.Config)
	if err != nil {
		return nil, fmt.Errorf("adding the controller's user: %w", err)
	}
	if w.mgmtProxy, err = NewFaultProxy(admin.Config(), rf.seed, rf.percent, rf.watchPercent, rf.count); err != nil {
		return nil, err
	}
	if w.mgmtGate, err = NewGate(w.mgmtProxy.Addr); err != nil {
		return nil, err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("writing the controller's kubeconfig: %w", err)
	}
	if kc, err = ThroughProxy(kc, w.mgmtGate, w.mgmtProxy); err != nil {
		return nil, err
	}
	canaries.AddKeyMaterial("management kubeconfig", kc)
	w.kubeconfig = filepath.Join(dir, "management.kubeconfig")
	if err := os.WriteFile(w.kubeconfig, kc, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", w.kubeconfig, err)
	}

	w.registry = httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	w.regHost = strings.TrimPrefix(w.registry.URL, "http://")
	for _, v := range versions {
		if err := w.pushInstaller(ctx, v); err != nil {
			return nil, err
		}
	}

	driverCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.stopDriver = cancel
	for i := range workloads {
		wl, err := w.startWorkload(ctx, i)
		if err != nil {
			return nil, err
		}
		wl.driver.Start(driverCtx)
	}
	return w, nil
}

func (w *world) startWorkload(ctx context.Context, i int) (*workload, error) {
	// The first Cluster's Secret is written again by addCluster; the
	// workload needs a namespace and a name for it.
	ew, err := w.mgmt.StartWorkload(ctx, "default", fmt.Sprintf("workload-%d", i))
	if err != nil {
		return nil, fmt.Errorf("starting workload control plane %d: %w", i, err)
	}
	wl := &workload{Workload: ew, driver: jobdriver.New(ew.Client, jobdriver.Options{Delay: 150 * time.Millisecond})}
	w.workloads = append(w.workloads, wl)
	upstream, err := clientcmd.RESTConfigFromKubeConfig(ew.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parsing the kubeconfig of workload control plane %d: %w", i, err)
	}
	if wl.proxy, err = NewFaultProxy(upstream, w.faults.seed+uint64(i)+1, w.faults.percent, w.faults.watchPercent, w.faults.count); err != nil { //nolint:gosec // A small index.
		return nil, err
	}
	if wl.gate, err = NewGate(wl.proxy.Addr); err != nil {
		return nil, err
	}
	if wl.kubeconfig, err = ThroughProxy(ew.Kubeconfig, wl.gate, wl.proxy); err != nil {
		return nil, err
	}
	w.canaries.AddKeyMaterial(fmt.Sprintf("workload %d kubeconfig", i), wl.kubeconfig)
	return wl, nil
}

// storeKubeconfig writes the <cluster>-kubeconfig Secret of a Cluster,
// pointing at its workload's gate, with a planted canary.
func (w *world) storeKubeconfig(ctx context.Context, c *clusterv1.Cluster, wl *workload, canary string) error {
	s := kubeconfig.GenerateSecretWithOwner(client.ObjectKeyFromObject(c), wl.kubeconfig, metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: c.Name, UID: c.UID,
	})
	s.Data["soak-canary"] = []byte(canary)
	w.canaries.Add("kubeconfig Secret canary", []byte(canary))
	w.canaries.Add("kubeconfig Secret value", s.Data["value"])
	if err := w.mgmt.Client.Create(ctx, s); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

func (w *world) pushInstaller(ctx context.Context, version string) error {
	img, err := random.Image(512, 1)
	if err != nil {
		return err
	}
	ref, err := name.ParseReference(w.regHost + "/siderolabs/installer:" + version)
	if err != nil {
		return err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}

func (w *world) stop() error {
	if w.stopDriver != nil {
		w.stopDriver()
	}
	var errs []error
	for _, wl := range w.workloads {
		if wl.gate != nil {
			wl.gate.Close()
		}
		if wl.proxy != nil {
			wl.proxy.Close()
		}
	}
	if w.mgmtGate != nil {
		w.mgmtGate.Close()
	}
	if w.mgmtProxy != nil {
		w.mgmtProxy.Close()
	}
	if w.registry != nil {
		w.registry.Close()
	}
	if w.mgmt != nil {
		errs = append(errs, w.mgmt.Stop())
	}
	return kerrors.NewAggregate(errs)
}

// ThroughGate rewrites a kubeconfig's server to the gate's address; the
// apiserver's certificate is still checked, for the name it was issued to.
func ThroughGate(kc []byte, g *Gate) ([]byte, error) {
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return nil, fmt.Errorf("parsing a kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, fmt.Errorf("parsing server %q: %w", c.Server, err)
		}
		if c.TLSServerName == "" {
			c.TLSServerName = u.Hostname()
		}
		u.Host = g.Addr
		c.Server = u.String()
	}
	return clientcmd.Write(*cfg)
}
