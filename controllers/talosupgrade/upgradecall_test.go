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
	"errors"
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
	r := &Reconciler{}
	s := &scope{Rollout: disruption.Rollout{Upgrade: &upgradev1.TalosUpgrade{}}}
	s.Upgrade.UID = "u-1"
	st := &upgradev1.MachineUpgradeStatus{Machine: "m-0"}
	g.Expect(r.calls.takeUnmade(s.Upgrade, "m-0")).To(BeFalse(), "a controller that never started knows of no unmade call")
	r.notMade(s, st)
	g.Expect(r.calls.takeUnmade(s.Upgrade, "m-1")).To(BeFalse())
	g.Expect(r.calls.takeUnmade(s.Upgrade, "m-0")).To(BeTrue())
	g.Expect(r.calls.takeUnmade(s.Upgrade, "m-0")).To(BeFalse(), "taken once")
}

// notDialing is a talos.Dialer whose every Dial fails before the node is
// reached, as when the management apiserver fails to read the talosconfig
// Secret. dials counts them; it is read once a call's end is received.
type notDialing struct{ dials int }

func (d *notDialing) Dial(context.Context, *clusterv1.Cluster, *clusterv1.Machine) (talos.Client, error) {
	d.dials++
	return nil, errors.Join(errors.New(`reading talosconfig Secret "ns/c-talosconfig": Internal error occurred: injected`), talos.ErrNotDialed)
}

// TestUpgradeCallNotDialed: an upgrade call that could not dial the node was
// never made. It ends with talos.ErrNotDialed, never "not retried
// automatically", and its intent is known to this process as made without
// its call: its step forgets the call and then makes it again, and the
// Machine never fails on it.
func TestUpgradeCallNotDialed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dialer := &notDialing{}
	r := &Reconciler{Dialer: dialer}
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "u", UID: "u-1"}}
	s := &scope{Rollout: disruption.Rollout{Upgrade: u, Cluster: builder.Cluster("ns", "c"), Now: t0}}
	st := upgradev1.MachineUpgradeStatus{
		Machine: "m-0", Node: "n-0", FromVersion: "v1.13.0", TargetVersion: "v1.13.1", BootID: "boot-1",
		Phase: upgradev1.MachinePhaseUpgrading, StartTime: ptrTime(t0.Add(-10 * time.Minute)), PhaseStartTime: ptrTime(t0.Add(-time.Minute)),
		InstallerImage: "ghcr.io/siderolabs/installer:v1.13.1", UpgradeRequestedTime: ptrTime(t0),
	}
	m := builder.Machine("ns", "m-0", "c")

	r.startUpgradeCall(ctx, s, &st, m, talos.UpgradeOptions{})
	g.Eventually(r.calls.done).WithTimeout(10*time.Second).Should(Receive(), "the call's end enqueues the TalosUpgrade")
	call := r.calls.view(u, "m-0")
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
	r.calls.forget(u, "m-0")

	// Its next step makes it again, once.
	w := observe(r.calls.view(u, "m-0"))
	g.Expect(w.Call.Known).To(BeFalse())
	d = disruption.Decide(disruption.KindOf(st.Action), w, &st)
	g.Expect(d.Intent).To(Equal(disruption.IntentInstallUnmade))
	g.Expect(st.Phase).To(Equal(upgradev1.MachinePhaseUpgrading))
	g.Expect(r.calls.takeUnmade(u, "m-0")).To(BeTrue())
	r.startUpgradeCall(ctx, s, &st, m, talos.UpgradeOptions{})
	g.Eventually(r.calls.done).WithTimeout(10 * time.Second).Should(Receive())
	g.Expect(dialer.dials).To(Equal(2))
}
