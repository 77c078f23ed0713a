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

package inplace

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestDecideUpdate answers UpdateMachine from what the apiserver holds: done
// only once the rollout verified the Machine on the version its InfraMachine
// asks for, and on the kubelet version its spec.version asks for, Failure for good once the rollout failed it, and otherwise what
// the update waits for.
func TestDecideUpdate(t *testing.T) {
	const image = "ghcr.io/siderolabs/installer:v1.13.0"
	handover := &Handover{Image: image, Version: "v1.13.0"}
	rollout := func(target string, records ...upgradev1.MachineUpgradeStatus) *upgradev1.TalosUpgrade {
		return &upgradev1.TalosUpgrade{
			Spec: upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "capi", UpgradePlan: upgradev1.UpgradePlan{TalosVersion: target}},
			Status: upgradev1.TalosUpgradeStatus{
				Phase: upgradev1.UpgradePhaseInProgress, BlockedBy: "health check ceph failing", Machines: records,
			},
		}
	}
	record := func(phase upgradev1.MachinePhase, target, message string) upgradev1.MachineUpgradeStatus {
		return upgradev1.MachineUpgradeStatus{Machine: "alpha-md-0-x", Phase: phase, TargetVersion: target, Message: message}
	}
	kubelet := &Handover{Image: image, Version: "v1.13.0", KubernetesVersion: "v1.36.0"}
	withKubelet := func(r upgradev1.MachineUpgradeStatus, version string) upgradev1.MachineUpgradeStatus {
		r.Kubernetes = &upgradev1.MachineKubernetesStatus{Part: upgradev1.KubernetesPartKubelet, Version: version, State: upgradev1.MachineConfigConverged}
		return r
	}
	policyOwn := &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "own"}}
	for _, tc := range []struct {
		name      string
		state     updateState
		kubelet   string // what the Machine's node reports
		done      bool
		failure   bool
		lastSteps bool
		inMessage string
	}{
		{
			name:      "CAPI has yet to write the InfraMachine",
			state:     updateState{},
			inMessage: "waiting for CAPI to write the desired InfraMachine",
		},
		{
			name:      "no rollout yet",
			state:     updateState{handover: handover},
			inMessage: "waiting for TalosUpgradePolicy capi to start the rollout of Cluster alpha to v1.13.0",
		},
		{
			name:      "the rollout is on another version, which CAPI changes",
			state:     updateState{handover: handover, upgrade: rollout("v1.12.5")},
			inMessage: "the rollout of Cluster alpha is on v1.12.5",
		},
		{
			name:      "the policy's own target moved since the hand-over: its rollout takes the Machine in",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.1"), policy: &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "own"}}},
			inMessage: "waiting for the rollout of Cluster alpha to take Machine alpha-md-0-x in for Talos v1.13.1 (its template asks for v1.13.0, but TalosUpgradePolicy own (targetFrom: Policy) moved to v1.13.1 since CAPI handed it over, and the policy's target wins: change the template to v1.13.1)",
		},
		{
			name:      "the policy's own target moved since the hand-over: done on it, never failed (CAPI would keep the Machine marked)",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.1", record(upgradev1.MachinePhaseCompleted, "v1.13.1", "")), policy: &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "own"}}},
			done:      true,
			inMessage: "Machine alpha-md-0-x runs Talos v1.13.1 (its template asks for v1.13.0",
		},
		{
			name:      "the policy's own target moved since the hand-over, and its rollout failed the Machine",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.1", record(upgradev1.MachinePhaseFailed, "v1.13.1", "")), policy: &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "own"}}},
			failure:   true,
			inMessage: "failed",
		},
		{
			name:      "the policy rolls out its own target, the one CAPI asks for",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseCompleted, "v1.13.0", "")), policy: &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "own"}}},
			done:      true,
			inMessage: "runs Talos v1.13.0",
		},
		{
			name:      "the rollout has not taken the Machine in",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.0")},
			inMessage: "waiting for the rollout of Cluster alpha to take Machine alpha-md-0-x in",
		},
		{
			name:      "a record of another version does not count",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseCompleted, "v1.12.5", ""))},
			inMessage: "to take Machine alpha-md-0-x in",
		},
		{
			name:      "waiting to start, behind the rollout's gate",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhasePending, "v1.13.0", ""))},
			inMessage: "waiting to start (rollout of Cluster alpha: health check ceph failing)",
		},
		{
			name: "held by a hook",
			state: updateState{handover: handover, upgrade: rollout("v1.13.0", upgradev1.MachineUpgradeStatus{
				Machine: "alpha-md-0-x", Phase: upgradev1.MachinePhaseWaitingForHold, TargetVersion: "v1.13.0", HoldPoint: upgradev1.HoldPointPreDrain, HeldBy: []string{"storage"},
			})},
			inMessage: "held at preDrain by [storage]",
		},
		{
			name:      "rebooting",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseRebooting, "v1.13.0", "waiting for the node to come back"))},
			inMessage: "Rebooting: waiting for the node to come back",
		},
		{
			name:      "back on the version, waiting for the node to be Ready: CAPI asks again soon",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseVerifying, "v1.13.0", "waiting for the node to be Ready"))},
			lastSteps: true,
			inMessage: "Verifying: waiting for the node to be Ready",
		},
		{
			name: "proven, being released: not done before the record is Completed",
			state: updateState{handover: handover, upgrade: rollout("v1.13.0", upgradev1.MachineUpgradeStatus{
				Machine: "alpha-md-0-x", Phase: upgradev1.MachinePhaseWaitingForHold, TargetVersion: "v1.13.0", HoldPoint: upgradev1.HoldPointPostUpgrade,
			})},
			lastSteps: true,
			inMessage: "WaitingForHold",
		},
		{
			name: "held after the upgrade: asked about at the usual pace",
			state: updateState{handover: handover, upgrade: rollout("v1.13.0", upgradev1.MachineUpgradeStatus{
				Machine: "alpha-md-0-x", Phase: upgradev1.MachinePhaseWaitingForHold, TargetVersion: "v1.13.0", HoldPoint: upgradev1.HoldPointPostUpgrade, HeldBy: []string{"smoke-test"},
			})},
			inMessage: "held at postUpgrade by [smoke-test]",
		},
		{
			name:      "verified on the version",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseCompleted, "v1.13.0", ""))},
			done:      true,
			inMessage: "Machine alpha-md-0-x runs Talos v1.13.0",
		},
		{
			name: "Completed while skip-remediation could not be removed: done once Tollgate released it",
			state: updateState{handover: handover, upgrade: rollout("v1.13.0", upgradev1.MachineUpgradeStatus{
				Machine: "alpha-md-0-x", Phase: upgradev1.MachinePhaseCompleted, TargetVersion: "v1.13.0", SkipRemediationSet: true,
			})},
			lastSteps: true,
			inMessage: "waiting for Tollgate to release it",
		},
		{
			name: "Completed while its node could not be uncordoned: done once Tollgate released it",
			state: updateState{handover: handover, upgrade: rollout("v1.13.0", upgradev1.MachineUpgradeStatus{
				Machine: "alpha-md-0-x", Phase: upgradev1.MachinePhaseCompleted, TargetVersion: "v1.13.0", Cordoned: true,
			})},
			lastSteps: true,
			inMessage: "waiting for Tollgate to release it",
		},
		{
			name:      "a kubelet change: the rollout has not taken the Machine in for it",
			state:     updateState{handover: kubelet, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseCompleted, "v1.13.0", ""))},
			inMessage: "to take Machine alpha-md-0-x in for Talos v1.13.0 and kubelet v1.36.0",
		},
		{
			name:      "a kubelet change: a record of another Kubernetes version does not count",
			state:     updateState{handover: kubelet, upgrade: rollout("v1.13.0", withKubelet(record(upgradev1.MachinePhaseCompleted, "v1.13.0", ""), "v1.35.2"))},
			inMessage: "to take Machine alpha-md-0-x in",
		},
		{
			name:      "a kubelet change: waiting for the control plane",
			state:     updateState{handover: kubelet, upgrade: rollout("v1.13.0", withKubelet(record(upgradev1.MachinePhasePending, "v1.13.0", "a kubelet is never newer than a kube-apiserver"), "v1.36.0"))},
			inMessage: "waiting to start (rollout of Cluster alpha: a kubelet is never newer than a kube-apiserver)",
		},
		{
			name:      "a kubelet change: verified",
			state:     updateState{handover: kubelet, upgrade: rollout("v1.13.0", withKubelet(record(upgradev1.MachinePhaseCompleted, "v1.13.0", ""), "v1.36.0"))},
			done:      true,
			inMessage: "Machine alpha-md-0-x runs Talos v1.13.0 and kubelet v1.36.0",
		},
		{
			name:      "with its own target, a worker whose kubelet runs its spec.version is done with its Talos",
			state:     updateState{handover: kubelet, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseCompleted, "v1.13.0", "")), policy: policyOwn},
			kubelet:   "v1.36.0",
			done:      true,
			inMessage: "Machine alpha-md-0-x runs Talos v1.13.0 and kubelet v1.36.0",
		},
		{
			name:      "with its own target, a kubelet that runs another version waits",
			state:     updateState{handover: kubelet, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseCompleted, "v1.13.0", "")), policy: policyOwn},
			kubelet:   "v1.35.0",
			inMessage: "to take Machine alpha-md-0-x in",
		},
		{
			name:      "failed, for good",
			state:     updateState{handover: handover, upgrade: rollout("v1.13.0", record(upgradev1.MachinePhaseFailed, "v1.13.0", "the node did not come back"))},
			failure:   true,
			inMessage: "failed: the node did not come back; Tollgate does not try it again",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tc.state.machine = &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0-x"}, Spec: clusterv1.MachineSpec{ClusterName: "alpha"}}
			if tc.kubelet != "" {
				tc.state.machine.Status.NodeInfo = &corev1.NodeSystemInfo{KubeletVersion: tc.kubelet}
			}
			if tc.state.policy == nil {
				tc.state.policy = &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "capi"}, Spec: upgradev1.TalosUpgradePolicySpec{
					UpgradePlan: upgradev1.UpgradePlan{TargetFrom: upgradev1.TargetFromCAPI},
				}}
			}
			a := decideUpdate(tc.state)
			g.Expect(a.done).To(Equal(tc.done), "done: %s", a.message)
			g.Expect(a.failure).To(Equal(tc.failure), "failure: %s", a.message)
			g.Expect(a.lastSteps).To(Equal(tc.lastSteps), "last steps: %s", a.message)
			g.Expect(a.message).To(ContainSubstring(tc.inMessage))
		})
	}
}

