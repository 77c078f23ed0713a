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

package move

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/controllers/talosupgrade"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

const (
	namespace   = "fleet"
	clusterName = "prod"
	policyName  = "to-1-13"
	checkName   = "api-ready"
	target      = "v1.13.0"
	// holder holds each worker before its upgrade call, so that the move
	// happens at a known point of the rollout.
	holder = "move-test"
	// rebootDuration is how long a simulated node takes to reboot.
	rebootDuration = 200 * time.Millisecond
	// timeout bounds each wait for the rollout.
	timeout = 60 * time.Second
)

// TestMoveMidRollout moves a management cluster with clusterctl's own move
// code while a rollout is in progress: the control-plane Machine is
// upgraded, a worker is drained and held before its upgrade call, the other
// waits. The target resumes the rollout from the write-ahead log the
// TalosUpgrade carries (move drops every status) and finishes it, with
// exactly one upgrade call per node, and nothing left cordoned or shielded
// from remediation.
//
// Both management clusters run Cluster API for real (sandbox Options.CAPI:
// CAPI core with its webhooks, the Talos-simulator infrastructure provider,
// the Talos providers' stand-ins) over one cloud of simulated machines
// (Options.Hosts), and the production manager with its webhooks
// (config/webhook installed, served by cmd/manager), the target's from
// before the move, as on a management cluster that `clusterctl init` set up.
// CAPI made the Cluster's Machines in the source; move drops the status of
// every object, and CAPI's controllers in the target rebuild it, nothing
// written back by hand: the target's infrastructure provider finds each
// machine running, and its Machine controller finds each Node again, so
// that the Machines report the Talos their nodes run. No Machine is
// replaced on the way: neither the source's controllers (the Cluster is
// paused while clusterctl deletes its objects) nor the target's
// (MachineSet, control plane) make one.
//
// Every object clusterctl creates in the target goes through Tollgate's
// admission. clusterctl creates the TalosUpgrade as its own user, not as the
// controller, so the TalosUpgrade webhook drops its admitted annotation (only
// the controller may set it) instead of refusing it, and the target's policy
// controller admits the rollout again, within maxClustersInProgress.
//
// Stood in: `clusterctl init` (installAsClusterctl labels the CRDs and fills
// the inventory). The Cluster's talosconfig Secret, which the sandbox writes
// with no owner, is labelled for move as the book tells users to
// (labelTalosconfig).
func TestMoveMidRollout(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx := t.Context()
	begin := time.Now()

	// One cloud for both management clusters, stopped after both.
	machines := hosts.NewSimulators(hosts.SimulatorsOptions{Simulator: talossim.Options{Port: talossim.DefaultPort, RebootDuration: rebootDuration}})
	t.Cleanup(func() {
		if err := machines.Close(); err != nil {
			t.Errorf("Stopping the simulated machines: %v", err)
		}
	})
	src, dst := startSandboxes(t,
		sandbox.Options{Webhooks: true, CAPI: true, Hosts: machines, InstallerVersions: []string{target}},
		sandbox.Options{Webhooks: true, CAPI: true, Hosts: machines})
	t.Logf("%s: started two management clusters, each with CAPI core", since(begin))
	from := installAsClusterctl(ctx, t, src, "source")
	to := installAsClusterctl(ctx, t, dst, "target")
	t.Logf("%s: installed as clusterctl does", since(begin))
	g.Expect(src.StartManager(ctx, manager.Options{})).To(Succeed())

	c, err := src.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: namespace, Name: clusterName, ControlPlanes: 1, Workers: 2, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("%s: CAPI made the Cluster", since(begin))
	labelTalosconfig(ctx, t, src.Management.Client, c)
	cps, err := c.MachineNames(ctx, sandbox.RoleControlPlane)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cps).To(HaveLen(1))
	workers, err := c.MachineNames(ctx, sandbox.RoleWorker)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(workers).To(HaveLen(2))
	names := append(slices.Clone(cps), workers...)
	slices.Sort(names)
	for _, w := range workers {
		setHold(ctx, t, src.Management.Client, w, true)
	}
	g.Expect(src.Management.Client.Create(ctx, sandbox.HealthCheck(namespace, checkName, 5*time.Second, "kubectl", "get", "--raw=/readyz"))).To(Succeed())
	g.Expect(src.Management.Client.Create(ctx, src.Policy(namespace, policyName, target, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: checkName}}
	}))).To(Succeed())
	g.Expect(c.OptIn(ctx, policyName)).To(Succeed())

	t.Logf("%s: the world is set up; the rollout starts", since(begin))
	// Mid-rollout: the control plane is done, a worker is drained and
	// held, the other waits for the workers' one slot.
	var held, waiting string
	g.Eventually(func(g Gomega) {
		phases := machinePhases(ctx, t, src.Management.Client)
		g.Expect(phases).To(HaveKeyWithValue(cps[0], string(upgradev1.MachinePhaseCompleted)))
		held, waiting = "", ""
		for _, w := range workers {
			switch phases[w] {
			case string(upgradev1.MachinePhaseWaitingForHold) + "/" + string(upgradev1.HoldPointPreReboot):
				held = w
			case string(upgradev1.MachinePhasePending):
				waiting = w
			}
		}
		g.Expect(held).NotTo(BeEmpty(), "a worker waits at its pre-reboot hold: %v", phases)
		g.Expect(waiting).NotTo(BeEmpty(), "the other worker waits for its turn: %v", phases)
	}, timeout, 100*time.Millisecond).Should(Succeed(), func() string { return describe(ctx, src.Management.Client) })
	before, err := src.Upgrade(ctx, namespace, clusterName)
	g.Expect(err).NotTo(HaveOccurred())

	// The target's manager runs before the move: its webhooks admit what
	// clusterctl creates. A watch started now sees the TalosUpgrade as it
	// was created in the target, before any controller wrote to it.
	g.Expect(dst.StartManager(ctx, manager.Options{})).To(Succeed())
	created := watchCreated(ctx, t, dst)
	t.Logf("%s: the rollout is held mid-way (Machine %s held, %s waiting); moving", since(begin), held, waiting)
	g.Expect(clusterctlMove(ctx, from, to, namespace)).To(Succeed())
	t.Logf("%s: moved", since(begin))

	// Every Tollgate object moved; the Cluster came out of its pause.
	g.Expect(tollgateObjects(ctx, t, dst.Management.Client, namespace)).To(Equal(map[string]int{
		"TalosUpgradePolicy": 1, "ClusterHealthCheck": 1, "TalosUpgrade": 1,
	}))
	left := tollgateObjects(ctx, t, src.Management.Client, namespace)
	g.Expect(left["TalosUpgradePolicy"] + left["ClusterHealthCheck"]).To(BeZero())
	if left["TalosUpgrade"] != 0 {
		t.Errorf("%d TalosUpgrades are left in the source: the source's policy controller made a rollout for a Cluster being moved", left["TalosUpgrade"])
	}
	g.Expect(machineNames(ctx, t, src.Management.Client)).To(BeEmpty(), "every Machine left the source")
	var moved *upgradev1.TalosUpgrade
	g.Eventually(created, timeout).Should(Receive(&moved), "no TalosUpgrade was created in the target")
	g.Expect(moved.Name).To(Equal(before.Name))
	g.Expect(moved.Spec).To(Equal(before.Spec))
	g.Expect(before.Annotations).To(HaveKey(upgradev1.AdmittedAnnotation))
	g.Expect(moved.Annotations).NotTo(HaveKey(upgradev1.AdmittedAnnotation),
		"the TalosUpgrade webhook let clusterctl, not the controller, create an admitted TalosUpgrade")
	cluster := &clusterv1.Cluster{}
	g.Expect(dst.Management.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, cluster)).To(Succeed())
	g.Expect(cluster.Spec.Paused).To(Or(BeNil(), HaveValue(BeFalse())))
	g.Expect(cluster.Labels).To(HaveKeyWithValue(upgradev1.PolicyLabel, policyName))

	// Nothing the source did on the way out released the held worker, and
	// the write-ahead log crossed in the TalosUpgrade's metadata, as move
	// creates it without its status.
	g.Expect(nodeCordoned(ctx, t, c, held)).To(BeTrue(), "the node of Machine %s was uncordoned during the move while it is drained and held before its upgrade", held)
	g.Expect(moved.Annotations).To(HaveKey(talosupgrade.LogAnnotation))

	// CAPI's controllers in the target rebuild what move dropped: the
	// Cluster's infrastructure and control plane, each Machine's Node and
	// the Talos it runs (the control plane's is the target already), and
	// none of the Machines is replaced.
	g.Eventually(func(g Gomega) {
		cluster := &clusterv1.Cluster{}
		g.Expect(dst.Management.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, cluster)).To(Succeed())
		g.Expect(cluster.Status.Initialization.InfrastructureProvisioned).To(HaveValue(BeTrue()))
		g.Expect(cluster.Status.Initialization.ControlPlaneInitialized).To(HaveValue(BeTrue()))
		g.Expect(conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition)).To(BeTrue())
		list := &clusterv1.MachineList{}
		g.Expect(dst.Management.Client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		for _, m := range list.Items {
			g.Expect(m.Status.NodeRef.Name).To(Equal(m.Name), "CAPI in the target found the Node of Machine %s", m.Name)
			g.Expect(m.Status.NodeInfo).NotTo(BeNil(), "Machine %s", m.Name)
			g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage(c.Simulator.Node(m.Name).Version())), "Machine %s reports the Talos its node runs", m.Name)
		}
	}, timeout, 200*time.Millisecond).Should(Succeed(), func() string { return describeMachines(ctx, dst.Management.Client) })
	g.Expect(machineNames(ctx, t, dst.Management.Client)).To(Equal(names), "the Machines moved, none replaced")

	// The target admits the rollout again and resumes it where the source
	// left it.
	g.Eventually(func() (*upgradev1.TalosUpgrade, error) {
		u := &upgradev1.TalosUpgrade{}
		err := dst.Management.Client.Get(ctx, client.ObjectKeyFromObject(before), u)
		return u, err
	}, timeout, 100*time.Millisecond).Should(And(
		HaveField("Annotations", HaveKeyWithValue(upgradev1.AdmittedAnnotation, before.Annotations[upgradev1.AdmittedAnnotation])),
		HaveField("Status.StartTime", HaveValue(HaveField("Time", BeTemporally("==", before.Status.StartTime.Time)))),
		HaveField("Status.Machines", ContainElement(And(
			HaveField("Machine", held), HaveField("Phase", upgradev1.MachinePhaseWaitingForHold),
			HaveField("HoldPoint", upgradev1.HoldPointPreReboot), HaveField("Cordoned", true), HaveField("SkipRemediationSet", true)))),
	), func() string { return describe(ctx, dst.Management.Client) })

	// The held worker goes on; the one that waited starts in the target and
	// stops at its own hold, then goes on too.
	setHold(ctx, t, dst.Management.Client, held, false)
	g.Eventually(func() map[string]string {
		return machinePhases(ctx, t, dst.Management.Client)
	}, timeout, 100*time.Millisecond).Should(And(
		HaveKeyWithValue(held, string(upgradev1.MachinePhaseCompleted)),
		HaveKeyWithValue(waiting, string(upgradev1.MachinePhaseWaitingForHold)+"/"+string(upgradev1.HoldPointPreReboot)),
	), func() string { return describe(ctx, dst.Management.Client) })
	setHold(ctx, t, dst.Management.Client, waiting, false)
	g.Eventually(func() (upgradev1.UpgradePhase, error) {
		u := &upgradev1.TalosUpgrade{}
		err := dst.Management.Client.Get(ctx, client.ObjectKeyFromObject(before), u)
		return u.Status.Phase, err
	}, timeout, 100*time.Millisecond).Should(Equal(upgradev1.UpgradePhaseCompleted), func() string { return describe(ctx, dst.Management.Client) })

	t.Logf("%s: the rollout completed in the target", since(begin))
	g.Expect(c.Simulator.Nodes()).To(HaveLen(len(names)), "every machine still runs: no provider removed one on the way")
	for _, n := range c.Simulator.Nodes() {
		calls := c.Simulator.Calls(n.Name(), talossim.RPCUpgrade) + c.Simulator.Calls(n.Name(), talossim.RPCLegacyUpgrade)
		g.Expect(calls).To(Equal(1), "upgrade calls to node %s", n.Name())
		g.Expect(n.Version()).To(Equal(target), "version of node %s", n.Name())
		g.Expect(nodeCordoned(ctx, t, c, n.Name())).To(BeFalse(), "node %s is left cordoned", n.Name())
	}
	// CAPI in the target reports the target in every Machine's nodeInfo,
	// copied from its Node; the Machines are still the ones made in the
	// source.
	g.Eventually(func(g Gomega) {
		list := &clusterv1.MachineList{}
		g.Expect(dst.Management.Client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		for _, m := range list.Items {
			g.Expect(m.Status.NodeInfo).NotTo(BeNil(), "Machine %s", m.Name)
			g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage(target)), "Machine %s", m.Name)
			_, shielded := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]
			g.Expect(shielded).To(BeFalse(), "Machine %s keeps %s after the rollout", m.Name, clusterv1.MachineSkipRemediationAnnotation)
		}
	}, timeout, 200*time.Millisecond).Should(Succeed(), func() string { return describeMachines(ctx, dst.Management.Client) })
	g.Expect(machineNames(ctx, t, dst.Management.Client)).To(Equal(names), "no Machine was replaced")
}

