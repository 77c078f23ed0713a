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
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// The steps of a Machine are decisions on a world and a record (steps.go):
// these tables check every decision of every step, with no apiserver, no
// node and no clock, as CAPI's TestReconcileMachinePhases does for its
// Machine phases. The end-to-end tests of the package check the wiring.

// t0 is the time of every decision below.
var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// ago is a time before t0.
func ago(d time.Duration) *metav1.Time { return ptrTime(t0.Add(-d)) }

// errNotDialed is an error of the management cluster, before the node is
// reached, as talos.SecretDialer returns them: it says nothing of the node.
var errNotDialed = errors.Join(errors.New(`reading talosconfig Secret "ns/c-talosconfig": Internal error occurred: injected`), talos.ErrNotDialed)

// notBlamed checks that a step that could not dial the node (errNotDialed)
// tried again with an error, without holding it against the node: the
// Machine stays, its silence (unreachableSince) is what it was, and its
// message does not say the node is unreachable.
func notBlamed(g Gomega, before upgradev1.MachineUpgradeStatus, st *upgradev1.MachineUpgradeStatus, d Decision) {
	g.Expect(st.Phase).To(Equal(before.Phase))
	g.Expect(st.HoldPoint).To(Equal(before.HoldPoint))
	g.Expect(d.Fail).To(BeEmpty())
	g.Expect(d.Err).To(MatchError(talos.ErrNotDialed))
	g.Expect(d.Retrying).To(BeNil())
	g.Expect(st.UnreachableSince).To(Equal(before.UnreachableSince))
	g.Expect(st.Message).NotTo(ContainSubstring("not answer"))
}

// stepCase is a world, a record, and what the step decides on them.
type stepCase struct {
	name string
	// record is the Machine's record before the step.
	record upgradev1.MachineUpgradeStatus
	// world changes the world of newWorld.
	world func(w *Observation)
	// want checks the record after the step, and its decision.
	want func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision)
}

// newWorld is a world in which nothing holds the Machine, every action hook
// succeeded, the checks pass and the workload cluster answers.
func newWorld() *Observation {
	done := HooksRun{Result: HooksResult{Done: true}}
	return &Observation{
		Now:          t0,
		Spec:         &upgradev1.TalosUpgradeSpec{UpgradePlan: upgradev1.UpgradePlan{Installer: upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR}}},
		Machine:      builder.Machine("ns", "m-0", "c"),
		Reachable:    true,
		ChecksPassed: true,
		Hooks: map[upgradev1.HookPoint]HooksRun{
			upgradev1.HookPointPreDrain: done, upgradev1.HookPointPreReboot: done,
			upgradev1.HookPointNodePreReady: done, upgradev1.HookPointNodeReady: done,
		},
	}
}

// machineRecord is a Machine's record in phase since a minute ago, upgrading a
// node on v1.13.0 (whose upgrade call does not reboot it) to v1.13.1.
func machineRecord(phase upgradev1.MachinePhase, point upgradev1.HoldPoint) upgradev1.MachineUpgradeStatus {
	return upgradev1.MachineUpgradeStatus{
		Machine: "m-0", Node: "n-0", FromVersion: "v1.13.0", TargetVersion: "v1.13.1", BootID: "boot-1",
		Phase: phase, HoldPoint: point, StartTime: ago(10 * time.Minute), PhaseStartTime: ago(time.Minute),
	}
}

// legacyRecord is machineRecord on a node on v1.12.4, whose upgrade call reboots it.
func legacyRecord(phase upgradev1.MachinePhase, point upgradev1.HoldPoint) upgradev1.MachineUpgradeStatus {
	st := machineRecord(phase, point)
	st.FromVersion = "v1.12.4"
	return st
}

// with changes a record.
func with(st upgradev1.MachineUpgradeStatus, change func(*upgradev1.MachineUpgradeStatus)) upgradev1.MachineUpgradeStatus {
	change(&st)
	return st
}

func runSteps(t *testing.T, cases []stepCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld()
			if tc.world != nil {
				tc.world(w)
			}
			st := tc.record.DeepCopy()
			d := Decide(install{}, w, st)
			tc.want(g, st, d)
		})
	}
}

// stays checks that the Machine did not move, and did nothing.
func stays(g Gomega, before upgradev1.MachineUpgradeStatus, st *upgradev1.MachineUpgradeStatus, d Decision) {
	g.Expect(st.Phase).To(Equal(before.Phase))
	g.Expect(st.HoldPoint).To(Equal(before.HoldPoint))
	g.Expect(d.Intent).To(Equal(IntentNone))
	g.Expect(d.Fail).To(BeEmpty())
}

// fails checks that the Machine failed with a reason containing reason.
func fails(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision, reason string) {
	g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseFailed))
	g.Expect(d.Fail).To(ContainSubstring(reason))
	g.Expect(st.Message).To(Equal(d.Fail))
	g.Expect(st.CompletionTime).To(Equal(ptrTime(t0)))
	g.Expect(d.Intent).To(Equal(IntentNone), "a failed Machine asks for nothing but the undoing of its disruption")
}

// reasons are the reasons of the events of a decision.
func reasons(d Decision) []string {
	var r []string
	for _, e := range d.Events {
		r = append(r, e.Reason)
	}
	return r
}

