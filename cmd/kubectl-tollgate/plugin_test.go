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

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// rolloutTimeout bounds a sandbox rollout of a Machine or two.
const rolloutTimeout = 2 * time.Minute

func upgradeOf(ctx context.Context, g Gomega, namespace, name string) *upgradev1.TalosUpgrade {
	u, err := sb.Upgrade(ctx, namespace, name)
	g.Expect(err).NotTo(HaveOccurred())
	return u
}

// stop stops a Cluster of the sandbox. A workload apiserver that outlives
// its stop timeout (CAPI's ClusterCache keeps watches open) is killed,
// which is no failure of the plugin.
func stop(t *testing.T, cl *sandbox.Cluster) {
	t.Helper()
	if err := cl.Stop(); err != nil {
		t.Logf("Stopping Cluster %s/%s: %v", cl.Namespace, cl.Name, err)
	}
}

// machineName returns the name CAPI gave the Cluster's only Machine of role.
func machineName(ctx context.Context, g Gomega, cl *sandbox.Cluster, role sandbox.Role) string {
	names, err := cl.MachineNames(ctx, role)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(HaveLen(1), "the %s Machines of Cluster %s/%s", role, cl.Namespace, cl.Name)
	return names[0]
}

// TestHoldBypassAndWatch: a Machine held by an owner that is gone shows in
// describe, alice bypasses the owner's holds (the webhook records her),
// and watch follows the rollout to its end and its summary.
func TestHoldBypassAndWatch(t *testing.T) {
	skipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "plugin-hold"
	cl, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: "alpha", ControlPlanes: 1, Workers: 1, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	defer stop(t, cl)
	cp, w0 := machineName(ctx, g, cl, sandbox.RoleControlPlane), machineName(ctx, g, cl, sandbox.RoleWorker)
	worker := &clusterv1.Machine{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: w0}, worker)).To(Succeed())
	g.Expect(hooks.SetHold(ctx, sb.Management.Client, worker, upgradev1.HoldPointPreDrain, "backup-operator", "")).To(Succeed())
	g.Expect(sb.Management.Client.Create(ctx, sb.Policy(ns, "talos-1-13", "v1.13.0"))).To(Succeed())
	g.Expect(cl.OptIn(ctx, "talos-1-13")).To(Succeed())

	var tree result
	g.Eventually(func(g Gomega) {
		tree = kubectl(ctx, t, alice, "describe", "-n", ns, "--grouping=false")
		g.Expect(tree.code).To(Equal(0), tree.err)
		g.Expect(tree.out).To(MatchRegexp(`Machine/` + w0 + `\s+worker\s+v1\.12\.4 -> v1\.13\.0\s+WaitingForHold:preDrain\s+\d+s\s+held at preDrain by "backup-operator"`))
	}, rolloutTimeout, 500*time.Millisecond).Should(Succeed())
	t.Logf("kubectl tollgate describe -n %s --grouping=false:\n%s", ns, tree.out)
	lines := strings.Split(strings.TrimRight(tree.out, "\n"), "\n")
	g.Expect(lines[0]).To(MatchRegexp(`^NAME\s+ROLE\s+VERSION\s+PHASE\s+DONE\s+SINCE\s+MESSAGE$`))
	g.Expect(lines[1]).To(MatchRegexp(`^TalosUpgradePolicy/talos-1-13\s+v1\.13\.0\s+InProgress\s+0/1\b`))
	g.Expect(lines[2]).To(MatchRegexp(`^└─Cluster/alpha\s+v1\.12\.4 -> v1\.13\.0\s+InProgress\s+1/2\s+\d+s\s+machine "` + w0 + `" held at preDrain by "backup-operator"$`))
	// The Cluster's templates (the MachineDeployment's and the
	// TalosControlPlane's, as CAPI and the control-plane provider make
	// Machines from them) still boot v1.12.4, which Tollgate never changes:
	// a Templates line comes first and says what to change.
	g.Expect(lines[3]).To(MatchRegexp(`^  ├─Templates\s+TemplatesDrifted\s+\d+s\s+.*Tollgate does not change templates`))
	g.Expect(lines[3]).To(ContainSubstring("MachineDeployment alpha-md-0 creates Machines from TalosSimMachineTemplate alpha-md-0, which boots v1.12.4"))
	g.Expect(lines[3]).To(ContainSubstring("TalosControlPlane alpha-control-plane creates Machines from TalosSimMachineTemplate alpha-control-plane, which boots v1.12.4"))
	g.Expect(lines[4]).To(MatchRegexp(`^  ├─Machine/` + cp + `\s+control plane\s+v1\.12\.4 -> v1\.13\.0\s+Completed\s+\d+s\s+upgraded from v1\.12\.4 to v1\.13\.0$`))
	g.Expect(lines[5]).To(MatchRegexp(`^  └─Machine/` + w0 + `\s+worker\b`))
	g.Expect(tree.out).NotTo(ContainSubstring("\x1b"), "no colour when the output is not a terminal")

	r := kubectl(ctx, t, alice, "bypass", "alpha", "-n", ns, "--hold-owner", "backup-operator", "--reason", "INC-4711: backup-operator was uninstalled")
	g.Expect(r.code).To(Equal(0), r.err)
	g.Expect(r.out).To(Equal("talosupgrade.upgrade.tollgate.dev/alpha bypass: holds of backup-operator; by alice: \"INC-4711: backup-operator was uninstalled\"\n"),
		"the plugin prints the bypass as stored, with the requester the webhook recorded")

	w := kubectl(ctx, t, alice, "watch", "alpha", "-n", ns, "--timeout", rolloutTimeout.String())
	t.Logf("kubectl tollgate watch alpha -n %s:\n%s", ns, w.out)
	g.Expect(w.code).To(Equal(0), w.err)
	g.Expect(w.out).To(MatchRegexp(`(?m)^\[ *\d+\.\ds\] Cluster plugin-hold/alpha  v1\.12\.4 -> v1\.13\.0  `), "the live view's header, stamped, a line per change")
	g.Expect(w.out).To(MatchRegexp(`(?m)^\[ *\d+\.\ds\] ` + w0 + `\s+worker\s+Completed\s+\[#{12}\]`))
	g.Expect(w.out).To(ContainSubstring("Rollout Completed: 2/2 Machines of Cluster plugin-hold/alpha on Talos v1.13.0 in "))
	g.Expect(w.out).To(MatchRegexp(`MACHINE\s+ROLE\s+FROM -> TO\s+RESULT\s+HOLDS\+HOOKS\s+DRAIN\s+UPGRADE\s+REBOOT\s+VERIFY\s+TOTAL\n`))
	g.Expect(w.out).To(MatchRegexp(w0 + `\s+worker\s+v1\.12\.4 -> v1\.13\.0\s+Completed\s`))

	// The bypass passed the hold without removing it: the owner's
	// annotation is the owner's.
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKeyFromObject(worker), worker)).To(Succeed())
	g.Expect(hooks.Holds(worker, upgradev1.HoldPointPreDrain)).To(ConsistOf("backup-operator"))
	g.Eventually(func(g Gomega) {
		done := kubectl(ctx, t, alice, "describe", "-n", ns)
		g.Expect(done.out).To(MatchRegexp(`TalosUpgradePolicy/talos-1-13\s+v1\.13\.0\s+Completed\s+1/1`))
		g.Expect(done.out).To(MatchRegexp(`└─2 Machines\s+control plane, worker\s+v1\.13\.0\s+Completed\s+`+cp+`, `+w0), "grouped: nothing needs a look")
	}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
	// CAPI reports the new Talos of both Machines, from their Nodes; the
	// templates are the user's and still name the old one.
	g.Eventually(func(g Gomega) {
		for _, name := range []string{cp, w0} {
			m := &clusterv1.Machine{}
			g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m)).To(Succeed())
			g.Expect(m.Status.NodeInfo).NotTo(BeNil())
			g.Expect(m.Status.NodeInfo.OSImage).To(Equal("Talos (v1.13.0)"), "Machine %s", name)
		}
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	md := &clusterv1.MachineDeployment{}
	g.Expect(sb.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sandbox.WorkersName("alpha")}, md)).To(Succeed())
	g.Expect(md.Spec.Template.Spec.InfrastructureRef.Name).To(Equal(sandbox.WorkersName("alpha")), "Tollgate changes no template")
	all := kubectl(ctx, t, alice, "describe", "-A")
	g.Expect(all.code).To(Equal(0), all.err)
	g.Expect(all.out).To(MatchRegexp(`^NAMESPACE\s+NAME\s+ROLE\s`))
	g.Expect(all.out).To(MatchRegexp(`(?m)^plugin-hold\s+TalosUpgradePolicy/talos-1-13\s`))
}

