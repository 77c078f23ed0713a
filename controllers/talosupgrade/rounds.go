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
	"slices"
	"sync"

	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
)

// This file answers "how do several Machines move on at once": in rounds.
// A rollout with a budget of several Machines starts them together, and
// several Machines in flight may all have something to do when its
// reconcile runs. Done one Machine after the other, each would wait for the
// others' requests: the fifth Machine of a batch would start half a second
// after the first, and a Machine whose node came back would wait for the
// starts of the others before it is verified.
//
// So a reconcile moves its Machines on in rounds. In a round
//
//  1. each Machine runs its steps, one Machine after the other, as far as
//     it goes without the world. A step that needs the world asks for it
//     and its Machine stops there for the round: it reads (the holds of its
//     Machine as the apiserver has them, a drain pass over its node, its
//     node's boot ID) or undoes (uncordon) with ask, and it records the
//     intent of a side effect (cordon, upgrade call, reboot) in the status
//     with intend;
//  2. the status is persisted once, with the intents of every Machine;
//  3. what every Machine asked for is done at once: the reads, the undoing,
//     and the side effects whose intents are now on record. An intent that
//     could not be persisted is abandoned: its side effect is not made.
//
// The Machines whose requests were made go on in the next round, with what
// they read. Every side effect still has its intent persisted before it is
// made (write-ahead), and every decision still reads the world as it is
// after the previous round; only the waiting on requests overlaps.

// request is what a step asks of the world for its Machine.
type request struct {
	// st is the record of the Machine.
	st *upgradev1.MachineUpgradeStatus
	// writeAhead is set for a side effect whose intent the step recorded in
	// the status: the status is persisted before it is made.
	writeAhead bool
	// do makes the request. It runs beside the requests of the other
	// Machines of the round: it reads the scope, writes only what belongs
	// to its own Machine (its record's flags, its Machine object, its node,
	// its Talos API, the result the step will read) and never persists.
	do func(ctx context.Context) error
	// abandon, when set, runs when the intent of a writeAhead request could
	// not be persisted.
	abandon func()
}

// intend asks for a side effect of st's Machine, whose intent the calling
// step has just recorded in the status. The Machine stops for the round.
func (s *scope) intend(st *upgradev1.MachineUpgradeStatus, do func(ctx context.Context) error, abandon func()) {
	s.requests = append(s.requests, request{st: st, writeAhead: true, do: do, abandon: abandon})
}

// ask asks for a read, or for undoing what Tollgate did, for st's Machine:
// nothing has to be on record first. The Machine stops for the round.
func (s *scope) ask(st *upgradev1.MachineUpgradeStatus, do func(ctx context.Context) error) {
	s.requests = append(s.requests, request{st: st, do: do})
}

// waits reports whether machine has asked its round for something.
func (s *scope) waits(machine string) bool {
	return slices.ContainsFunc(s.requests, func(r request) bool { return r.st.Machine == machine })
}

// advanceAll moves Machines on, in rounds (see above), until none has
// anything left to ask without waiting. An error of one Machine does not
// keep the others from moving on; the errors are returned together.
func (r *Reconciler) advanceAll(ctx context.Context, s *scope, records []*upgradev1.MachineUpgradeStatus) (ctrl.Result, error) {
	res := ctrl.Result{}
	var errs []error
	for range disruption.MaxStepsPerMachine {
		var goOn []*upgradev1.MachineUpgradeStatus
		for _, st := range records {
			if !st.Phase.InFlight() {
				continue
			}
			stepResult, err := r.advance(ctx, s, st)
			if err != nil {
				errs = append(errs, fmt.Errorf("machine %q: %w", st.Machine, err))
				continue
			}
			res = util.LowestNonZeroResult(res, stepResult)
			if stepResult.IsZero() && s.waits(st.Machine) {
				goOn = append(goOn, st)
			}
		}
		if len(s.requests) == 0 {
			break
		}
		failed, err := r.makeRequests(ctx, s)
		if err != nil {
			errs = append(errs, err)
		}
		// What this round read is decided on in the next one, once.
		s.read, s.reading = s.reading, readings{}
		records = slices.DeleteFunc(goOn, func(st *upgradev1.MachineUpgradeStatus) bool { return failed[st.Machine] })
		if len(records) == 0 {
			break
		}
	}
	s.read, s.reading = readings{}, readings{}
	return res, errors.Join(errs...)
}

// makeRequests persists the status with the intents of the round, then makes
// every request at once. It returns the Machines whose request was not made
// or failed: every one with an intent when the status cannot be persisted,
// their intents abandoned.
func (r *Reconciler) makeRequests(ctx context.Context, s *scope) (map[string]bool, error) {
	requests := s.requests
	s.requests = nil
	failed := map[string]bool{}
	var errs []error
	if slices.ContainsFunc(requests, func(r request) bool { return r.writeAhead }) {
		if err := r.persist(ctx, s); err != nil {
			errs = append(errs, err)
			requests = slices.DeleteFunc(requests, func(r request) bool {
				if r.writeAhead {
					failed[r.st.Machine] = true
					if r.abandon != nil {
						r.abandon()
					}
				}
				return r.writeAhead
			})
		}
	}
	results := make([]error, len(requests))
	var wg sync.WaitGroup
	for i, req := range requests {
		wg.Go(func() {
			log := ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KRef(s.Upgrade.Namespace, req.st.Machine), "Node", req.st.Node)
			results[i] = req.do(ctrl.LoggerInto(ctx, log))
		})
	}
	wg.Wait()
	for i, err := range results {
		if err != nil {
			failed[requests[i].st.Machine] = true
			errs = append(errs, fmt.Errorf("machine %q: %w", requests[i].st.Machine, err))
		}
	}
	return failed, errors.Join(errs...)
}

// abandonRequests drops what no round made: nothing is left when every
// round ran to its end, and nothing is made after the reconcile that asked
// for it; the intents among them are abandoned.
func (s *scope) abandonRequests() {
	for _, req := range s.requests {
		if req.writeAhead && req.abandon != nil {
			req.abandon()
		}
	}
	s.requests = nil
}

// readings are what the requests of a round read, by Machine, for the
// steps of the next round (scope.reading while the round fills them,
// scope.read in the next); each is decided on once.
type readings struct {
	// holds are the Machines as the apiserver has them, read at a hold
	// point (see passPoint and askHolds).
	holds map[string]*disruption.HeldMachine
	// drains are drain passes (see drainstep.go).
	drains map[string]*disruption.DrainPass
	// boots are the versions and boot IDs of rebooting nodes.
	boots map[string]*disruption.BootRead
	// applies are applications of configurations (see
	// talosnode.Nodes.ApplyConfig).
	applies map[string]*disruption.ApplyRead
	// disrupted are the Machines protected from remediation and cordoned
	// by their round.
	disrupted map[string]*bool
}

// readFor returns what was read for machine in the last round, and forgets
// it: each reading is decided on once.
func readFor[T any](readings map[string]*T, machine string) (*T, bool) {
	v, ok := readings[machine]
	delete(readings, machine)
	return v, ok
}

// toRead makes room for a reading of machine and returns it, for a request
// to fill in.
func toRead[T any](readings *map[string]*T, machine string) *T {
	if *readings == nil {
		*readings = map[string]*T{}
	}
	v := new(T)
	(*readings)[machine] = v
	return v
}