func TestStepPreDrain(t *testing.T) {
	preDrain := machineRecord(upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreDrain)
	readClear := func(w *Observation) { w.Held = &HoldsRead{Point: upgradev1.HoldPointPreDrain} }
	runSteps(t, []stepCase{{
		name:   "a hold in the cache holds the Machine, and its record names the owner",
		record: preDrain,
		world:  func(w *Observation) { w.Holding = []string{"storage"} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, preDrain, st, d)
			g.Expect(st.HeldBy).To(ConsistOf("storage"))
			g.Expect(st.Message).To(Equal(`held at preDrain by "storage"`))
			g.Expect(d.Requeue).To(BeZero(), "the Machine watch brings it back when the hold goes")
		},
	}, {
		name:   "with no hold in the cache, the preDrain hooks run first",
		record: with(preDrain, func(st *upgradev1.MachineUpgradeStatus) { st.HeldBy = []string{"storage"} }),
		world:  func(w *Observation) { delete(w.Hooks, upgradev1.HookPointPreDrain) },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentRunHooks))
			g.Expect(d.HookPoint).To(Equal(upgradev1.HookPointPreDrain))
			g.Expect(st.HeldBy).To(BeEmpty(), "no longer held")
		},
	}, {
		name:   "hooks that still run keep the Machine, polled when they say",
		record: preDrain,
		world: func(w *Observation) {
			w.Hooks[upgradev1.HookPointPreDrain] = HooksRun{Result: HooksResult{Message: "ceph-noout running", RequeueAfter: 7 * time.Second}}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, preDrain, st, d)
			g.Expect(st.Message).To(Equal("waiting for the preDrain hooks: ceph-noout running"))
			g.Expect(d.Requeue).To(Equal(7 * time.Second))
		},
	}, {
		name:   "a failed hook fails the Machine",
		record: preDrain,
		world: func(w *Observation) {
			w.Hooks[upgradev1.HookPointPreDrain] = HooksRun{Result: HooksResult{Failed: true, Message: "ceph-noout: exit 1"}}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "preDrain hook failed: ceph-noout: exit 1")
		},
	}, {
		name:   "hooks that cannot be run end the step with an error",
		record: preDrain,
		world: func(w *Observation) {
			w.Hooks[upgradev1.HookPointPreDrain] = HooksRun{Err: errors.New("jobs is forbidden")}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, preDrain, st, d)
			g.Expect(d.Err).To(MatchError(ContainSubstring("running the preDrain hooks: jobs is forbidden")))
		},
	}, {
		name:   "an unreachable workload cluster runs no hook",
		record: preDrain,
		world:  func(w *Observation) { w.Reachable = false },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, preDrain, st, d)
			g.Expect(st.Message).To(Equal("waiting for the workload cluster to be reachable"))
		},
	}, {
		name:   "clear in the cache, the holds are read again from the apiserver",
		record: preDrain,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
			g.Expect(d.Intent).To(Equal(IntentReadHolds))
			g.Expect(d.Release).To(BeFalse(), "nothing to release before the drain")
		},
	}, {
		name:   "holds read at another point are read again",
		record: preDrain,
		world:  func(w *Observation) { w.Held = &HoldsRead{Point: upgradev1.HoldPointPreReboot} },
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentReadHolds))
		},
	}, {
		name:   "a hold the apiserver has and the cache has not heard of holds the Machine",
		record: preDrain,
		world: func(w *Observation) {
			w.Held = &HoldsRead{Point: upgradev1.HoldPointPreDrain, Holding: []string{"storage"}}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, preDrain, st, d)
			g.Expect(st.HeldBy).To(ConsistOf("storage"))
		},
	}, {
		name:   "holds that could not be read end the step with an error",
		record: preDrain,
		world: func(w *Observation) {
			w.Held = &HoldsRead{Point: upgradev1.HoldPointPreDrain, Err: errors.New("timeout")}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, preDrain, st, d)
			g.Expect(d.Err).To(MatchError(ContainSubstring("reading the preDrain holds of Machine m-0: timeout")))
		},
	}, {
		name:   "failing health checks keep the Machine from draining",
		record: preDrain,
		world:  func(w *Observation) { readClear(w); w.ChecksPassed = false },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, preDrain, st, d)
			g.Expect(st.Message).To(Equal("waiting for the health checks to pass before draining"))
			g.Expect(st.Cordoned).To(BeFalse())
		},
	}, {
		name:   "passing, the Machine records the intent to cordon and protect it from remediation",
		record: preDrain,
		world:  readClear,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseDraining))
			g.Expect(st.PhaseStartTime).To(Equal(ptrTime(t0)))
			g.Expect(st.PhaseDurations).To(ConsistOf(upgradev1.PhaseDuration{Phase: upgradev1.MachinePhaseWaitingForHold, Seconds: 60}))
			g.Expect(st.Cordoned).To(BeTrue())
			g.Expect(st.SkipRemediationSet).To(BeTrue())
			g.Expect(d.Intent).To(Equal(IntentDisrupt))
		},
	}, {
		name:   "a skip-remediation annotation someone else set is not Tollgate's to remove",
		record: preDrain,
		world: func(w *Observation) {
			readClear(w)
			w.Machine.Annotations = map[string]string{clusterv1.MachineSkipRemediationAnnotation: ""}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseDraining))
			g.Expect(st.SkipRemediationSet).To(BeFalse())
			g.Expect(d.Intent).To(Equal(IntentDisrupt))
		},
	}})
}

