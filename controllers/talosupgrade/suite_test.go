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

package talosupgrade_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/sampler"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
	"github.com/tollgate-dev/tollgate/webhooks"
)

var (
	// sb is the suite's world: the management cluster, the registry with
	// the installer images, and the Clusters the tests create.
	sb   *sandbox.Sandbox
	mgmt *envtest.Management
	// registryHost is the host of the in-process OCI registry.
	registryHost string
)

const (
	fromVersion = "v1.12.4"
	toVersion   = "v1.13.0"
	// patchVersion is a target for nodes already on the Talos 1.13
	// lifecycle API.
	patchVersion = "v1.13.1"
)

func TestMain(m *testing.M) {
	if envtest.NoteWithoutAssets("the rollout engine suite (its tests in package talosupgrade_test need a sandbox), running the controller's tests that need none") {
		os.Exit(m.Run())
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	var err error
	sb, err = sandbox.Start(context.Background(), sandbox.Options{
		InstallerVersions: []string{toVersion, patchVersion},
		RebootDuration:    300 * time.Millisecond,
		JobDelay:          100 * time.Millisecond,
		// Each test makes a Cluster of its own: its workload control plane
		// is the last test's, emptied, rather than a new one.
		ReuseWorkloads: true,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the sandbox: %v\n", err)
		os.Exit(1)
	}
	mgmt, registryHost = sb.Management, sb.RegistryHost
	code := m.Run()
	// The manager runs as its ServiceAccount: a request its RBAC forbids
	// fails the suite, even one that left no other trace (an event).
	if forbidden := mgmt.ForbiddenRequests(); len(forbidden) > 0 {
		fmt.Fprintf(os.Stderr, "The manager made %d requests the RBAC of config/default forbids: %s\n", len(forbidden), strings.Join(forbidden, ", "))
		code = 1
	}
	_ = sb.Stop()
	os.Exit(code)
}

// TestManagerRunsAsItsServiceAccount checks the identity the suite's
// manager runs with (sandbox.StartManager): the ServiceAccount config/default
// runs it as, held by the apiserver to the RBAC config/default ships, so that
// a request the RBAC does not allow fails a test here as it would fail in a
// cluster.
func TestManagerRunsAsItsServiceAccount(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := t.Context()
	cfg := rest.CopyConfig(sb.ControllerConfig)
	cfg.WrapTransport = nil // These refusals are asked for: not the manager's.
	c, err := client.New(cfg, client.Options{Scheme: mgmt.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(c.Create(ctx, review)).To(Succeed())
	g.Expect(review.Status.UserInfo.Username).To(Equal(webhooks.DefaultControllerUsername))
	g.Expect(review.Status.UserInfo.Groups).To(ContainElement("system:serviceaccounts:tollgate-system"))

	err = c.List(ctx, &corev1.SecretList{}, client.InNamespace("default"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing Secrets: %v", err)
	err = c.Delete(ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "any"}})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting a Machine: %v", err)
}

// rollout is one test's world: a Cluster whose workload control plane,
// Talos nodes and Job driver are real, and a running manager.
type rollout struct {
	t         *testing.T
	ns        string
	workload  *sandbox.Workload
	sim       *talossim.Simulator
	fixture   *builder.Fixture
	driver    *jobdriver.Driver
	mgrConfig manager.Options
}

type rolloutOptions struct {
	controlPlanes, workers int
	version                string
	// kubernetes is the Kubernetes version of the nodes; the builder's
	// default when empty.
	kubernetes string
	// kubeletRepository is the repository of the nodes' kubelet image;
	// Talos' default when empty (sandbox.ClusterOptions.KubeletRepository).
	kubeletRepository string
	// reboot is how long a node takes to reboot; 300ms when zero.
	reboot         time.Duration
	machineOptions []builder.MachineOption
	clusterOptions []builder.ClusterOption
	// kubeconfig, when set, is what the Cluster's kubeconfig Secret holds
	// (sandbox.ClusterOptions.Kubeconfig).
	kubeconfig func(*sandbox.Workload) ([]byte, error)
}

// newRollout creates a Cluster of Talos nodes, opted in to the policy
// to-1-13, in a fresh namespace.
func newRollout(t *testing.T, o rolloutOptions) *rollout {
	t.Helper()
	g := NewWithT(t)
	if o.version == "" {
		o.version = fromVersion
	}
	r := &rollout{t: t, ns: namespaceFor(t)}
	c, err := sb.CreateCluster(context.Background(), sandbox.ClusterOptions{
		Namespace: r.ns, Name: "alpha", ControlPlanes: o.controlPlanes, Workers: o.workers, TalosVersion: o.version,
		KubernetesVersion: o.kubernetes, KubeletRepository: o.kubeletRepository, RebootDuration: o.reboot, Kubeconfig: o.kubeconfig, MachineOptions: o.machineOptions,
		ClusterOptions: append([]builder.ClusterOption{builder.WithPolicy("to-1-13")}, o.clusterOptions...),
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Stop() })
	r.workload, r.sim, r.fixture, r.driver = c.Workload, c.Simulator, c.Fixture, c.Workload.Driver
	r.mgrConfig = manager.Options{Namespace: r.ns, Concurrency: 4, TalosCallTimeout: 3 * time.Second}
	return r
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

// policy returns a policy to v1.13.0 from the in-process registry.
func (r *rollout) policy(mutate ...func(*upgradev1.TalosUpgradePolicy)) *upgradev1.TalosUpgradePolicy {
	return sb.Policy(r.ns, "to-1-13", toVersion, mutate...)
}

// startManager runs the production manager against the management cluster
// (the sandbox's, as main.go builds it) until the test ends.
func (r *rollout) startManager() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := len(mgmt.ForbiddenRequests())
	NewWithT(r.t).Expect(sb.StartManager(ctx, r.mgrConfig)).To(Succeed())
	r.t.Cleanup(func() {
		r.stopManager()
		if forbidden := mgmt.ForbiddenRequests()[before:]; len(forbidden) > 0 {
			r.t.Errorf("The manager made requests the RBAC of config/default forbids: %s", strings.Join(forbidden, ", "))
		}
	})
}

// stopManager stops the manager, as a crash would, and waits for it.
func (r *rollout) stopManager() {
	_ = sb.StopManager()
}

// upgrade reads the TalosUpgrade of the Cluster.
func (r *rollout) upgrade(g Gomega) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: "alpha"}, u)).To(Succeed())
	return u
}

