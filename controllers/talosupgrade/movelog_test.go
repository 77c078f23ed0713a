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

package talosupgrade

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestLogSurvivesAnObjectWithoutStatus writes the copy of the write-ahead
// log, drops the status as clusterctl move does, and restores the records of
// the Machines in flight and failed, intents included.
func TestLogSurvivesAnObjectWithoutStatus(t *testing.T) {
	g := NewWithT(t)
	now := metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}
	u.Status.StartTime = &now
	u.Status.AcknowledgedFailures = 1
	u.Status.Machines = []upgradev1.MachineUpgradeStatus{
		{Machine: "cp-0", Phase: upgradev1.MachinePhaseCompleted},
		{Machine: "w-0", Phase: upgradev1.MachinePhaseWaitingForHold, HoldPoint: upgradev1.HoldPointPreReboot, Cordoned: true, SkipRemediationSet: true, UpgradeRequestedTime: &now, BootID: "b-1"},
		{Machine: "w-1", Phase: upgradev1.MachinePhaseFailed, Message: "boom"},
		{Machine: "w-2", Phase: upgradev1.MachinePhasePending},
	}
	syncLog(u)
	g.Expect(u.Annotations).To(HaveKey(LogAnnotation))

	moved := &upgradev1.TalosUpgrade{ObjectMeta: *u.ObjectMeta.DeepCopy()}
	r := &Reconciler{Recorder: events.NewFakeRecorder(10)}
	g.Expect(r.restoreLog(&scope{Rollout: disruption.Rollout{Upgrade: moved}})).To(Succeed())
	g.Expect(moved.Status.StartTime.Equal(&now)).To(BeTrue())
	g.Expect(moved.Status.AcknowledgedFailures).To(BeEquivalentTo(1))
	g.Expect(moved.Status.Machines).To(HaveLen(2))
	w0 := moved.Status.Machines[0]
	g.Expect(w0.Machine).To(Equal("w-0"))
	g.Expect(w0.UpgradeRequestedTime).NotTo(BeNil(), "the upgrade call is never made again")
	g.Expect(w0.Cordoned && w0.SkipRemediationSet).To(BeTrue())
	g.Expect(w0.BootID).To(Equal("b-1"))
	g.Expect(moved.Status.Machines[1].Message).To(Equal("boom"))

	// A TalosUpgrade with its status keeps it.
	again := u.DeepCopy()
	again.Status.Machines = again.Status.Machines[:1]
	g.Expect(r.restoreLog(&scope{Rollout: disruption.Rollout{Upgrade: again}})).To(Succeed())
	g.Expect(again.Status.Machines).To(HaveLen(1))

	// Nothing in flight or failed: no copy.
	u.Status.Machines = u.Status.Machines[:1]
	syncLog(u)
	g.Expect(u.Annotations).NotTo(HaveKey(LogAnnotation))

	// A damaged copy is an error, not a panic.
	bad := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LogAnnotation: "{"}}}
	err := r.restoreLog(&scope{Rollout: disruption.Rollout{Upgrade: bad}})
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Contains(err.Error(), LogAnnotation)).To(BeTrue())
}

// TestLogIsCopiedWhenTheClusterIsPaused: the copy of the log is written in
// the reconcile that sees the Cluster paused, with the removal of the
// block-move annotation (one patch: clusterctl move copies the whole log),
// never while the Cluster is unpaused, and it goes once the Cluster is
// unpaused again and the status read holds the log; a copy just restored
// into a status not written yet stays.
func TestLogIsCopiedWhenTheClusterIsPaused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster := builder.Cluster("ns", "c")
	c := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(cluster).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
	now := metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	inFlight := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Spec: upgradev1.TalosUpgradeSpec{ClusterName: "c"}}
	inFlight.Status.StartTime = &now
	inFlight.Status.Machines = []upgradev1.MachineUpgradeStatus{
		{Machine: "w-0", Phase: upgradev1.MachinePhaseRebooting, Cordoned: true, UpgradeRequestedTime: &now, BootID: "b-1"},
	}
	reconcileCluster := func(u *upgradev1.TalosUpgrade) *upgradev1.TalosUpgrade {
		s := &scope{Rollout: disruption.Rollout{Upgrade: u, Now: now.Time}, base: newBase(u)}
		_, err := r.reconcileCluster(ctx, s)
		g.Expect(err).NotTo(HaveOccurred())
		return s.Upgrade
	}

	// Unpaused: the rollout acts, move is blocked, no copy is made.
	u := reconcileCluster(inFlight.DeepCopy())
	g.Expect(u.Annotations).To(HaveKey(clusterctlv1.BlockMoveAnnotation))
	g.Expect(u.Annotations).NotTo(HaveKey(LogAnnotation))

	// Paused: move may go, and takes the whole log with it.
	cluster.Spec.Paused = ptr.To(true)
	g.Expect(c.Update(ctx, cluster)).To(Succeed())
	u = reconcileCluster(u)
	g.Expect(u.Annotations).NotTo(HaveKey(clusterctlv1.BlockMoveAnnotation))
	g.Expect(u.Annotations).To(HaveKey(LogAnnotation))
	moved := &upgradev1.TalosUpgrade{ObjectMeta: *u.ObjectMeta.DeepCopy(), Spec: u.Spec}
	g.Expect(r.restoreLog(&scope{Rollout: disruption.Rollout{Upgrade: moved}})).To(Succeed())
	g.Expect(moved.Status.Machines).To(ConsistOf(And(
		HaveField("Machine", "w-0"), HaveField("Phase", upgradev1.MachinePhaseRebooting), HaveField("Cordoned", true),
		HaveField("BootID", "b-1"), HaveField("UpgradeRequestedTime", Not(BeNil())))))

	// Unpaused in the target, right after the restore: the status on the
	// apiserver is still empty, so the copy stays until it is written.
	cluster.Spec.Paused = ptr.To(false)
	g.Expect(c.Update(ctx, cluster)).To(Succeed())
	s := &scope{Rollout: disruption.Rollout{Upgrade: moved.DeepCopy(), Now: now.Time}}
	s.base = &upgradev1.TalosUpgrade{ObjectMeta: *moved.ObjectMeta.DeepCopy(), Spec: moved.Spec}
	_, err := r.reconcileCluster(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Upgrade.Annotations).To(HaveKey(LogAnnotation))
	g.Expect(s.Upgrade.Annotations).To(HaveKey(clusterctlv1.BlockMoveAnnotation), "the Cluster is unpaused")

	// Once the status holds the log, the stale copy goes.
	u = reconcileCluster(moved)
	g.Expect(u.Annotations).To(HaveKey(clusterctlv1.BlockMoveAnnotation))
	g.Expect(u.Annotations).NotTo(HaveKey(LogAnnotation))
}
