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

package uninstall_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

const (
	// clusterName is the Cluster of every world.
	clusterName = "alpha"
	// policyName is its policy: the Talos it runs, so that only its
	// removals are gated.
	policyName = "keep-1-12"
	// user is the administrator who runs the plugin.
	user = "alice"
	// testFinalizer holds a deleted Cluster until its Machines are gone
	// (see the package's doc).
	testFinalizer = "test.tollgate.dev/machines-first"
	// timeout bounds what CAPI, the providers or Tollgate do in a step.
	timeout = 3 * time.Minute
)

// plugin is the kubectl plugin, built by TestMain.
var plugin string

func TestMain(m *testing.M) {
	envtest.ExitWithoutAssets("uninstall suite")
	// The managers' logs (client-go's leader election logs through klog)
	// are not the tests' output.
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tollgate-uninstall-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "Creating a directory: %v\n", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	plugin = filepath.Join(dir, "kubectl-tollgate")
	build := exec.Command("go", "build", "-o", plugin, "./cmd/kubectl-tollgate")
	build.Dir = envtest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "Building the kubectl plugin: %v: %s\n", err, out)
		return 1
	}
	return m.Run()
}

// world is a sandbox with CAPI core, the providers and Tollgate's webhooks,
// one Cluster of a control-plane Machine and workers opted in to a policy,
// and Tollgate's manager.
type world struct {
	t  *testing.T
	sb *sandbox.Sandbox
	// c is an administrator's client of the management cluster.
	c client.Client
	// ns is the Cluster's namespace.
	ns string
	cl *sandbox.Cluster
	// kubeconfig is the user's, for the plugin.
	kubeconfig string
	// stopTollgate stops the manager, nil when it does not run.
	stopTollgate func()
}

// startWorld starts a world whose Cluster has workers workers, and returns
// once Tollgate's hook is on every Machine.
func startWorld(ctx context.Context, t *testing.T, ns string, workers int) *world {
	t.Helper()
	g := NewWithT(t)
	sb, err := sandbox.Start(ctx, sandbox.Options{CAPI: true, Webhooks: true, Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Logf("Stopping the sandbox: %v", err)
		}
	})
	w := &world{t: t, sb: sb, c: sb.Management.Client, ns: ns}
	admin, err := sb.Management.AddAdmin(user)
	g.Expect(err).NotTo(HaveOccurred())
	kc, err := admin.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	w.kubeconfig = filepath.Join(t.TempDir(), user+".kubeconfig")
	g.Expect(os.WriteFile(w.kubeconfig, kc, 0o600)).To(Succeed())

	w.startTollgate(ctx)
	w.cl, err = sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: clusterName, ControlPlanes: 1, Workers: workers, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	policy := sb.Policy(ns, policyName, "v1.12.4")
	// The webhook server answers a moment after the manager started.
	g.Eventually(func() error { return w.c.Create(ctx, policy.DeepCopy()) }, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(w.cl.OptIn(ctx, policyName)).To(Succeed())
	g.Eventually(func(g Gomega) {
		machines := w.machines(ctx, g)
		g.Expect(machines).To(HaveLen(1 + workers))
		for _, m := range machines {
			g.Expect(hooks.HasDeletionHook(&m)).To(BeTrue(), "Machine %s carries Tollgate's deletion hook", m.Name)
		}
	}, timeout, 200*time.Millisecond).Should(Succeed())
	return w
}

// startTollgate runs Tollgate's manager as config/manager does: leader
// election in tollgate-system, the webhooks served (on the port the
// sandbox's webhook configurations name), as the manager's ServiceAccount.
func (w *world) startTollgate(ctx context.Context) {
	w.t.Helper()
	g := NewWithT(w.t)
	wopts := &w.sb.Management.Env.WebhookInstallOptions
	o := manager.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionNamespace: envtest.ManagerNamespace,
		WebhookPort: wopts.LocalServingPort, WebhookHost: wopts.LocalServingHost, WebhookCertDir: wopts.LocalServingCertDir,
		ControllerUsername: sandbox.ControllerUsername, TalosAPIPort: talossim.DefaultPort,
		SkipControllerNameValidation: true,
	}
	mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	mgr, err := manager.New(mgrCtx, rest.CopyConfig(w.sb.ControllerConfig), o)
	g.Expect(err).NotTo(HaveOccurred())
	stop := w.sb.Management.RunManager(w.t, mgr)
	w.stopTollgate = func() {
		stop()
		cancel()
	}
}

// crashTollgate stops the manager without a word to anyone: its Lease
// stays held until its duration passes, as after a SIGKILL (the manager
// does not release it on cancel), and its hooks stay.
func (w *world) crashTollgate() {
	w.t.Helper()
	if w.stopTollgate == nil {
		w.t.Fatal("Tollgate does not run")
	}
	w.stopTollgate()
	w.stopTollgate = nil
}

// machines lists the Cluster's Machines.
func (w *world) machines(ctx context.Context, g Gomega) []clusterv1.Machine {
	list := &clusterv1.MachineList{}
	g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName})).To(Succeed())
	return list.Items
}