// completes waits until the rollout is Completed, within timeout; a
// failure says what blocks it and where each Machine stands.
func (r *rollout) completes(g Gomega, timeout time.Duration) {
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		var machines []string
		for _, m := range u.Status.Machines {
			machines = append(machines, fmt.Sprintf("%s %s %q", m.Machine, m.Phase, m.Message))
		}
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "blockedBy: %s; machines: %s", u.Status.BlockedBy, strings.Join(machines, ", "))
	}, timeout, 100*time.Millisecond).Should(Succeed())
}

// machineRecord returns the record of a Machine.
func machineRecord(u *upgradev1.TalosUpgrade, machine string) upgradev1.MachineUpgradeStatus {
	for _, m := range u.Status.Machines {
		if m.Machine == machine {
			return m
		}
	}
	return upgradev1.MachineUpgradeStatus{}
}

// disruptions is what sample records: the most Machines disrupted (their
// Nodes cordoned or NotReady) at once and the order they were disrupted in
// (sampler.Disruptions, on the workload's Nodes), and the Machines seen
// with the skip-remediation annotation.
type disruptions struct {
	nodes *sampler.Disruptions

	mu        sync.Mutex
	protected map[string]bool
}

// sample watches the Cluster's Nodes and Machines until ctx ends.
func (r *rollout) sample(ctx context.Context) *disruptions {
	s := &disruptions{
		nodes:     sampler.Nodes(ctx, r.workload.Client, func(n *corev1.Node) bool { return strings.Contains(n.Name, "-cp-") }),
		protected: map[string]bool{},
	}
	sampler.Watch(ctx, mgmt.Client, &clusterv1.MachineList{}, func(obj client.Object, _ bool) {
		if _, ok := obj.GetAnnotations()[clusterv1.MachineSkipRemediationAnnotation]; ok {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.protected[obj.GetName()] = true
		}
	}, client.InNamespace(r.ns))
	return s
}

// maxControlPlane, maxWorkers and maxTotal return the most control-plane,
// worker and all Machines disrupted at once so far.
func (s *disruptions) maxControlPlane() int { cp, _, _ := s.nodes.Max(); return cp }
func (s *disruptions) maxWorkers() int      { _, w, _ := s.nodes.Max(); return w }
func (s *disruptions) maxTotal() int        { _, _, total := s.nodes.Max(); return total }

// firstDisrupted returns the Machines disrupted so far, in the order they
// were first disrupted.
func (s *disruptions) firstDisrupted() []string { return s.nodes.Order() }

// protectedMachines returns the Machines seen with the skip-remediation
// annotation so far.
func (s *disruptions) protectedMachines() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.protected)
}

// upgradeCalls counts the upgrade calls a node received, with either API.
func (r *rollout) upgradeCalls(node string) int {
	return r.sim.Calls(node, talossim.RPCUpgrade) + r.sim.Calls(node, talossim.RPCLegacyUpgrade)
}

// failingCheck creates the Job health check name, which fails until the
// flag it returns is cleared.
func (r *rollout) failingCheck(g Gomega, name string) *atomic.Bool {
	failing := &atomic.Bool{}
	failing.Store(true)
	outcomes := make([]jobdriver.Outcome, 1000)
	for i := range outcomes {
		outcomes[i] = jobdriver.Outcome{Fail: true, Message: name + " is HEALTH_WARN"}
	}
	r.driver.Script(func(job *batchv1.Job) bool {
		return strings.HasPrefix(job.Name, "tollgate-hc-"+name) && failing.Load()
	}, outcomes...)
	r.createCheck(g, name)
	return failing
}

// envtestOnly skips a test of the suite, saying so and naming
// KUBEBUILDER_ASSETS, when the envtest binaries are not set: the suite's world
// was not started, and the tests of the package that need none still run
// (make test-unit).
func envtestOnly(t *testing.T) {
	t.Helper()
	envtest.SkipWithoutAssets(t)
}
