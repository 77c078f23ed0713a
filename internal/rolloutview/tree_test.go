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

package rolloutview

import (
	"bytes"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

func ExampleWriteTree() {
	WriteTree(os.Stdout, fleet(), t0, TreeOptions{Grouping: true})
	// Output:
	// NAME                               ROLE           VERSION             PHASE                    DONE    SINCE  MESSAGE
	// TalosUpgradePolicy/talos-1-13                     v1.13.0             InProgress               1/3     6m     1 of 3 Clusters on v1.13.0
	// ├─Cluster/prod-eu-1                               v1.12.4 -> v1.13.0  InProgress               2/6     3m     machine "prod-eu-1-cp-2" held at preDrain by "backup-operator"
	// │ ├─Bypass                                                            Active                                  health checks; by alice: "INC-4711: the check's image is gone"
	// │ ├─HealthCheck/ceph-healthy                                          Passed                           5m
	// │ ├─2 Machines                     control plane  v1.13.0             Completed                               prod-eu-1-cp-0, prod-eu-1-cp-1
	// │ ├─Machine/prod-eu-1-cp-2         control plane  v1.12.4 -> v1.13.0  WaitingForHold:preDrain          3m     held at preDrain by "backup-operator"
	// │ ├─2 Machines                     worker         v1.12.4 -> v1.13.0  Pending                                 prod-eu-1-w-0, prod-eu-1-w-1
	// │ └─Machine/prod-eu-1-w-2          worker         v1.12.4 -> v1.13.0  Pending                                 holds: preReboot by storage-operator
	// ├─Cluster/prod-eu-2                               v1.12.4 -> v1.13.0  Failed                   1/2     1m     machine "prod-eu-2-w-0" failed: preReboot hook failed: ceph-noout: Job failed after 2 attempts
	// │ ├─Templates                                                         TemplatesDrifted                 2m     MachineDeployment prod-eu-2-md-0 creates Machines from AWSMachineTemplate md-0, which boots v1.12.4
	// │ ├─Machine/prod-eu-2-cp-0         control plane  v1.12.4 -> v1.13.0  Completed
	// │ └─Machine/prod-eu-2-w-0          worker         v1.12.4 -> v1.13.0  Failed                           1m     preReboot hook failed: ceph-noout: Job failed after 2 attempts
	// │   └─Hook/ceph-noout (preReboot)                                     Failed                   2 runs         HEALTH_ERR 1 osds down
	// ├─Cluster/prod-us-1                               v1.13.0             Pending                  0/0            waiting for the policy's maxClustersInProgress to admit this Cluster
	// └─Cluster/staging-1                                                   NoRollout                               no TalosUpgrade yet: the policy controller creates it once the policy exists and is valid
}

func TestWriteTreeNoColorByDefault(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	WriteTree(&out, fleet(), t0, TreeOptions{Grouping: true})
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))
	out.Reset()
	WriteTree(&out, fleet(), t0, TreeOptions{Grouping: true, Color: true})
	g.Expect(out.String()).To(ContainSubstring(red + "Failed" + reset))
}

