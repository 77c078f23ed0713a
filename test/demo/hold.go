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

package demo

import (
	"context"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// holdMachine plays a third-party controller, holdOwner, that follows the
// hook contract (hooks/doc.go): it holds machine before its drain, and
// releases the hold d after the rollout reached it. It runs in the
// background until the hold is released or ctx is done.
func holdMachine(ctx context.Context, sb *sandbox.Sandbox, machine *clusterv1.Machine, d time.Duration) error {
	c := sb.Management.Client
	if err := hooks.SetHold(ctx, c, machine.DeepCopy(), upgradev1.HoldPointPreDrain, holdOwner, ""); err != nil {
		return err
	}
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		var reached time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if reached.IsZero() && heldAt(ctx, sb, machine.Name) {
					reached = now
				}
				if !reached.IsZero() && now.Sub(reached) >= d {
					// A failure leaves the hold: the rollout then times out and says why.
					_ = hooks.ReleaseHold(ctx, c, machine.DeepCopy(), upgradev1.HoldPointPreDrain, holdOwner)
					return
				}
			}
		}
	}()
	return nil
}

// heldAt says whether the rollout reached the Machine's pre-drain hold.
func heldAt(ctx context.Context, sb *sandbox.Sandbox, machine string) bool {
	u, err := sb.Upgrade(ctx, namespace, clusterName)
	if err != nil {
		return false
	}
	for _, m := range u.Status.Machines {
		if m.Machine == machine {
			return m.Phase == upgradev1.MachinePhaseWaitingForHold && m.HoldPoint == upgradev1.HoldPointPreDrain
		}
	}
	return false
}
