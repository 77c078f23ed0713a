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

package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/kubernetes"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// Kubernetes upgrades in place (issue 26). About a third of the Clusters,
// chosen by the seed, are Kubernetes-capable: their MachineDeployment rolls
// out OnDelete as their TalosControlPlane does, so that a new Kubernetes
// version replaces no Machine (the template-rollout event is left to the
// others, which roll out RollingUpdate). The fleet sets a Kubernetes
// target one minor up on its policy at a moment the seed picks
// (kubetargets.go): once its rollout completed, with the next Talos target
// (both Talos 1.13 versions run Kubernetes 1.35 and 1.36, so they are
// planned together: one reboot per node) or alone, on the Talos it runs;
// or while its Talos rollout is in flight, which Tollgate is to retarget.
// It changes the TalosControlPlane's spec.version and the
// MachineDeployment's spec.template.spec.version, as a user's GitOps does:
// before or after the policy, chosen by the seed. Policy first, the
// rollout must say that they disagree (KubernetesVersions False) before
// they are changed.
//
//   - Invariant 3: each node changes its control-plane static Pods' images
//     at most once and its kubelet at most once per Kubernetes target, as
//     the boot poller reads them from the simulator (talossim.Node.Kubelet,
//     the images the node runs), and never with a boot unless an upgrade
//     was made since the boot before (the kubelet staged with an install)
//     or a configuration was staged for that boot (the images applied with
//     a change of the patches that needs a reboot, staged together: one
//     reboot for both; invariant 15 allows one such boot per change that
//     needs one): a Kubernetes change alone reboots nothing.
//   - Invariant 16: no node changes its Kubernetes before the policy and
//     the CAPI objects agree (the time the last of them was changed); at
//     rest, a Completed rollout with a Kubernetes target whose objects
//     agree has every Node reporting the kubelet version, every
//     control-plane node's static Pods (their mirror Pods) running it, and
//     every Machine's spec.version saying it.

// faultKubernetesTarget is the fleet event that sets a Kubernetes target.
const faultKubernetesTarget = "kubernetes-target"

// The Kubernetes version every node runs at first, and the target one
// minor up.
const (
	kubernetesFrom = "v1.35.2"
	kubernetesTo   = "v1.36.0"
)

// kubernetesClusterPercent is the chance that a Cluster is
// Kubernetes-capable.
const kubernetesClusterPercent = 33

// kubeTarget is the Kubernetes target the soak set on a Cluster.
type kubeTarget struct {
	// version is the target, "" for none.
	version string
	// mode is when it came (pickKubeMode).
	mode string
	// talos is the Talos target set with it (kubeWithTalos), else "".
	talos string
	// policyFirst says the policy was changed before the CAPI objects.
	policyFirst bool
	// agreeFrom is when the last of the policy and the CAPI objects
	// started to be changed: before it they disagree, and no node's
	// Kubernetes may change.
	agreeFrom time.Time
}

// kubeLog is what the boot poller saw of one node's Kubernetes.
type kubeLog struct {
	// kubelet is the kubelet's version and staticPods the images of the
	// control-plane static Pods, as last seen; boot the node's boot time
	// then.
	kubelet, staticPods string
	boot                time.Time
	// changes are the changes seen since the first poll, in order.
	changes []kubeChange
}

// kubeChange is one change of a node's Kubernetes the poller saw.
type kubeChange struct {
	// part is kubeletPart or staticPodsPart; from and to its values.
	part, from, to string
	at             time.Time
	// boot is the node's boot time when it was seen, bootBefore the one
	// the poll before: a change seen with a boot came with it.
	boot, bootBefore time.Time
}

// The parts of a node's Kubernetes the poller follows.
const (
	kubeletPart    = "kubelet"
	staticPodsPart = "static Pods"
)

func (ch kubeChange) withBoot() bool { return !ch.boot.Equal(ch.bootBefore) }

func (ch kubeChange) String() string {
	s := fmt.Sprintf("%s %s -> %s at %s", ch.part, ch.from, ch.to, ch.at.Format(timeMillis))
	if ch.withBoot() {
		s += " (with the boot at " + ch.boot.Format(timeMillis) + ")"
	}
	return s
}

