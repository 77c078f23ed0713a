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

package talosnode

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/test/framework/builder"
)

// TestUnmadeIntent: an upgrade intent whose write returned an error is known
// to this process as made without its call, once; a call started for the
// Machine forgets it.
func TestUnmadeIntent(t *testing.T) {
	g := NewWithT(t)
	var none *UpgradeCalls
	u := &upgradev1.TalosUpgrade{}
	u.UID = "u-1"
	g.Expect(none.TakeUnmade(u, "m-0")).To(BeFalse(), "a controller that never started knows of no unmade call")
	c := NewUpgradeCalls(Nodes{}, nil)
	c.NotMade(u, "m-0")
	g.Expect(c.TakeUnmade(u, "m-1")).To(BeFalse())
	g.Expect(c.TakeUnmade(u, "m-0")).To(BeTrue())
	g.Expect(c.TakeUnmade(u, "m-0")).To(BeFalse(), "taken once")
}

// TestRebootAsked: the end of each call asking a Machine's node to reboot is
// what its step counts rebootRetryAfter from, by the controller's clock,
// until the Machine is no longer rebooting; the calls of other Machines and
// rollouts are apart.
func TestRebootAsked(t *testing.T) {
	g := NewWithT(t)
	now := t0
	c := NewUpgradeCalls(Nodes{}, func() time.Time { return now })
	u, other := &upgradev1.TalosUpgrade{}, &upgradev1.TalosUpgrade{}
	u.UID, other.UID = "u-1", "u-2"
	g.Expect(c.View(u, "m-0").LastReboot.IsZero()).To(BeTrue(), "no call made")
	c.RebootAsked(u, "m-0")
	now = now.Add(3 * time.Second)
	c.RebootAsked(u, "m-0")
	g.Expect(c.View(u, "m-0").LastReboot).To(Equal(t0.Add(3*time.Second)), "the end of the last call")
	g.Expect(c.View(u, "m-1").LastReboot.IsZero()).To(BeTrue())
	g.Expect(c.View(other, "m-0").LastReboot.IsZero()).To(BeTrue())
	c.RebootOver(u, "m-0")
	g.Expect(c.View(u, "m-0").LastReboot.IsZero()).To(BeTrue(), "forgotten once the Machine is no longer rebooting")
	var none *UpgradeCalls
	none.RebootAsked(u, "m-0")
	none.RebootOver(u, "m-0")
}

// notDialing is a talos.Dialer whose every Dial fails before the node is
// reached, as when the management apiserver fails to read the talosconfig
// Secret. dials counts them; it is read once a call's end is received.
type notDialing struct{ dials int }

func (d *notDialing) Dial(context.Context, *clusterv1.Cluster, *clusterv1.Machine) (talos.Client, error) {
	d.dials++
	return nil, errors.Join(errors.New(`reading talosconfig Secret "ns/c-talosconfig": Internal error occurred: injected`), talos.ErrNotDialed)
}

// t0 is the time of the tests.
var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func ptrTime(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

// TestUpgradeCallNotDialed: an upgrade call that could not dial the node was
// never made. It ends with talos.ErrNotDialed, never "not retried
// automatically", and its intent is known to this process as made without
// its call: its step forgets the call and then makes it again, and the
// Machine never fails on it.
func TestUpgradeCallNotDialed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dialer := &notDialing{}
	c := NewUpgradeCalls(Nodes{Dialer: dialer}, nil)
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "u", UID: "u-1"}}
	cluster := builder.Cluster("ns", "c")
	st := upgradev1.MachineUpgradeStatus{
		Machine: "m-0", Node: "n-0", FromVersion: "v1.13.0", TargetVersion: "v1.13.1", BootID: "boot-1",
		Phase: upgradev1.MachinePhaseUpgrading, StartTime: ptrTime(t0.Add(-10 * time.Minute)), PhaseStartTime: ptrTime(t0.Add(-time.Minute)),
		InstallerImage: "ghcr.io/siderolabs/installer:v1.13.1", UpgradeRequestedTime: ptrTime(t0),
	}
	m := builder.Machine("ns", "m-0", "c")

	c.Start(ctx, UpgradeRequest{Upgrade: u, Cluster: cluster, Machine: m, Record: &st, Now: t0})
	g.Eventually(c.Done).WithTimeout(10*time.Second).Should(Receive(), "the call's end enqueues the TalosUpgrade")
	call := c.View(u, "m-0")
	g.Expect(call.Known && call.Finished).To(BeTrue())
	g.Expect(call.Err).To(MatchError(talos.ErrNotDialed))
	g.Expect(call.Err.Error()).To(HavePrefix("upgrade call to n-0 not made: reading talosconfig Secret"))
	g.Expect(call.Err.Error()).NotTo(ContainSubstring("not retried automatically"))
	g.Expect(call.Unmade).To(BeTrue(), "the intent is on record without its call")
	g.Expect(dialer.dials).To(Equal(1), "a call not dialed is not asked again by itself")

	// Its step forgets the call, without failing the Machine.
	observe := func(call disruption.CallView) *disruption.Observation {
		return &disruption.Observation{Now: t0, Spec: &u.Spec, Machine: m, Reachable: true, ChecksPassed: true, Call: call}
	}
	d := disruption.Decide(disruption.KindOf(st.Action), observe(call), &st)
	g.Expect(d.Fail).To(BeEmpty())
	g.Expect(d.ForgetCall).To(BeTrue())
	g.Expect(d.Intent).To(Equal(disruption.IntentNone))
	c.Forget(u, "m-0")

	// Its next step makes it again, once.
	w := observe(c.View(u, "m-0"))
	g.Expect(w.Call.Known).To(BeFalse())
	d = disruption.Decide(disruption.KindOf(st.Action), w, &st)
	g.Expect(d.Intent).To(Equal(disruption.IntentInstallUnmade))
	g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
	g.Expect(c.TakeUnmade(u, "m-0")).To(BeTrue())
	c.Start(ctx, UpgradeRequest{Upgrade: u, Cluster: cluster, Machine: m, Record: &st, Now: t0})
	g.Eventually(c.Done).WithTimeout(10 * time.Second).Should(Receive())
	g.Expect(dialer.dials).To(Equal(2))
}