func TestStepDrain(t *testing.T) {
	draining := machineRecord(upgradev1.MachinePhaseDraining, "")
	drained := func(version string) func(w *Observation) {
		return func(w *Observation) {
			w.Drain = &DrainPass{Reachable: true, Drained: true, Version: version, BootID: "boot-2"}
		}
	}
	runSteps(t, []stepCase{{
		name:   "the round is asked for a drain pass",
		record: draining,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentDrainPass))
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseDraining))
		},
	}, {
		name:   "a pass that failed ends the step with its error",
		record: draining,
		world:  func(w *Observation) { w.Drain = &DrainPass{Err: errors.New("evicting pod a: forbidden")} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, draining, st, d)
			g.Expect(d.Err).To(MatchError("evicting pod a: forbidden"))
		},
	}, {
		name:   "an unreachable workload cluster observed nothing",
		record: draining,
		world:  func(w *Observation) { w.Drain = &DrainPass{} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, draining, st, d)
			g.Expect(st.Message).To(Equal("waiting for the workload cluster to be reachable"))
		},
	}, {
		name:   "Pods left within drain.timeout are drained again soon",
		record: draining,
		world:  func(w *Observation) { w.Drain = &DrainPass{Reachable: true, Pending: "1 Pod left: web-0"} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, draining, st, d)
			g.Expect(st.Message).To(Equal("draining node: 1 Pod left: web-0"))
			g.Expect(d.Requeue).To(Equal(drainPoll))
		},
	}, {
		name:   "Pods left after drain.timeout fail the Machine",
		record: with(draining, func(st *upgradev1.MachineUpgradeStatus) { st.PhaseStartTime = ago(time.Hour) }),
		world: func(w *Observation) {
			w.Spec.Drain.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
			w.Drain = &DrainPass{Reachable: true, Pending: "1 Pod left: web-0"}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "drain did not finish within 10m0s: 1 Pod left: web-0")
		},
	}, {
		name:   "a node no other node can relieve is cordoned, not drained, once said",
		record: draining,
		world: func(w *Observation) {
			drained("v1.13.0")(w)
			w.Drain.Skipped = true
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.DrainSkipped).To(BeTrue())
			g.Expect(reasons(d)).To(ConsistOf("DrainSkipped"))
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
		},
	}, {
		name:   "a silent Talos API is retried within nodeUnreachableTimeout",
		record: draining,
		world: func(w *Observation) {
			w.Drain = &DrainPass{Reachable: true, Drained: true, TalosErr: errors.New("connection refused")}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, draining, st, d)
			g.Expect(st.UnreachableSince).To(Equal(ptrTime(t0)))
			g.Expect(d.Retrying).To(MatchError("connection refused"))
			g.Expect(d.Requeue).To(Equal(talosRetry))
			g.Expect(st.Message).To(HavePrefix("Talos API not answering for 0s"))
		},
	}, {
		name:   "a Talos API silent for longer than nodeUnreachableTimeout fails the Machine",
		record: with(draining, func(st *upgradev1.MachineUpgradeStatus) { st.UnreachableSince = ago(time.Hour) }),
		world: func(w *Observation) {
			w.Spec.NodeUnreachableTimeout = &metav1.Duration{Duration: 5 * time.Minute}
			w.Drain = &DrainPass{Reachable: true, Drained: true, TalosErr: errors.New("connection refused")}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, `the Talos API of node "n-0" has not answered for 1h0m0s (nodeUnreachableTimeout 5m0s): connection refused`)
		},
	}, {
		name:   "a node not dialed (its talosconfig Secret not read) is an error of the management cluster: tried again, its silence not started",
		record: draining,
		world: func(w *Observation) {
			w.Drain = &DrainPass{Reachable: true, Drained: true, TalosErr: errNotDialed}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			notBlamed(g, draining, st, d)
			g.Expect(st.UnreachableSince).To(BeNil())
			g.Expect(d.Err.Error()).To(HavePrefix(`dialing node "n-0": reading talosconfig Secret`))
			g.Expect(d.Intent).To(Equal(IntentNone))
		},
	}, {
		name:   "the same, of a node silent for longer than nodeUnreachableTimeout: its silence is not advanced, the Machine does not fail",
		record: with(draining, func(st *upgradev1.MachineUpgradeStatus) { st.UnreachableSince = ago(time.Hour) }),
		world: func(w *Observation) {
			w.Spec.NodeUnreachableTimeout = &metav1.Duration{Duration: 5 * time.Minute}
			w.Drain = &DrainPass{Reachable: true, Drained: true, TalosErr: errNotDialed}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			notBlamed(g, with(draining, func(st *upgradev1.MachineUpgradeStatus) { st.UnreachableSince = ago(time.Hour) }), st, d)
		},
	}, {
		name:   "an error talking to the node still counts: its silence starts",
		record: draining,
		world: func(w *Observation) {
			w.Drain = &DrainPass{Reachable: true, Drained: true, TalosErr: fmt.Errorf("Version: %w: connection refused", talos.ErrUnreachable)}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, draining, st, d)
			g.Expect(st.UnreachableSince).To(Equal(ptrTime(t0)))
			g.Expect(d.Retrying).To(MatchError(talos.ErrUnreachable))
			g.Expect(d.Err).NotTo(HaveOccurred())
		},
	}, {
		name:   "drained, a node that already runs the target is verified",
		record: with(draining, func(st *upgradev1.MachineUpgradeStatus) { st.UnreachableSince = ago(time.Second) }),
		world:  drained("v1.13.1"),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
			g.Expect(st.Message).To(Equal("node already runs v1.13.1; waiting for it to be Ready"))
			g.Expect(st.UnreachableSince).To(BeNil())
			g.Expect(d.Intent).To(Equal(IntentNone))
		},
	}, {
		name:   "drained, a node newer than the target is not taken back: the Machine fails, not installed",
		record: draining,
		world:  drained("v1.13.2"),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, `node "n-0" runs v1.13.2, newer than the v1.13.1 the record was started for; not installed: downgrade not allowed: v1.13.1 is older than the running v1.13.2; set allowDowngrade to downgrade`)
			g.Expect(st.InstallerImage).To(BeEmpty())
			g.Expect(d.Intent).To(Equal(IntentNone))
		},
	}, {
		name:   "drained, with allowDowngrade a node newer than the target is installed",
		record: draining,
		world: func(w *Observation) {
			drained("v1.13.2")(w)
			w.Spec.AllowDowngrade = true
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
			g.Expect(st.FromVersion).To(Equal("v1.13.2"))
		},
	}, {
		name:   "drained, the node says what it runs and the installer is resolved",
		record: with(draining, func(st *upgradev1.MachineUpgradeStatus) { st.FromVersion, st.BootID = "v1.12.9", "" }),
		world:  drained("v1.13.0"),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
			g.Expect(st.FromVersion).To(Equal("v1.13.0"), "the node, not the Machine's status, says what it runs")
			g.Expect(st.BootID).To(Equal("boot-2"))
			g.Expect(st.InstallerImage).To(Equal("ghcr.io/siderolabs/installer:v1.13.1"))
			g.Expect(d.PreReboot).To(BeNil())
		},
	}, {
		name:   "drained, the pre-reboot holds the pass read go with the Machine",
		record: legacyRecord(upgradev1.MachinePhaseDraining, ""),
		world: func(w *Observation) {
			drained("v1.12.4")(w)
			w.Drain.PreReboot = &HeldMachine{Point: upgradev1.HoldPointPreReboot}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
			g.Expect(d.PreReboot).NotTo(BeNil())
		},
	}, {
		name:   "an installer that cannot be resolved fails the Machine",
		record: draining,
		world: func(w *Observation) {
			drained("v1.13.0")(w)
			w.Spec.Installer = upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "resolving the installer image")
		},
	}})
}

