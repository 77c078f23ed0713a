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

package soak

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// decidedAt is when the controller decided the call that reboots a node:
// the reboot intent it recorded, which is the time its reconcile started,
// before it read the Machine's holds. A hold placed later holds the next
// point, not the one the Machine is passing (the hook contract); on a loaded
// machine the call may reach the node seconds after the decision. The
// intent's time is kept to the second, so the decision was in [from,
// until): a hold blames it only if it was placed before from and released
// after until, which never blames a hold placed after the decision nor one
// released before it.
func decidedAt(st *upgradev1.MachineUpgradeStatus, call talossim.Call) (from, until time.Time) {
	if st.RebootRequestedTime != nil && st.RebootRequestedTime.Time.Before(call.Time) {
		from = st.RebootRequestedTime.Time
		return from, minTime(from.Add(time.Second), call.Time)
	}
	return call.Time, call.Time
}

// checkCall checks invariant 7 when an upgrade or a reboot call reaches a
// node, before the node acts on it: the node is cordoned and its Machine's
// record is past its drain, with the intent recorded; a call that reboots
// the node (a reboot, or the upgrade of a node before Talos 1.13) comes
// after the pre-reboot holds were clear.
func (s *soak) checkCall(c *soakCluster, call talossim.Call) {
	upgrade := call.RPC == talossim.RPCUpgrade || call.RPC == talossim.RPCLegacyUpgrade
	reboots := call.RPC == talossim.RPCLegacyUpgrade || call.RPC == talossim.RPCReboot
	if !upgrade && !reboots {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	mgmt := s.world.mgmt.Client
	machines := &clusterv1.MachineList{}
	if err := mgmt.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		return
	}
	var m *clusterv1.Machine
	for i := range machines.Items {
		if machines.Items[i].Status.NodeRef.Name == call.Node {
			m = &machines.Items[i]
		}
	}
	if m == nil {
		return // Deleted (scale-down, replacement); its node is gone.
	}
	s.check(7)
	var problems []string
	node := &corev1.Node{}
	switch err := c.wl.Client.Get(ctx, client.ObjectKey{Name: call.Node}, node); {
	case apierrors.IsNotFound(err):
		return
	case err != nil:
		return
	case !node.Spec.Unschedulable:
		problems = append(problems, "node not cordoned")
	}
	u := &upgradev1.TalosUpgrade{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
		// Unread (seed 20261208 at a load of 45: the read did not come
		// back within its 5s), the record cannot be judged.
		return
	}
	var st *upgradev1.MachineUpgradeStatus
	for i := range u.Status.Machines {
		if u.Status.Machines[i].Machine == m.Name {
			st = &u.Status.Machines[i]
		}
	}
	switch {
	case st == nil:
		problems = append(problems, "no record of the Machine")
	case st.Phase == upgradev1.MachinePhasePending || st.Phase == upgradev1.MachinePhaseDraining ||
		st.Phase == upgradev1.MachinePhaseWaitingForHold && st.HoldPoint == upgradev1.HoldPointPreDrain:
		problems = append(problems, fmt.Sprintf("drain not finished (record: phase %s %s)", st.Phase, st.HoldPoint))
	case !st.Cordoned:
		problems = append(problems, "record does not say cordoned")
	case reboots && st.Phase != upgradev1.MachinePhaseRebooting:
		problems = append(problems, fmt.Sprintf("record not past the pre-reboot holds (phase %s %s, heldBy %v)", st.Phase, st.HoldPoint, st.HeldBy))
	case upgrade && st.UpgradeRequestedTime == nil:
		problems = append(problems, "upgrade intent not recorded")
	}
	if reboots && st != nil {
		if from, until := decidedAt(st, call); s.heldAt(c.ns+"/"+m.Name, upgradev1.HoldPointPreReboot, from, until, holdGrace) {
			problems = append(problems, "the soak's pre-reboot hold was present when the reboot was decided")
		}
	}
	if len(problems) > 0 {
		s.violation(7, "Machine %s/%s: %s call reached node %s at %s: %s", c.ns, m.Name, call.RPC, call.Node, call.Time.Format(timeMillis), strings.Join(problems, "; "))
	}
}
