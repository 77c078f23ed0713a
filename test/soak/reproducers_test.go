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

package soak_test

import (
	"bufio"
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
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/builder"
	"github.com/tollgate-dev/tollgate/test/envtest"
	"github.com/tollgate-dev/tollgate/test/jobdriver"
	"github.com/tollgate-dev/tollgate/test/soak"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// reproduceEnv runs the reproducers of the known bugs (soak.KnownBugs).
// They fail until the bug is fixed, so `make test` skips them; whoever
// fixes one runs it with this variable set, then removes the skip and the
// KnownBugs entry.
const reproduceEnv = "TOLLGATE_REPRODUCE_KNOWN_BUGS"

func skipUnlessReproducing(t *testing.T, reproducer string) {
	t.Helper()
	ctrl.SetLogger(logr.Discard())
	for _, b := range soak.KnownBugs {
		if b.Reproducer == reproducer && os.Getenv(reproduceEnv) == "" {
			t.Skipf("known bug, not fixed yet: %s. Run with %s=1 to reproduce it", b.Summary, reproduceEnv)
		}
	}
}

// TestReproduceFailedMachineLeftCordoned: a Machine fails (A/B rollback)
// while the controller cannot reach the workload apiserver. The release in
// fail() (uncordon) fails or is skipped, the Machine is recorded Failed with
// cordoned: true, and nothing ever releases a terminal Machine again: the
// node stays cordoned after the apiserver is back.
func TestReproduceFailedMachineLeftCordoned(t *testing.T) {
	skipUnlessReproducing(t, t.Name())
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mgmt, err := envtest.StartManagement()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = mgmt.Stop() }()
	const ns, cluster, node = "repro", "alpha", "alpha-cp-0"
	w, err := mgmt.StartWorkload(ctx, ns, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	host, err := url.Parse(w.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())
	gate, err := soak.NewGate(host.Host)
	g.Expect(err).NotTo(HaveOccurred())
	defer gate.Close()
	kc, err := soak.ThroughGate(w.Kubeconfig, gate)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.StoreKubeconfig(ctx, ns, cluster, kc)).To(Succeed())

	regHost := startRegistry(t, "v1.13.0")
	sim, err := talossim.New(talossim.Options{RebootDuration: 3 * time.Second, NodeUpdater: &talossim.KubeNodeUpdater{Client: w.Client}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = sim.Close() }()
	n, err := sim.AddNode(talossim.NodeConfig{Name: node, Version: "v1.12.4", ControlPlane: true})
	g.Expect(err).NotTo(HaveOccurred())
	n.InjectFault(talossim.Faults{Rollback: true})
	_, err = builder.Create(ctx, mgmt.Client, w.Client, builder.ClusterFixture{
		Namespace: ns, Name: cluster, Policy: "to-1-13", ControlPlanes: 1, TalosVersion: "v1.12.4",
		Address: func(int, string) string { return n.Address() },
	})
	g.Expect(err).NotTo(HaveOccurred())
	secret, err := sim.TalosConfigSecret(ns, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.Client.Create(ctx, secret)).To(Succeed())
	one := intstr.FromInt32(1)
	g.Expect(mgmt.Client.Create(ctx, &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-1-13"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: regHost + "/siderolabs/installer"},
			Rollout:      upgradev1.RolloutSpec{Workers: upgradev1.WorkerRollout{MaxUnavailable: &one}},
		}},
	})).To(Succeed())

	mgrCtx, stopMgr := context.WithCancel(ctx)
	defer stopMgr()
	mgr, err := manager.New(mgrCtx, mgmt.Config, manager.Options{
		TalosAPIPort: sim.Port(), Namespace: ns, SkipControllerNameValidation: true, TalosCallTimeout: 2 * time.Second, MetricsBindAddress: "0",
	})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = mgr.Start(mgrCtx) }()

	blockedBy := ""
	record := func(g Gomega) upgradev1.MachineUpgradeStatus {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, u)).To(Succeed())
		g.Expect(u.Status.Machines).NotTo(BeEmpty())
		blockedBy = string(u.Status.Phase) + ": " + u.Status.BlockedBy
		return u.Status.Machines[0]
	}
	g.Eventually(func(g Gomega) {
		g.Expect(record(g).Phase).To(Equal(upgradev1.MachinePhaseRebooting), "rollout %s", blockedBy)
	}, time.Minute, 20*time.Millisecond).Should(Succeed())
	// The node is cordoned and rebooting (for 3s): the workload apiserver
	// becomes unreachable before it comes back on its old version.
	gate.Cut()
	g.Eventually(func(g Gomega) {
		rec := record(g)
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseFailed))
		g.Expect(rec.Message).To(ContainSubstring("A/B rollback"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(gate.Open()).To(Succeed())

	g.Eventually(func(g Gomega) {
		nd := &corev1.Node{}
		g.Expect(w.Client.Get(ctx, client.ObjectKey{Name: node}, nd)).To(Succeed())
		g.Expect(nd.Spec.Unschedulable).To(BeFalse(), "the failed Machine's node is uncordoned once the workload apiserver is back")
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, m)).To(Succeed())
		g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.MachineSkipRemediationAnnotation))
		g.Expect(record(g).Cordoned).To(BeFalse())
	}, time.Minute, 500*time.Millisecond).Should(Succeed())
}

