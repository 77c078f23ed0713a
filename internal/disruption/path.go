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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// Path returns the path of the current targets, or nil: an Auto path, or
// the path of a rollout with a Kubernetes target, planned for its Talos and
// Kubernetes targets.
func (r *Rollout) Path() *upgradev1.UpgradePathStatus {
	p, spec := r.Upgrade.Status.Path, &r.Upgrade.Spec
	switch {
	case p == nil || len(p.Hops) == 0 || !talos.SameVersion(p.Target, spec.TalosVersion):
		return nil
	case spec.KubernetesVersion != "":
		if !talos.SameVersion(p.KubernetesTarget, spec.KubernetesVersion) {
			return nil
		}
	case spec.UpgradePath != upgradev1.UpgradePathAuto || p.KubernetesTarget != "":
		return nil
	}
	return p
}

// PathFrom returns the Talos versions an Auto path to the rollout's target
// starts from: those the pending Machines that go to it run (the policy's;
// those of an object that declares its version follow that object's path),
// but for the target itself. None: no Machine needs a path, and none is
// planned.
func (r *Rollout) PathFrom() []string {
	var from []string
	for _, st := range r.Upgrade.Status.Machines {
		m := r.Machines[st.Machine]
		if m == nil || st.Phase != upgradev1.MachinePhasePending || st.FromVersion == "" || talos.SameVersion(st.FromVersion, r.Upgrade.Spec.TalosVersion) {
			continue
		}
		if r.TargetOf(m).Source == upgradev1.VersionSourcePolicy {
			from = append(from, st.FromVersion)
		}
	}
	return from
}

// Target is the version the Machines are upgraded to now: the current hop
// of the path, or the spec's target.
func (r *Rollout) Target() string {
	if p := r.Path(); p != nil && int(p.Current) < len(p.Hops) {
		return p.Hops[p.Current].Version
	}
	return r.Upgrade.Spec.TalosVersion
}

// HopsLeft reports whether hops of the path remain after the current one.
func (r *Rollout) HopsLeft() bool {
	p := r.Path()
	return p != nil && int(p.Current) < len(p.Hops)-1
}

// PastHop reports whether a Machine on version is already at or beyond the
// current hop of the path (but not beyond the target): it skips the hop.
func (r *Rollout) PastHop(version string) bool {
	if r.Path() == nil || r.Upgrade.Spec.KubernetesVersion != "" {
		// A path with Kubernetes hops starts from a Cluster whose Machines
		// all run one Talos version (planVersions): none is past a hop.
		return false
	}
	toHop, err1 := talos.CompareVersions(version, r.Target())
	toTarget, err2 := talos.CompareVersions(version, r.Upgrade.Spec.TalosVersion)
	return err1 == nil && err2 == nil && toHop >= 0 && toTarget <= 0
}

// VerifiedMachines returns the Cluster's Machines not being deleted, each
// as its node was last verified: a Machine whose record completed a Talos
// version, or whose Pending record kept it (keepVerified), runs it, although
// its status.nodeInfo may not say so yet (it follows the Node, and CAPI
// writes it later). A Kubernetes target set mid-rollout is planned from
// what the nodes run.
func (r *Rollout) VerifiedMachines() []*clusterv1.Machine {
	verified := map[string]string{}
	for _, st := range r.Upgrade.Status.Machines {
		switch st.Phase {
		case upgradev1.MachinePhaseCompleted:
			verified[st.Machine] = st.TargetVersion
		case upgradev1.MachinePhasePending:
			verified[st.Machine] = st.FromVersion // Kept from its last record (keepVerified).
		}
	}
	machines := make([]*clusterv1.Machine, 0, len(r.Machines))
	for _, m := range r.Machines {
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if v := verified[m.Name]; v != "" && m.Status.NodeInfo != nil && !talos.SameVersion(talos.VersionFromOSImage(m.Status.NodeInfo.OSImage), v) {
			m = m.DeepCopy()
			m.Status.NodeInfo.OSImage = "Talos (" + v + ")"
		}
		machines = append(machines, m)
	}
	return machines
}

// Hop returns the current hop of the path, or nil.
func (r *Rollout) Hop() *upgradev1.UpgradeHop {
	if p := r.Path(); p != nil && int(p.Current) < len(p.Hops) {
		return &p.Hops[p.Current]
	}
	return nil
}

// KubernetesWant returns the Kubernetes change the current hop asks of m's
// node, nil when it asks none: the control plane's components on a
// control-plane node in a KubernetesControlPlane hop, the kubelet of every
// node in the others.
func (r *Rollout) KubernetesWant(m *clusterv1.Machine) *upgradev1.MachineKubernetesStatus {
	if r.Upgrade.Spec.CAPIDriven() {
		return r.handedOverKubelet(m)
	}
	h := r.Hop()
	if m == nil || h == nil || h.KubernetesVersion == "" {
		return nil
	}
	if h.Stage == upgradev1.HopStageKubernetesControlPlane {
		if !IsControlPlane(m) {
			return nil
		}
		return &upgradev1.MachineKubernetesStatus{Part: upgradev1.KubernetesPartControlPlane, Version: h.KubernetesVersion, State: upgradev1.MachineConfigUnknown}
	}
	return &upgradev1.MachineKubernetesStatus{Part: upgradev1.KubernetesPartKubelet, Version: h.KubernetesVersion, State: upgradev1.MachineConfigUnknown}
}

// handedOverKubelet returns the kubelet change of a worker Machine CAPI
// handed over for an in-place update, in a rollout whose target comes from
// CAPI: the version its spec.version asks for (which CAPI wrote before it
// called UpdateMachine); nil when it asks none. A node that runs it already
// settles without a change.
func (r *Rollout) handedOverKubelet(m *clusterv1.Machine) *upgradev1.MachineKubernetesStatus {
	if m == nil {
		return nil
	}
	h := r.Handovers[m.Name]
	if h == nil || h.KubernetesVersion == "" {
		return nil
	}
	return &upgradev1.MachineKubernetesStatus{Part: upgradev1.KubernetesPartKubelet, Version: h.KubernetesVersion, State: upgradev1.MachineConfigUnknown}
}

// ControlPlaneStage reports whether the current hop moves the Kubernetes
// control plane only: workers have nothing to do in it.
func (r *Rollout) ControlPlaneStage() bool {
	h := r.Hop()
	return h != nil && h.Stage == upgradev1.HopStageKubernetesControlPlane
}

// KubernetesChanged reports whether the Kubernetes change asked of m is
// another than its record's, which then starts again. In a rollout whose
// target comes from CAPI, a Machine CAPI no longer hands over (its update
// is done) keeps its record.
func (r *Rollout) KubernetesChanged(st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine) bool {
	spec := &r.Upgrade.Spec
	switch {
	case spec.CAPIDriven():
		if r.Handovers[m.Name] == nil {
			return false
		}
	case spec.KubernetesVersion != "" && r.Path() == nil:
		// A Kubernetes target not planned yet (set on a rollout that had
		// completed, say): a record of another one starts again, for the
		// preflight to plan the path, unless it is Pending already.
		return st.Phase != upgradev1.MachinePhasePending && (st.Kubernetes == nil || !talos.SameVersion(st.Kubernetes.Version, spec.KubernetesVersion))
	}
	return !SameKubernetes(st.Kubernetes, r.KubernetesWant(m))
}
