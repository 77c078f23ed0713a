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

package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Scenario 7 measures Kubernetes upgrades in place (BenchmarkKubernetes).
// First a Kubernetes-only rollout of scenario 1's Cluster (3 control-plane
// and 20 worker Machines on their Talos target), once per worker budget,
// against its ideal: the waits no orchestrator can avoid, the static Pods'
// restart on each control-plane node one at a time, then each
// control-plane node's kubelet one at a time, then the workers' kubelets
// in batches of the budget, each wait talossim.DefaultStaticPodStartDelay.
// Then a Talos hop planned together with a Kubernetes minor (one rollout)
// against the same change made as two rollouts, a Talos one and then a
// Kubernetes-only one, on two Clusters made alike, in the same sandbox; the
// figure is their ratio, and each path's reboots, cordons (each node's
// drains) and Talos calls per node say where the time went. The sandbox is
// test/sandbox's with an in-process manager (as scenario 6), without CAPI
// core: its Clusters have no controlPlaneRef and no MachineDeployment,
// so that the KubernetesVersions condition finds no CAPI object to ask for
// the new version.

// Kubernetes versions of scenario 7: the Kubernetes-only rollouts go from
// KubernetesOnlyFrom to KubernetesOnlyTo on ToVersion; the two paths of the
// hop from HopKubernetesFrom to HopKubernetesTo with Talos FromVersion to
// ToVersion (Talos v1.12 runs Kubernetes 1.34 and 1.35, Talos v1.13 runs
// 1.34 to 1.36).
const (
	KubernetesOnlyFrom = "v1.35.2"
	KubernetesOnlyTo   = "v1.36.0"
	HopKubernetesFrom  = "v1.34.1"
	HopKubernetesTo    = "v1.35.2"
)

// KubernetesOptions size scenario 7.
type KubernetesOptions struct {
	// ControlPlanes and Workers are the Machines of every Cluster.
	ControlPlanes, Workers int
	// Reboot is how long a node is down (the hop's paths reboot).
	Reboot time.Duration
	// MaxUnavailable are the worker budgets of the Kubernetes-only
	// rollouts, one rollout each.
	MaxUnavailable []int
	// HopMaxUnavailable is the worker budget of both paths of the hop.
	HopMaxUnavailable int
	// Timeout bounds each rollout.
	Timeout time.Duration
	// Logf receives the sandbox's set-up steps.
	Logf func(format string, args ...any)
}

// KubernetesOnlyResult is one Kubernetes-only rollout.
type KubernetesOnlyResult struct {
	MaxUnavailable int `json:"maxUnavailable"`
	Machines       int `json:"machines"`
	// StaticPodStartSeconds is the simulator's delay of a static Pod's
	// and a kubelet's (re)start.
	StaticPodStartSeconds float64 `json:"staticPodStartSeconds"`
	// FirstApplySeconds is from the Cluster's opt-in to the first
	// configuration applied: admission, preflight, the path planned.
	FirstApplySeconds float64 `json:"firstApplySeconds"`
	// TotalSeconds is from the first configuration applied to the rollout
	// Completed; IdealSeconds the unavoidable waits (see scenario 7).
	TotalSeconds float64 `json:"totalSeconds"`
	IdealSeconds float64 `json:"idealSeconds"`
	// Factor is TotalSeconds over IdealSeconds.
	Factor float64 `json:"factor"`
	// PerMachineSeconds and IdealPerMachineSeconds are TotalSeconds and
	// IdealSeconds per Machine.
	PerMachineSeconds      float64 `json:"perMachineSeconds"`
	IdealPerMachineSeconds float64 `json:"idealPerMachineSeconds"`
	// Counts is what the nodes went through.
	Counts NodeCounts `json:"counts"`
	// Applies are the configuration applies, in seconds from the first,
	// in order, each with its node: where the time between them goes.
	Applies []NodeCall `json:"applies"`
}

// NodeCall is a call a node received, in seconds from a scenario's
// reference.
type NodeCall struct {
	Node    string  `json:"node"`
	Seconds float64 `json:"seconds"`
}

