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

package clusterhealthcheck_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/podnetwork"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// The suite's world: a sandbox (the management cluster, the installer
// registry) whose Clusters' workload apiservers sit on a pod network, so
// that their Service proxies reach the tests' servers; the production
// manager runs the rollouts and the checks.
var (
	sb      *sandbox.Sandbox
	mgmt    *envtest.Management
	network *podnetwork.Network
)

const (
	fromVersion = "v1.12.4"
	toVersion   = "v1.13.0"
	policyName  = "to-1-13"
)

func TestMain(m *testing.M) {
	if envtest.NoteWithoutAssets("the ClusterHealthCheck controller suite (its tests in package clusterhealthcheck_test need a sandbox), running the tests that need none") {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	var err error
	if network, err = podnetwork.New(); err != nil {
		fmt.Fprintf(os.Stderr, "Starting the pod network: %v\n", err)
		return 1
	}
	defer func() { _ = network.Close() }()
	sb, err = sandbox.Start(context.Background(), sandbox.Options{
		InstallerVersions: []string{toVersion},
		RebootDuration:    300 * time.Millisecond,
		JobDelay:          100 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the sandbox: %v\n", err)
		return 1
	}
	defer func() { _ = sb.Stop() }()
	mgmt = sb.Management
	code := m.Run()
	// The manager runs as its ServiceAccount: a request its RBAC forbids
	// (reading a kubeconfig or a headers Secret) fails the suite.
	if forbidden := mgmt.ForbiddenRequests(); len(forbidden) > 0 {
		fmt.Fprintf(os.Stderr, "The manager made %d requests the RBAC of config/default forbids: %s\n", len(forbidden), strings.Join(forbidden, ", "))
		code = 1
	}
	return code
}

// world is one test's Cluster, on a workload apiserver of the pod network,
// and its namespace.
type world struct {
	t        *testing.T
	ns       string
	workload *sandbox.Workload
}

// newWorld creates a Cluster of one control-plane Machine and one worker
// on Talos fromVersion, opted in to the policy to-1-13, in a namespace of
// the test's own.
func newWorld(t *testing.T) *world {
	t.Helper()
	g := NewWithT(t)
	w := &world{t: t, ns: namespaceFor(t)}
	cp, err := network.StartWorkload()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	driver := jobdriver.New(cp.Client, jobdriver.Options{})
	driver.Start(ctx)
	w.workload = &sandbox.Workload{Workload: cp, Jobs: driver, Driver: driver}
	c, err := sb.CreateCluster(context.Background(), sandbox.ClusterOptions{
		Namespace: w.ns, Name: "alpha", ControlPlanes: 1, Workers: 1, TalosVersion: fromVersion, Workload: w.workload,
		ClusterOptions: []builder.ClusterOption{builder.WithPolicy(policyName)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Stop() })
	return w
}

// startManager runs the production manager, for the test's namespace,
// until the test ends.
func (w *world) startManager() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	NewWithT(w.t).Expect(sb.StartManager(ctx, manager.Options{Namespace: w.ns, Concurrency: 4, TalosCallTimeout: 3 * time.Second})).To(Succeed())
	w.t.Cleanup(func() { _ = sb.StopManager() })
}

// createPolicy creates the policy to-1-13, gated by the checks named.
func (w *world) createPolicy(checks ...string) {
	w.t.Helper()
	NewWithT(w.t).Expect(mgmt.Client.Create(context.Background(), sb.Policy(w.ns, policyName, toVersion, func(p *upgradev1.TalosUpgradePolicy) {
		for _, c := range checks {
			p.Spec.HealthChecks = append(p.Spec.HealthChecks, upgradev1.HealthCheckRef{Name: c})
		}
	}))).To(Succeed())
}

// upgrade reads the Cluster's TalosUpgrade.
func (w *world) upgrade(g Gomega) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "alpha"}, u)).To(Succeed())
	return u
}

// check reads a ClusterHealthCheck.
func (w *world) check(g Gomega, name string) *upgradev1.ClusterHealthCheck {
	c := &upgradev1.ClusterHealthCheck{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, c)).To(Succeed())
	return c
}

// anyStarted reports whether a Machine of the rollout left Pending.
func anyStarted(u *upgradev1.TalosUpgrade) bool {
	for _, m := range u.Status.Machines {
		if m.StartTime != nil {
			return true
		}
	}
	return false
}

// namespaceFor returns a DNS-1123 namespace name for a test.
func namespaceFor(t *testing.T) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	return strings.Trim(name, "-")
}

// envtestOnly skips a test of the suite, saying so and naming
// KUBEBUILDER_ASSETS, when the envtest binaries are not set: the suite's world
// was not started, and the tests of the package that need none still run
// (make test-unit).
func envtestOnly(t *testing.T) {
	t.Helper()
	envtest.SkipWithoutAssets(t)
}