// TestWriteTreeInPlaceUpdates: a CAPI-driven rollout whose Machines CAPI
// would replace says so on a line of its own, and says nothing while CAPI
// hands them to Tollgate.
func TestWriteTreeInPlaceUpdates(t *testing.T) {
	g := NewWithT(t)
	fleetOf := func(status metav1.ConditionStatus, reason, message string) Fleet {
		u := newUpgrade("prod-eu-3", upgradev1.UpgradePhaseInProgress, nil, func(u *upgradev1.TalosUpgrade) {
			u.Status.Conditions = append(u.Status.Conditions, condition(upgradev1.InPlaceUpdatesReadyCondition, status, reason, message, time.Minute))
		})
		return Fleet{Policies: []PolicyTree{{Namespace: "fleet", Name: "talos-1-13", Policy: policy("talos-1-13"),
			Rollouts: []Rollout{{Namespace: "fleet", Cluster: "prod-eu-3", Upgrade: u}}}}}
	}
	var out bytes.Buffer
	WriteTree(&out, fleetOf(metav1.ConditionFalse, upgradev1.ReplacementAheadReason, "CAPI replaces Machines for changes Tollgate does not make in place"), t0, TreeOptions{})
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  └─InPlaceUpdates\s+ReplacementAhead\s+1m\s+CAPI replaces Machines for changes Tollgate does not make in place$`))
	out.Reset()
	WriteTree(&out, fleetOf(metav1.ConditionTrue, upgradev1.InPlaceUpdatesReadyReason, "CAPI hands the Talos image changes of MachineDeployment md-0 to Tollgate"), t0, TreeOptions{})
	g.Expect(out.String()).NotTo(ContainSubstring("InPlaceUpdates"))
}

// TestWriteTreeRemovals: the Machines CAPI deletes that Tollgate holds or
// released get a line each, with their cause, what they wait for and their
// preRemoval hooks.
func TestWriteTreeRemovals(t *testing.T) {
	g := NewWithT(t)
	u := newUpgrade("prod-eu-3", upgradev1.UpgradePhaseCompleted, nil, func(u *upgradev1.TalosUpgrade) {
		u.Status.Removals = []upgradev1.MachineRemovalStatus{
			{Machine: "prod-eu-3-w-0", Group: "md/w", Cause: upgradev1.RemovalCauseDeleted, Phase: upgradev1.RemovalPhaseHeld,
				StartTime: metav1.NewTime(t0.Add(-2 * time.Minute)), Message: "waiting for the health checks: ceph is HEALTH_WARN",
				Hooks: []upgradev1.HookRunStatus{{Name: "osd-out", Point: upgradev1.HookPointPreRemoval, Phase: upgradev1.HookRunRunning, Attempts: 1}}},
			{Machine: "prod-eu-3-w-1", Group: "md/w", Cause: upgradev1.RemovalCauseRemediated, Phase: upgradev1.RemovalPhaseReleased,
				StartTime: metav1.NewTime(t0.Add(-3 * time.Minute)), ReleaseTime: &metav1.Time{Time: t0.Add(-time.Minute)}, Message: "released: remediated Machine"},
		}
		u.Status.Conditions = append(u.Status.Conditions, metav1.Condition{Type: upgradev1.RemovalsCondition, Status: metav1.ConditionFalse,
			Reason: upgradev1.RemovalWaitingForHealthChecksReason, Message: `1 removal(s) held: Machine "prod-eu-3-w-0" (Deleted): waiting for the health checks`,
			LastTransitionTime: metav1.NewTime(t0.Add(-2 * time.Minute))})
	})
	f := Fleet{Policies: []PolicyTree{{Namespace: "fleet", Name: "talos-1-13", Policy: policy("talos-1-13"),
		Rollouts: []Rollout{{Namespace: "fleet", Cluster: "prod-eu-3", Upgrade: u}}}}}
	var out bytes.Buffer
	WriteTree(&out, f, t0, TreeOptions{})
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  ├─Removals\s+RemovalWaitingForHealthChecks\s+2m\s+1 removal\(s\) held: Machine "prod-eu-3-w-0" \(Deleted\): waiting for the health checks$`),
		"the Removals condition is shown while it is not True")
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  ├─Removal/prod-eu-3-w-0\s+md/w\s+Held:Deleted\s+2m\s+waiting for the health checks: ceph is HEALTH_WARN$`))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  │ └─Hook/osd-out \(preRemoval\)\s+Running\s+1 run\s*$`))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  └─Removal/prod-eu-3-w-1\s+md/w\s+Released:Remediated\s+1m\s+released: remediated Machine$`))
}

// TestWriteTreeTargets: once an object of the Cluster declares its Talos
// version, each object that makes Machines gets a line: the version its
// Machines go to, where it was written, how many run it, and why they wait
// when the version cannot be reached.
func TestWriteTreeTargets(t *testing.T) {
	g := NewWithT(t)
	u := newUpgrade("prod-eu-3", upgradev1.UpgradePhaseInProgress, nil, func(u *upgradev1.TalosUpgrade) {
		u.Status.Targets = []upgradev1.TargetStatus{
			{Kind: "TalosControlPlane", Name: "prod-eu-3-cp", TalosVersion: "v1.13.0", Source: upgradev1.VersionSourcePolicy, Field: "TalosUpgrade prod-eu-3 spec.talosVersion", Machines: 3, OnTarget: 3},
			{Kind: "MachineDeployment", Name: "prod-eu-3-gpu", TalosVersion: "v1.12.4", Source: upgradev1.VersionSourceObject, Field: "MachineDeployment prod-eu-3-gpu spec.template.metadata.annotations[upgrade.tollgate.dev/desired-talos-version]", Machines: 2, OnTarget: 2},
			{Kind: "MachineDeployment", Name: "prod-eu-3-w", TalosVersion: "v1.11.0", Source: upgradev1.VersionSourceObject, Machines: 4, Message: "MachineDeployment prod-eu-3-w declares Talos v1.11.0, which Machine w-0 cannot reach: downgrade not allowed"},
			{Kind: "MachineDeployment", Name: "prod-eu-3-x", TalosVersion: "v1.13.0", Hop: "v1.12.6", Source: upgradev1.VersionSourceObject, Field: "MachineDeployment prod-eu-3-x spec.template.metadata.annotations[upgrade.tollgate.dev/desired-talos-version]", Machines: 2},
		}
	})
	f := Fleet{Policies: []PolicyTree{{Namespace: "fleet", Name: "talos-1-13", Policy: policy("talos-1-13"),
		Rollouts: []Rollout{{Namespace: "fleet", Cluster: "prod-eu-3", Upgrade: u}}}}}
	var out bytes.Buffer
	WriteTree(&out, f, t0, TreeOptions{})
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  ├─Target/TalosControlPlane/prod-eu-3-cp\s+v1\.13\.0\s+Policy\s+3/3\s+TalosUpgrade prod-eu-3 spec\.talosVersion$`))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  ├─Target/MachineDeployment/prod-eu-3-gpu\s+v1\.12\.4\s+Object\s+2/2\s+MachineDeployment prod-eu-3-gpu spec\.template\.metadata\.annotations\[upgrade\.tollgate\.dev/desired-talos-version\]$`))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  [├└]─Target/MachineDeployment/prod-eu-3-x\s+v1\.12\.6→v1\.13\.0\s+Object\s+0/2\s+MachineDeployment prod-eu-3-x spec`), "the hop of its path, then where it goes")
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  [├└]─Target/MachineDeployment/prod-eu-3-w\s+v1\.11\.0\s+Object\s+0/4\s+MachineDeployment prod-eu-3-w declares Talos v1\.11\.0, which Machine w-0 cannot reach: downgrade not allowed$`))
}

// TestWriteTreeReboots: a Machine that is only rebooted shows the version
// its node runs and that it is a reboot, in flight and done.
func TestWriteTreeReboots(t *testing.T) {
	g := NewWithT(t)
	reboot := func(name string, phase upgradev1.MachinePhase) upgradev1.MachineUpgradeStatus {
		return upgradev1.MachineUpgradeStatus{Machine: name, Role: upgradev1.MachineRoleWorker, Group: "md/w", Action: upgradev1.MachineActionReboot,
			FromVersion: "v1.13.0", TargetVersion: "v1.13.0", Phase: phase, PhaseStartTime: ago(time.Minute)}
	}
	u := newUpgrade("prod-eu-3", upgradev1.UpgradePhaseInProgress, []upgradev1.MachineUpgradeStatus{
		reboot("prod-eu-3-w-0", upgradev1.MachinePhaseRebooting),
		reboot("prod-eu-3-w-1", upgradev1.MachinePhasePending),
	})
	f := Fleet{Policies: []PolicyTree{{Namespace: "fleet", Name: "talos-1-13", Policy: policy("talos-1-13"),
		Rollouts: []Rollout{{Namespace: "fleet", Cluster: "prod-eu-3", Upgrade: u}}}}}
	var out bytes.Buffer
	WriteTree(&out, f, t0, TreeOptions{})
	g.Expect(out.String()).To(MatchRegexp(`(?m)Machine/prod-eu-3-w-0\s+worker\s+v1\.13\.0 \(reboot\)\s+Rebooting`))
	g.Expect(out.String()).NotTo(ContainSubstring("v1.13.0 -> v1.13.0"))
}