// NodeCounts are what a path did to a Cluster's nodes, per node.
type NodeCounts struct {
	// Reboots are the simulator's boots.
	Reboots float64 `json:"rebootsPerNode"`
	// Cordons are the Nodes' moves to unschedulable, one per drain.
	Cordons float64 `json:"cordonsPerNode"`
	// UpgradeCalls are Talos upgrade calls; ApplyCalls configuration
	// applies (a Kubernetes change alone is one).
	UpgradeCalls float64 `json:"upgradeCallsPerNode"`
	ApplyCalls   float64 `json:"applyCallsPerNode"`
}

// HopPathResult is one path of the hop.
type HopPathResult struct {
	// Rollouts are each rollout's time, from the Cluster's opt-in to its
	// rollout Completed; TotalSeconds their sum.
	Rollouts     []float64 `json:"rolloutSeconds"`
	TotalSeconds float64   `json:"totalSeconds"`
	// PerMachineSeconds is TotalSeconds per Machine.
	PerMachineSeconds float64    `json:"perMachineSeconds"`
	Counts            NodeCounts `json:"counts"`
}

// KubernetesResult is the outcome of scenario 7.
type KubernetesResult struct {
	ControlPlanes  int                    `json:"controlPlanes"`
	Workers        int                    `json:"workers"`
	RebootSeconds  float64                `json:"rebootSeconds"`
	KubernetesOnly []KubernetesOnlyResult `json:"kubernetesOnly"`
	// HopMaxUnavailable is the worker budget of both paths of the hop.
	HopMaxUnavailable int `json:"hopMaxUnavailable"`
	// Combined is Talos and Kubernetes in one rollout; Separate a Talos
	// rollout, then a Kubernetes-only one.
	Combined *HopPathResult `json:"combined,omitempty"`
	Separate *HopPathResult `json:"separate,omitempty"`
	// Ratio is Combined's time over Separate's.
	Ratio float64 `json:"ratio,omitempty"`
}

// kubernetesIdeal is the sum of the waits a Kubernetes-only rollout of
// controlPlanes and workers cannot avoid with a worker budget of mu: each
// control-plane node's static Pods, one node at a time; each control-plane
// node's kubelet, one at a time; the workers' kubelets, mu at a time; each
// wait one restart.
func kubernetesIdeal(controlPlanes, workers, mu int, restart time.Duration) time.Duration {
	batches := (workers + mu - 1) / mu
	return time.Duration(2*controlPlanes+batches) * restart
}

// withoutControlPlaneRef makes a Cluster whose control-plane Machines no
// control-plane provider owns (the sandbox runs no CAPI core): the
// KubernetesVersions condition then has no object to wait for.
func withoutControlPlaneRef(c *clusterv1.Cluster) {
	c.Spec.ControlPlaneRef = clusterv1.ContractVersionedObjectReference{}
	c.Spec.ClusterNetwork.ServiceDomain = "cluster.local" // A spec that is not empty.
}

// RunKubernetes runs scenario 7 in a sandbox of its own.
func RunKubernetes(ctx context.Context, o KubernetesOptions, logf func(string, ...any)) (*KubernetesResult, error) {
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Webhooks: true, InstallerVersions: []string{FromVersion, ToVersion}, RebootDuration: o.Reboot, JobDelay: -1, Logf: o.Logf,
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sb.Stop() }()
	if err := sb.StartManager(ctx, manager.Options{}); err != nil {
		return nil, err
	}
	k := &kubernetesRun{sb: sb, o: o, logf: logf}
	res := &KubernetesResult{ControlPlanes: o.ControlPlanes, Workers: o.Workers, RebootSeconds: o.Reboot.Seconds(), HopMaxUnavailable: o.HopMaxUnavailable}
	for _, mu := range o.MaxUnavailable {
		r, err := k.kubernetesOnly(ctx, mu)
		if err != nil {
			return res, fmt.Errorf("the Kubernetes-only rollout with maxUnavailable %d: %w", mu, err)
		}
		res.KubernetesOnly = append(res.KubernetesOnly, *r)
	}
	if res.Separate, err = k.hop(ctx, false); err != nil {
		return res, fmt.Errorf("the separate rollouts: %w", err)
	}
	if res.Combined, err = k.hop(ctx, true); err != nil {
		return res, fmt.Errorf("the combined rollout: %w", err)
	}
	res.Ratio = res.Combined.TotalSeconds / res.Separate.TotalSeconds
	logf("Scenario 7: Talos and Kubernetes together %.1fs, separately %.1fs (%.2fx)", res.Combined.TotalSeconds, res.Separate.TotalSeconds, res.Ratio)
	return res, nil
}

