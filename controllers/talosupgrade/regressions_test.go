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

package talosupgrade_test

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
	"github.com/tollgate-dev/tollgate/test/soak"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// These are the regression tests of the rollout bugs the soak (test/soak)
// found, each its deterministic reproducer. While a bug is listed in
// soak.KnownBugs, its reproducer skips itself (soak.SkipUnlessReproducing).

// reproducerManager is the manager the reproducers run: the Cluster's
// namespace, 2s Talos calls, the other options as main.go defaults them.
func (r *rollout) reproducerManager() {
	r.mgrConfig = manager.Options{Namespace: r.ns, TalosCallTimeout: 2 * time.Second, MetricsBindAddress: "0"}
}

// TestReproduceFailedMachineLeftCordoned: a Machine fails (A/B rollback)
// while the controller cannot reach the workload apiserver. The release in
// fail() (uncordon) fails or is skipped, the Machine is recorded Failed with
// cordoned: true, and nothing ever releases a terminal Machine again: the
// node stays cordoned after the apiserver is back.
func TestReproduceFailedMachineLeftCordoned(t *testing.T) {
	envtestOnly(t)
	soak.SkipUnlessReproducing(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const node = "alpha-cp-0"
	// The controller reaches the workload apiserver through a gate.
	var gate *soak.Gate
	r := newRollout(t, rolloutOptions{controlPlanes: 1, reboot: 3 * time.Second, kubeconfig: func(w *sandbox.Workload) ([]byte, error) {
		host, err := url.Parse(w.Config.Host)
		if err != nil {
			return nil, err
		}
		if gate, err = soak.NewGate(host.Host); err != nil {
			return nil, err
		}
		t.Cleanup(gate.Close)
		return soak.ThroughGate(w.Kubeconfig, gate)
	}})
	r.sim.Node(node).InjectFault(talossim.Faults{Rollback: true})
	g.Expect(mgmt.Client.Create(ctx, r.policy())).To(Succeed())
	r.reproducerManager()
	r.startManager()

	blockedBy := ""
	record := func(g Gomega) upgradev1.MachineUpgradeStatus {
		u := r.upgrade(g)
		g.Expect(u.Status.Machines).NotTo(BeEmpty())
		blockedBy = string(u.Status.Phase) + ": " + u.Status.BlockedBy
		return u.Status.Machines[0]
	}
	g.Eventually(func(g Gomega) {
		g.Expect(record(g).Phase).To(Equal(upgradev1.MachinePhaseRebooting), "rollout %s", blockedBy)
	}, time.Minute, 20*time.Millisecond).Should(Succeed())
	// The node is cordoned and rebooting (for 3s): the workload apiserver
	// becomes unreachable before it comes back on its old version.
	gate.Cut()
	g.Eventually(func(g Gomega) {
		rec := record(g)
		g.Expect(rec.Phase).To(Equal(upgradev1.MachinePhaseFailed))
		g.Expect(rec.Message).To(ContainSubstring("A/B rollback"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(gate.Open()).To(Succeed())

	g.Eventually(func(g Gomega) {
		nd := &corev1.Node{}
		g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: node}, nd)).To(Succeed())
		g.Expect(nd.Spec.Unschedulable).To(BeFalse(), "the failed Machine's node is uncordoned once the workload apiserver is back")
		m := &clusterv1.Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: node}, m)).To(Succeed())
		g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.MachineSkipRemediationAnnotation))
		g.Expect(record(g).Cordoned).To(BeFalse())
	}, time.Minute, 500*time.Millisecond).Should(Succeed())
}