// TestReproduceSecretsInLogs runs the manager binary at the highest
// verbosity (-v=10) against a Cluster whose talosconfig and kubeconfig
// Secrets carry canary values: client-go logs the response body of every
// Secret it reads, and the canaries (with the private keys next to them)
// end up in the log.
func TestReproduceSecretsInLogs(t *testing.T) {
	skipUnlessReproducing(t, t.Name())
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	binary := filepath.Join(dir, "manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, ".")
	build.Dir = envtest.RepoRoot()
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "building the manager: %s", out)
	mgmt, err := envtest.StartManagement()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = mgmt.Stop() }()

	const ns, cluster = "repro", "alpha"
	const canary = "REPRO-CANARY-7f3c1a"
	g.Expect(mgmt.StoreKubeconfig(ctx, ns, cluster, []byte("apiVersion: v1\nkind: Config\n"))).To(Succeed())
	kcSecret := &corev1.Secret{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster + "-kubeconfig"}, kcSecret)).To(Succeed())
	kcSecret.Data["canary"] = []byte(canary)
	g.Expect(mgmt.Client.Update(ctx, kcSecret)).To(Succeed())
	sim, err := talossim.New(talossim.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = sim.Close() }()
	secret, err := sim.TalosConfigSecret(ns, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	secret.Data["canary"] = []byte(canary)
	g.Expect(mgmt.Client.Create(ctx, secret)).To(Succeed())
	_, err = builder.Create(ctx, mgmt.Client, nil, builder.ClusterFixture{Namespace: ns, Name: cluster, Policy: "p", ControlPlanes: 1, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.Client.Create(ctx, &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "127.0.0.1:1/siderolabs/installer"},
		}},
	})).To(Succeed())

	user, err := mgmt.Env.AddUser(crenvtestUser(), mgmt.Config)
	g.Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	kcPath := filepath.Join(dir, "kubeconfig")
	g.Expect(os.WriteFile(kcPath, kc, 0o600)).To(Succeed())
	cmd := exec.CommandContext(ctx, binary, "--webhook-port=0", "--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false", "-v=10") //nolint:gosec // The manager just built.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kcPath)
	stderr, err := cmd.StderrPipe()
	g.Expect(err).NotTo(HaveOccurred())
	cmd.Stdout = cmd.Stderr
	g.Expect(cmd.Start()).To(Succeed())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	canaries := &soak.Canaries{}
	canaries.Add("Secret canary", []byte(canary))
	for k, v := range secret.Data {
		canaries.AddKeyMaterial("talosconfig "+k, v)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Read the log until the TalosUpgrade was reconciled for a while.
	deadline := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				done = true
				break
			}
			canaries.Check("manager", l)
		case <-deadline:
			done = true
		}
	}
	u := &upgradev1.TalosUpgrade{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, u)).To(Succeed(), "the controller created the TalosUpgrade, so it ran")
	leaks, n, scanned := canaries.Leaks()
	g.Expect(scanned).To(BeNumerically(">", 100))
	g.Expect(n).To(BeZero(), "secret material in the manager's log:\n%s", strings.Join(leaks, "\n"))
}

// startRegistry serves an in-process registry with the installer images of
// versions and returns its host.
func startRegistry(t *testing.T, versions ...string) string {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(discard())))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	for _, v := range versions {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(fmt.Sprintf("%s/siderolabs/installer:%s", host, v))
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	return host
}

func crenvtestUser() crenvtest.User {
	return crenvtest.User{Name: "repro-admin", Groups: []string{"system:masters"}}
}

