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
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
)

// TestReleaseHooksUsage refuses, before connecting to anything, a
// release-hooks without a reason, with one too long to record, or of a
// policy.
func TestReleaseHooksUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"release-hooks", "prod"}, "--reason is required"},
		{[]string{"release-hooks", "prod", "--reason", "  ", "--yes"}, "--reason is required"},
		{[]string{"release-hooks", "prod", "--reason", strings.Repeat("é", 257)}, "--reason is 257 characters long: at most 256"},
		{[]string{"release-hooks", "policy/talos-1-13", "--reason", "x"}, "release-hooks takes a Cluster"},
		{[]string{"release-hooks", "prod", "--reason", "x", "--leader-election-id", ""}, "--leader-election-id must name a Lease"},
		{[]string{"release-hooks", "--reason", "x"}, "expected CLUSTER"},
	} {
		g := NewWithT(t)
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"--kubeconfig", "/nonexistent"}, tt.args...), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
		g.Expect(code).To(Equal(2), "%v: %s", tt.args, errOut.String())
		g.Expect(errOut.String()).To(ContainSubstring(tt.err), "%v", tt.args)
		g.Expect(out.String()).To(BeEmpty())
	}
}

// TestDefaultLeaderElectionID: the plugin looks for the Lease the manager
// holds by default.
func TestDefaultLeaderElectionID(t *testing.T) {
	NewWithT(t).Expect(defaultLeaderElectionID).To(Equal(manager.DefaultLeaderElectionID))
}

func lease(namespace, holder string, renewed time.Time, seconds int32) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: defaultLeaderElectionID}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	if !renewed.IsZero() {
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renewed))
	}
	if seconds > 0 {
		l.Spec.LeaseDurationSeconds = ptr.To(seconds)
	}
	return l
}

// TestJudgeLeases tells a running Tollgate from a stopped one by its
// leader election Lease: held and renewed within its duration.
func TestJudgeLeases(t *testing.T) {
	now := time.Date(2026, 12, 14, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		leases    []coordinationv1.Lease
		namespace string
		running   bool
		summary   string
	}{
		{name: "no Lease: never ran, uninstalled with its namespace, or runs without leader election",
			summary: `Tollgate is not running: there is no Lease "tollgate-controller-leader" in any namespace (a manager run without leader election holds none, and a shard holds the Lease of its own --leader-election-id: name it with --leader-election-id)`},
		{name: "no Lease in the namespace named", namespace: "tollgate-system",
			summary: `there is no Lease "tollgate-controller-leader" in namespace tollgate-system`},
		{name: "renewed 3s ago: running", leases: []coordinationv1.Lease{lease("tollgate-system", "mgr-abc_1", now.Add(-3*time.Second), 15)}, running: true,
			summary: "Tollgate is running: Lease tollgate-system/tollgate-controller-leader is held by mgr-abc_1, renewed 3s ago (it expires 15s after its last renewal)"},
		{name: "renewed just under its duration ago: running", leases: []coordinationv1.Lease{lease("tollgate-system", "mgr-abc_1", now.Add(-14900*time.Millisecond), 15)}, running: true},
		{name: "killed: its Lease expired", leases: []coordinationv1.Lease{lease("tollgate-system", "mgr-abc_1", now.Add(-62*time.Second), 15)},
			summary: "Tollgate is not running: Lease tollgate-system/tollgate-controller-leader, held by mgr-abc_1, was last renewed 1m2s ago and expired 47s ago"},
		{name: "renewed at its duration exactly: expired", leases: []coordinationv1.Lease{lease("tollgate-system", "mgr-abc_1", now.Add(-15*time.Second), 15)}},
		{name: "no duration: the default 15s", leases: []coordinationv1.Lease{lease("tollgate-system", "mgr-abc_1", now.Add(-10*time.Second), 0)}, running: true},
		{name: "released on a graceful stop", leases: []coordinationv1.Lease{lease("tollgate-system", "", now.Add(-time.Second), 1)},
			summary: "Tollgate is not running: Lease tollgate-system/tollgate-controller-leader is held by no one"},
		{name: "held, never renewed", leases: []coordinationv1.Lease{lease("tollgate-system", "mgr-abc_1", time.Time{}, 15)},
			summary: "was never renewed"},
		{name: "an old namespace's expired Lease beside the running one", running: true, leases: []coordinationv1.Lease{
			lease("old-system", "mgr-old_1", now.Add(-time.Hour), 15), lease("tollgate-system", "mgr-abc_1", now.Add(-time.Second), 15),
		}},
		{name: "two expired Leases, both said", leases: []coordinationv1.Lease{
			lease("tollgate-system", "mgr-abc_1", now.Add(-time.Minute), 15), lease("old-system", "mgr-old_1", now.Add(-time.Hour), 15),
		}, summary: "Lease old-system/tollgate-controller-leader, held by mgr-old_1, was last renewed 1h0m0s ago and expired 59m45s ago; Lease tollgate-system/"},
		{name: "a clock behind the holder's: renewed in the future, running", leases: []coordinationv1.Lease{lease("tollgate-system", "mgr-abc_1", now.Add(2*time.Second), 15)}, running: true,
			summary: "renewed 0s ago"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := judgeLeases(tt.leases, defaultLeaderElectionID, tt.namespace, now)
			g.Expect(got.running).To(Equal(tt.running), got.summary)
			g.Expect(got.summary).To(ContainSubstring(tt.summary))
		})
	}
}