// TestRepeatable: an attempt of an upgrade call is made again only when the
// node did not answer before the install was requested (its version read,
// its image pull); never once the install request was sent, nor after an
// answer of the node.
func TestRepeatable(t *testing.T) {
	tests := []struct {
		name string
		res  talos.UpgradeResult
		err  error
		want bool
	}{
		{name: "success", err: nil, want: false},
		{name: "lost answer to the pull", err: fmt.Errorf("pulling image: %w", talos.ErrUnreachable), want: true},
		{name: "pull timed out", err: fmt.Errorf("pulling image: %w", talos.ErrDeadlineExceeded), want: true},
		{name: "install request sent, answer lost: asked again", err: fmt.Errorf("%w: %w", talos.ErrUpgradeInterrupted, talos.ErrUnreachable), want: true},
		{name: "legacy call sent, answer lost: it reboots the node", res: talos.UpgradeResult{RebootsItself: true}, err: fmt.Errorf("%w: %w", talos.ErrUpgradeInterrupted, talos.ErrUnreachable), want: false},
		{name: "install failed", err: fmt.Errorf("%w: exit code 1", talos.ErrUpgradeFailed), want: false},
		{name: "TLS", err: talos.ErrTLS, want: false},
		{name: "reboots itself", err: talos.ErrRebootsItself, want: false},
		{name: "the node's own error", err: errors.New("image not found"), want: false},
		{name: "another install runs on the node", err: fmt.Errorf("%w: upgrading: FailedPrecondition", talos.ErrInstallInProgress), want: true},
		{name: "booted since the call was decided", err: fmt.Errorf("upgrade call to n-0 not made: %w", talos.ErrBootedSince), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(repeatable(tt.res, tt.err)).To(Equal(tt.want))
		})
	}
}

// TestUpgradeCallGivesUpAfterNodeUnreachableTimeout: an attempt that keeps
// failing in a repeatable way is the call's failure once the node has not
// answered for retryFor, with the last error.
func TestUpgradeCallGivesUpAfterNodeUnreachableTimeout(t *testing.T) {
	g := NewWithT(t)
	c := NewUpgradeCalls(Nodes{}, time.Now)
	attempts := 0
	_, err := c.repeating(context.Background(), &disruption.UpgradeCall{}, 0, func() (talos.UpgradeResult, error) {
		attempts++
		return talos.UpgradeResult{}, fmt.Errorf("pulling image: %w", talos.ErrUnreachable)
	})
	g.Expect(attempts).To(Equal(1))
	g.Expect(err).To(MatchError(talos.ErrUnreachable))
	g.Expect(err.Error()).To(ContainSubstring("the node did not answer before the install"))

	// An install whose answers were lost, given up, is the call's failure:
	// no longer an interrupted call for a reboot to tell.
	_, err = c.repeating(context.Background(), &disruption.UpgradeCall{}, 0, func() (talos.UpgradeResult, error) {
		return talos.UpgradeResult{}, fmt.Errorf("%w: %w", talos.ErrUpgradeInterrupted, talos.ErrUnreachable)
	})
	g.Expect(err).To(MatchError(talos.ErrUnreachable))
	g.Expect(err).NotTo(MatchError(talos.ErrUpgradeInterrupted))
	g.Expect(err.Error()).To(ContainSubstring("the answer to the install was lost"))
}

// TestLostInstallAnswerIsAskedAgain loses the answer to an install, then
// finds the node installing: the install is asked for again until the node
// takes it, and the call ends with its outcome.
func TestLostInstallAnswerIsAskedAgain(t *testing.T) {
	g := NewWithT(t)
	c := NewUpgradeCalls(Nodes{}, time.Now)
	c.retry = 10 * time.Millisecond
	call := &disruption.UpgradeCall{}
	answers := []error{
		fmt.Errorf("%w: %w", talos.ErrUpgradeInterrupted, talos.ErrUnreachable),
		fmt.Errorf("%w: FailedPrecondition", talos.ErrInstallInProgress),
		nil,
	}
	attempts := 0
	_, err := c.repeating(context.Background(), call, time.Minute, func() (talos.UpgradeResult, error) {
		attempts++
		return talos.UpgradeResult{}, answers[attempts-1]
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(attempts).To(Equal(3))
	g.Expect(call.Retrying).To(MatchError(talos.ErrInstallInProgress), "the record said why it asked again")
}