// watchCreated watches the TalosUpgrades of the namespace in a sandbox's
// management cluster from now on, until the test ends, and sends each as it
// was created (the object of its ADDED event, before any later write).
func watchCreated(ctx context.Context, t *testing.T, sb *sandbox.Sandbox) <-chan *upgradev1.TalosUpgrade {
	t.Helper()
	wc, err := client.NewWithWatch(sb.Management.Config, client.Options{Scheme: sb.Management.Client.Scheme()})
	if err != nil {
		t.Fatalf("Making a watching client: %v", err)
	}
	w, err := wc.Watch(ctx, &upgradev1.TalosUpgradeList{}, client.InNamespace(namespace))
	if err != nil {
		t.Fatalf("Watching the TalosUpgrades of namespace %s: %v", namespace, err)
	}
	t.Cleanup(w.Stop)
	out := make(chan *upgradev1.TalosUpgrade, 10)
	go func() {
		for e := range w.ResultChan() {
			if u, ok := e.Object.(*upgradev1.TalosUpgrade); ok && e.Type == watch.Added {
				select {
				case out <- u:
				default:
				}
			}
		}
	}()
	return out
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

// describe renders the TalosUpgrade's status, for a failed wait.
func describe(ctx context.Context, c client.Client) string {
	u := &upgradev1.TalosUpgrade{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, u); err != nil {
		return err.Error()
	}
	out, err := yaml.Marshal(u.Status)
	if err != nil {
		return err.Error()
	}
	return "TalosUpgrade status:\n" + string(out)
}

// startSandboxes starts two sandboxes at once, stopped at the end of the
// test.
func startSandboxes(t *testing.T, a, b sandbox.Options) (*sandbox.Sandbox, *sandbox.Sandbox) {
	t.Helper()
	opts := []sandbox.Options{a, b}
	sbs := make([]*sandbox.Sandbox, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		o.RebootDuration = rebootDuration
		o.JobDelay = 50 * time.Millisecond
		wg.Go(func() { sbs[i], errs[i] = sandbox.Start(t.Context(), o) })
	}
	wg.Wait()
	for _, sb := range sbs {
		if sb != nil {
			t.Cleanup(func() {
				if err := sb.Stop(); err != nil {
					t.Errorf("Stopping a sandbox: %v", err)
				}
			})
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Starting a sandbox: %v", err)
		}
	}
	return sbs[0], sbs[1]
}

// labelTalosconfig labels the Cluster's talosconfig Secret with
// clusterctl.cluster.x-k8s.io/move, as the book tells users whose Talos
// providers do not own it through the Cluster: of the Secrets outside a
// Cluster's owner chain, clusterctl move takes only those named for CAPI's
// purposes (<cluster>-kubeconfig, -ca, ...), which "talosconfig" is not, and
// those with that label. The Talos providers' stand-ins do not write that
// Secret; the sandbox writes the simulator's, with no owner.
func labelTalosconfig(ctx context.Context, t *testing.T, c client.Client, sc *sandbox.Cluster) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: sc.Name + "-talosconfig"}, secret); err != nil {
		t.Fatalf("Reading the talosconfig Secret of Cluster %s: %v", sc.Name, err)
	}
	patch := client.MergeFrom(secret.DeepCopy())
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[clusterctlv1.ClusterctlMoveLabel] = ""
	if err := c.Patch(ctx, secret, patch); err != nil {
		t.Fatalf("Labelling Secret %s for clusterctl move: %v", secret.Name, err)
	}
}