// kubernetesClusters picks the Kubernetes-capable Clusters of a round, by
// index, given the terminal fault each gets (terminals[perm[i]]): each with
// kubernetesClusterPercent chance; in round 0 at least one without a
// terminal fault (the Kubernetes target is set on those only) and at least
// one not (the template-rollout event needs RollingUpdate).
func (s *soak) kubernetesClusters(round int, terminals []string, perm []int) []bool {
	kube := make([]bool, len(perm))
	for i := range kube {
		kube[i] = s.rng.IntN(100) < kubernetesClusterPercent
	}
	if round > 0 {
		return kube
	}
	var clean []int
	for i := range kube {
		if terminals[perm[i]] == "" {
			clean = append(clean, i)
		}
	}
	if len(clean) > 0 && !slices.ContainsFunc(clean, func(i int) bool { return kube[i] }) {
		kube[clean[s.rng.IntN(len(clean))]] = true
	}
	if !slices.Contains(kube, false) {
		for i := range kube {
			if !slices.Contains(clean, i) || len(clean) > 1 {
				kube[i] = false
				break
			}
		}
	}
	return kube
}

// kubeTargetState returns the Kubernetes target set on the Cluster.
func (c *soakCluster) kubeTargetState() kubeTarget {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kube
}

// kubeTargetVersion returns the Kubernetes target of the Cluster's policy,
// "" for none.
func (c *soakCluster) kubeTargetVersion() string { return c.kubeTargetState().version }

// pollKubernetesLocked records what node n's kubelet runs now (c.mu held).
func (c *soakCluster) pollKubernetesLocked(n *talossim.Node, boot time.Time) {
	k, err := n.Kubelet()
	if err != nil {
		return
	}
	images := make([]string, 0, len(k.StaticPods))
	for _, p := range k.StaticPods {
		images = append(images, p.Image)
	}
	pods := strings.Join(images, ",")
	if c.kubeLogs == nil {
		c.kubeLogs = map[string]*kubeLog{}
	}
	l := c.kubeLogs[n.Name()]
	if l == nil {
		c.kubeLogs[n.Name()] = &kubeLog{kubelet: k.Version, staticPods: pods, boot: boot}
		return
	}
	now := time.Now()
	if k.Version != l.kubelet {
		l.changes = append(l.changes, kubeChange{part: kubeletPart, from: l.kubelet, to: k.Version, at: now, boot: boot, bootBefore: l.boot})
	}
	if pods != l.staticPods {
		l.changes = append(l.changes, kubeChange{part: staticPodsPart, from: l.staticPods, to: pods, at: now, boot: boot, bootBefore: l.boot})
	}
	l.kubelet, l.staticPods, l.boot = k.Version, pods, boot
}

// kubeLogsCopy returns a copy of the Kubernetes logs of the Cluster's
// nodes.
func (c *soakCluster) kubeLogsCopy() map[string]kubeLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]kubeLog, len(c.kubeLogs))
	for node, l := range c.kubeLogs {
		cp := *l
		cp.changes = append([]kubeChange(nil), l.changes...)
		out[node] = cp
	}
	return out
}

// kubernetesChangeProblems judges one node's Kubernetes changes (invariant
// 3): at most one change of each part per Kubernetes target (the soak sets
// one per Cluster), and none with a boot unless an upgrade was made since
// the boot before (upgrades, see nodeUpgrades) or the boot is one of
// staged, the boots a configuration was staged for (stagedBoots). Seed
// 20261207 (make soak at 66c4bc6): a change of soak-r0-c9's patches that
// needs a reboot and its Kubernetes target came together; Tollgate staged
// the patches and the control plane's images in one apply and rebooted each
// control-plane node once, which came back running Kubernetes v1.36.0. A
// boot that answers a reboot asked for the node (asked: the requests' times,
// between the boot before and the boot) is Tollgate's too: seed 20261214
// (TestSoakShort at ab44fdb), a worker drained once for a rolling reboot and
// its kubelet, whose new version the poller saw first after the reboot.
func kubernetesChangeProblems(l kubeLog, upgrades, staged, asked []time.Time) []string {
	var out []string
	count := map[string]int{}
	for _, ch := range l.changes {
		count[ch.part]++
		if count[ch.part] == 2 {
			out = append(out, fmt.Sprintf("its %s changed more than once for one Kubernetes target: %v", ch.part, l.changes))
		}
		if ch.withBoot() && !upgradedBetween(upgrades, ch.bootBefore, ch.boot) && !slices.ContainsFunc(staged, ch.boot.Equal) && !upgradedBetween(asked, ch.bootBefore, ch.boot) {
			out = append(out, fmt.Sprintf("its %s changed with a boot no upgrade made, no configuration staged for and no reboot asked for: %s", ch.part, ch))
		}
	}
	return out
}