func TestStepAct(t *testing.T) {
	upgrading := with(machineRecord(upgradev1.MachinePhaseUpgrading, ""), func(st *upgradev1.MachineUpgradeStatus) {
		st.InstallerImage = "ghcr.io/siderolabs/installer:v1.13.1"
	})
	requested := with(upgrading, func(st *upgradev1.MachineUpgradeStatus) { st.UpgradeRequestedTime = ago(20 * time.Second) })
	finished := func(err error) func(w *Observation) {
		return func(w *Observation) {
			w.Call = CallView{Known: true, UpgradeCall: UpgradeCall{Started: t0.Add(-20 * time.Second), Finished: true, Err: err}}
		}
	}
	toPreReboot := func(g Gomega, st *upgradev1.MachineUpgradeStatus) {
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
		g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreReboot))
	}
	runSteps(t, []stepCase{{
		name:   "a node whose upgrade call does not reboot it records the intent of the call",
		record: upgrading,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.UpgradeRequestedTime).To(Equal(ptrTime(t0)))
			g.Expect(d.Intent).To(Equal(IntentInstall))
			g.Expect(d.Requeue).To(Equal(upgradeCallPoll))
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
		},
	}, {
		name:   "a node whose upgrade call reboots it is called after its pre-reboot point",
		record: legacyRecord(upgradev1.MachinePhaseUpgrading, ""),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			toPreReboot(g, st)
			g.Expect(st.UpgradeRequestedTime).To(BeNil())
			g.Expect(d.Intent).To(Equal(IntentNone))
		},
	}, {
		name:   "a call this process wrote the intent of without making it is made",
		record: requested,
		world:  func(w *Observation) { w.Call.Unmade = true },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentInstallUnmade))
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
		},
	}, {
		// A restart, or another replica taking over: the install may never
		// have been made, or ended with its caller. Rebooting on the chance
		// would boot the old version and fail the Machine.
		name:   "an install this process does not know of is made again, not taken for made",
		record: requested,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentInstallAgain))
			g.Expect(d.Requeue).To(Equal(upgradeCallPoll))
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading), "no reboot before the install is known")
			g.Expect(st.UpgradeInterrupted).To(BeFalse())
			g.Expect(st.UpgradeRequestedTime).To(Equal(requested.UpgradeRequestedTime))
			g.Expect(st.Message).To(Equal("installing ghcr.io/siderolabs/installer:v1.13.1 again"))
			g.Expect(reasons(d)).To(ConsistOf("UpgradeCallMadeAgain"))
		},
	}, {
		name:   "an install refused while another runs on the node is waited for, and says why it asks again",
		record: requested,
		world: func(w *Observation) {
			w.Call = CallView{Known: true, UpgradeCall: UpgradeCall{Started: t0.Add(-20 * time.Second), Retrying: fmt.Errorf("%w: upgrading: FailedPrecondition", talos.ErrInstallInProgress)}}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, requested, st, d)
			g.Expect(st.Message).To(HavePrefix("installing ghcr.io/siderolabs/installer:v1.13.1 (20s); asking again, another install runs on the node: "))
		},
	}, {
		name:   "a call in flight is waited for, and says why it asks again",
		record: requested,
		world: func(w *Observation) {
			w.Call = CallView{Known: true, UpgradeCall: UpgradeCall{Started: t0.Add(-20 * time.Second), Retrying: errors.New("pull: timeout")}}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, requested, st, d)
			g.Expect(st.Message).To(Equal("installing ghcr.io/siderolabs/installer:v1.13.1 (20s); asking again after a lost answer: pull: timeout"))
			g.Expect(d.Requeue).To(Equal(upgradeCallPoll))
			g.Expect(d.ForgetCall).To(BeFalse())
		},
	}, {
		name:   "an installed image goes to the pre-reboot point",
		record: requested,
		world:  finished(nil),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			toPreReboot(g, st)
			g.Expect(reasons(d)).To(ConsistOf("UpgradeInstalled"))
			g.Expect(d.ForgetCall).To(BeTrue())
		},
	}, {
		name:   "a node that turned out to reboot by itself is called after its pre-reboot point",
		record: requested,
		world:  finished(fmt.Errorf("upgrade: %w", talos.ErrRebootsItself)),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			toPreReboot(g, st)
			g.Expect(st.UpgradeRequestedTime).To(BeNil())
			g.Expect(d.ForgetCall).To(BeTrue())
		},
	}, {
		name:   "a call whose answer was lost is never repeated; the reboot tells",
		record: requested,
		world:  finished(fmt.Errorf("upgrade: %w", talos.ErrUpgradeInterrupted)),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			toPreReboot(g, st)
			g.Expect(st.UpgradeInterrupted).To(BeTrue())
			g.Expect(reasons(d)).To(ConsistOf("UpgradeCallInterrupted"))
			g.Expect(d.Events[0].Type).To(Equal(corev1.EventTypeWarning))
		},
	}, {
		name:   "a failed call fails the Machine",
		record: requested,
		world:  finished(errors.New("upgrade to x failed: no space left; not retried automatically")),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "no space left")
			g.Expect(d.ForgetCall).To(BeTrue())
		},
	}, {
		name:   "a call to a node silent past nodeUnreachableTimeout fails the Machine",
		record: requested,
		world:  finished(fmt.Errorf("upgrade to x: version: %w: connection refused; asked again for 5m0s (nodeUnreachableTimeout 5m0s) before the install, which was never requested", talos.ErrUnreachable)),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "connection refused")
			g.Expect(d.ForgetCall).To(BeTrue())
		},
	}, {
		name:   "a call that did not dial the node (its talosconfig Secret not read) was never made: forgotten and made again, the Machine not failed",
		record: requested,
		world: func(w *Observation) {
			finished(fmt.Errorf("upgrade call to n-0 not made: %w", errNotDialed))(w)
			w.Call.Unmade = true // As the call's end records it.
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, requested, st, d)
			g.Expect(d.ForgetCall).To(BeTrue())
			g.Expect(d.Requeue).To(Equal(UpgradeCallRetry))
			g.Expect(st.UpgradeRequestedTime).To(Equal(requested.UpgradeRequestedTime), "the intent stays on record: the call is made again")
			g.Expect(st.UpgradeInterrupted).To(BeFalse(), "the call was never sent")
			g.Expect(st.UnreachableSince).To(BeNil())
			g.Expect(st.Message).To(HavePrefix("installing ghcr.io/siderolabs/installer:v1.13.1: upgrade call to n-0 not made: reading talosconfig Secret"))
			g.Expect(st.Message).To(HaveSuffix("; making the call again"))
			g.Expect(d.Events).To(BeEmpty())
		},
	}})
}