// TestRunNowAndPause: a rollout waiting for its maintenance window is
// paused and resumed by bob, then run now with a reason.
func TestRunNowAndPause(t *testing.T) {
	skipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "plugin-run-now"
	cl, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: "beta", ControlPlanes: 1, TalosVersion: "v1.12.4"})
	g.Expect(err).NotTo(HaveOccurred())
	defer stop(t, cl)
	// A window that opens two hours from now: closed for the test.
	opens := time.Now().UTC().Add(2 * time.Hour)
	window := upgradev1.MaintenanceWindow{Start: opens.Format("15:04"), End: opens.Add(time.Hour).Format("15:04")}
	g.Expect(sb.Management.Client.Create(ctx, sb.Policy(ns, "nightly", "v1.13.0", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Maintenance = &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{window}}
	}))).To(Succeed())
	g.Expect(cl.OptIn(ctx, "nightly")).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(upgradeOf(ctx, g, ns, "beta").Status.BlockedBy).To(HavePrefix("waiting for a maintenance window"))
	}, rolloutTimeout, 200*time.Millisecond).Should(Succeed())
	tree := kubectl(ctx, t, bob, "describe", "nightly", "-n", ns)
	g.Expect(tree.code).To(Equal(0), tree.err)
	g.Expect(tree.out).To(MatchRegexp(`└─Cluster/beta\s+.*waiting for a maintenance window`))

	for _, step := range []struct {
		args   []string
		out    string
		paused bool
	}{
		{[]string{"pause", "beta"}, "talosupgrade.upgrade.tollgate.dev/beta paused\n", true},
		{[]string{"pause", "cluster/beta"}, "talosupgrade.upgrade.tollgate.dev/beta unchanged\n", true},
		{[]string{"resume", "beta"}, "talosupgrade.upgrade.tollgate.dev/beta resumed\n", false},
	} {
		r := kubectl(ctx, t, bob, append(step.args, "-n", ns)...)
		g.Expect(r.code).To(Equal(0), r.err)
		g.Expect(r.out).To(Equal(step.out))
		g.Expect(upgradeOf(ctx, g, ns, "beta").Spec.Paused).To(Equal(step.paused))
	}

	r := kubectl(ctx, t, bob, "bypass", "beta", "-n", ns, "--maintenance-windows")
	g.Expect(r.code).To(Equal(2))
	g.Expect(r.err).To(ContainSubstring("--reason is required"))
	g.Expect(upgradeOf(ctx, g, ns, "beta").Spec.Bypass).To(BeNil(), "nothing was written")

	r = kubectl(ctx, t, bob, "bypass", "beta", "-n", ns, "--maintenance-windows", "--reason", "CVE-2026-1234: patch tonight")
	g.Expect(r.code).To(Equal(0), r.err)
	g.Expect(r.out).To(Equal("talosupgrade.upgrade.tollgate.dev/beta bypass: maintenance windows; by bob: \"CVE-2026-1234: patch tonight\"\n"))
	w := kubectl(ctx, t, bob, "watch", "beta", "-n", ns, "--timeout", rolloutTimeout.String())
	g.Expect(w.code).To(Equal(0), "%s\n%s", w.out, w.err)
	g.Expect(w.out).To(ContainSubstring("bypass: maintenance windows; by bob"))
	g.Expect(w.out).To(ContainSubstring("Rollout Completed: 1/1 Machines of Cluster plugin-run-now/beta on Talos v1.13.0"))
}