// machine builds a Machine of Cluster alpha.
func machine(name string, opts ...func(*clusterv1.Machine)) clusterv1.Machine {
	m := clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, Annotations: map[string]string{}}}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func withHook(m *clusterv1.Machine) {
	m.Annotations[hooks.DeletionHookAnnotation] = "Tollgate gates ..."
}

func deletedAt(t time.Time, reason string) func(*clusterv1.Machine) {
	return func(m *clusterv1.Machine) {
		m.DeletionTimestamp = ptr.To(metav1.NewTime(t))
		m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineDeletingCondition, Status: metav1.ConditionTrue, Reason: reason}}
	}
}

func withSkipRemediation(m *clusterv1.Machine) {
	m.Annotations[clusterv1.MachineSkipRemediationAnnotation] = ""
}

// TestFindHooks lists the Machines that carry Tollgate's deletion hook,
// those CAPI deletes first, and the skip-remediation annotations Tollgate's
// record says it set (not the user's).
func TestFindHooks(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 14, 12, 0, 0, 0, time.UTC)
	machines := []clusterv1.Machine{
		machine("alpha-cp-0", withHook),
		machine("alpha-md-0-b", withHook, deletedAt(now.Add(-70*time.Second), clusterv1.MachineDeletingWaitingForPreDrainHookReason)),
		machine("alpha-md-0-a", withHook, withSkipRemediation),
		machine("alpha-md-0-c", deletedAt(now.Add(-time.Second), clusterv1.MachineDeletingDrainingNodeReason)),
		machine("alpha-md-0-d", withHook, deletedAt(now.Add(-5*time.Second), clusterv1.MachineDeletingDrainingNodeReason)),
		machine("alpha-md-0-e", withSkipRemediation),
	}
	u := &upgradev1.TalosUpgrade{Status: upgradev1.TalosUpgradeStatus{Machines: []upgradev1.MachineUpgradeStatus{
		{Machine: "alpha-md-0-a", SkipRemediationSet: true},
		{Machine: "alpha-md-0-e"}, // The user's annotation: Tollgate did not set it.
	}}}
	found := findHooks(machines, u)
	g.Expect(found.names()).To(Equal([]string{"alpha-md-0-b", "alpha-md-0-d", "alpha-cp-0", "alpha-md-0-a"}), "deleting first, then by name")
	g.Expect(found.held[0].describe(now)).To(Equal("deleting for 1m10s: CAPI waits for the hook before it drains the Machine"))
	g.Expect(found.held[1].describe(now)).To(Equal("deleting for 5s"))
	g.Expect(found.held[2].describe(now)).To(Equal("not deleting: the hook would hold its next deletion"))
	g.Expect(found.skipRemediation).To(Equal([]string{"alpha-md-0-a"}))
	g.Expect(findHooks(machines, nil).skipRemediation).To(BeEmpty(), "without the rollout's record, no annotation is taken for Tollgate's")
}

