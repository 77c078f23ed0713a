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
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/builder"
	"github.com/tollgate-dev/tollgate/test/envtest"
	"github.com/tollgate-dev/tollgate/test/jobdriver"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

var (
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
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	var err error
	mgmt, err = envtest.StartManagement()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the management control plane: %v\n", err)
		os.Exit(1)
	}
	reg := httptest.NewServer(registry.New())
	registryHost = strings.TrimPrefix(reg.URL, "http://")
	for _, v := range []string{toVersion, patchVersion} {
		if err := pushInstaller(v); err != nil {
			fmt.Fprintf(os.Stderr, "Pushing the installer image: %v\n", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	reg.Close()
	_ = mgmt.Stop()
	os.Exit(code)
}

// pushInstaller pushes a random image as the installer of version.
func pushInstaller(version string) error {
	img, err := random.Image(512, 1)
	if err != nil {
		return err
	}
	ref, err := name.ParseReference(fmt.Sprintf("%s/siderolabs/installer:%s", registryHost, version))
	if err != nil {
		return err
	}
	return remote.Write(ref, img)
}

// rollout is one test's world: a Cluster whose workload control plane,
// Talos nodes and Job driver are real, and a running manager.
type rollout struct {
	t         *testing.T
	ns        string
	workload  *envtest.Workload
	sim       *talossim.Simulator
	fixture   *builder.Fixture
	driver    *jobdriver.Driver
	stopMgr   context.CancelFunc
	mgrDone   chan struct{}
	mgrConfig manager.Options
}

type rolloutOptions struct {
	controlPlanes, workers int
	version                string
	reboot                 time.Duration
	machineOptions         []builder.MachineOption
	clusterOptions         []builder.ClusterOption
}

// newRollout creates a Cluster of Talos nodes in a fresh namespace.
func newRollout(t *testing.T, o rolloutOptions) *rollout {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	if o.version == "" {
		o.version = fromVersion
	}
	if o.reboot == 0 {
		o.reboot = 300 * time.Millisecond
	}
	r := &rollout{t: t, ns: namespaceFor(t)}
	var err error
	r.workload, err = mgmt.StartWorkload(ctx, r.ns, "alpha")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = r.workload.Stop() })
	r.sim, err = talossim.New(talossim.Options{RebootDuration: o.reboot, NodeUpdater: &talossim.KubeNodeUpdater{Client: r.workload.Client}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = r.sim.Close() })

	addresses := map[string]string{}
	total := o.controlPlanes + o.workers
	for i := range total {
		nodeName := fmt.Sprintf("alpha-cp-%d", i)
		if i >= o.controlPlanes {
			nodeName = fmt.Sprintf("alpha-worker-%d", i-o.controlPlanes)
		}
		n, err := r.sim.AddNode(talossim.NodeConfig{Name: nodeName, Version: o.version, ControlPlane: i < o.controlPlanes})
		g.Expect(err).NotTo(HaveOccurred())
		addresses[nodeName] = n.Address()
	}
	r.fixture, err = builder.Create(ctx, mgmt.Client, r.workload.Client, builder.ClusterFixture{
		Namespace: r.ns, Name: "alpha", Policy: "to-1-13", ControlPlanes: o.controlPlanes, Workers: o.workers,
		TalosVersion: o.version, MachineOptions: o.machineOptions, ClusterOptions: o.clusterOptions,
		Address: func(_ int, machine string) string { return addresses[machine] },
	})
	g.Expect(err).NotTo(HaveOccurred())

	talosconfig, err := r.sim.TalosConfig("alpha")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: "alpha-talosconfig", Labels: map[string]string{clusterv1.ClusterNameLabel: "alpha"}},
		Data:       map[string][]byte{"talosconfig": talosconfig},
	})).To(Succeed())

	r.driver = jobdriver.New(r.workload.Client, jobdriver.Options{Delay: 100 * time.Millisecond})
	driverCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	r.driver.Start(driverCtx)
	r.mgrConfig = manager.Options{TalosAPIPort: r.sim.Port(), Namespace: r.ns, Concurrency: 4, SkipControllerNameValidation: true, TalosCallTimeout: 3 * time.Second}
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
	workers := intstr.FromInt32(1)
	p := &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: "to-1-13"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: toVersion,
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: registryHost + "/siderolabs/installer"},
			Rollout:      upgradev1.RolloutSpec{Workers: upgradev1.WorkerRollout{MaxUnavailable: &workers}},
		}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// startManager runs the production manager against the management cluster.
func (r *rollout) startManager() {
	r.t.Helper()
	g := NewWithT(r.t)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := manager.New(ctx, mgmt.Config, r.mgrConfig)
	g.Expect(err).NotTo(HaveOccurred())
	r.stopMgr, r.mgrDone = cancel, make(chan struct{})
	go func() {
		defer close(r.mgrDone)
		_ = mgr.Start(ctx)
	}()
	r.t.Cleanup(r.stopManager)
}

// stopManager stops the manager, as a crash would, and waits for it.
func (r *rollout) stopManager() {
	if r.stopMgr == nil {
		return
	}
	r.stopMgr()
	<-r.mgrDone
	r.stopMgr = nil
}

// upgrade reads the TalosUpgrade of the Cluster.
func (r *rollout) upgrade(g Gomega) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: "alpha"}, u)).To(Succeed())
	return u
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

// sampler watches the workload Nodes and records the most Machines
// disrupted (cordoned or NotReady) at once, and the order they were
// disrupted in.
type sampler struct {
	mu              sync.Mutex
	maxWorkers      int
	maxControlPlane int
	maxTotal        int
	firstDisrupted  []string
	// protected are the Machines seen with the skip-remediation annotation.
	protected map[string]bool
}

func (r *rollout) sample(ctx context.Context) *sampler {
	s := &sampler{protected: map[string]bool{}}
	seen := map[string]bool{}
	go func() {
		for ctx.Err() == nil {
			machines := &clusterv1.MachineList{}
			if err := mgmt.Client.List(ctx, machines, client.InNamespace(r.ns)); err == nil {
				s.mu.Lock()
				for _, m := range machines.Items {
					if _, ok := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]; ok {
						s.protected[m.Name] = true
					}
				}
				s.mu.Unlock()
			}
			nodes := &corev1.NodeList{}
			if err := r.workload.Client.List(ctx, nodes); err == nil {
				cp, workers := 0, 0
				for _, n := range nodes.Items {
					disrupted := n.Spec.Unschedulable
					for _, c := range n.Status.Conditions {
						if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
							disrupted = true
						}
					}
					if !disrupted {
						continue
					}
					if strings.Contains(n.Name, "-cp-") {
						cp++
					} else {
						workers++
					}
					if !seen[n.Name] {
						seen[n.Name] = true
						s.mu.Lock()
						s.firstDisrupted = append(s.firstDisrupted, n.Name)
						s.mu.Unlock()
					}
				}
				s.mu.Lock()
				s.maxControlPlane = max(s.maxControlPlane, cp)
				s.maxWorkers = max(s.maxWorkers, workers)
				s.maxTotal = max(s.maxTotal, cp+workers)
				s.mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond) // Sampling period, not a wait for a condition.
		}
	}()
	return s
}

// upgradeCalls counts the upgrade calls a node received, with either API.
func (r *rollout) upgradeCalls(node string) int {
	return r.sim.Calls(node, talossim.RPCUpgrade) + r.sim.Calls(node, talossim.RPCLegacyUpgrade)
}