// kubernetesRun is scenario 7 under way.
type kubernetesRun struct {
	sb   *sandbox.Sandbox
	o    KubernetesOptions
	logf func(string, ...any)
}

// createCluster creates a Cluster of the scenario's shape on Talos talos
// and Kubernetes kube, and starts counting its cordons.
func (k *kubernetesRun) createCluster(ctx context.Context, ns, name, talos, kube string) (*sandbox.Cluster, *cordonCounter, error) {
	c, err := k.sb.CreateCluster(ctx, sandbox.ClusterOptions{
		Namespace: ns, Name: name, ControlPlanes: k.o.ControlPlanes, Workers: k.o.Workers,
		TalosVersion: talos, KubernetesVersion: kube, ClusterOptions: []builder.ClusterOption{withoutControlPlaneRef},
	})
	if err != nil {
		return nil, nil, err
	}
	cordons, err := countCordons(ctx, c.Workload)
	if err != nil {
		return nil, nil, err
	}
	return c, cordons, nil
}

// createPolicy creates a policy to talos and kube ("" for none) with a
// worker budget of mu.
func (k *kubernetesRun) createPolicy(ctx context.Context, ns, name, talos, kube string, mu int) error {
	budget := intstr.FromInt(mu)
	return k.sb.Management.Client.Create(ctx, k.sb.Policy(ns, name, talos, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.KubernetesVersion = kube
		p.Spec.Rollout.Workers.MaxUnavailable = &budget
	}))
}

// rollOut opts c in to policy and waits for its rollout to be Completed on
// policy's plan; it returns the time from the opt-in.
func (k *kubernetesRun) rollOut(ctx context.Context, c *sandbox.Cluster, policy, kube string) (time.Time, time.Duration, error) {
	begun := time.Now()
	if err := c.OptIn(ctx, policy); err != nil {
		return begun, 0, err
	}
	var last *upgradev1.TalosUpgrade
	err := waitFor(ctx, k.o.Timeout, func() (bool, error) {
		u, err := k.sb.Upgrade(ctx, c.Namespace, c.Name)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		last = u
		if u.Status.Phase == upgradev1.UpgradePhaseFailed {
			return false, fmt.Errorf("the rollout of %s/%s failed: %s", c.Namespace, c.Name, u.Status.BlockedBy)
		}
		return u.Spec.PolicyName == policy && u.Spec.KubernetesVersion == kube && u.Status.ObservedGeneration == u.Generation &&
			u.Status.Phase == upgradev1.UpgradePhaseCompleted, nil
	})
	if err != nil && last != nil {
		err = fmt.Errorf("%w: TalosUpgrade %s/%s of policy %q to Kubernetes %q is %s (generation %d observed %d), blockedBy: %s",
			err, c.Namespace, c.Name, last.Spec.PolicyName, last.Spec.KubernetesVersion, last.Status.Phase, last.Generation, last.Status.ObservedGeneration, last.Status.BlockedBy)
	}
	return begun, time.Since(begun), err
}

