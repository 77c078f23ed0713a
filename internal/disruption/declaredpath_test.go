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

package disruption

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// declaredPathRollout is an Auto rollout to v1.13.0 of a Cluster whose
// MachineDeployment md-gpu declares v1.13.0, with its Machines on the
// versions given (by name, "" for not known yet), and md-a left to the
// policy.
func declaredPathRollout(versions map[string]string) *Rollout {
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}
	u.Spec.TalosVersion = "v1.13.0"
	u.Spec.UpgradePath = upgradev1.UpgradePathAuto
	cluster := targetsCluster()
	machines := map[string]*clusterv1.Machine{"a-0": targetsMachine("a-0", "md-a", "v1.12.4", nil)}
	machines["a-0"].Status.NodeInfo.KubeletVersion = "v1.33.0"
	for name, v := range versions {
		m := targetsMachine(name, "md-gpu", v, nil)
		m.Status.NodeInfo.KubeletVersion = "v1.33.0"
		if v == "" {
			m.Status.NodeInfo = nil
		}
		machines[name] = m
	}
	return &Rollout{Upgrade: u, Cluster: cluster, Machines: machines,
		Declared: DeclaredBy(cluster, nil, []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.13.0"), targetsDeployment("md-a", "")})}
}

var gpu = Owner{Kind: KindMachineDeployment, Name: "md-gpu"}

// TestPathsToPlan: an object whose Machines cannot all reach its version in
// one upgrade asks the preflight for a path, with what they run; one they
// all reach in one does not, nor one with a path that covers them, nor any
// with upgradePath Direct; a Machine that joins older than the path was
// planned from asks for it again.
func TestPathsToPlan(t *testing.T) {
	g := NewWithT(t)

	r := declaredPathRollout(map[string]string{"gpu-0": "v1.12.4", "gpu-1": "v1.11.6"})
	g.Expect(r.PathsToPlan()).To(BeEmpty(), "every Machine reaches v1.13.0 in one upgrade")

	r = declaredPathRollout(map[string]string{"gpu-0": "v1.10.9", "gpu-1": "v1.12.4", "gpu-2": "v1.10.9", "gpu-3": ""})
	g.Expect(r.PathsToPlan()).To(Equal([]PathRequest{{Owner: gpu, Version: "v1.13.0", From: []string{"v1.10.9", "v1.12.4"}}}))
	g.Expect(r.PreflightKey()).To(ContainSubstring("MachineDeployment md-gpu=v1.13.0 (path to plan)"), "the preflight runs to plan it")

	r.Upgrade.Status.DeclaredPaths = []upgradev1.DeclaredPathStatus{{Kind: KindMachineDeployment, Name: "md-gpu", TalosVersion: "v1.13.0", From: "v1.10.9", Hops: []string{"v1.11.6", "v1.12.4", "v1.13.0"}}}
	g.Expect(r.PathsToPlan()).To(BeEmpty(), "planned")
	g.Expect(r.PreflightKey()).To(HaveSuffix("declared=MachineDeployment md-gpu=v1.13.0"))

	r.Machines["gpu-4"] = targetsMachine("gpu-4", "md-gpu", "v1.8.4", nil)
	r.Machines["gpu-4"].Status.NodeInfo.KubeletVersion = "v1.31.0"
	g.Expect(r.PathsToPlan()).To(Equal([]PathRequest{{Owner: gpu, Version: "v1.13.0", From: []string{"v1.10.9", "v1.12.4", "v1.8.4"}}}), "a Machine joined older than the path's start")
	g.Expect(r.TargetOf(r.Machines["gpu-4"]).Waiting).To(ContainSubstring("runs Talos v1.8.4, older than the v1.10.9 the path of MachineDeployment md-gpu to v1.13.0 was planned from"))
	g.Expect(r.PreflightKey()).To(ContainSubstring("(path to plan)"))

	r.Upgrade.Status.DeclaredPaths[0].TalosVersion = "v1.12.9"
	g.Expect(r.PathsToPlan()).To(HaveLen(1), "a path to another version is no path to this one")

	r.Upgrade.Spec.UpgradePath = upgradev1.UpgradePathDirect
	g.Expect(r.PathsToPlan()).To(BeEmpty())
	g.Expect(r.TargetOf(r.Machines["gpu-0"]).Blocked).To(ContainSubstring("with upgradePath Direct"))
}

// TestDeclaredPathHops walks the Machines of one MachineDeployment through
// the hops of the path to the version it declares: each goes to the first
// hop one of them has not reached, a Machine ahead waits for the others (and
// is never taken back), the policy's Machines go to the policy's target
// meanwhile, and status.targets shows the hop.
func TestDeclaredPathHops(t *testing.T) {
	g := NewWithT(t)
	r := declaredPathRollout(map[string]string{"gpu-0": "v1.10.9", "gpu-1": "v1.12.4"})
	r.Upgrade.Status.DeclaredPaths = []upgradev1.DeclaredPathStatus{{Kind: KindMachineDeployment, Name: "md-gpu", TalosVersion: "v1.13.0", From: "v1.10.9", Hops: []string{"v1.11.6", "v1.12.4", "v1.13.0"}}}

	behind, ahead := r.TargetOf(r.Machines["gpu-0"]), r.TargetOf(r.Machines["gpu-1"])
	g.Expect(behind.Version).To(Equal("v1.11.6"))
	g.Expect(behind.Final).To(Equal("v1.13.0"))
	g.Expect(behind.Held()).To(BeEmpty())
	g.Expect(r.Hops(behind)).To(Equal([]string{"v1.11.6", "v1.12.4", "v1.13.0"}))
	g.Expect(ahead.Version).To(Equal("v1.11.6"), "past the hop: it waits there")
	g.Expect(ahead.Held()).To(BeEmpty())
	g.Expect(ahead.Past("v1.12.4")).To(BeTrue())
	g.Expect(r.TargetOf(r.Machines["a-0"]).Version).To(Equal("v1.13.0"), "the policy's Machines go straight to its target")

	targets, c := r.Targets()
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(targets).To(ContainElement(upgradev1.TargetStatus{Kind: KindMachineDeployment, Name: "md-gpu", TalosVersion: "v1.13.0", Hop: "v1.11.6", Source: upgradev1.VersionSourceObject,
		Field: "MachineDeployment md-gpu spec.template.metadata.annotations" + desiredField, Machines: 2}))

	// gpu-0 completed the hop, as the rollout verified it on its node,
	// before CAPI copied it into the Machine: the next hop, which gpu-1 is
	// on already.
	r.Upgrade.Status.Machines = []upgradev1.MachineUpgradeStatus{
		{Machine: "gpu-0", Phase: upgradev1.MachinePhaseCompleted, FromVersion: "v1.10.9", TargetVersion: "v1.11.6"},
		{Machine: "gpu-1", Phase: upgradev1.MachinePhaseCompleted, FromVersion: "v1.12.4", TargetVersion: "v1.11.6", Message: "runs v1.12.4, past the hop to v1.11.6"},
	}
	g.Expect(r.TargetOf(r.Machines["gpu-0"]).Version).To(Equal("v1.12.4"))
	g.Expect(r.TargetOf(r.Machines["gpu-1"]).Version).To(Equal("v1.12.4"))

	r.Upgrade.Status.Machines[0] = upgradev1.MachineUpgradeStatus{Machine: "gpu-0", Phase: upgradev1.MachinePhaseCompleted, FromVersion: "v1.11.6", TargetVersion: "v1.12.4"}
	g.Expect(r.TargetOf(r.Machines["gpu-0"]).Version).To(Equal("v1.13.0"))
	g.Expect(r.TargetOf(r.Machines["gpu-1"]).Version).To(Equal("v1.13.0"))
	g.Expect(r.Hops(r.TargetOf(r.Machines["gpu-0"]))).To(Equal([]string{"v1.13.0"}))

	// gpu-1 reached v1.13.0; a Machine joins on v1.12.0: the others wait at
	// v1.13.0 (past the hop, never taken back) while it catches up.
	r.Upgrade.Status.Machines[1] = upgradev1.MachineUpgradeStatus{Machine: "gpu-1", Phase: upgradev1.MachinePhaseCompleted, FromVersion: "v1.12.4", TargetVersion: "v1.13.0"}
	r.Machines["gpu-2"] = targetsMachine("gpu-2", "md-gpu", "v1.12.0", nil)
	r.Machines["gpu-2"].Status.NodeInfo.KubeletVersion = "v1.33.0"
	joiner, done := r.TargetOf(r.Machines["gpu-2"]), r.TargetOf(r.Machines["gpu-1"])
	g.Expect(joiner.Version).To(Equal("v1.12.4"))
	g.Expect(joiner.Held()).To(BeEmpty())
	g.Expect(done.Version).To(Equal("v1.12.4"))
	g.Expect(done.Past("v1.13.0")).To(BeTrue())
	g.Expect(done.Past("v1.12.0")).To(BeFalse())

	// A Machine being deleted goes nowhere and holds no hop.
	r.Machines["gpu-2"].DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	g.Expect(r.TargetOf(r.Machines["gpu-1"]).Version).To(Equal("v1.13.0"))
}

// TestDeclaredPathNeverGoesBack: the Machines' status.nodeInfo still says
// the version they ran before the path began (CAPI has not copied the
// nodes' since), and one of them is on its way to the last hop: the hop is
// read from what the records verified, so the other, done, stays on the
// last hop rather than going back to the first, and a Machine past a hop
// keeps the newer version it runs in its next record. (CI at c65ece3:
// alpha-worker-0, Completed on v1.13.0 while alpha-worker-1 was verifying
// it, was sent to v1.11.5.)
func TestDeclaredPathNeverGoesBack(t *testing.T) {
	g := NewWithT(t)
	r := declaredPathRollout(map[string]string{"gpu-0": "v1.10.9", "gpu-1": "v1.10.9"})
	r.Upgrade.Status.DeclaredPaths = []upgradev1.DeclaredPathStatus{{Kind: KindMachineDeployment, Name: "md-gpu", TalosVersion: "v1.13.0", From: "v1.10.9", Hops: []string{"v1.11.6", "v1.12.4", "v1.13.0"}}}
	for _, phase := range []upgradev1.MachinePhase{
		upgradev1.MachinePhaseWaitingForHold, upgradev1.MachinePhaseDraining, upgradev1.MachinePhaseUpgrading,
		upgradev1.MachinePhaseRebooting, upgradev1.MachinePhaseVerifying, upgradev1.MachinePhaseFailed,
	} {
		r.Upgrade.Status.Machines = []upgradev1.MachineUpgradeStatus{
			{Machine: "gpu-0", Phase: upgradev1.MachinePhaseCompleted, FromVersion: "v1.12.4", TargetVersion: "v1.13.0"},
			{Machine: "gpu-1", Phase: phase, FromVersion: "v1.12.4", TargetVersion: "v1.13.0"},
		}
		done := r.TargetOf(r.Machines["gpu-0"])
		g.Expect(done.Version).To(Equal("v1.13.0"), "gpu-1 %s from v1.12.4", phase)
		g.Expect(done.Past("v1.13.0")).To(BeFalse())
	}

	// gpu-0 completed a hop it was past (it runs v1.12.4, the hop was
	// v1.11.6): its record for the next hop says it runs v1.12.4, not the
	// hop it was past nor what its Machine reported.
	prev := upgradev1.MachineUpgradeStatus{Machine: "gpu-0", Phase: upgradev1.MachinePhaseCompleted, FromVersion: "v1.12.4", TargetVersion: "v1.11.6", Message: "runs v1.12.4, past the hop to v1.11.6"}
	next := r.NextRecord(prev, r.Machines["gpu-0"], "v1.12.4")
	g.Expect(next.FromVersion).To(Equal("v1.12.4"))
	g.Expect(next.Phase).To(Equal(upgradev1.MachinePhasePending))
}

// TestDeclaredPathNotFound: a path the preflight did not find stops the
// object's Machines with why, and the DesiredVersions condition says so;
// the rest of the Cluster goes on.
func TestDeclaredPathNotFound(t *testing.T) {
	g := NewWithT(t)
	r := declaredPathRollout(map[string]string{"gpu-0": "v1.10.9"})
	r.Upgrade.Status.DeclaredPaths = []upgradev1.DeclaredPathStatus{{Kind: KindMachineDeployment, Name: "md-gpu", TalosVersion: "v1.13.0", From: "v1.10.9",
		Message: "no upgrade path from v1.10.9 to v1.13.0: it goes through Talos 1.12, and ghcr.io/siderolabs/installer has no stable 1.12 release"}}
	got := r.TargetOf(r.Machines["gpu-0"])
	g.Expect(got.Reason).To(Equal(upgradev1.DesiredVersionUnreachableReason))
	g.Expect(got.Blocked).To(Equal("MachineDeployment md-gpu declares Talos v1.13.0 (spec.template.metadata.annotations" + desiredField + "), which its Machines cannot reach: no upgrade path from v1.10.9 to v1.13.0: it goes through Talos 1.12, and ghcr.io/siderolabs/installer has no stable 1.12 release"))
	g.Expect(r.PathsToPlan()).To(BeEmpty(), "looked for again once recheckDeclaredPaths forgets it")
	_, c := r.Targets()
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(ContainSubstring("has no stable 1.12 release"))
	g.Expect(r.TargetOf(r.Machines["a-0"]).Held()).To(BeEmpty())
}