// TestReproduceDrainWhileHealthCheckFails: the health checks gate the
// selection of the next Machine, not its drain. With maxUnavailable 2,
// worker-0 and worker-1 are selected while the check passes; worker-0 waits
// at the pre-drain point (here a hold; in the soak, a pre-drain hook
// retrying after a failure); the check then fails and the rollout records
// it Failed (selecting worker-2); the hold goes, and worker-0 is cordoned
// and drained at once, with the check still failing.
func TestReproduceDrainWhileHealthCheckFails(t *testing.T) {
	envtestOnly(t)
	soak.SkipUnlessReproducing(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const held, check, holder = "alpha-worker-0", "hc", "repro"
	r := newRollout(t, rolloutOptions{controlPlanes: 1, workers: 3, reboot: time.Second})
	var failing atomic.Bool
	fails := make([]jobdriver.Outcome, 100)
	for i := range fails {
		fails[i] = jobdriver.Outcome{Fail: true, Message: "repro: the workload is unhealthy"}
	}
	// Runs pass (the default) until failing is set; then they fail.
	r.driver.Script(func(job *batchv1.Job) bool {
		return failing.Load() && job.Labels[workloadjob.HealthCheckLabel] == check
	}, fails...)
	machine := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: held}, machine)).To(Succeed())
	g.Expect(hooks.SetHold(ctx, mgmt.Client, machine, upgradev1.HoldPointPreDrain, holder, "")).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, sandbox.HealthCheck(r.ns, check, 5*time.Second, "true"))).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		two := intstr.FromInt32(2)
		p.Spec.Rollout.Workers.MaxUnavailable = &two
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: check}}
	}))).To(Succeed())
	r.reproducerManager()
	r.startManager()

	record := func(g Gomega, machine string) upgradev1.MachineUpgradeStatus {
		for _, st := range r.upgrade(g).Status.Machines {
			if st.Machine == machine {
				return st
			}
		}
		g.Expect(machine).To(BeEmpty(), "no record")
		return upgradev1.MachineUpgradeStatus{}
	}
	// Selected while the check passes, held at the pre-drain point.
	g.Eventually(func(g Gomega) {
		st := record(g, held)
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
		g.Expect(st.HoldPoint).To(Equal(upgradev1.HoldPointPreDrain))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	failing.Store(true)
	// A restarted controller runs the check again: it fails, and the
	// rollout records it.
	r.stopManager()
	time.Sleep(6 * time.Second) // Not a wait for a condition: longer than the check's interval, so that the next controller runs it again.
	r.startManager()
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.HealthChecks).NotTo(BeEmpty())
		g.Expect(u.Status.HealthChecks[0].Result).To(Equal(upgradev1.HealthCheckFailed))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(hooks.ReleaseHold(ctx, mgmt.Client, machine, upgradev1.HoldPointPreDrain, holder)).To(Succeed())

	g.Consistently(func(g Gomega) {
		nd := &corev1.Node{}
		g.Expect(r.workload.Client.Get(ctx, client.ObjectKey{Name: held}, nd)).To(Succeed())
		g.Expect(nd.Spec.Unschedulable).To(BeFalse(), "no drain while the health check fails")
		g.Expect(record(g, held).Phase).To(Equal(upgradev1.MachinePhaseWaitingForHold))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// TestReproduceLegacyUpgradeErrorMisreported: on Talos before 1.13 the
// legacy MachineService.Upgrade acknowledges the request and fails after
// (exit code in the node's events, no reboot). The Machine fails after
// rebootTimeout with a message that blames a controller killed while asking
// for the reboot, instead of naming the failed upgrade.
func TestReproduceLegacyUpgradeErrorMisreported(t *testing.T) {
	envtestOnly(t)
	soak.SkipUnlessReproducing(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const node = "alpha-cp-0"
	r := newRollout(t, rolloutOptions{controlPlanes: 1, reboot: time.Second})
	r.sim.Node(node).InjectFault(talossim.Faults{UpgradeExitCode: 1})
	g.Expect(mgmt.Client.Create(ctx, r.policy(func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Rollout = upgradev1.RolloutSpec{}
		p.Spec.RebootTimeout = &metav1.Duration{Duration: 30 * time.Second}
	}))).To(Succeed())
	r.reproducerManager()
	r.startManager()

	var st upgradev1.MachineUpgradeStatus
	g.Eventually(func(g Gomega) {
		u := r.upgrade(g)
		g.Expect(u.Status.Machines).NotTo(BeEmpty())
		st = u.Status.Machines[0]
		g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseFailed))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(r.sim.Calls(node, talossim.RPCLegacyUpgrade)).To(Equal(1))
	g.Expect(st.Message).To(ContainSubstring("upgrade"), "the message names the failed upgrade")
	g.Expect(st.Message).NotTo(ContainSubstring("was the controller killed"))
}