// TestDecideUpdateInEveryPhase walks a Machine's record through every
// phase and hold point, released or not, and checks that UpdateMachine
// answers done for the Completed and released record only, Failure for the
// Failed one only, and asks CAPI to ask again soon only in the last steps:
// verifying the node, or proving and releasing it unheld.
func TestDecideUpdateInEveryPhase(t *testing.T) {
	handover := &Handover{Image: "ghcr.io/siderolabs/installer:v1.13.0", Version: "v1.13.0"}
	policy := &upgradev1.TalosUpgradePolicy{ObjectMeta: metav1.ObjectMeta{Name: "capi"}, Spec: upgradev1.TalosUpgradePolicySpec{
		UpgradePlan: upgradev1.UpgradePlan{TargetFrom: upgradev1.TargetFromCAPI},
	}}
	type want struct{ done, failure, lastSteps bool }
	type step struct {
		phase upgradev1.MachinePhase
		point upgradev1.HoldPoint
	}
	steps := map[step]want{
		{phase: upgradev1.MachinePhasePending}:                                               {},
		{phase: upgradev1.MachinePhaseWaitingForHold, point: upgradev1.HoldPointPreDrain}:    {},
		{phase: upgradev1.MachinePhaseDraining}:                                              {},
		{phase: upgradev1.MachinePhaseUpgrading}:                                             {},
		{phase: upgradev1.MachinePhaseWaitingForHold, point: upgradev1.HoldPointPreReboot}:   {},
		{phase: upgradev1.MachinePhaseRebooting}:                                             {},
		{phase: upgradev1.MachinePhaseVerifying}:                                             {lastSteps: true},
		{phase: upgradev1.MachinePhaseWaitingForHold, point: upgradev1.HoldPointPostUpgrade}: {lastSteps: true},
		{phase: upgradev1.MachinePhaseCompleted}:                                             {done: true},
		{phase: upgradev1.MachinePhaseFailed}:                                                {failure: true},
	}
	for s, w := range steps {
		for _, held := range []bool{false, true} {
			for _, disrupted := range []bool{false, true} {
				name := fmt.Sprintf("%s %s held=%t cordoned and skip-remediation=%t", s.phase, s.point, held, disrupted)
				t.Run(name, func(t *testing.T) {
					g := NewWithT(t)
					r := upgradev1.MachineUpgradeStatus{
						Machine: "alpha-md-0-x", Phase: s.phase, HoldPoint: s.point, TargetVersion: "v1.13.0",
						Cordoned: disrupted, SkipRemediationSet: disrupted,
					}
					if held {
						r.HeldBy = []string{"storage"}
					}
					a := decideUpdate(updateState{
						machine:  &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0-x"}, Spec: clusterv1.MachineSpec{ClusterName: "alpha"}},
						handover: handover, policy: policy,
						upgrade: &upgradev1.TalosUpgrade{
							Spec:   upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "capi", UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}},
							Status: upgradev1.TalosUpgradeStatus{Phase: upgradev1.UpgradePhaseInProgress, Machines: []upgradev1.MachineUpgradeStatus{r}},
						},
					})
					expected := w
					switch {
					case w.done && disrupted:
						// Not released yet: the last of Tollgate's work.
						expected = want{lastSteps: true}
					case w.lastSteps && held && s.phase == upgradev1.MachinePhaseWaitingForHold:
						// A hook owner holds it, for as long as it likes.
						expected = want{}
					}
					g.Expect(a.done).To(Equal(expected.done), "done: %s", a.message)
					g.Expect(a.failure).To(Equal(expected.failure), "failure: %s", a.message)
					g.Expect(a.lastSteps).To(Equal(expected.lastSteps), "last steps: %s", a.message)

					// A record of another version is never done.
					r.TargetVersion = "v1.12.5"
					a = decideUpdate(updateState{
						machine:  &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0-x"}, Spec: clusterv1.MachineSpec{ClusterName: "alpha"}},
						handover: handover, policy: policy,
						upgrade: &upgradev1.TalosUpgrade{
							Spec:   upgradev1.TalosUpgradeSpec{ClusterName: "alpha", PolicyName: "capi", UpgradePlan: upgradev1.UpgradePlan{TalosVersion: "v1.13.0"}},
							Status: upgradev1.TalosUpgradeStatus{Phase: upgradev1.UpgradePhaseInProgress, Machines: []upgradev1.MachineUpgradeStatus{r}},
						},
					})
					g.Expect(a.done || a.failure || a.lastSteps).To(BeFalse(), "a record of another version: %s", a.message)
				})
			}
		}
	}
}

