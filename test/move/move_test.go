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
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/controllers/talosupgrade"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

const (
	namespace   = "fleet"
	clusterName = "prod"
	policyName  = "to-1-13"
	checkName   = "api-ready"
	target      = "v1.13.0"
	// holder holds worker-0 before its upgrade call, so that the move
	// happens at a known point of the rollout.
	holder = "move-test"
	// timeout bounds each wait for the rollout.
	timeout = 60 * time.Second
)

// TestMoveMidRollout moves a management cluster with clusterctl's own move
// code while a rollout is in progress: the control-plane Machine is
// upgraded, worker-0 is drained and held before its upgrade call, worker-1
// waits. The target resumes the rollout from the write-ahead log the
// TalosUpgrade carries (move drops every status) and finishes it, with
// exactly one upgrade call per node, and nothing left cordoned or shielded
// from remediation.
//
// Both management clusters run the production manager with its webhooks
// (config/webhook installed, served by cmd/manager), the target's from before
// the move, as on a management cluster that `clusterctl init` set up: every
// object clusterctl creates in the target goes through Tollgate's admission.
// clusterctl creates the TalosUpgrade as its own user, not as the
// controller, so the TalosUpgrade webhook drops its admitted annotation (only
// the controller may set it) instead of refusing it, and the target's policy
// controller admits the rollout again, within maxClustersInProgress.
//
// Stood in: `clusterctl init` (installAsClusterctl labels the CRDs and fills
// the inventory), and CAPI's controllers in the target (restoreCAPIStatus
// writes back the Cluster's and Machines' status, which move drops and CAPI
// rebuilds, once the move is done: until then the target's manager sees the
// moved Machines without status, as it can before CAPI catches up). Machines
// are owned by their Cluster, as CAPI's Machine controller makes a Machine of
// no MachineSet or control plane.
func TestMoveMidRollout(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: run `make test`, or export KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)")
	}
	g := NewWithT(t)
	ctx := t.Context()
	begin := time.Now()

	src, dst := startSandboxes(t, sandbox.Options{Webhooks: true, InstallerVersions: []string{target}}, sandbox.Options{Webhooks: true})
	t.Logf("%s: started two management clusters", since(begin))
	from := installAsClusterctl(ctx, t, src, "source")
	to := installAsClusterctl(ctx, t, dst, "target")
	t.Logf("%s: installed as clusterctl does", since(begin))
	g.Expect(src.StartManager(ctx, manager.Options{})).To(Succeed())

	c, err := src.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: namespace, Name: clusterName, ControlPlanes: 1, Workers: 2})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("%s: created the Cluster", since(begin))
	standInForCAPI(ctx, t, src.Management.Client, c)
	worker0 := clusterName + "-worker-0"
	setHold(ctx, t, src.Management.Client, worker0, true)
	g.Expect(src.Management.Client.Create(ctx, sandbox.HealthCheck(namespace, checkName, 5*time.Second, "kubectl", "get", "--raw=/readyz"))).To(Succeed())
	g.Expect(src.Management.Client.Create(ctx, src.Policy(namespace, policyName, target, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: checkName}}
	}))).To(Succeed())
	g.Expect(c.OptIn(ctx, policyName)).To(Succeed())

	t.Logf("%s: the world is set up; the rollout starts", since(begin))
	// Mid-rollout: the control plane is done, worker-0 is drained and held.
	g.Eventually(func() map[string]string {
		return machinePhases(ctx, t, src.Management.Client)
	}, timeout, 100*time.Millisecond).Should(And(
		HaveKeyWithValue(clusterName+"-cp-0", string(upgradev1.MachinePhaseCompleted)),
		HaveKeyWithValue(worker0, string(upgradev1.MachinePhaseWaitingForHold)+"/"+string(upgradev1.HoldPointPreReboot)),
	))
	before, err := src.Upgrade(ctx, namespace, clusterName)
	g.Expect(err).NotTo(HaveOccurred())
	snap := snapshotCAPIStatus(ctx, t, src.Management.Client)

	// The target's manager runs before the move: its webhooks admit what
	// clusterctl creates. A watch started now sees the TalosUpgrade as it
	// was created in the target, before any controller wrote to it.
	g.Expect(dst.StartManager(ctx, manager.Options{})).To(Succeed())
	created := watchCreated(ctx, t, dst)
	t.Logf("%s: the rollout is held mid-way; moving", since(begin))
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

	// Nothing the source did on the way out released worker-0, and the
	// write-ahead log crossed in the TalosUpgrade's metadata, as move
	// creates it without its status.
	g.Expect(nodeCordoned(ctx, t, c, worker0)).To(BeTrue(), "worker-0's node was uncordoned during the move while it is drained and held before its upgrade")
	g.Expect(moved.Annotations).To(HaveKey(talosupgrade.LogAnnotation))

	restoreCAPIStatus(ctx, t, dst.Management.Client, c, snap)

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
			HaveField("Machine", worker0), HaveField("Phase", upgradev1.MachinePhaseWaitingForHold),
			HaveField("HoldPoint", upgradev1.HoldPointPreReboot), HaveField("Cordoned", true), HaveField("SkipRemediationSet", true)))),
	), func() string { return describe(ctx, dst.Management.Client) })

	setHold(ctx, t, dst.Management.Client, worker0, false)
	g.Eventually(func() (upgradev1.UpgradePhase, error) {
		u := &upgradev1.TalosUpgrade{}
		err := dst.Management.Client.Get(ctx, client.ObjectKeyFromObject(before), u)
		return u.Status.Phase, err
	}, timeout, 100*time.Millisecond).Should(Equal(upgradev1.UpgradePhaseCompleted), func() string { return describe(ctx, dst.Management.Client) })

	t.Logf("%s: the rollout completed in the target", since(begin))
	for _, n := range c.Simulator.Nodes() {
		calls := c.Simulator.Calls(n.Name(), talossim.RPCUpgrade) + c.Simulator.Calls(n.Name(), talossim.RPCLegacyUpgrade)
		g.Expect(calls).To(Equal(1), "upgrade calls to node %s", n.Name())
		g.Expect(n.Version()).To(Equal(target), "version of node %s", n.Name())
		g.Expect(nodeCordoned(ctx, t, c, n.Name())).To(BeFalse(), "node %s is left cordoned", n.Name())
	}
	machines := &clusterv1.MachineList{}
	g.Expect(dst.Management.Client.List(ctx, machines, client.InNamespace(namespace))).To(Succeed())
	for _, m := range machines.Items {
		_, shielded := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]
		g.Expect(shielded).To(BeFalse(), "Machine %s keeps %s after the rollout", m.Name, clusterv1.MachineSkipRemediationAnnotation)
	}
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
		o.RebootDuration = 200 * time.Millisecond
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