// kubernetesOnly rolls out Kubernetes alone on a Cluster on its Talos
// target, with a worker budget of mu.
func (k *kubernetesRun) kubernetesOnly(ctx context.Context, mu int) (*KubernetesOnlyResult, error) {
	ns, name := fmt.Sprintf("kubernetes-mu%d", mu), fmt.Sprintf("k8s%d", mu)
	k.logf("Scenario 7 (Kubernetes only, maxUnavailable %d): creating Cluster %s/%s with %d+%d Machines", mu, ns, name, k.o.ControlPlanes, k.o.Workers)
	c, cordons, err := k.createCluster(ctx, ns, name, ToVersion, KubernetesOnlyFrom)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Stop() }()
	defer cordons.stop()
	if err := k.createPolicy(ctx, ns, "kubernetes", ToVersion, KubernetesOnlyTo, mu); err != nil {
		return nil, err
	}
	k.logf("Scenario 7 (Kubernetes only, maxUnavailable %d): rolling out", mu)
	begun, took, err := k.rollOut(ctx, c, "kubernetes", KubernetesOnlyTo)
	if err != nil {
		return nil, err
	}
	end := begun.Add(took)
	if err := checkKubernetes(ctx, k.sb, c, KubernetesOnlyTo); err != nil {
		return nil, err
	}
	first := firstCall(c.Simulator, begun, talossim.RPCApplyConfig)
	if first.IsZero() {
		return nil, fmt.Errorf("no configuration applied to the nodes of %s/%s", ns, name)
	}
	machines := k.o.ControlPlanes + k.o.Workers
	ideal := kubernetesIdeal(k.o.ControlPlanes, k.o.Workers, mu, talossim.DefaultStaticPodStartDelay)
	total := end.Sub(first)
	res := &KubernetesOnlyResult{
		MaxUnavailable: mu, Machines: machines, StaticPodStartSeconds: talossim.DefaultStaticPodStartDelay.Seconds(),
		FirstApplySeconds: first.Sub(begun).Seconds(), TotalSeconds: total.Seconds(), IdealSeconds: ideal.Seconds(),
		Factor: total.Seconds() / ideal.Seconds(), PerMachineSeconds: total.Seconds() / float64(machines),
		IdealPerMachineSeconds: ideal.Seconds() / float64(machines), Counts: nodeCounts(c.Simulator, cordons, machines),
	}
	for _, call := range c.Simulator.CallLog() {
		if call.RPC == talossim.RPCApplyConfig && !call.Time.Before(first) {
			res.Applies = append(res.Applies, NodeCall{Node: call.Node, Seconds: call.Time.Sub(first).Seconds()})
		}
	}
	slices.SortFunc(res.Applies, func(a, b NodeCall) int { return cmp.Compare(a.Seconds, b.Seconds) })
	k.logf("Scenario 7 (Kubernetes only, maxUnavailable %d): %.2fs from the first apply (ideal %.2fs, %.1fx), %.3fs per Machine",
		mu, res.TotalSeconds, res.IdealSeconds, res.Factor, res.PerMachineSeconds)
	return res, nil
}

// hop moves a Cluster from Talos FromVersion and Kubernetes
// HopKubernetesFrom to ToVersion and HopKubernetesTo: in one rollout when
// combined, else a Talos rollout and then a Kubernetes-only one.
func (k *kubernetesRun) hop(ctx context.Context, combined bool) (*HopPathResult, error) {
	ns, name, path := "kubernetes-separate", "separate", "separately"
	if combined {
		ns, name, path = "kubernetes-combined", "combined", "together"
	}
	k.logf("Scenario 7 (Talos and Kubernetes %s): creating Cluster %s/%s with %d+%d Machines", path, ns, name, k.o.ControlPlanes, k.o.Workers)
	c, cordons, err := k.createCluster(ctx, ns, name, FromVersion, HopKubernetesFrom)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Stop() }()
	defer cordons.stop()
	type step struct{ policy, kube string }
	steps := []step{{"talos-and-kubernetes", HopKubernetesTo}}
	if !combined {
		steps = []step{{"talos", ""}, {"kubernetes", HopKubernetesTo}}
	}
	res := &HopPathResult{}
	for _, s := range steps {
		if err := k.createPolicy(ctx, ns, s.policy, ToVersion, s.kube, k.o.HopMaxUnavailable); err != nil {
			return nil, err
		}
		k.logf("Scenario 7 (Talos and Kubernetes %s): rolling out %s", path, s.policy)
		_, took, err := k.rollOut(ctx, c, s.policy, s.kube)
		if err != nil {
			return nil, err
		}
		res.Rollouts = append(res.Rollouts, took.Seconds())
		res.TotalSeconds += took.Seconds()
		// CAPI core, which this sandbox does not run, copies each Node's
		// nodeInfo into its Machine: the next rollout plans from it.
		if err := copyNodeInfo(ctx, k.sb, c); err != nil {
			return nil, err
		}
	}
	if err := checkKubernetes(ctx, k.sb, c, HopKubernetesTo); err != nil {
		return nil, err
	}
	for _, n := range c.Simulator.Nodes() {
		if v := n.Version(); v != ToVersion {
			return nil, fmt.Errorf("node %s runs Talos %s, not %s", n.Name(), v, ToVersion)
		}
	}
	machines := k.o.ControlPlanes + k.o.Workers
	res.PerMachineSeconds = res.TotalSeconds / float64(machines)
	res.Counts = nodeCounts(c.Simulator, cordons, machines)
	k.logf("Scenario 7 (Talos and Kubernetes %s): %.1fs (%v), per node %.1f reboots, %.1f cordons", path, res.TotalSeconds, res.Rollouts, res.Counts.Reboots, res.Counts.Cordons)
	return res, nil
}