func TestStepPreReboot(t *testing.T) {
	preReboot := with(machineRecord(upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot), func(st *upgradev1.MachineUpgradeStatus) {
		st.UpgradeRequestedTime = ago(time.Minute)
	})
	readClear := func(w *Observation) { w.Held = &HoldsRead{Point: upgradev1.HoldPointPreReboot} }
	runSteps(t, []stepCase{{
		name:   "a hold keeps the node from rebooting",
		record: preReboot,
		world:  func(w *Observation) { w.Holding = []string{"storage"} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, preReboot, st, d)
			g.Expect(st.Message).To(Equal(`held at preReboot by "storage"`))
		},
	}, {
		name:   "the preReboot hooks run before the holds are read again",
		record: preReboot,
		world:  func(w *Observation) { delete(w.Hooks, upgradev1.HookPointPreReboot); readClear(w) },
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentRunHooks))
			g.Expect(d.HookPoint).To(Equal(upgradev1.HookPointPreReboot))
		},
	}, {
		name:   "passing, an installed node records the intent to reboot",
		record: preReboot,
		world:  readClear,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
			g.Expect(st.RebootRequestedTime).To(Equal(ptrTime(t0)))
			g.Expect(st.UpgradeRequestedTime).To(Equal(preReboot.UpgradeRequestedTime), "installed before")
			g.Expect(d.Intent).To(Equal(IntentReboot))
			g.Expect(d.Requeue).To(Equal(rebootPoll))
		},
	}, {
		name:   "passing, a node whose upgrade call reboots it records the intent of that call",
		record: legacyRecord(upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot),
		world:  readClear,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
			g.Expect(st.UpgradeRequestedTime).To(Equal(ptrTime(t0)))
			g.Expect(st.RebootRequestedTime).To(Equal(ptrTime(t0)))
			g.Expect(d.Intent).To(Equal(IntentInstallRebooting))
		},
	}})
}