// stagedBoots returns the boots of a node for which a configuration was
// staged (since the boot before), as the boot poller saw them: the same
// boot times as its Kubernetes changes'.
func stagedBoots(l bootLog) []time.Time {
	var out []time.Time
	for i, at := range l.boots {
		if i < len(l.staged) && l.staged[i] > 0 {
			out = append(out, at)
		}
	}
	return out
}

// kubernetesEarlyChanges judges one node's changes against the Cluster's
// Kubernetes target (invariant 16): none before the policy and the CAPI
// objects agree, and none at all without a target.
func kubernetesEarlyChanges(l kubeLog, t kubeTarget) []string {
	var out []string
	for _, ch := range l.changes {
		switch {
		case t.version == "":
			out = append(out, fmt.Sprintf("its %s changed without a Kubernetes target: %s", ch.part, ch))
		case ch.at.Before(t.agreeFrom):
			out = append(out, fmt.Sprintf("its %s changed before the policy and the CAPI objects agreed on %s (at %s): %s", ch.part, t.version, t.agreeFrom.Format(timeMillis), ch))
		}
	}
	return out
}

// judgeKubernetesChanges checks invariants 3 and 16 on the Kubernetes
// changes of the Cluster's nodes, as the poller saw them.
func (s *soak) judgeKubernetesChanges(c *soakCluster, u *upgradev1.TalosUpgrade) {
	t := c.kubeTargetState()
	boots := c.bootLogsCopy()
	for node, l := range c.kubeLogsCopy() {
		s.check(3)
		var asked []time.Time
		for _, req := range c.rebootRequests() {
			if req.covers(node) {
				asked = append(asked, req.after)
			}
		}
		for _, p := range kubernetesChangeProblems(l, c.nodeUpgrades(node, u), stagedBoots(boots[node]), asked) {
			s.violation(3, "%s: node %s: %s", c.ns, node, p)
		}
		s.check(16)
		for _, p := range kubernetesEarlyChanges(l, t) {
			s.violation(16, "%s: node %s: %s", c.ns, node, p)
		}
	}
}

// kubeNode is what invariant 16 reads at rest of one Machine.
type kubeNode struct {
	machine, node string
	// machineVersion is the Machine's spec.version, kubelet what its Node
	// reports.
	machineVersion, kubelet string
	// controlPlane says the node runs static Pods; staticPods is "" when
	// they run the target and are Ready, else what they wait for.
	controlPlane bool
	staticPods   string
	// exempt says why the node need not run the target (its record
	// failed); empty when it must.
	exempt string
}

// kubernetesAtRestProblems judges, at rest, the Machines of a Cluster whose
// Completed rollout has the Kubernetes target and whose CAPI objects agree
// (invariant 16).
func kubernetesAtRestProblems(nodes []kubeNode, target string) []string {
	var out []string
	for _, n := range nodes {
		if n.exempt != "" {
			continue
		}
		if !talos.SameVersion(n.kubelet, target) {
			out = append(out, fmt.Sprintf("Machine %s: Node %s reports kubelet %q, not %s", n.machine, n.node, n.kubelet, target))
		}
		if n.controlPlane && n.staticPods != "" {
			out = append(out, fmt.Sprintf("Machine %s: the static Pods of node %s do not run %s: %s", n.machine, n.node, target, n.staticPods))
		}
		if !talos.SameVersion(n.machineVersion, target) {
			out = append(out, fmt.Sprintf("Machine %s: spec.version is %q, not %s", n.machine, n.machineVersion, target))
		}
	}
	return out
}

