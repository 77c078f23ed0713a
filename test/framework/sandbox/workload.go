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
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/secret"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// Workload is a workload control plane and what runs its Jobs. Several
// Clusters may share one (ClusterOptions.Workload).
type Workload struct {
	*envtest.Workload

	// Jobs runs the workload's Jobs: Driver, or with Options.JobController
	// the Kubelet beside the real Job controller. Script the outcome of
	// health-check and hook Jobs with Jobs.Script.
	Jobs jobdriver.Runner

	// Driver plays the Job controller and the kubelet; nil with
	// Options.JobController.
	Driver *jobdriver.Driver

	// JobController is the kube-controller-manager that runs the Job
	// controller, the garbage collector and the TTL-after-finished
	// controller of the workload, and Kubelet the stand-in for the kubelet
	// that runs its Pods; both nil without Options.JobController.
	JobController *envtest.JobController
	Kubelet       *jobdriver.Kubelet

	stopDriver context.CancelFunc
}

// WorkloadOptions configure StartWorkload.
type WorkloadOptions struct {
	// ManualJobDriver leaves Jobs stopped until the caller runs Jobs.Start:
	// for a world whose Jobs run in some phases only, and whose apiserver
	// should not serve the driver's watch meanwhile. The Job controller,
	// when there is one, runs from the start.
	ManualJobDriver bool
}

// StartWorkload starts a workload control plane and what runs its Jobs (the
// Job driver, or the Job controller and the Kubelet), and stores its
// kubeconfig as the <clusterName>-kubeconfig Secret of namespace.
// CreateCluster calls it unless given a Workload. It may be called from
// several goroutines.
func (s *Sandbox) StartWorkload(ctx context.Context, namespace, clusterName string, o WorkloadOptions) (_ *Workload, err error) {
	start := time.Now()
	w, err := s.Management.StartWorkload(ctx, namespace, clusterName)
	if err != nil {
		return nil, fmt.Errorf("starting the workload control plane of %s/%s: %w", namespace, clusterName, err)
	}
	driverCtx, cancel := context.WithCancel(context.Background())
	wl := &Workload{Workload: w, stopDriver: cancel}
	// Registered before the Job controller starts, so that Stop stops
	// whatever started.
	s.mu.Lock()
	s.workloads = append(s.workloads, wl)
	s.mu.Unlock()
	runs := "the Job driver"
	if s.opts.JobController {
		if err := wl.startJobController(s.opts.JobDelay); err != nil {
			return nil, fmt.Errorf("starting the Job controller of %s/%s: %w", namespace, clusterName, err)
		}
		runs = "the Job controller"
	} else {
		wl.Driver = jobdriver.New(w.Client, jobdriver.Options{Delay: s.opts.JobDelay})
		wl.Jobs = wl.Driver
	}
	if !o.ManualJobDriver {
		wl.Jobs.Start(driverCtx)
	}
	go rollOutDaemonSets(driverCtx, w.Client)
	s.logf("Started the workload control plane of Cluster %s/%s (kube-apiserver %s, %s) in %s", namespace, clusterName, w.Config.Host, runs, since(start))
	return wl, nil
}

// startJobController starts kube-controller-manager against the workload
// and a Kubelet whose containers run for delay.
func (w *Workload) startJobController(delay time.Duration) error {
	jc, err := w.StartJobController()
	if err != nil {
		return err
	}
	stop := w.stopDriver
	w.JobController = jc
	w.stopDriver = func() {
		stop()
		_ = jc.Stop()
	}
	if w.Kubelet, err = jobdriver.NewKubelet(w.Config, jobdriver.KubeletOptions{Delay: delay}); err != nil {
		return err
	}
	w.Jobs = w.Kubelet
	return nil
}

// stopWorkload stops what runs the Jobs of w and its control plane, and
// forgets it.
func (s *Sandbox) stopWorkload(w *Workload) error {
	s.detachWorkload(w)
	return w.Stop()
}

// detachWorkload stops what runs the Jobs of w and forgets it; its control
// plane runs on.
func (s *Sandbox) detachWorkload(w *Workload) {
	s.mu.Lock()
	s.workloads = slices.DeleteFunc(s.workloads, func(o *Workload) bool { return o == w })
	s.mu.Unlock()
	w.stopDriver()
}

// releaseWorkload ends the use of the workload c started: stopped, or with
// Options.ReuseWorkloads given to the next Cluster once no manager runs, or
// with Options.Managements left to the sandbox's Stop.
// Its kubeconfig Secret is deleted first, so that nothing in the management
// cluster reaches it through c.
func (s *Sandbox) releaseWorkload(c *Cluster) error {
	w := c.Workload
	if s.opts.Managements != nil {
		// Emptied with the management when the sandbox stops, once CAPI
		// core, the providers and the nodes no longer write into it.
		s.detachWorkload(w)
		return nil
	}
	if !s.Management.ReuseWorkloads {
		return s.stopWorkload(w)
	}
	s.detachWorkload(w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kubeconfig := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: secret.Name(c.Name, secret.Kubeconfig)}}
	if err := s.Management.Client.Delete(ctx, kubeconfig); err != nil && !apierrors.IsNotFound(err) {
		return errors.Join(fmt.Errorf("deleting the kubeconfig Secret of %s/%s: %w", c.Namespace, c.Name, err), w.Stop())
	}
	s.mu.Lock()
	if s.stopMgr != nil {
		s.released = append(s.released, w)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return s.Management.ReleaseWorkload(ctx, w.Workload)
}