func discard() *log.Logger { return log.New(io.Discard, "", 0) }

// TestReproduceDrainWhileHealthCheckFails: the health checks gate the
// selection of the next Machine, not its drain. With maxUnavailable 2,
// worker-0 and worker-1 are selected while the check passes; worker-0 waits
// at the pre-drain point (here a hold; in the soak, a pre-drain hook
// retrying after a failure); the check then fails and the rollout records
// it Failed (selecting worker-2); the hold goes, and worker-0 is cordoned
// and drained at once, with the check still failing.
func TestReproduceDrainWhileHealthCheckFails(t *testing.T) {
	skipUnlessReproducing(t, t.Name())
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mgmt, err := envtest.StartManagement()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = mgmt.Stop() }()
	const ns, cluster, held, check = "repro", "alpha", "alpha-worker-0", "hc"
	w, err := mgmt.StartWorkload(ctx, ns, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	driver := jobdriver.New(w.Client, jobdriver.Options{Delay: 100 * time.Millisecond})
	var failing atomic.Bool
	fails := make([]jobdriver.Outcome, 100)
	for i := range fails {
		fails[i] = jobdriver.Outcome{Fail: true, Message: "repro: the workload is unhealthy"}
	}
	// Runs pass (the default) until failing is set; then they fail.
	driver.Script(func(job *batchv1.Job) bool {
		return failing.Load() && job.Labels[workloadjob.HealthCheckLabel] == check
	}, fails...)
	driverCtx, stopDriver := context.WithCancel(ctx)
	defer stopDriver()
	driver.Start(driverCtx)

	regHost := startRegistry(t, "v1.13.0")
	sim, err := talossim.New(talossim.Options{RebootDuration: time.Second, NodeUpdater: &talossim.KubeNodeUpdater{Client: w.Client}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = sim.Close() }()
	addresses := map[string]string{}
	for _, name := range []string{"alpha-cp-0", "alpha-worker-0", "alpha-worker-1", "alpha-worker-2"} {
		n, err := sim.AddNode(talossim.NodeConfig{Name: name, Version: "v1.12.4", ControlPlane: name == "alpha-cp-0"})
		g.Expect(err).NotTo(HaveOccurred())
		addresses[name] = n.Address()
	}
	hold := hooks.PreDrainHookAnnotationPrefix + "/repro"
	_, err = builder.Create(ctx, mgmt.Client, w.Client, builder.ClusterFixture{
		Namespace: ns, Name: cluster, Policy: "to-1-13", ControlPlanes: 1, Workers: 3, TalosVersion: "v1.12.4",
		Address: func(_ int, machine string) string { return addresses[machine] },
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(setAnnotation(ctx, mgmt.Client, ns, held, hold, true)).To(Succeed())
	secret, err := sim.TalosConfigSecret(ns, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.Client.Create(ctx, secret)).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: check},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "check", Image: "registry.k8s.io/kubectl:v1.35.2", Command: []string{"true"}}},
			}}}},
			Interval: &metav1.Duration{Duration: 5 * time.Second},
		},
	})).To(Succeed())
	two := intstr.FromInt32(2)
	g.Expect(mgmt.Client.Create(ctx, &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-1-13"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: regHost + "/siderolabs/installer"},
			Rollout:      upgradev1.RolloutSpec{Workers: upgradev1.WorkerRollout{MaxUnavailable: &two}},
			HealthChecks: []upgradev1.HealthCheckRef{{Name: check}},
		}},
	})).To(Succeed())

	startManager := func() (stop func()) {
		mgrCtx, stopMgr := context.WithCancel(ctx)
		mgr, err := manager.New(mgrCtx, mgmt.Config, manager.Options{
			TalosAPIPort: sim.Port(), Namespace: ns, SkipControllerNameValidation: true, TalosCallTimeout: 2 * time.Second, MetricsBindAddress: "0",
		})
		g.Expect(err).NotTo(HaveOccurred())
		done := make(chan struct{})
		go func() { _ = mgr.Start(mgrCtx); close(done) }()
		return func() { stopMgr(); <-done }
	}
	stop := startManager()
	defer func() { stop() }()

	upgrade := func(g Gomega) *upgradev1.TalosUpgrade {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, u)).To(Succeed())
		return u
	}
	record := func(g Gomega, machine string) upgradev1.MachineUpgradeStatus {
		for _, st := range upgrade(g).Status.Machines {
			if st.Machine == machine {
				return st
			}
		}
		g.Expect(machine).To(BeEmpty(), "no record")
		return upgradev1.MachineUpgradeStatus{}
	}
	// Selected while the check passes, held at the pre-drain point.
	g.Eventually(func(g Gomega) {
		st := record(g, held)
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
		g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreDrain))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	failing.Store(true)
	// A restarted controller runs the check again: it fails, and the
	// rollout records it.
	stop()
	time.Sleep(6 * time.Second) // Not a wait for a condition: longer than the check's interval, so that the next controller runs it again.
	stop = startManager()
	g.Eventually(func(g Gomega) {
		u := upgrade(g)
		g.Expect(u.Status.HealthChecks).NotTo(BeEmpty())
		g.Expect(u.Status.HealthChecks[0].Result).To(Equal(upgradev1.HealthCheckFailed))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(setAnnotation(ctx, mgmt.Client, ns, held, hold, false)).To(Succeed())

	g.Consistently(func(g Gomega) {
		nd := &corev1.Node{}
		g.Expect(w.Client.Get(ctx, client.ObjectKey{Name: held}, nd)).To(Succeed())
		g.Expect(nd.Spec.Unschedulable).To(BeFalse(), "no drain while the health check fails")
		g.Expect(record(g, held).Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// setAnnotation adds or removes an annotation of a Machine.
func setAnnotation(ctx context.Context, c client.Client, ns, name, key string, add bool) error {
	m := &clusterv1.Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		return err
	}
	patch := client.MergeFrom(m.DeepCopy())
	if add {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[key] = ""
	} else {
		delete(m.Annotations, key)
	}
	return c.Patch(ctx, m, patch)
}

// TestReproduceLegacyUpgradeErrorMisreported: on Talos before 1.13 the
// legacy MachineService.Upgrade acknowledges the request and fails after
// (exit code in the node's events, no reboot). The Machine fails after
// rebootTimeout with a message that blames a controller killed while asking
// for the reboot, instead of naming the failed upgrade.
func TestReproduceLegacyUpgradeErrorMisreported(t *testing.T) {
	skipUnlessReproducing(t, t.Name())
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mgmt, err := envtest.StartManagement()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = mgmt.Stop() }()
	const ns, cluster, node = "repro", "alpha", "alpha-cp-0"
	w, err := mgmt.StartWorkload(ctx, ns, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	regHost := startRegistry(t, "v1.13.0")
	sim, err := talossim.New(talossim.Options{RebootDuration: time.Second, NodeUpdater: &talossim.KubeNodeUpdater{Client: w.Client}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = sim.Close() }()
	n, err := sim.AddNode(talossim.NodeConfig{Name: node, Version: "v1.12.4", ControlPlane: true})
	g.Expect(err).NotTo(HaveOccurred())
	n.InjectFault(talossim.Faults{UpgradeExitCode: 1})
	_, err = builder.Create(ctx, mgmt.Client, w.Client, builder.ClusterFixture{
		Namespace: ns, Name: cluster, Policy: "to-1-13", ControlPlanes: 1, TalosVersion: "v1.12.4",
		Address: func(int, string) string { return n.Address() },
	})
	g.Expect(err).NotTo(HaveOccurred())
	secret, err := sim.TalosConfigSecret(ns, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.Client.Create(ctx, secret)).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-1-13"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion:  "v1.13.0",
			Installer:     upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: regHost + "/siderolabs/installer"},
			RebootTimeout: &metav1.Duration{Duration: 30 * time.Second},
		}},
	})).To(Succeed())
	mgrCtx, stopMgr := context.WithCancel(ctx)
	defer stopMgr()
	mgr, err := manager.New(mgrCtx, mgmt.Config, manager.Options{
		TalosAPIPort: sim.Port(), Namespace: ns, SkipControllerNameValidation: true, TalosCallTimeout: 2 * time.Second, MetricsBindAddress: "0",
	})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = mgr.Start(mgrCtx) }()

	var st upgradev1.MachineUpgradeStatus
	g.Eventually(func(g Gomega) {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, u)).To(Succeed())
		g.Expect(u.Status.Machines).NotTo(BeEmpty())
		st = u.Status.Machines[0]
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseFailed))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(sim.Calls(node, talossim.RPCLegacyUpgrade)).To(Equal(1))
	g.Expect(st.Message).To(ContainSubstring("upgrade"), "the message names the failed upgrade")
	g.Expect(st.Message).NotTo(ContainSubstring("was the controller killed"))
}