// judgeKubernetes checks invariant 16 at rest on the Cluster, and
// invariant 3 on its Kubernetes changes.
func (s *soak) judgeKubernetes(ctx context.Context, c *soakCluster) {
	c.pollBoots()
	mgmt := s.world.mgmt.Client
	u := &upgradev1.TalosUpgrade{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
		s.violation(16, "%s: reading the TalosUpgrade: %v", c.ns, err)
		return
	}
	s.judgeKubernetesChanges(c, u)
	t := c.kubeTargetState()
	if t.version == "" {
		return
	}
	disagree, err := s.kubernetesObjectsDisagree(ctx, c, t.version)
	if err != nil {
		s.violation(16, "%s: %v", c.ns, err)
		return
	}
	cond := conditions.Get(u, upgradev1.KubernetesVersionsCondition)
	s.cfg.Logf("Kubernetes: %s/%s: target %s (Talos %q, policy first %t, agreed from %s); rollout %s, KubernetesVersions %v; changes: %s",
		c.ns, c.name, t.version, t.talos, t.policyFirst, t.agreeFrom.Format(timeMillis), u.Status.Phase, describeCondition(cond), describeKubeChanges(c.kubeLogsCopy()))
	if u.Status.Phase != upgradev1.UpgradePhaseCompleted || u.Spec.KubernetesVersion != t.version || len(disagree) > 0 {
		return
	}
	nodes, err := s.readKubeNodes(ctx, c, u)
	if err != nil {
		s.violation(16, "%s: %v", c.ns, err)
	}
	for _, p := range kubernetesAtRestProblems(nodes, t.version) {
		s.violation(16, "at rest: %s/%s: %s", c.ns, c.name, p)
	}
}

func describeCondition(c *metav1.Condition) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message)
}

func describeKubeChanges(logs map[string]kubeLog) string {
	n := map[string]int{}
	for _, l := range logs {
		for _, ch := range l.changes {
			n[ch.part]++
		}
	}
	return fmt.Sprintf("%d kubelet(s), %d control plane(s)", n[kubeletPart], n[staticPodsPart])
}

// readKubeNodes reads what invariant 16 judges at rest of the Cluster's
// Machines present and not deleting.
func (s *soak) readKubeNodes(ctx context.Context, c *soakCluster, u *upgradev1.TalosUpgrade) ([]kubeNode, error) {
	machines := &clusterv1.MachineList{}
	if err := s.world.mgmt.Client.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		return nil, err
	}
	failed := map[string]bool{}
	for _, st := range u.Status.Machines {
		failed[st.Machine] = st.Phase == upgradev1.MachinePhaseFailed
	}
	var out []kubeNode
	var errs []error
	for i := range machines.Items {
		m := &machines.Items[i]
		if !m.DeletionTimestamp.IsZero() || m.Status.NodeRef.Name == "" {
			continue
		}
		s.check(16)
		kn := kubeNode{machine: m.Name, node: m.Status.NodeRef.Name, machineVersion: m.Spec.Version, controlPlane: !workerOf(c, m)}
		if failed[m.Name] {
			kn.exempt = "its record is Failed"
		}
		node := &corev1.Node{}
		if err := c.wl.Client.Get(ctx, client.ObjectKey{Name: kn.node}, node); err != nil {
			errs = append(errs, fmt.Errorf("reading Node %s: %w", kn.node, err))
			continue
		}
		kn.kubelet = node.Status.NodeInfo.KubeletVersion
		if kn.controlPlane {
			ready, msg, err := kubernetes.StaticPodsReady(ctx, c.wl.Client, kn.node, c.kubeTargetVersion())
			switch {
			case err != nil:
				kn.staticPods = err.Error()
			case !ready:
				kn.staticPods = msg
			}
		}
		out = append(out, kn)
	}
	return out, errors.Join(errs...)
}