// TestUpdateMachineRetryAfter: an "in progress" answer asks CAPI to ask
// again after the extension's RetryAfter, within LastStepsRetryAfter in the
// last steps of an update, and never sooner than a second.
func TestUpdateMachineRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured time.Duration
		lastSteps  bool
		want       time.Duration
	}{
		{name: "the default", want: DefaultRetryAfter},
		{name: "the default, in the last steps", lastSteps: true, want: LastStepsRetryAfter},
		{name: "configured", configured: 30 * time.Second, want: 30 * time.Second},
		{name: "configured, in the last steps", configured: 30 * time.Second, lastSteps: true, want: LastStepsRetryAfter},
		{name: "configured below a second", configured: 200 * time.Millisecond, want: time.Second},
		{name: "configured below a second, in the last steps", configured: 200 * time.Millisecond, lastSteps: true, want: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			e := &Extension{RetryAfter: tc.configured}
			g.Expect(e.retryAfter(updateAnswer{lastSteps: tc.lastSteps})).To(Equal(tc.want))
		})
	}
}

// TestUpdateMachineWhenTheWorldCannotBeRead: an apiserver that cannot be
// read says nothing of the update: UpdateMachine answers in progress, for
// CAPI to ask again, never Failure (which CAPI shows as
// InPlaceUpdateFailed); a request that names no Machine is still a Failure.
func TestUpdateMachineWhenTheWorldCannotBeRead(t *testing.T) {
	g := NewWithT(t)
	unreachable := errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return unreachable
		},
	}).Build()
	e := &Extension{Client: c, RetryAfter: 7 * time.Second}

	req := &runtimehooksv1.UpdateMachineRequest{}
	req.Desired.Machine = clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "alpha-md-0-abcde-x1"}}
	resp := &runtimehooksv1.UpdateMachineResponse{}
	e.UpdateMachine(t.Context(), req, resp)
	g.Expect(resp.GetStatus()).To(Equal(runtimehooksv1.ResponseStatusSuccess))
	g.Expect(resp.GetRetryAfterSeconds()).To(BeEquivalentTo(7), "in progress: CAPI asks again")
	g.Expect(resp.GetMessage()).To(ContainSubstring("connection refused"))

	resp = &runtimehooksv1.UpdateMachineResponse{}
	e.UpdateMachine(t.Context(), &runtimehooksv1.UpdateMachineRequest{}, resp)
	g.Expect(resp.GetStatus()).To(Equal(runtimehooksv1.ResponseStatusFailure), "a request that names no Machine cannot be served")
}
