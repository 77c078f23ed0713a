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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/machineconfig"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "what does a node on its target still need": a Machine
// that runs the rollout's target is done unless a reboot was asked for
// after its node booted (reboot.go), or its template's patches changed and
// its node does not run them yet (configtargets.go). Both are read from the
// node itself before the Machine may start, so that no node is disrupted
// for nothing.

// nodeReadRetry is how often a node that did not answer is read again: a
// Talos API sends no event.
const nodeReadRetry = 30 * time.Second

// nodeRead is what a node said of a record that waits for it.
type nodeRead struct {
	// bootTime is when the node last booted; zero when not read.
	bootTime time.Time
	// config is where the node stands with its template's patches, and
	// refused why they cannot be applied to it; empty when not read.
	config  upgradev1.MachineConfigState
	refused string
	// kubernetes is where the node stands with its record's Kubernetes
	// change, and kubernetesRefused why it cannot be made; empty when not
	// read.
	kubernetes        upgradev1.MachineConfigState
	kubernetesRefused string
	err               error
}

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
	target := s.Target()
	behind := map[string]string{}
	var waiting []*upgradev1.MachineUpgradeStatus
	for i := range s.Upgrade.Status.Machines {
		st := &s.Upgrade.Status.Machines[i]
		if st.Phase == upgradev1.MachinePhasePending && st.Node != "" && s.Machines[st.Machine] != nil && talos.SameVersion(st.FromVersion, target) &&
			(st.RebootAfter != nil && st.BootTime == nil || st.Config != nil && st.Config.State == upgradev1.MachineConfigUnknown ||
				st.Kubernetes != nil && st.Kubernetes.State == upgradev1.MachineConfigUnknown) {
			waiting = append(waiting, st)
		}
	}
	if len(waiting) == 0 {
		return ctrl.Result{}, nil
	}
	reads := make([]nodeRead, len(waiting))
	var wg sync.WaitGroup
	for i, st := range waiting {
		wg.Go(func() {
			reads[i] = r.readNode(ctx, s, st)
		})
	}
	wg.Wait()
	res := ctrl.Result{}
	for i, st := range waiting {
		read := reads[i]
		if read.err != nil {
			st.Message = fmt.Sprintf("waiting to read node %q: %v", st.Node, read.err)
			res = requeueAfter(nodeReadRetry)
			continue
		}
		if !read.bootTime.IsZero() {
			st.BootTime = &metav1.Time{Time: read.bootTime}
		}
		if read.config != "" {
			st.Config.State, st.Config.Message = read.config, read.refused
		}
		if read.kubernetes == upgradev1.MachineConfigRefused {
			r.failNow(ctx, s, st, fmt.Sprintf("Kubernetes %s cannot be applied to node %q: %s", st.Kubernetes.Version, st.Node, read.kubernetesRefused))
			continue
		}
		if read.kubernetes != "" {
			st.Kubernetes.State = read.kubernetes
		}
		if read.refused != "" {
			r.event(s, corev1.EventTypeWarning, "MachineConfigRefused", "Configure", "Machine %s: the patches of %s are not applied: %s", st.Machine, st.Config.Source, read.refused)
		}
		if disruption.HooksLeft(s.Upgrade, st) || !disruption.SettleOnTarget(s.Now, st, target) {
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
			r.event(s, corev1.EventTypeNormal, "RebootNotNeeded", "Reboot", "Machine %s: node %s booted at %s, after the reboot asked for at %s; not rebooted again",
				st.Machine, st.Node, st.BootTime.UTC().Format(time.RFC3339), st.RebootAfter.UTC().Format(time.RFC3339))
		}
	}
	return res, nil
}

// readNode reads what st waits for from its node: when it booted, and
// whether it runs its template's patches.
func (r *Reconciler) readNode(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus) nodeRead {
	var read nodeRead
	m := s.Machines[st.Machine]
	readsConfig := st.Config != nil && st.Config.State == upgradev1.MachineConfigUnknown
	readsKubernetes := st.Kubernetes != nil && st.Kubernetes.State == upgradev1.MachineConfigUnknown
	var running []byte
	read.err = r.withTalos(ctx, s.Cluster, m, func(tc talos.Client) error {
		var err error
		if st.RebootAfter != nil && st.BootTime == nil {
			if read.bootTime, err = tc.BootTime(ctx); err != nil {
				return err
			}
		}
		if readsConfig || readsKubernetes {
			running, err = tc.MachineConfig(ctx)
		}
		return err
	})
	if read.err != nil || !readsConfig && !readsKubernetes {
		return read
	}
	if readsKubernetes {
		read.kubernetes, read.kubernetesRefused = kubernetesState(running, st.Kubernetes)
	}
	if readsConfig {
		t := s.ConfigTargetOf(m)
		if t == nil || t.Hash != st.Config.Hash {
			read.err = errors.New("its template's patches changed while it was read")
			return read
		}
		read.config, read.refused = configState(running, t.Patches)
	}
	return read
}

// configState says where a node running running stands with patches: it
// runs them, or they are to be applied, or they cannot be and why. The
// answer names fields, never values: a configuration holds secrets.
func configState(running []byte, patches machineconfig.Patches) (upgradev1.MachineConfigState, string) {
	desired, err := machineconfig.Desired(running, patches)
	if err != nil {
		return upgradev1.MachineConfigRefused, err.Error()
	}
	if err := machineconfig.CheckInPlace(running, desired); err != nil {
		return upgradev1.MachineConfigRefused, err.Error()
	}
	converged, err := machineconfig.Converged(running, patches)
	switch {
	case err != nil:
		return upgradev1.MachineConfigRefused, err.Error()
	case converged:
		return upgradev1.MachineConfigConverged, ""
	}
	return upgradev1.MachineConfigPending, ""
}
