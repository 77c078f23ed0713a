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
	"fmt"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/test/envtest"
	"github.com/tollgate-dev/tollgate/test/jobdriver"
)

// Workload is a workload control plane and the Job driver that runs its
// Jobs. Several Clusters may share one (ClusterOptions.Workload).
type Workload struct {
	*envtest.Workload

	// Driver plays the Job controller and the kubelet; script the outcome
	// of health-check and hook Jobs with Driver.Script.
	Driver *jobdriver.Driver

	stopDriver context.CancelFunc
}

// WorkloadOptions configure StartWorkload.
type WorkloadOptions struct {
	// ManualJobDriver leaves the Job driver stopped until the caller runs
	// Driver.Start: for a world whose Jobs run in some phases only, and
	// whose apiserver should not serve the driver's polls meanwhile.
	ManualJobDriver bool
}

// StartWorkload starts a workload control plane and its Job driver, and
// stores its kubeconfig as the <clusterName>-kubeconfig Secret of
// namespace. CreateCluster calls it unless given a Workload. It may be
// called from several goroutines.
func (s *Sandbox) StartWorkload(ctx context.Context, namespace, clusterName string, o WorkloadOptions) (*Workload, error) {
	start := time.Now()
	w, err := s.Management.StartWorkload(ctx, namespace, clusterName)
	if err != nil {
		return nil, fmt.Errorf("starting the workload control plane of %s/%s: %w", namespace, clusterName, err)
	}
	driverCtx, cancel := context.WithCancel(context.Background())
	wl := &Workload{Workload: w, Driver: jobdriver.New(w.Client, jobdriver.Options{Delay: s.opts.JobDelay}), stopDriver: cancel}
	if !o.ManualJobDriver {
		wl.Driver.Start(driverCtx)
	}
	s.mu.Lock()
	s.workloads = append(s.workloads, wl)
	s.mu.Unlock()
	s.logf("Started the workload control plane of Cluster %s/%s (kube-apiserver %s) in %s", namespace, clusterName, w.Config.Host, since(start))
	return wl, nil
}

// stopWorkload stops the Job driver and the control plane of w, and
// forgets it.
func (s *Sandbox) stopWorkload(w *Workload) error {
	s.mu.Lock()
	s.workloads = slices.DeleteFunc(s.workloads, func(o *Workload) bool { return o == w })
	s.mu.Unlock()
	w.stopDriver()
	return w.Stop()
}