// setHold adds or removes the test's pre-reboot hold on a Machine.
func setHold(ctx context.Context, t *testing.T, c client.Client, machineName string, hold bool) {
	t.Helper()
	m := &clusterv1.Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: machineName}, m); err != nil {
		t.Fatalf("Reading Machine %s: %v", machineName, err)
	}
	patch := client.MergeFrom(m.DeepCopy())
	key := hooks.HoldAnnotation(upgradev1.HoldPointPreReboot, holder)
	if hold {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[key] = ""
	} else {
		delete(m.Annotations, key)
	}
	if err := c.Patch(ctx, m, patch); err != nil {
		t.Fatalf("Setting the hold of Machine %s to %t: %v", machineName, hold, err)
	}
}

// machinePhases returns the phase of each Machine's record, with its hold
// point when it waits for one.
func machinePhases(ctx context.Context, t *testing.T, c client.Client) map[string]string {
	t.Helper()
	u := &upgradev1.TalosUpgrade{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, u); err != nil {
		return nil
	}
	out := map[string]string{}
	for _, st := range u.Status.Machines {
		out[st.Machine] = string(st.Phase)
		if st.Phase == upgradev1.MachinePhaseWaitingForHold {
			out[st.Machine] += "/" + string(st.HoldPoint)
		}
	}
	return out
}