func TestStepReboot(t *testing.T) {
	rebooting := with(machineRecord(upgradev1.MachinePhaseRebooting, ""), func(st *upgradev1.MachineUpgradeStatus) {
		st.UpgradeRequestedTime, st.RebootRequestedTime = ago(2*time.Minute), ago(10*time.Second)
	})
	late := with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(time.Hour) })
	legacyLate := with(late, func(st *upgradev1.MachineUpgradeStatus) { st.FromVersion = "v1.12.4" })
	legacyRunning := with(rebooting, func(st *upgradev1.MachineUpgradeStatus) {
		st.FromVersion = "v1.12.4"
		st.RebootRequestedTime = ago(40 * time.Second)
	})
	boot := func(version, bootID string, err error) func(w *Observation) {
		return func(w *Observation) { w.Boot = &BootRead{Version: version, BootID: bootID, Err: err} }
	}
	oldBoot := boot("v1.13.0", "boot-1", nil)
	// unreachable is an error talking to the node; notDialed one of the
	// management cluster, before the node is reached (as talos.SecretDialer
	// returns them).
	unreachable := fmt.Errorf("version: %w: connection refused", talos.ErrUnreachable)
	notDialed := errNotDialed
	finished := func(res talos.UpgradeResult, err error) func(w *Observation) {
		return func(w *Observation) {
			w.Call = CallView{Known: true, UpgradeCall: UpgradeCall{Finished: true, Res: res, Err: err}, SelfRebooting: true}
		}
	}
	runSteps(t, []stepCase{{
		name:   "the round is asked for the node's boot ID",
		record: rebooting,
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentReadBoot))
		},
	}, {
		name:   "a self-rebooting upgrade call this process never made is made",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.FromVersion = "v1.12.4" }),
		world:  func(w *Observation) { oldBoot(w); w.Call.Unmade = true },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentInstallUnmade))
			g.Expect(st.RebootRequestedTime).To(Equal(ptrTime(t0)), "the node is asked to reboot now")
		},
	}, {
		name:   "the same past rebootTimeout (a call not dialed for long): made, the Machine not failed, rebootTimeout counted from now",
		record: legacyLate,
		world:  func(w *Observation) { boot("v1.12.4", "boot-1", nil)(w); w.Call.Unmade = true },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentInstallUnmade))
			g.Expect(d.Fail).To(BeEmpty())
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
			g.Expect(st.RebootRequestedTime).To(Equal(ptrTime(t0)))
		},
	}, {
		name:   "a self-rebooting call that did not dial the node was never made: forgotten and made again, the Machine not failed past rebootTimeout",
		record: legacyLate,
		world: func(w *Observation) {
			boot("v1.12.4", "boot-1", nil)(w)
			finished(talos.UpgradeResult{}, fmt.Errorf("upgrade call to n-0 not made: %w", notDialed))(w)
			w.Call.Unmade = true // As the call's end records it.
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, legacyLate, st, d)
			g.Expect(d.ForgetCall).To(BeTrue())
			g.Expect(d.Requeue).To(Equal(UpgradeCallRetry))
			g.Expect(d.Reboot).To(Equal(RebootNone))
			g.Expect(st.UpgradeRequestedTime).To(Equal(legacyLate.UpgradeRequestedTime), "the intent stays on record: the call is made again")
			g.Expect(st.UpgradeInterrupted).To(BeFalse(), "the call was never sent")
			g.Expect(st.Message).To(ContainSubstring("making the upgrade call again"))
			g.Expect(st.Message).NotTo(ContainSubstring("did not reboot"))
		},
	}, {
		name:   "a node on its old boot ID within rebootTimeout is waited for",
		record: rebooting,
		world:  oldBoot,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, rebooting, st, d)
			g.Expect(st.Message).To(Equal("waiting for the node to reboot"))
			g.Expect(d.Requeue).To(Equal(rebootPoll))
			g.Expect(d.Reboot).To(Equal(RebootNone))
		},
	}, {
		name:   "a node silent within rebootTimeout is waited for",
		record: rebooting,
		world:  boot("", "", errors.New("connection refused")),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, rebooting, st, d)
			g.Expect(d.Requeue).To(Equal(rebootPoll))
		},
	}, {
		name:   "a node on its old boot ID long after its reboot was asked for is asked again",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(40 * time.Second) }),
		world:  oldBoot,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Reboot).To(Equal(RebootAgain))
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
		},
	}, {
		name:   "a reboot asked for again is not asked for again before rebootRetryAfter",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(50 * time.Second) }),
		world:  func(w *Observation) { oldBoot(w); w.Call.LastReboot = t0.Add(-10 * time.Second) },
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Reboot).To(Equal(RebootNone))
		},
	}, {
		// The soak's double reboot: the first call was answered only when
		// the client gave up, and the node went down a moment later.
		name:   "a reboot whose call ended late is asked for again rebootRetryAfter after the call ended, not after it was asked",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(40 * time.Second) }),
		world:  func(w *Observation) { oldBoot(w); w.Call.LastReboot = t0.Add(-20 * time.Second) },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(40 * time.Second) }), st, d)
			g.Expect(d.Reboot).To(Equal(RebootNone))
			g.Expect(st.Message).To(Equal("waiting for the node to reboot"))
		},
	}, {
		name:   "the same once rebootRetryAfter has passed since the call ended",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(50 * time.Second) }),
		world:  func(w *Observation) { oldBoot(w); w.Call.LastReboot = t0.Add(-rebootRetry) },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Reboot).To(Equal(RebootAgain))
			g.Expect(st.RebootRequestedTime).To(Equal(ago(50*time.Second)), "rebootTimeout counts from the first ask of this process")
		},
	}, {
		name:   "a node whose upgrade call reboots it is never asked to reboot again",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(50 * time.Second) }),
		world:  func(w *Observation) { oldBoot(w); w.Call.SelfRebooting = true },
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Reboot).To(Equal(RebootNone))
		},
	}, {
		name:   "a node silent past rebootTimeout fails the Machine, with what talking to it said",
		record: late,
		world:  boot("", "", unreachable),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, `node "n-0" did not come back within rebootTimeout 15m0s: version: unreachable Talos API: connection refused`)
		},
	}, {
		name:   "a node not dialed past rebootTimeout (its talosconfig not read) is read again: the error is the management cluster's",
		record: late,
		world:  boot("", "", notDialed),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, late, st, d)
			g.Expect(d.Err).To(MatchError(talos.ErrNotDialed))
			g.Expect(d.Err.Error()).To(ContainSubstring(`reading the boot ID of node "n-0": reading talosconfig Secret`))
			g.Expect(d.Reboot).To(Equal(RebootNone))
		},
	}, {
		name:   "the same within rebootTimeout",
		record: rebooting,
		world:  boot("", "", notDialed),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, rebooting, st, d)
			g.Expect(d.Err).To(MatchError(talos.ErrNotDialed))
		},
	}, {
		name:   "the same before Talos 1.13, after a call that failed on the node: the read that reaches it says why",
		record: legacyLate,
		world:  boot("", "", notDialed),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, legacyLate, st, d)
			g.Expect(d.Err).To(MatchError(talos.ErrNotDialed))
			g.Expect(st.Message).NotTo(ContainSubstring("did not come back"))
		},
	}, {
		name:   "a node on its old boot ID past rebootTimeout, its reboot asked for by this process, fails the Machine",
		record: late,
		world:  func(w *Observation) { oldBoot(w); w.Call.LastReboot = t0.Add(-20 * time.Minute) },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "answers on its old boot ID but did not reboot within rebootTimeout")
		},
	}, {
		// A replica installed the image without a reboot and was killed
		// before it asked for the reboot; the replica taking over first
		// read the node near the end of rebootTimeout (a slow failover).
		name:   "a process taking a Machine over asks for its reboot and counts rebootTimeout from that ask",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(14 * time.Minute) }),
		world:  oldBoot,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Reboot).To(Equal(RebootAgain))
			g.Expect(d.Fail).To(BeEmpty())
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
			g.Expect(st.RebootRequestedTime).To(Equal(ptrTime(t0)), "rebootTimeout counts from this ask")
			g.Expect(d.Requeue).To(Equal(rebootPoll), "not the minute left of the old deadline")
		},
	}, {
		name:   "the same past rebootTimeout: asked for, not failed",
		record: late,
		world:  oldBoot,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Reboot).To(Equal(RebootAgain))
			g.Expect(d.Fail).To(BeEmpty())
			g.Expect(st.RebootRequestedTime).To(Equal(ptrTime(t0)))
		},
	}, {
		name:   "the node silent after that ask is waited for: it is rebooting",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(4 * time.Second) }),
		world:  func(w *Observation) { boot("", "", unreachable)(w); w.Call.LastReboot = t0.Add(-4 * time.Second) },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Fail).To(BeEmpty())
			g.Expect(st.Message).To(Equal("waiting for the node to reboot"))
		},
	}, {
		name:   "a node before Talos 1.13 up on its old version past rebootTimeout: its install failed",
		record: legacyLate,
		world:  boot("v1.12.4", "boot-1", nil),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "before Talos 1.13 the upgrade runs on the node after the call returns")
		},
	}, {
		name:   "the same, after a call whose answer was lost: it may never have reached the node",
		record: with(legacyLate, func(st *upgradev1.MachineUpgradeStatus) { st.UpgradeInterrupted = true }),
		world:  boot("v1.12.4", "boot-1", nil),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "so it may never have reached the node")
		},
	}, {
		// The intent of the call was written by a process that stopped
		// (its write returned an error but landed, or it stopped before the
		// call): the node runs no upgrade.
		name:   "a node before Talos 1.13 on its old boot that runs no upgrade, its call recorded by an earlier process: the call is made again for that boot",
		record: legacyRunning,
		world:  func(w *Observation) { boot("v1.12.4", "boot-1", nil)(w); w.Boot.Stage = talos.StageRunning },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentInstallAgain))
			g.Expect(d.Fail).To(BeEmpty())
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseRebooting))
			g.Expect(st.RebootRequestedTime).To(Equal(ptrTime(t0)), "rebootTimeout counts from the call made again")
			g.Expect(st.UpgradeRequestedTime).To(Equal(legacyRunning.UpgradeRequestedTime))
			g.Expect(reasons(d)).To(ConsistOf("UpgradeCallMadeAgain"))
			g.Expect(d.Events[0].Message).To(ContainSubstring("still runs v1.12.4 on its old boot and started no upgrade on it, 40s after"))
			g.Expect(d.Requeue).To(Equal(rebootPoll))
		},
	}, {
		name:   "the same past rebootTimeout: made again, the Machine not failed",
		record: legacyLate,
		world:  func(w *Observation) { boot("v1.12.4", "boot-1", nil)(w); w.Boot.Stage = talos.StageRunning },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentInstallAgain))
			g.Expect(d.Fail).To(BeEmpty())
			g.Expect(st.RebootRequestedTime).To(Equal(ptrTime(t0)))
		},
	}, {
		name:   "the same within rebootRetryAfter of the ask: waited for (the node may still be pulling the image)",
		record: with(legacyRunning, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(10 * time.Second) }),
		world:  func(w *Observation) { boot("v1.12.4", "boot-1", nil)(w); w.Boot.Stage = talos.StageRunning },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, legacyRunning, st, d)
			g.Expect(st.Message).To(Equal("waiting for the node to reboot"))
		},
	}, {
		name:   "the round is asked whether the node upgrades only once rebootRetryAfter has passed, for a call this process does not know",
		record: legacyRunning,
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentReadBoot))
			g.Expect(d.AskUpgrade).To(BeTrue())
		},
	}, {
		name:   "not before rebootRetryAfter",
		record: with(legacyRunning, func(st *upgradev1.MachineUpgradeStatus) { st.RebootRequestedTime = ago(10 * time.Second) }),
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.AskUpgrade).To(BeFalse())
		},
	}, {
		name:   "not for a call this process made",
		record: legacyRunning,
		world:  func(w *Observation) { w.Call.SelfRebooting = true },
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.AskUpgrade).To(BeFalse())
		},
	}, {
		name:   "not on the lifecycle API",
		record: with(legacyRunning, func(st *upgradev1.MachineUpgradeStatus) { st.FromVersion = "v1.13.0" }),
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.AskUpgrade).To(BeFalse())
		},
	}, {
		name:   "a node that started an upgrade on its boot and runs none now (its install failed) gets no second call: Tollgate never retries an upgrade",
		record: legacyRunning,
		world: func(w *Observation) {
			boot("v1.12.4", "boot-1", nil)(w)
			w.Boot.Stage, w.Boot.UpgradeStarted = talos.StageRunning, true
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, legacyRunning, st, d)
			g.Expect(d.Events).To(BeEmpty())
		},
	}, {
		name:   "a node upgrading is waited for: the call reached it",
		record: legacyRunning,
		world:  func(w *Observation) { boot("v1.12.4", "boot-1", nil)(w); w.Boot.Stage = talos.StageUpgrading },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, legacyRunning, st, d)
			g.Expect(d.Events).To(BeEmpty())
		},
	}, {
		name:   "a node that cannot say whether it upgrades is left to its rebootTimeout",
		record: legacyRunning,
		world:  boot("v1.12.4", "boot-1", nil),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, legacyRunning, st, d)
		},
	}, {
		name:   "a node this process called, up on its old boot past rebootTimeout: its install failed, not retried",
		record: legacyLate,
		world: func(w *Observation) {
			boot("v1.12.4", "boot-1", nil)(w)
			w.Boot.Stage = talos.StageRunning
			w.Call.SelfRebooting = true // The call is forgotten once it returned; what it was stays known.
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "before Talos 1.13 the upgrade runs on the node after the call returns")
		},
	}, {
		name:   "a call this process wrote without making it is made as such, not again",
		record: legacyRunning,
		world: func(w *Observation) {
			boot("v1.12.4", "boot-1", nil)(w)
			w.Boot.Stage = talos.StageRunning
			w.Call.Unmade = true
		},
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentInstallUnmade))
		},
	}, {
		name:   "a call made again that found the node on a new boot asked nothing: forgotten, and the boot decides",
		record: legacyRunning,
		world: func(w *Observation) {
			boot("v1.13.1", "boot-2", nil)(w)
			finished(talos.UpgradeResult{}, fmt.Errorf("upgrade call to n-0 not made: node n-0 runs boot boot-2, not boot-1: %w", talos.ErrBootedSince))(w)
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Fail).To(BeEmpty())
			g.Expect(d.ForgetCall).To(BeTrue())
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
			g.Expect(st.UpgradeInterrupted).To(BeFalse())
		},
	}, {
		name:   "a node back on a new boot ID on the target is verified",
		record: rebooting,
		world:  boot("v1.13.1", "boot-2", nil),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
			g.Expect(reasons(d)).To(ConsistOf("NodeRebooted"))
		},
	}, {
		name:   "a node back on another version rolled back: the Machine fails",
		record: rebooting,
		world:  boot("v1.13.0", "boot-2", nil),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, `node "n-0" came back on v1.13.0 instead of v1.13.1 (A/B rollback after a failed boot)`)
		},
	}, {
		name:   "a self-rebooting call whose answer was lost is never repeated; the boot tells",
		record: with(rebooting, func(st *upgradev1.MachineUpgradeStatus) { st.FromVersion = "v1.12.4" }),
		world: func(w *Observation) {
			boot("v1.13.1", "boot-2", nil)(w)
			finished(talos.UpgradeResult{}, fmt.Errorf("upgrade: %w", talos.ErrUpgradeInterrupted))(w)
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.UpgradeInterrupted).To(BeTrue())
			g.Expect(reasons(d)).To(ConsistOf("UpgradeCallInterrupted", "NodeRebooted"))
			g.Expect(d.ForgetCall).To(BeTrue())
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseVerifying))
		},
	}, {
		name:   "a failed self-rebooting call fails the Machine",
		record: rebooting,
		world: func(w *Observation) {
			oldBoot(w)
			finished(talos.UpgradeResult{}, errors.New("upgrade failed: image not found"))(w)
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "image not found")
			g.Expect(d.ForgetCall).To(BeTrue())
		},
	}, {
		name:   "a node that installed without rebooting after its pre-reboot point is rebooted now",
		record: rebooting,
		world: func(w *Observation) {
			oldBoot(w)
			finished(talos.UpgradeResult{RebootsItself: false}, nil)(w)
		},
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Reboot).To(Equal(RebootAfterInstall))
			g.Expect(d.ForgetCall).To(BeTrue())
		},
	}})
}