// standInForCAPI does what CAPI and the Talos providers do to a sandbox
// Cluster that clusterctl move reads: the Cluster controller reports its
// control plane initialized (a condition besides the status field), the
// Machine controller makes the Cluster own a Machine of no MachineSet or
// control plane, and the talosconfig Secret belongs to the Cluster's owner
// chain. Move finds a Cluster's objects through owner references; of the
// Secrets without one it takes only those named for CAPI's purposes
// (<cluster>-kubeconfig, -ca, ...), which "talosconfig" is not.
func standInForCAPI(ctx context.Context, t *testing.T, c client.Client, sc *sandbox.Cluster) {
	t.Helper()
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: sc.Name}, cluster); err != nil {
		t.Fatalf("Reading Cluster %s: %v", sc.Name, err)
	}
	conditions.Set(cluster, metav1.Condition{
		Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue, Reason: clusterv1.ClusterControlPlaneInitializedReason,
	})
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatalf("Writing the status of Cluster %s: %v", sc.Name, err)
	}
	owned := []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sc.Namespace, Name: sc.Name + "-talosconfig"}}}
	for _, m := range sc.Fixture.Machines {
		owned = append(owned, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}})
	}
	for _, o := range owned {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("Reading %T %s: %v", o, o.GetName(), err)
		}
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		o.SetOwnerReferences(append(o.GetOwnerReferences(), metav1.OwnerReference{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
		}))
		if err := c.Patch(ctx, o, patch); err != nil {
			t.Fatalf("Making Cluster %s own %T %s: %v", sc.Name, o, o.GetName(), err)
		}
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

// capiStatus is the status CAPI's controllers keep on a Cluster and its
// Machines.
type capiStatus struct {
	cluster  clusterv1.ClusterStatus
	machines map[string]clusterv1.MachineStatus
}

func snapshotCAPIStatus(ctx context.Context, t *testing.T, c client.Client) capiStatus {
	t.Helper()
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, cluster); err != nil {
		t.Fatalf("Reading Cluster %s: %v", clusterName, err)
	}
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, client.InNamespace(namespace)); err != nil {
		t.Fatalf("Listing Machines: %v", err)
	}
	out := capiStatus{cluster: cluster.Status, machines: map[string]clusterv1.MachineStatus{}}
	for _, m := range machines.Items {
		out.machines[m.Name] = m.Status
	}
	return out
}

// restoreCAPIStatus stands in for CAPI's controllers in the target
// management cluster: clusterctl move creates the Cluster and its Machines
// without status, which CAPI rebuilds from the infrastructure and the
// workload Nodes. Each Machine's nodeInfo is its Node's, as CAPI mirrors it.
func restoreCAPIStatus(ctx context.Context, t *testing.T, c client.Client, sc *sandbox.Cluster, snap capiStatus) {
	t.Helper()
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, cluster); err != nil {
		t.Fatalf("Reading the moved Cluster: %v", err)
	}
	cluster.Status = snap.cluster
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatalf("Writing the status of the moved Cluster: %v", err)
	}
	for name, st := range snap.machines {
		m := &clusterv1.Machine{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m); err != nil {
			t.Fatalf("Reading the moved Machine %s: %v", name, err)
		}
		node := &corev1.Node{}
		if err := sc.Workload.Client.Get(ctx, client.ObjectKey{Name: st.NodeRef.Name}, node); err != nil {
			t.Fatalf("Reading node %s: %v", st.NodeRef.Name, err)
		}
		m.Status = st
		m.Status.NodeInfo = node.Status.NodeInfo.DeepCopy()
		if err := c.Status().Update(ctx, m); err != nil {
			t.Fatalf("Writing the status of the moved Machine %s: %v", name, err)
		}
	}
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
