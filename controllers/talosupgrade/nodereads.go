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
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/talosnode"
)

// This file answers "what does a node on its target still need": a Machine
// that runs the rollout's target is done unless a reboot was asked for
// after its node booted (the reboot kind of internal/disruption), or its
// template's patches changed and its node does not run them yet
// (configtargets.go). Both are read from the node itself
// (talosnode.Nodes.ReadNode) before the Machine may start, so that no node
// is disrupted for nothing.

// nodeReadRetry is how often a node that did not answer is read again: a
// Talos API sends no event.
const nodeReadRetry = 30 * time.Second

// reconcileNodeReads reads from the nodes what the Pending records of
// Machines on the target wait for (see settleOnTarget), and settles them. A
// node's Talos API is dialed once the rollout is admitted, as for its
// preflight: a fleet waiting for its slots reads no node.
func (r *Reconciler) reconcileNodeReads(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.Upgrade.Annotations[upgradev1.AdmittedAnnotation] == "" || s.Cluster == nil {
		return ctrl.Result{}, nil
	}
	if paused, _ := s.Pause(); paused != "" {
		return ctrl.Result{}, nil
	}
	behind := map[string]string{}
	var waiting []*upgradev1.MachineUpgradeStatus
	for i := range s.Upgrade.Status.Machines {
		st := &s.Upgrade.Status.Machines[i]
		m := s.Machines[st.Machine]
		if st.Phase == upgradev1.MachinePhasePending && st.Node != "" && m != nil && talos.SameVersion(st.FromVersion, s.TargetOf(m).Version) && !s.Blocked(st) &&
			(st.RebootAfter != nil && st.BootTime == nil || st.Config != nil && st.Config.State == upgradev1.MachineConfigUnknown ||
				st.Kubernetes != nil && st.Kubernetes.State == upgradev1.MachineConfigUnknown) {
			waiting = append(waiting, st)
		}
	}
	if len(waiting) == 0 {
		return ctrl.Result{}, nil
	}
	reads := make([]talosnode.NodeRead, len(waiting))
	var wg sync.WaitGroup
	for i, st := range waiting {
		wg.Go(func() {
			m := s.Machines[st.Machine]
			reads[i] = r.nodes().ReadNode(ctx, s.Cluster, m, st, s.ConfigTargetOf(m))
		})
	}
	wg.Wait()
	res := ctrl.Result{}
	for i, st := range waiting {
		read := reads[i]
		if read.Err != nil {
			st.Message = fmt.Sprintf("waiting to read node %q: %v", st.Node, read.Err)
			res = requeueAfter(nodeReadRetry)
			continue
		}
		if !read.BootTime.IsZero() {
			st.BootTime = &metav1.Time{Time: read.BootTime}
		}
		if read.Config != "" {
			st.Config.State, st.Config.Message = read.Config, read.Refused
		}
		if read.Kubernetes == upgradev1.MachineConfigRefused {
			r.failNow(ctx, s, st, fmt.Sprintf("Kubernetes %s cannot be applied to node %q: %s", st.Kubernetes.Version, st.Node, read.KubernetesRefused))
			continue
		}
		if read.Kubernetes != "" {
			st.Kubernetes.State = read.Kubernetes
		}
		if read.Refused != "" {
			r.machineEvent(s, st.Machine, corev1.EventTypeWarning, "MachineConfigRefused", "Configure", "Machine %s: the patches of %s are not applied: %s", st.Machine, st.Config.Source, read.Refused)
		}
		if disruption.HooksLeft(s.Upgrade, st) || !disruption.SettleOnTarget(s.Now, st, s.TargetOf(s.Machines[st.Machine]).Version) {
			continue
		}
		if st.Phase != upgradev1.MachinePhaseCompleted {
			// Settled to a change in this reconcile, after reconcileMachines
			// looked at the record while it waited for this read: the
			// change passes what reconcileMachines holds a Pending record
			// for before it may start.
			if st.Message = disruption.StartBlocker(st, s.Machines[st.Machine]); st.Message != "" {
				continue
			}
			if st.Message = r.controlPlaneAhead(ctx, s, st, behind); st.Message != "" {
				res = util.LowestNonZeroResult(res, requeueAfter(controlPlaneRecheck))
			}
			continue
		}
		if st.RebootAfter != nil {
			r.machineEvent(s, st.Machine, corev1.EventTypeNormal, "RebootNotNeeded", "Reboot", "Machine %s: node %s booted at %s, after the reboot asked for at %s; not rebooted again",
				st.Machine, st.Node, st.BootTime.UTC().Format(time.RFC3339), st.RebootAfter.UTC().Format(time.RFC3339))
		}
	}
	return res, nil
}