// machineNames lists the names of the Cluster's Machines.
func (w *world) machineNames(ctx context.Context, g Gomega) []string {
	var names []string
	for _, m := range w.machines(ctx, g) {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// hooked lists the names of the Machines that carry Tollgate's hook.
func (w *world) hooked(ctx context.Context, g Gomega) []string {
	var names []string
	for _, m := range w.machines(ctx, g) {
		if hooks.HasDeletionHook(&m) {
			names = append(names, m.Name)
		}
	}
	slices.Sort(names)
	return names
}

// scaleWorkers sets the replicas of the Cluster's MachineDeployment, as a
// user or an autoscaler does.
func (w *world) scaleWorkers(ctx context.Context, replicas int32) {
	w.t.Helper()
	g := NewWithT(w.t)
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: sandbox.WorkersName(clusterName)}, md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To(replicas)
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
}

// deleting returns the Machines CAPI deletes.
func (w *world) deleting(ctx context.Context, g Gomega) []clusterv1.Machine {
	var out []clusterv1.Machine
	for _, m := range w.machines(ctx, g) {
		if !m.DeletionTimestamp.IsZero() {
			out = append(out, m)
		}
	}
	return out
}

// deleteCluster deletes the Cluster as a user does, and waits until it and
// its Machines are gone, playing the garbage collector and the real
// control-plane provider's hold (see the package's doc).
func (w *world) deleteCluster(ctx context.Context) {
	w.t.Helper()
	g := NewWithT(w.t)
	cluster := &clusterv1.Cluster{}
	key := client.ObjectKey{Namespace: w.ns, Name: clusterName}
	g.Expect(w.c.Get(ctx, key, cluster)).To(Succeed())
	patch := client.MergeFrom(cluster.DeepCopy())
	controllerutil.AddFinalizer(cluster, testFinalizer)
	g.Expect(w.c.Patch(ctx, cluster, patch)).To(Succeed())
	g.Expect(w.c.Delete(ctx, cluster)).To(Succeed())
	start := time.Now()
	g.Eventually(func(g Gomega) {
		w.collectGarbage(ctx, g)
		g.Expect(w.machineNames(ctx, g)).To(BeEmpty(), "the Cluster's Machines are deleted")
		g.Expect(w.c.Get(ctx, key, cluster)).To(Succeed())
		g.Expect(cluster.Finalizers).To(Equal([]string{testFinalizer}), "CAPI is done with the Cluster")
	}, timeout, 200*time.Millisecond).Should(Succeed())
	patch = client.MergeFrom(cluster.DeepCopy())
	controllerutil.RemoveFinalizer(cluster, testFinalizer)
	g.Expect(w.c.Patch(ctx, cluster, patch)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(w.c.Get(ctx, key, cluster)) }, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	w.t.Logf("Cluster %s/%s and its Machines were gone %s after its deletion", w.ns, clusterName, time.Since(start).Round(time.Millisecond))
}

// collectGarbage deletes the Machines whose controlling TalosControlPlane
// is gone, as kube-controller-manager's garbage collector does.
func (w *world) collectGarbage(ctx context.Context, g Gomega) {
	for _, m := range w.machines(ctx, g) {
		owner := metav1.GetControllerOf(&m)
		if owner == nil || owner.Kind != "TalosControlPlane" || !m.DeletionTimestamp.IsZero() {
			continue
		}
		tcp := &metav1.PartialObjectMetadata{}
		tcp.SetGroupVersionKind(schema.FromAPIVersionAndKind(owner.APIVersion, owner.Kind))
		err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: owner.Name}, tcp)
		if apierrors.IsNotFound(err) || (err == nil && tcp.UID != owner.UID) {
			w.t.Logf("Deleting Machine %s, whose TalosControlPlane %s is gone (the garbage collector's part)", m.Name, owner.Name)
			g.Expect(client.IgnoreNotFound(w.c.Delete(ctx, &m))).To(Succeed())
		}
	}
}

// result is what a run of the plugin printed and its exit code.
type result struct {
	out, err string
	code     int
}

// kubectl runs kubectl tollgate args -n <the Cluster's namespace> as the
// user.
func (w *world) kubectl(ctx context.Context, args ...string) result {
	w.t.Helper()
	cmd := exec.CommandContext(ctx, plugin, append(append([]string{"--kubeconfig", w.kubeconfig}, args...), "-n", w.ns)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{out: out.String(), err: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		w.t.Fatalf("Running kubectl tollgate %v: %v", args, err)
	}
	return r
}

// upgrade reads the Cluster's TalosUpgrade.
func (w *world) upgrade(ctx context.Context, g Gomega) *upgradev1.TalosUpgrade {
	u := &upgradev1.TalosUpgrade{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: clusterName}, u)).To(Succeed())
	return u
}

// clusterEvents returns the events of reason recorded on the Cluster.
func (w *world) clusterEvents(ctx context.Context, g Gomega, reason string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "Cluster" && e.Regarding.Name == clusterName && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// deleteWebhookConfigurations deletes Tollgate's webhook configurations,
// as clusterctl delete --addon tollgate does.
func (w *world) deleteWebhookConfigurations(ctx context.Context) {
	w.t.Helper()
	g := NewWithT(w.t)
	wopts := &w.sb.Management.Env.WebhookInstallOptions
	for _, vwc := range wopts.ValidatingWebhooks {
		g.Expect(client.IgnoreNotFound(w.c.Delete(ctx, vwc.DeepCopy()))).To(Succeed())
	}
	for _, mwc := range wopts.MutatingWebhooks {
		g.Expect(client.IgnoreNotFound(w.c.Delete(ctx, mwc.DeepCopy()))).To(Succeed())
	}
}