// checkKubernetes checks that every Node of c reports kubelet kube, that
// none is left cordoned and that every Machine's spec.version says kube.
func checkKubernetes(ctx context.Context, sb *sandbox.Sandbox, c *sandbox.Cluster, kube string) error {
	nodes := &corev1.NodeList{}
	if err := c.Workload.Client.List(ctx, nodes); err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if n.Status.NodeInfo.KubeletVersion != kube || n.Spec.Unschedulable {
			return fmt.Errorf("node %s runs kubelet %s (unschedulable %t) at the end, not %s", n.Name, n.Status.NodeInfo.KubeletVersion, n.Spec.Unschedulable, kube)
		}
	}
	machines := &clusterv1.MachineList{}
	if err := sb.Management.Client.List(ctx, machines, client.InNamespace(c.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
		return err
	}
	for _, m := range machines.Items {
		if m.Spec.Version != kube {
			return fmt.Errorf("machine %s says version %s at the end, not %s", m.Name, m.Spec.Version, kube)
		}
	}
	return nil
}

// copyNodeInfo does what CAPI's Machine controller does with a Machine's
// Node: it copies the Node's nodeInfo (its osImage, kubeletVersion) into
// the Machine's status.
func copyNodeInfo(ctx context.Context, sb *sandbox.Sandbox, c *sandbox.Cluster) error {
	machines := &clusterv1.MachineList{}
	if err := sb.Management.Client.List(ctx, machines, client.InNamespace(c.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
		return err
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		if !m.Status.NodeRef.IsDefined() {
			continue
		}
		node := &corev1.Node{}
		if err := c.Workload.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node); err != nil {
			return err
		}
		patch := client.MergeFrom(m.DeepCopy())
		m.Status.NodeInfo = node.Status.NodeInfo.DeepCopy()
		if err := sb.Management.Client.Status().Patch(ctx, m, patch); err != nil {
			return fmt.Errorf("copying the nodeInfo of Node %s into Machine %s/%s: %w", node.Name, m.Namespace, m.Name, err)
		}
	}
	return nil
}

// firstCall returns the first call of one of rpcs a node of sim received
// after since; zero when none.
func firstCall(sim *talossim.Simulator, since time.Time, rpcs ...string) time.Time {
	var first time.Time
	for _, call := range sim.CallLog() {
		if call.Time.Before(since) {
			continue
		}
		for _, rpc := range rpcs {
			if call.RPC == rpc && (first.IsZero() || call.Time.Before(first)) {
				first = call.Time
			}
		}
	}
	return first
}

// nodeCounts reads what the nodes of a Cluster went through, per node:
// the simulator's boots and calls since the Cluster was made, and the
// cordons counted.
func nodeCounts(sim *talossim.Simulator, cordons *cordonCounter, machines int) NodeCounts {
	var n NodeCounts
	for _, node := range sim.Nodes() {
		n.Reboots += float64(node.Boots())
	}
	for _, call := range sim.CallLog() {
		switch call.RPC {
		case talossim.RPCUpgrade, talossim.RPCLegacyUpgrade:
			n.UpgradeCalls++
		case talossim.RPCApplyConfig:
			n.ApplyCalls++
		}
	}
	n.Cordons = float64(cordons.total())
	per := float64(machines)
	return NodeCounts{Reboots: n.Reboots / per, Cordons: n.Cordons / per, UpgradeCalls: n.UpgradeCalls / per, ApplyCalls: n.ApplyCalls / per}
}

