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
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// jobDelay is how long the container of each health-check and hook Job of
// the soak runs; the Job controller adds about a second to each Job.
const jobDelay = 150 * time.Millisecond

// world is what a soak runs on: a sandbox with Cluster API (the management
// control plane with CAPI core as its own process, the Talos-simulator
// infrastructure provider and the Talos providers' stand-ins; the workload
// control planes, each with the real Job controller and a jobdriver.Kubelet
// that runs its Pods; an in-process registry with the installer images)
// whose apiservers sit behind gates and fault proxies, and the manager
// binary. Tollgate reaches the management apiserver through its gate; CAPI
// core and the providers reach it directly, and the workload apiservers as
// the Clusters' kubeconfig Secrets say, through their gates, as Tollgate
// does; the nodes' stand-in kubelets report to them directly.
type world struct {
	sb        *sandbox.Sandbox
	mgmt      *envtest.Management
	mgmtGate  *Gate
	mgmtProxy *FaultProxy
	workloads []*workload
	binary    string
	// kubeconfig is the management kubeconfig the controllers use, through
	// the gate.
	kubeconfig string
	canaries   *Canaries
	faults     requestFaultOptions
	// dir receives CAPI core's log when the world stops.
	dir string
}

// workload is a workload control plane shared by several Clusters.
type workload struct {
	*sandbox.Workload
	gate  *Gate
	proxy *FaultProxy
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

// worldOptions configure startWorld.
type worldOptions struct {
	// dir receives the manager binary, unless manager names one, and the
	// controllers' kubeconfig.
	dir, manager string
	// workloads is the number of workload control planes.
	workloads int
	// versions are the installer images pushed into the registry.
	versions []string
	// talosPort is the Talos API port of every simulated node.
	talosPort int
	// logf reports the sandbox's set-up.
	logf func(format string, args ...any)
}

func startWorld(ctx context.Context, o worldOptions, canaries *Canaries, rf requestFaultOptions) (_ *world, err error) {
	w := &world{canaries: canaries, faults: rf, binary: o.manager, dir: o.dir}
	defer func() {
		if err != nil {
			_ = w.stop()
		}
	}()
	if w.binary == "" {
		if w.binary, err = sandbox.BuildManager(ctx, o.dir); err != nil {
			return nil, err
		}
	}
	w.sb, err = sandbox.Start(ctx, sandbox.Options{
		InstallerVersions: o.versions, TalosAPIPort: o.talosPort, JobDelay: jobDelay, JobController: true, RebootDuration: 500 * time.Millisecond,
		CAPI: true, Logf: o.logf,
	})
	if err != nil {
		return nil, err
	}
	w.mgmt = w.sb.Management
	admin, err := w.mgmt.AddAdmin("soak-controller")
	if err != nil {
		return nil, err
	}
	// The controllers act as the manager's ServiceAccount, bound to the
	// RBAC of config/default: the proxy forwards their requests as it.
	asManager, err := w.mgmt.ManagerConfig(ctx)
	if err != nil {
		return nil, err
	}
	if w.mgmtProxy, err = NewFaultProxy(asManager, rf.seed, rf.percent, rf.watchPercent, rf.count); err != nil {
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
	w.kubeconfig = filepath.Join(o.dir, "management.kubeconfig")
	if err := os.WriteFile(w.kubeconfig, kc, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", w.kubeconfig, err)
	}
	for i := range o.workloads {
		if err := w.startWorkload(ctx, i); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// startWorkload starts workload control plane i behind its gate and fault
// proxy.
func (w *world) startWorkload(ctx context.Context, i int) error {
	// The Clusters store their own kubeconfig Secret; the workload needs a
	// namespace and a name for one.
	sw, err := w.sb.StartWorkload(ctx, "default", fmt.Sprintf("workload-%d", i), sandbox.WorkloadOptions{})
	if err != nil {
		return fmt.Errorf("starting workload control plane %d: %w", i, err)
	}
	wl := &workload{Workload: sw}
	w.workloads = append(w.workloads, wl)
	upstream, err := clientcmd.RESTConfigFromKubeConfig(sw.Kubeconfig)
	if err != nil {
		return fmt.Errorf("parsing the kubeconfig of workload control plane %d: %w", i, err)
	}
	if wl.proxy, err = NewFaultProxy(upstream, w.faults.seed+uint64(i)+1, w.faults.percent, w.faults.watchPercent, w.faults.count); err != nil { //nolint:gosec // A small index.
		return err
	}
	if wl.gate, err = NewGate(wl.proxy.Addr); err != nil {
		return err
	}
	if wl.kubeconfig, err = ThroughProxy(sw.Kubeconfig, wl.gate, wl.proxy); err != nil {
		return err
	}
	w.canaries.AddKeyMaterial(fmt.Sprintf("workload %d kubeconfig", i), wl.kubeconfig)
	return nil
}

func (w *world) stop() error {
	if w.sb != nil && w.sb.CAPI != nil {
		// What CAPI core did, for whoever reads a violation.
		_ = os.WriteFile(filepath.Join(w.dir, "capi-core.log"), []byte(w.sb.CAPI.Output()), 0o600)
	}
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
	return w.sb.Stop()
}