// TestCancelAndRefusals: cancel ends a rollout for good; the plugin and
// the webhook refuse what the API does not allow, and say why.
func TestCancelAndRefusals(t *testing.T) {
	skipWithoutAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "plugin-cancel"
	g.Expect(sb.Management.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(sb.Management.Client.Create(ctx, sb.Policy(ns, "frozen", "v1.13.0", func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Paused = true
	}))).ToNot(HaveOccurred())
	cl, err := sb.CreateCluster(ctx, sandbox.ClusterOptions{Namespace: ns, Name: "gamma", ControlPlanes: 1, Policy: "frozen"})
	g.Expect(err).NotTo(HaveOccurred())
	defer stop(t, cl)
	g.Eventually(func(g Gomega) { upgradeOf(ctx, g, ns, "gamma") }, rolloutTimeout, 200*time.Millisecond).Should(Succeed())

	r := kubectl(ctx, t, alice, "pause", "policy/frozen", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.err)
	g.Expect(r.out).To(Equal("talosupgradepolicy.upgrade.tollgate.dev/frozen unchanged\n"))

	for _, refused := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"cancel", "policy/frozen"}, 2, "a policy cannot be cancelled"},
		{[]string{"bypass", "policy/frozen", "--retry", "gamma-cp-0/noout", "--reason", "x"}, 2, "--retry and --skip name a Machine"},
		{[]string{"bypass", "gamma", "--retry", "gamma-cp-0", "--reason", "x"}, 2, "is not MACHINE/HOOK"},
		{[]string{"bypass", "gamma", "--clear", "--health-checks"}, 2, "--clear removes the whole bypass"},
		{[]string{"pause", "machine/gamma-cp-0"}, 2, "unknown kind \"machine\""},
		{[]string{"pause", "delta"}, 1, "no TalosUpgrade for Cluster \"delta\" in namespace \"plugin-cancel\""},
		{[]string{"resume", "policy/thawed"}, 1, "no TalosUpgradePolicy \"thawed\" in namespace \"plugin-cancel\""},
		{[]string{"watch", "delta"}, 1, "no Cluster \"delta\" and no TalosUpgrade for it in namespace \"plugin-cancel\""},
		// The webhook's own refusal: a hook that is not in the plan.
		{[]string{"bypass", "gamma", "--skip", "gamma-cp-0/noout", "--reason", "x"}, 1, "denied the request"},
	} {
		r := kubectl(ctx, t, alice, append(refused.args, "-n", ns)...)
		g.Expect(r.code).To(Equal(refused.code), "%v: %s", refused.args, r.err)
		g.Expect(r.err).To(ContainSubstring(refused.err), "%v", refused.args)
	}

	r = kubectl(ctx, t, alice, "cancel", "gamma", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.err)
	g.Expect(r.out).To(Equal("talosupgrade.upgrade.tollgate.dev/gamma cancelled\n"))
	g.Eventually(func(g Gomega) {
		u := upgradeOf(ctx, g, ns, "gamma")
		g.Expect(u.Spec.Cancel).To(BeTrue())
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseFailed))
	}, rolloutTimeout, 200*time.Millisecond).Should(Succeed())

	once := kubectl(ctx, t, alice, "watch", "gamma", "-n", ns, "--once")
	g.Expect(once.code).To(Equal(0), once.err)
	g.Expect(once.out).To(MatchRegexp(`^Cluster plugin-cancel/gamma  .* -> v1\.13\.0  Failed\s`))
	w := kubectl(ctx, t, alice, "watch", "gamma", "-n", ns, "--timeout", "30s")
	g.Expect(w.code).To(Equal(1), "a rollout that did not complete")
	g.Expect(w.err).To(ContainSubstring("the rollout ended Failed"))
}

// TestDescribeNothing says when there is nothing to show, and fails for a
// policy that does not exist.
func TestDescribeNothing(t *testing.T) {
	skipWithoutAssets(t)
	g := NewWithT(t)
	ctx := context.Background()
	r := kubectl(ctx, t, alice, "describe", "-n", "plugin-empty")
	g.Expect(r.code).To(Equal(0), r.err)
	g.Expect(r.out).To(BeEmpty())
	g.Expect(r.err).To(Equal("No TalosUpgradePolicy, and no Cluster labelled with one, in namespace plugin-empty.\n"))
	r = kubectl(ctx, t, alice, "describe", "absent", "-n", "plugin-empty")
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(Equal(fmt.Sprintf("error: no TalosUpgradePolicy %q in namespace %q, and no Cluster or TalosUpgrade names it\n", "absent", "plugin-empty")))
}