// cordonCounter counts, per node, the moves of a workload's Nodes to
// unschedulable that its watch saw.
type cordonCounter struct {
	mu          sync.Mutex
	cordoned    map[string]bool
	cordons     map[string]int
	stopWatcher context.CancelFunc
}

func (c *cordonCounter) stop() { c.stopWatcher() }

func (c *cordonCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.cordons {
		n += v
	}
	return n
}

func (c *cordonCounter) observe(n *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.Spec.Unschedulable && !c.cordoned[n.Name] {
		c.cordons[n.Name]++
	}
	c.cordoned[n.Name] = n.Spec.Unschedulable
}

// countCordons watches the Nodes of w until stopped. A watch that ends is
// taken up again from its last resourceVersion, so no cordon is missed.
func countCordons(ctx context.Context, w *sandbox.Workload) (*cordonCounter, error) {
	wc, err := client.NewWithWatch(w.Config, client.Options{Scheme: envtest.NewScheme()})
	if err != nil {
		return nil, err
	}
	nodes := &corev1.NodeList{}
	if err := wc.List(ctx, nodes); err != nil {
		return nil, err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	c := &cordonCounter{cordoned: map[string]bool{}, cordons: map[string]int{}, stopWatcher: cancel}
	for i := range nodes.Items {
		c.observe(&nodes.Items[i])
	}
	rv := nodes.ResourceVersion
	go func() {
		for watchCtx.Err() == nil {
			wi, err := wc.Watch(watchCtx, &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				time.Sleep(100 * time.Millisecond) // Retry period of a failed watch.
				continue
			}
			for ev := range wi.ResultChan() {
				if n, ok := ev.Object.(*corev1.Node); ok {
					rv = n.ResourceVersion
					c.observe(n)
				}
			}
			wi.Stop()
		}
	}()
	return c, nil
}

// PrintKubernetes prints scenario 7 as a table.
func PrintKubernetes(out io.Writer, r *KubernetesResult) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	defer tw.Flush() //nolint:errcheck // Printing to a terminal.
	printf := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format, args...) }
	printf("\n7. Kubernetes upgrades in place (%d+%d Machines)\n", r.ControlPlanes, r.Workers)
	printf("Kubernetes only\tfirst apply\ttotal\tideal\tx ideal\tper machine\tideal per machine\treboots/node\tcordons/node\tupgrade calls/node\tapplies/node\n")
	for _, k := range r.KubernetesOnly {
		printf("maxUnavailable %d\t%.2fs\t%.2fs\t%.2fs\t%.1fx\t%.3fs\t%.3fs\t%.1f\t%.1f\t%.1f\t%.1f\n",
			k.MaxUnavailable, k.FirstApplySeconds, k.TotalSeconds, k.IdealSeconds, k.Factor, k.PerMachineSeconds, k.IdealPerMachineSeconds,
			k.Counts.Reboots, k.Counts.Cordons, k.Counts.UpgradeCalls, k.Counts.ApplyCalls)
	}
	if r.Combined == nil || r.Separate == nil {
		return
	}
	printf("Talos %s and Kubernetes %s to %s and %s (maxUnavailable %d, reboot %.1fs)\trollouts\ttotal\tper machine\treboots/node\tcordons/node\tupgrade calls/node\tapplies/node\n",
		FromVersion, HopKubernetesFrom, ToVersion, HopKubernetesTo, r.HopMaxUnavailable, r.RebootSeconds)
	for _, p := range []struct {
		name string
		res  *HopPathResult
	}{{"together (one rollout)", r.Combined}, {"separately (Talos, then Kubernetes)", r.Separate}} {
		printf("%s\t%v\t%.1fs\t%.2fs\t%.1f\t%.1f\t%.1f\t%.1f\n", p.name, p.res.Rollouts, p.res.TotalSeconds, p.res.PerMachineSeconds,
			p.res.Counts.Reboots, p.res.Counts.Cordons, p.res.Counts.UpgradeCalls, p.res.Counts.ApplyCalls)
	}
	printf("together / separately\t\t%.2f\n", r.Ratio)
}
