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

package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// A Cluster of three control-plane and three worker Machines on Talos
// v1.12.4, upgraded to v1.13.0 by the production manager behind its
// webhooks, with a health check that fails once. (Compiled, not run: it
// needs KUBEBUILDER_ASSETS.)
func ExampleStart() {
	ctx := context.Background()
	sb, err := sandbox.Start(ctx, sandbox.Options{Webhooks: true, InstallerVersions: []string{"v1.13.0"}, RebootDuration: time.Second})
	if err != nil {
		panic(err)
	}
	defer func() { _ = sb.Stop() }()
	if err := sb.StartManager(ctx, manager.Options{}); err != nil {
		panic(err)
	}
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "fleet", Name: "prod", ControlPlanes: 3, Workers: 3})
	if err != nil {
		panic(err)
	}
	c.Workload.Jobs.Script(jobdriver.NamePrefix(healthchecks.JobName("ceph", "prod")), jobdriver.Outcome{Fail: true, Message: "HEALTH_WARN"})
	if err := sb.Management.Client.Create(ctx, sandbox.HealthCheck("fleet", "ceph", 5*time.Second, "ceph", "health")); err != nil {
		panic(err)
	}
	policy := sb.Policy("fleet", "to-1-13", "v1.13.0", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "ceph"}}
	})
	if err := sb.Management.Client.Create(ctx, policy); err != nil {
		panic(err)
	}
	if err := c.OptIn(ctx, "to-1-13"); err != nil {
		panic(err)
	}
	// ... wait, then read the rollout:
	u, err := sb.Upgrade(ctx, "fleet", "prod")
	if err != nil {
		panic(err)
	}
	fmt.Println(u.Status.Phase, u.Status.Progress)
}

// A fleet of ten Clusters whose Nodes share one workload control plane and
// whose Talos nodes share one simulator, each Cluster's kubeconfig Secret
// pointing through a proxy, and the manager run as a process of its own.
// (Compiled, not run: it needs KUBEBUILDER_ASSETS.)
func ExampleSandbox_NewSimulator() {
	ctx := context.Background()
	sb, err := sandbox.Start(ctx, sandbox.Options{InstallerVersions: []string{"v1.13.0"}})
	if err != nil {
		panic(err)
	}
	defer func() { _ = sb.Stop() }()
	workload, err := sb.StartWorkload(ctx, "fleet", "shared", sandbox.WorkloadOptions{})
	if err != nil {
		panic(err)
	}
	sim, err := sb.NewSimulator(nil)
	if err != nil {
		panic(err)
	}
	throughProxy := func(w *sandbox.Workload) ([]byte, error) {
		return w.Kubeconfig, nil // ... rewritten to reach w through a proxy.
	}
	for i := range 10 {
		if _, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{
			Namespace: "fleet", Name: fmt.Sprintf("c%02d", i), ControlPlanes: 1, Workers: 2,
			Workload: workload, Simulator: sim, Kubeconfig: throughProxy,
		}); err != nil {
			panic(err)
		}
	}
	binary, err := sandbox.BuildManager(ctx, os.TempDir())
	if err != nil {
		panic(err)
	}
	kubeconfig, err := sb.WriteManagerKubeconfig(os.TempDir())
	if err != nil {
		panic(err)
	}
	fmt.Println("KUBECONFIG="+kubeconfig, binary, fmt.Sprintf("--talos-api-port=%d", sim.Port()))
}

// A Cluster made by Cluster API, and its workers updated in place the
// GitOps way: Tollgate serves as CAPI's in-place update extension, the
// policy takes its target from CAPI, and a new template for the workers'
// MachineDeployment makes CAPI hand each worker to Tollgate. (Compiled, not
// run: it needs KUBEBUILDER_ASSETS.)
func ExampleCluster_SetWorkersTalosVersion() {
	ctx := context.Background()
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Extension: true, Webhooks: true, InstallerVersions: []string{"v1.13.0"}})
	if err != nil {
		panic(err)
	}
	defer func() { _ = sb.Stop() }()
	if err := sb.StartManager(ctx, manager.Options{}); err != nil { // Serves the extension; CAPI has discovered it.
		panic(err)
	}
	c, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: "fleet", Name: "prod", ControlPlanes: 1, Workers: 3, TalosVersion: "v1.12.4", InPlaceUpdates: true})
	if err != nil {
		panic(err)
	}
	policy := sb.Policy("fleet", "from-templates", "", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TargetFrom = upgradev1.TargetFromCAPI
	})
	if err := sb.Management.Client.Create(ctx, policy); err != nil {
		panic(err)
	}
	if err := c.OptIn(ctx, "from-templates"); err != nil {
		panic(err)
	}
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker) // prod-md-0-<random>-<random>
	if err != nil {
		panic(err)
	}
	template, err := c.SetWorkersTalosVersion(ctx, "v1.13.0")
	if err != nil {
		panic(err)
	}
	// ... wait, then the same workers run v1.13.0, as CAPI reports in their
	// status.nodeInfo:
	fmt.Println(template, workers)
}