func TestStepVerify(t *testing.T) {
	verifying := with(machineRecord(upgradev1.MachinePhaseVerifying, ""), func(st *upgradev1.MachineUpgradeStatus) {
		st.RebootRequestedTime = ago(time.Minute)
	})
	node := func(ready corev1.ConditionStatus) func(w *Observation) {
		return func(w *Observation) {
			w.Node = &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
		}
	}
	runSteps(t, []stepCase{{
		name:   "an unreachable workload cluster is waited for",
		record: verifying,
		world:  func(w *Observation) { w.Reachable = false },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, verifying, st, d)
			g.Expect(st.Message).To(Equal("waiting for the workload cluster to be reachable"))
		},
	}, {
		name:   "a Node that could not be read ends the step with an error",
		record: verifying,
		world:  func(w *Observation) { w.NodeErr = errors.New("timeout") },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, verifying, st, d)
			g.Expect(d.Err).To(MatchError(`reading node "n-0": timeout`))
		},
	}, {
		name:   "a Node not Ready within rebootTimeout is waited for, until its deadline",
		record: verifying,
		world: func(w *Observation) {
			node(corev1.ConditionFalse)(w)
			w.Spec.RebootTimeout = &metav1.Duration{Duration: 5 * time.Minute}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, verifying, st, d)
			g.Expect(st.Message).To(Equal("waiting for the node to be Ready"))
			g.Expect(d.Requeue).To(Equal(4*time.Minute + time.Second))
		},
	}, {
		name:   "a Node not Ready past rebootTimeout fails the Machine",
		record: verifying,
		world: func(w *Observation) {
			node(corev1.ConditionFalse)(w)
			w.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, `node "n-0" runs v1.13.1 but is not Ready within rebootTimeout 30s`)
		},
	}, {
		name:   "a missing Node is not Ready",
		record: verifying,
		world:  func(w *Observation) { w.Node = &corev1.Node{} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, verifying, st, d)
		},
	}, {
		name:   "a Ready Node goes on to be proven, still cordoned",
		record: with(verifying, func(st *upgradev1.MachineUpgradeStatus) { st.Cordoned = true }),
		world:  node(corev1.ConditionTrue),
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
			g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPostUpgrade))
			g.Expect(st.Cordoned).To(BeTrue())
			g.Expect(d.Intent).To(Equal(IntentNone))
		},
	}})
}