// kubernetesObjectsDisagree lists the Cluster's CAPI objects that do not
// ask for version: its TalosControlPlane's spec.version, its
// MachineDeployments' spec.template.spec.version.
func (s *soak) kubernetesObjectsDisagree(ctx context.Context, c *soakCluster, version string) ([]string, error) {
	var out []string
	tcp, err := s.readControlPlane(ctx, c)
	if err != nil {
		return nil, err
	}
	if v, _, _ := unstructured.NestedString(tcp.Object, "spec", "version"); v != version {
		out = append(out, fmt.Sprintf("TalosControlPlane %s asks for %q", tcp.GetName(), v))
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := s.world.mgmt.Client.List(ctx, mds, client.InNamespace(c.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: c.name}); err != nil {
		return nil, err
	}
	for _, md := range mds.Items {
		if md.Spec.Template.Spec.Version != version {
			out = append(out, fmt.Sprintf("MachineDeployment %s asks for %q", md.Name, md.Spec.Template.Spec.Version))
		}
	}
	return out, nil
}

// readControlPlane reads the Cluster's TalosControlPlane.
func (s *soak) readControlPlane(ctx context.Context, c *soakCluster) (*unstructured.Unstructured, error) {
	mgmt := s.world.mgmt.Client
	cluster := &clusterv1.Cluster{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, cluster); err != nil {
		return nil, fmt.Errorf("reading Cluster %s/%s: %w", c.ns, c.name, err)
	}
	ref := cluster.Spec.ControlPlaneRef
	tcp := &unstructured.Unstructured{}
	tcp.SetAPIVersion(machineconfig.ControlPlaneGroup + "/v1alpha3")
	tcp.SetKind(ref.Kind)
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: ref.Name}, tcp); err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, c.ns, ref.Name, err)
	}
	return tcp, nil
}