// nodeCordoned reports whether a node of the workload cluster is cordoned.
func nodeCordoned(ctx context.Context, t *testing.T, sc *sandbox.Cluster, name string) bool {
	t.Helper()
	n := &corev1.Node{}
	if err := sc.Workload.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		t.Fatalf("Reading node %s: %v", name, err)
	}
	return n.Spec.Unschedulable
}

// machineNames returns the names of the Machines of the namespace, sorted.
func machineNames(ctx context.Context, t *testing.T, c client.Client) []string {
	t.Helper()
	list := &clusterv1.MachineList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		t.Fatalf("Listing Machines: %v", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, m := range list.Items {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// describeMachines says what CAPI reports of each Machine, for a failed
// wait.
func describeMachines(ctx context.Context, c client.Client) string {
	list := &clusterv1.MachineList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, m := range list.Items {
		osImage := ""
		if m.Status.NodeInfo != nil {
			osImage = m.Status.NodeInfo.OSImage
		}
		fmt.Fprintf(&b, "\nMachine %s: phase %q, node %q, OS %q", m.Name, m.Status.Phase, m.Status.NodeRef.Name, osImage)
		for _, cond := range m.Status.Conditions {
			if cond.Status != metav1.ConditionTrue && cond.Message != "" {
				fmt.Fprintf(&b, "; %s: %s", cond.Type, cond.Message)
			}
		}
	}
	return b.String()
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
