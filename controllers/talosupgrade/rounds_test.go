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
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestRequestsOfARound checks what a round does with its Machines'
// requests: the side effects are made after one write that records all
// their intents, at once with the reads; a write that fails makes none of
// them and abandons them all, but the reads are made; a side effect that
// fails keeps only its own Machine from going on.
func TestRequestsOfARound(t *testing.T) {
	const machines = 3 // With an intent each; one more Machine asks for a read.
	tests := []struct {
		name string
		// failWrite fails the status write; failMachine fails the side
		// effect of that Machine.
		failWrite   bool
		failMachine string
	}{
		{name: "one write, then every side effect at once"},
		{name: "a failed write makes no side effect", failWrite: true},
		{name: "a failed side effect stops its Machine only", failMachine: "m-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			stored := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
			for i := range machines {
				stored.Status.Machines = append(stored.Status.Machines, upgradev1.MachineUpgradeStatus{Machine: fmt.Sprintf("m-%d", i), Phase: upgradev1.MachinePhasePending})
			}
			var writes atomic.Int32
			c := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(stored).WithStatusSubresource(stored).
				WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					writes.Add(1)
					if tt.failWrite {
						return apierrors.NewInternalError(errInjected)
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				}}).Build()
			u := &upgradev1.TalosUpgrade{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(stored), u)).To(Succeed())
			r := &Reconciler{Client: c}
			s := &scope{Rollout: disruption.Rollout{Upgrade: u, Now: time.Now()}, base: u.DeepCopy()}

			var (
				started   sync.WaitGroup
				made      sync.Map
				abandoned atomic.Int32
			)
			if tt.failWrite {
				started.Add(1) // The read only.
			} else {
				started.Add(machines + 1)
			}
			allStarted := make(chan struct{})
			go func() { started.Wait(); close(allStarted) }()
			for i := range u.Status.Machines {
				st := &u.Status.Machines[i]
				st.Phase = upgradev1.MachinePhaseDraining // The intent.
				s.intend(st, func(ctx context.Context) error {
					// Each side effect finds every intent on record, and
					// waits for the others: they are made at once.
					onRecord := &upgradev1.TalosUpgrade{}
					if err := c.Get(ctx, client.ObjectKeyFromObject(stored), onRecord); err != nil {
						return err
					}
					for _, rec := range onRecord.Status.Machines {
						if rec.Phase != upgradev1.MachinePhaseDraining {
							return fmt.Errorf("made before the intent of %s was written", rec.Machine)
						}
					}
					started.Done()
					select {
					case <-allStarted:
					case <-time.After(5 * time.Second):
						return errors.New("the side effects of the round were not made at once")
					}
					made.Store(st.Machine, true)
					if st.Machine == tt.failMachine {
						return errInjected
					}
					return nil
				}, func() { abandoned.Add(1) })
			}
			reader := &upgradev1.MachineUpgradeStatus{Machine: "reader", Phase: upgradev1.MachinePhaseRebooting}
			s.ask(reader, func(context.Context) error {
				started.Done()
				select {
				case <-allStarted:
				case <-time.After(5 * time.Second):
					return errors.New("the read was not made at once with the side effects")
				}
				made.Store(reader.Machine, true)
				return nil
			})
			g.Expect(s.waits("m-0")).To(BeTrue())
			g.Expect(s.waits("reader")).To(BeTrue())

			failed, err := r.makeRequests(ctx, s)
			g.Expect(writes.Load()).To(BeEquivalentTo(1), "one write for the intents of the round")
			g.Expect(s.requests).To(BeEmpty())
			_, read := made.Load(reader.Machine)
			g.Expect(read).To(BeTrue(), "the read is made whatever the write")
			switch {
			case tt.failWrite:
				g.Expect(err).To(MatchError(ContainSubstring(errInjected.Error())))
				g.Expect(failed).To(HaveLen(machines))
				g.Expect(abandoned.Load()).To(BeEquivalentTo(machines))
				made.Range(func(k, _ any) bool {
					if k != reader.Machine {
						t.Errorf("side effect of %s made without its intent written", k)
					}
					return true
				})
			case tt.failMachine != "":
				g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("machine %q", tt.failMachine))))
				g.Expect(failed).To(Equal(map[string]bool{tt.failMachine: true}))
				g.Expect(abandoned.Load()).To(BeZero())
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(failed).To(BeEmpty())
				for i := range machines {
					_, ok := made.Load(fmt.Sprintf("m-%d", i))
					g.Expect(ok).To(BeTrue(), "side effect of m-%d", i)
				}
			}
		})
	}
}

// TestRequestsLeftAreAbandoned checks that a side effect no round made is
// abandoned when the reconcile ends, before its intent can be written.
func TestRequestsLeftAreAbandoned(t *testing.T) {
	g := NewWithT(t)
	s := &scope{Rollout: disruption.Rollout{Upgrade: &upgradev1.TalosUpgrade{}}}
	abandoned := 0
	st := &upgradev1.MachineUpgradeStatus{Machine: "m-0"}
	s.intend(st, func(context.Context) error { t.Error("made"); return nil }, func() { abandoned++ })
	s.intend(&upgradev1.MachineUpgradeStatus{Machine: "m-1"}, func(context.Context) error { t.Error("made"); return nil }, nil)
	s.ask(&upgradev1.MachineUpgradeStatus{Machine: "m-2"}, func(context.Context) error { t.Error("made"); return nil })
	s.abandonRequests()
	g.Expect(abandoned).To(Equal(1))
	g.Expect(s.requests).To(BeEmpty())
	g.Expect(s.waits("m-0")).To(BeFalse())
}