// kubernetesTarget plays faultKubernetesTarget on the Cluster: the
// Kubernetes target one minor up, at a moment rng picks (pickKubeMode):
// once its rollout completed, with the next Talos target or alone, or
// while its Talos rollout is in flight; and the CAPI objects' versions, in
// an order rng picks. errNotCompleted when the rollout ended otherwise
// than Completed first.
func (s *soak) kubernetesTarget(ctx context.Context, c *soakCluster, rng *rand.Rand) error {
	t := kubeTarget{version: kubernetesTo, mode: pickKubeMode(rng), policyFirst: rng.IntN(2) == 0}
	if t.mode == kubeMidRollout {
		inFlight, err := s.waitMidRollout(ctx, c)
		if err != nil {
			return err
		}
		if !inFlight {
			s.cfg.Logf("Fleet: the rollout of %s/%s was over before a Kubernetes target could come mid-rollout: it comes alone", c.ns, c.name)
			t.mode = kubeAlone
		}
	}
	for t.mode != kubeMidRollout {
		// Over and Completed in one read: a reboot asked for or a change
		// of the patches once the rollout was over starts it again.
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil && over(u) {
			if u.Status.Phase != upgradev1.UpgradePhaseCompleted {
				return fmt.Errorf("%w: the rollout of %s/%s ended %s", errNotCompleted, c.ns, c.name, u.Status.Phase)
			}
			break
		}
		if !sleep(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
	if t.mode == kubeWithTalos {
		if t.talos = nextVersion(c.target()); t.talos == "" {
			t.mode = kubeAlone
		}
	}
	if t.policyFirst {
		if err := s.setKubernetesPolicy(ctx, c, &t); err != nil {
			return err
		}
		if !s.waitDisagreeSaid(ctx, c) {
			s.violation(16, "%s: the rollout did not say within %s that the CAPI objects disagree with its Kubernetes target %s (KubernetesVersions False)", c.ns, refusedReportTimeout, t.version)
		} else {
			s.check(16)
		}
		if !sleep(ctx, time.Duration(rng.Int64N(int64(3*time.Second)))) {
			return ctx.Err()
		}
		t.agreeFrom = time.Now()
		c.mu.Lock()
		c.kube.agreeFrom = t.agreeFrom
		c.mu.Unlock()
		if err := s.setKubernetesObjects(context.WithoutCancel(ctx), c, t.version); err != nil {
			return err
		}
	} else {
		if err := s.setKubernetesObjects(ctx, c, t.version); err != nil {
			return err
		}
		if !sleep(ctx, time.Duration(rng.Int64N(int64(5*time.Second)))) {
			return ctx.Err()
		}
		t.agreeFrom = time.Now()
		if err := s.setKubernetesPolicy(context.WithoutCancel(ctx), c, &t); err != nil {
			return err
		}
	}
	order := "the CAPI objects first"
	if t.policyFirst {
		order = "the policy first"
	}
	s.cfg.Logf("Fleet: Kubernetes target %s on %s/%s, %s (Talos target %s), the TalosControlPlane's and the MachineDeployment's versions changed too, %s",
		t.version, c.ns, c.name, t.describe(), c.target(), order)
	s.count(kubeModeKind(t.mode), 1)
	if err := s.judgeRetarget(ctx, c, &t); err != nil {
		return err
	}
	switch {
	case t.mode == kubeWithTalos && c.scripted(faultNewTarget):
		s.count(faultNewTarget, 1)
	case c.scripted(faultNewTarget):
		// The new target scripted on the Cluster follows the Kubernetes
		// target's rollout.
		if err := s.newTarget(ctx, c); err != nil {
			s.cfg.Logf("Fleet event %s on %s/%s, after its Kubernetes target: %v", faultNewTarget, c.ns, c.name, err)
		} else {
			s.count(faultNewTarget, 1)
		}
	}
	return nil
}

// setKubernetesPolicy sets t on the Cluster's policy, with its Talos
// target if any, and notes it (before the patch: Tollgate may act on it
// before the patch returns).
func (s *soak) setKubernetesPolicy(ctx context.Context, c *soakCluster, t *kubeTarget) error {
	mgmt := s.world.mgmt.Client
	p := &upgradev1.TalosUpgradePolicy{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: policyName}, p); err != nil {
		return err
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.KubernetesVersion = t.version
	c.mu.Lock()
	if t.talos != "" {
		p.Spec.TalosVersion = t.talos
		c.targets = append(c.targets, targetChange{version: t.talos, at: time.Now()})
	}
	c.kube = *t
	c.mu.Unlock()
	if err := mgmt.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("setting Kubernetes target %s on TalosUpgradePolicy %s/%s: %w", t.version, c.ns, policyName, err)
	}
	return nil
}

// setKubernetesObjects sets version in the Cluster's TalosControlPlane's
// spec.version and its MachineDeployments' spec.template.spec.version, with
// merge patches, as a user's GitOps does.
func (s *soak) setKubernetesObjects(ctx context.Context, c *soakCluster, version string) error {
	mgmt := s.world.mgmt.Client
	tcp, err := s.readControlPlane(ctx, c)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"version": version}})
	if err != nil {
		return err
	}
	if err := mgmt.Patch(ctx, tcp, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("setting spec.version of %s %s/%s: %w", tcp.GetKind(), c.ns, tcp.GetName(), err)
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := mgmt.List(ctx, mds, client.InNamespace(c.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: c.name}); err != nil {
		return err
	}
	for i := range mds.Items {
		md := &mds.Items[i]
		patch := client.MergeFrom(md.DeepCopy())
		md.Spec.Template.Spec.Version = version
		if err := mgmt.Patch(ctx, md, patch); err != nil {
			return fmt.Errorf("setting spec.template.spec.version of MachineDeployment %s/%s: %w", c.ns, md.Name, err)
		}
	}
	return nil
}

// waitDisagreeSaid waits, for refusedReportTimeout, until the Cluster's
// rollout says that its CAPI objects do not ask for its Kubernetes target.
func (s *soak) waitDisagreeSaid(ctx context.Context, c *soakCluster) bool {
	deadline := time.Now().Add(refusedReportTimeout)
	for time.Now().Before(deadline) {
		u := &upgradev1.TalosUpgrade{}
		if err := s.world.mgmt.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err == nil && u.Spec.KubernetesVersion == c.kubeTargetVersion() {
			if cond := conditions.Get(u, upgradev1.KubernetesVersionsCondition); cond != nil && cond.Status == metav1.ConditionFalse &&
				cond.Reason == upgradev1.KubernetesVersionsDisagreeReason && cond.ObservedGeneration == u.Generation {
				return true
			}
		}
		if !sleep(ctx, 500*time.Millisecond) {
			return false
		}
	}
	return false
}