// TestBreakGlassRecord: the event and the bypass history say who, which
// Machines, why and why Tollgate was judged not running, within the API's
// limits.
func TestBreakGlassRecord(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 14, 12, 0, 0, 123456789, time.UTC)
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha", UID: "c-uid"}}
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha", UID: "u-uid"}}
	b := breakGlass{
		who: "alice", reason: "INC-4713: Tollgate is down", cluster: cluster, upgrade: u,
		machines: []string{"alpha-md-0-b", "alpha-cp-0"}, now: now,
		tollgate: "Tollgate is not running: Lease tollgate-system/tollgate-controller-leader, held by mgr, was last renewed 1m ago and expired 45s ago",
	}
	e := b.event()
	g.Expect(e.Namespace).To(Equal("fleet"))
	g.Expect(e.Name).To(HavePrefix("alpha."))
	g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(e.Reason).To(Equal("DeletionHooksReleased"))
	g.Expect(e.Action).To(Equal("BreakGlass"))
	g.Expect(e.ReportingController).To(Equal("kubectl-tollgate"))
	g.Expect(e.ReportingInstance).To(HavePrefix("kubectl-tollgate@"))
	g.Expect(e.EventTime.Time).To(Equal(now))
	g.Expect(e.Regarding).To(Equal(corev1.ObjectReference{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Namespace: "fleet", Name: "alpha", UID: "c-uid"}))
	g.Expect(e.Related).To(Equal(&corev1.ObjectReference{APIVersion: "upgrade.tollgate.dev/v1alpha1", Kind: "TalosUpgrade", Namespace: "fleet", Name: "alpha", UID: "u-uid"}))
	g.Expect(e.Note).To(Equal("alice released Tollgate's deletion hook (break-glass) from Machine(s) alpha-md-0-b, alpha-cp-0: INC-4713: Tollgate is down. " + b.tollgate))

	rec := b.record()
	g.Expect(rec).To(Equal(upgradev1.BypassRecord{
		Source: upgradev1.BypassSourceReleaseHooks, RequestedBy: "alice", Reason: "INC-4713: Tollgate is down",
		Bypassed:    "Tollgate's deletion hook, released by kubectl tollgate release-hooks while Tollgate was not running, from Machine(s) alpha-md-0-b, alpha-cp-0",
		AppliedTime: metav1.NewTime(now.Truncate(time.Second)),
	}))

	b.upgrade = nil
	g.Expect(b.event().Related).To(BeNil(), "no TalosUpgrade: the event is the record")

	// A large Cluster and a long reason: the records keep their limits and
	// count the Machines they leave out.
	b.machines = nil
	for i := range 200 {
		b.machines = append(b.machines, fmt.Sprintf("alpha-md-0-5d8f9c7b4x-%05d", i))
	}
	b.reason = strings.Repeat("é", 128)
	b.who = "system:serviceaccount:ops:" + strings.Repeat("breakglass", 40)
	note := b.event().Note
	g.Expect(len(note)).To(BeNumerically("<=", maxEventNote))
	g.Expect(utf8.ValidString(note)).To(BeTrue())
	g.Expect(note).To(MatchRegexp(`alpha-md-0-5d8f9c7b4x-00000, .* and \d+ more: é+\. Tollgate is not running: `))
	rec = b.record()
	g.Expect(len(rec.Bypassed)).To(BeNumerically("<=", 1024))
	g.Expect(rec.Bypassed).To(MatchRegexp(` and \d+ more$`))
	g.Expect(len(rec.RequestedBy)).To(BeNumerically("<=", 512))

	// Who and why fill the note: the Machines are counted, and the note
	// still fits.
	b.who = strings.Repeat("ü", 256)
	b.reason = strings.Repeat("é", 256)
	note = b.event().Note
	g.Expect(len(note)).To(BeNumerically("<=", maxEventNote))
	g.Expect(utf8.ValidString(note)).To(BeTrue())
	g.Expect(note).To(ContainSubstring("from Machine(s) 200 Machines: ééé"))
}

func TestMachineList(t *testing.T) {
	g := NewWithT(t)
	g.Expect(machineList([]string{"a", "b", "c"}, 100)).To(Equal("a, b, c"))
	g.Expect(machineList([]string{"aaaa", "bbbb", "cccc"}, 15)).To(Equal("aaaa and 2 more"))
	g.Expect(machineList([]string{"aaaa", "bbbb", "cccc"}, 5)).To(Equal("3 Machines"))
}
