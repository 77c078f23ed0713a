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

package disruption

import (
	"fmt"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/plan"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file holds the part of a Kubernetes change the steps decide: what a
// record changes of its node's Kubernetes, and how the node is proven to
// run it.

// SameKubernetes reports whether a record's Kubernetes change is the one
// want asks: the same part and version, or none.
func SameKubernetes(have, want *upgradev1.MachineKubernetesStatus) bool {
	if have == nil || want == nil {
		return have == nil && want == nil
	}
	return have.Part == want.Part && talos.SameVersion(have.Version, want.Version)
}

// KubernetesRecord returns the Kubernetes part of a record that has not
// started: kept while it is the change the hop asks, else what the hop
// asks, its state unknown until the node is read.
func KubernetesRecord(cur, want *upgradev1.MachineKubernetesStatus) *upgradev1.MachineKubernetesStatus {
	if SameKubernetes(cur, want) {
		return cur
	}
	return want
}

// KubernetesPending reports whether a record still has a Kubernetes change
// to apply to its node's machine configuration.
func KubernetesPending(st *upgradev1.MachineUpgradeStatus) bool {
	k := st.Kubernetes
	return k != nil && (k.State == upgradev1.MachineConfigPending || k.State == upgradev1.MachineConfigUnknown)
}

// kubernetesProven decides, once the node is Ready, whether it runs the
// Kubernetes change of its record: the static Pods must be Ready on the
// version, or the Node must report the kubelet's, within rebootTimeout of
// the change. It returns a decision and false while the Machine waits or
// when it failed.
func kubernetesProven(w *Observation, st *upgradev1.MachineUpgradeStatus) (Decision, bool) {
	k := st.Kubernetes
	if k == nil || (k.State != upgradev1.MachineConfigApplied && k.State != upgradev1.MachineConfigPending) {
		return Decision{}, true
	}
	read := w.Kube
	switch {
	case read == nil:
		st.Message = "waiting to read what node " + st.Node + " runs"
		return Decision{Requeue: rebootPoll}, false
	case read.Err != nil:
		return Decision{Err: fmt.Errorf("reading what node %q runs: %w", st.Node, read.Err)}, false
	case read.Proven:
		k.State = upgradev1.MachineConfigConverged
		return Decision{}, true
	}
	timeout := durationOr(w.Spec.RebootTimeout, plan.DefaultRebootTimeout)
	since := st.PhaseStartTime
	if k.AppliedTime != nil {
		since = k.AppliedTime
	}
	deadline := w.Now.Add(timeout)
	if since != nil {
		deadline = since.Add(timeout)
	}
	if w.Now.After(deadline) {
		what := "its static Pods are not Ready on " + k.Version
		if k.Part == upgradev1.KubernetesPartKubelet {
			what = "its kubelet does not report " + k.Version
		}
		return Fail(w.Now, st, fmt.Sprintf("node %q: %s within rebootTimeout %s: %s", st.Node, what, timeout, read.Message)), false
	}
	st.Message = read.Message
	if k.Part == upgradev1.KubernetesPartKubelet {
		// The Node's watch brings the kubelet's version; the deadline
		// sends no event.
		return Decision{Requeue: atLeastASecond(deadline.Sub(w.Now) + time.Second)}, false
	}
	// The static Pods are read live, not watched: polled.
	return Decision{Requeue: min(staticPodPoll, deadline.Sub(w.Now)+time.Second)}, false
}

// staticPodPoll is how often a control-plane node whose components changed
// is read again until its static Pods run the new version: the rollout does
// not watch the workload's Pods, and only one control-plane node is read at
// a time.
const staticPodPoll = 500 * time.Millisecond

// kubernetesDone says what a Completed record changed of its node's
// Kubernetes, for its message and event; "" when nothing.
func kubernetesDone(st *upgradev1.MachineUpgradeStatus) string {
	k := st.Kubernetes
	if k == nil || k.State != upgradev1.MachineConfigConverged {
		return ""
	}
	if k.Part == upgradev1.KubernetesPartControlPlane {
		return "Kubernetes control plane " + k.Version
	}
	return "kubelet " + k.Version
}

// KeepsPodsRunning reports whether st's node is cordoned but not drained
// for its change: only its control-plane static Pods restart, or only its
// kubelet with kubelet.drain Never, and nothing of it reboots.
func KeepsPodsRunning(spec *upgradev1.TalosUpgradeSpec, st *upgradev1.MachineUpgradeStatus) bool {
	k := st.Kubernetes
	if st.Action != upgradev1.MachineActionKubernetes || k == nil || !RebootAnswered(st) ||
		(st.Config != nil && st.Config.State != upgradev1.MachineConfigConverged) {
		return false
	}
	return k.Part == upgradev1.KubernetesPartControlPlane || spec.Kubelet.Drain == upgradev1.KubeletDrainNever
}

// recordMachineVersion sets the spec.version of a Machine whose node's
// kubelet now runs its record's version, as CAPI's own in-place update
// does: the Machine says what its node runs. A TalosControlPlane, which
// asks for the same version (KubernetesVersions), then sees it up to date;
// CAPI judges a MachineDeployment's Machines by their MachineSet's