func TestStepPostUpgrade(t *testing.T) {
	proving := with(machineRecord(upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPostUpgrade), func(st *upgradev1.MachineUpgradeStatus) {
		st.Cordoned, st.SkipRemediationSet = true, true
	})
	released := with(proving, func(st *upgradev1.MachineUpgradeStatus) { st.Cordoned, st.SkipRemediationSet = false, false })
	readClear := func(w *Observation) { w.Held = &HoldsRead{Point: upgradev1.HoldPointPostUpgrade} }
	runSteps(t, []stepCase{{
		name:   "a hold keeps the node cordoned",
		record: proving,
		world:  func(w *Observation) { w.Holding = []string{"storage"} },
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, proving, st, d)
			g.Expect(st.Cordoned).To(BeTrue())
			g.Expect(st.HeldBy).To(ConsistOf("storage"))
		},
	}, {
		name:   "the nodePreReady hooks run while the node is cordoned",
		record: proving,
		world:  func(w *Observation) { delete(w.Hooks, upgradev1.HookPointNodePreReady) },
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentRunHooks))
			g.Expect(d.HookPoint).To(Equal(upgradev1.HookPointNodePreReady))
		},
	}, {
		name:   "a failed nodePreReady hook fails the Machine",
		record: proving,
		world: func(w *Observation) {
			w.Hooks[upgradev1.HookPointNodePreReady] = HooksRun{Result: HooksResult{Failed: true, Message: "smoke test: exit 2"}}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			fails(g, st, d, "nodePreReady hook failed: smoke test: exit 2")
		},
	}, {
		name:   "proven, the holds are read again and the node released with the read",
		record: proving,
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentReadHolds))
			g.Expect(d.Release).To(BeTrue())
		},
	}, {
		name:   "a read that could not release the node waits for the workload cluster",
		record: proving,
		world:  readClear,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			stays(g, proving, st, d)
			g.Expect(st.Message).To(Equal("proven; waiting for the workload cluster to be reachable to uncordon the node"))
		},
	}, {
		name:   "released, the nodeReady hooks run",
		record: released,
		world:  func(w *Observation) { readClear(w); delete(w.Hooks, upgradev1.HookPointNodeReady) },
		want: func(g Gomega, _ *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(d.Intent).To(Equal(IntentRunHooks))
			g.Expect(d.HookPoint).To(Equal(upgradev1.HookPointNodeReady))
		},
	}, {
		name:   "released and its nodeReady hooks done, the Machine is Completed",
		record: released,
		world: func(w *Observation) {
			readClear(w)
			w.Spec.Rollout.DelayBetweenMachines = &metav1.Duration{Duration: time.Minute}
		},
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseCompleted))
			g.Expect(st.Message).To(Equal("upgraded from v1.13.0 to v1.13.1"))
			g.Expect(st.CompletionTime).To(Equal(ptrTime(t0)))
			g.Expect(d.NextMachineNotBefore).To(Equal(ptrTime(t0.Add(time.Minute))))
			g.Expect(reasons(d)).To(ConsistOf("MachineUpgraded"))
		},
	}, {
		name:   "a Machine released in an earlier reconcile goes straight to its nodeReady hooks",
		record: released,
		want: func(g Gomega, st *upgradev1.MachineUpgradeStatus, d Decision) {
			g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseCompleted))
			g.Expect(d.NextMachineNotBefore).To(BeNil())
		},
	}})
}

// TestMoveTo: a phase's time is added to its durations when the Machine
// leaves it, and a new phase or point starts the clocks again.
func TestMoveTo(t *testing.T) {
	g := NewWithT(t)
	st := machineRecord(upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPreReboot)
	st.HeldBy, st.UnreachableSince = []string{"storage"}, ago(time.Second)
	MoveTo(t0, &st, upgradev1.MachinePhaseRebooting, "", "rebooting")
	g.Expect(st.PhaseDurations).To(ConsistOf(upgradev1.PhaseDuration{Phase: upgradev1.MachinePhaseWaitingForHold, Seconds: 60}))
	g.Expect(st.PhaseStartTime).To(Equal(ptrTime(t0)))
	g.Expect(st.StartTime).To(Equal(ago(10*time.Minute)), "kept")
	g.Expect(st.HeldBy).To(BeNil())
	g.Expect(st.UnreachableSince).To(BeNil())

	st.Phase, st.PhaseStartTime = upgradev1.MachinePhaseWaitingForHold, ago(30*time.Second)
	MoveTo(t0, &st, upgradev1.MachinePhaseWaitingForHold, upgradev1.HoldPointPostUpgrade, "")
	g.Expect(st.PhaseDurations).To(ConsistOf(upgradev1.PhaseDuration{Phase: upgradev1.MachinePhaseWaitingForHold, Seconds: 60}), "the same phase at another point is not a phase left")
	g.Expect(st.PhaseStartTime).To(Equal(ptrTime(t0)), "a new point starts its clock")
}
