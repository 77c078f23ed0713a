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
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const desiredField = "[upgrade.tollgate.dev/desired-talos-version]"

// targetsCluster is a Cluster whose control plane is TalosControlPlane
// alpha-cp.
func targetsCluster() *clusterv1.Cluster {
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}
	c.Spec.ControlPlaneRef = clusterv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "TalosControlPlane", Name: "alpha-cp"}
	return c
}

// targetsMachine is a Machine of the Cluster on Talos version and Kubernetes
// v1.35.0: of MachineDeployment md, a control-plane Machine when md is
// "control-plane", of neither when md is empty.
func targetsMachine(name, md, version string, annotations map[string]string) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: "alpha"}, Annotations: annotations}}
	switch md {
	case "control-plane":
		m.Labels[clusterv1.MachineControlPlaneLabel] = ""
	case "":
	default:
		m.Labels[clusterv1.MachineDeploymentNameLabel] = md
	}
	m.Status.NodeInfo = &corev1.NodeSystemInfo{OSImage: "Talos (" + version + ")", KubeletVersion: "v1.35.0"}
	return m
}

func targetsDeployment(name, declared string) clusterv1.MachineDeployment {
	md := clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if declared != "" {
		md.Spec.Template.Annotations = map[string]string{upgradev1.DesiredTalosVersionAnnotation: declared}
	}
	return md
}

// TestTargetOf asks where one Machine goes: the version its object declares
// wins for the Machines that object makes, the rollout's target applies to
// the others, and a declared version that cannot be read or reached keeps
// the Machine from starting, naming the object and the field.
func TestTargetOf(t *testing.T) {
	tests := []struct {
		name         string
		machine      *clusterv1.Machine
		controlPlane map[string]string
		mds          []clusterv1.MachineDeployment
		plan         func(*upgradev1.TalosUpgradeSpec)
		wantVersion  string
		wantSource   upgradev1.VersionSource
		wantField    string
		wantReason   string
		wantBlocked  []string
		wantWaiting  string
	}{{
		name:        "no object declares a version: the policy's target",
		machine:     targetsMachine("w-0", "md-a", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-a", "")},
		wantVersion: "v1.13.0", wantSource: upgradev1.VersionSourcePolicy, wantField: "TalosUpgrade alpha spec.talosVersion",
	}, {
		name:        "a MachineDeployment holds its Machines back: its version wins",
		machine:     targetsMachine("w-0", "md-gpu", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", " v1.12.4 "), targetsDeployment("md-a", "")},
		wantVersion: "v1.12.4", wantSource: upgradev1.VersionSourceObject, wantField: "MachineDeployment md-gpu spec.template.metadata.annotations" + desiredField,
	}, {
		name:        "another MachineDeployment's declaration is not this Machine's",
		machine:     targetsMachine("w-1", "md-a", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.12.4"), targetsDeployment("md-a", "")},
		wantVersion: "v1.13.0", wantSource: upgradev1.VersionSourcePolicy,
	}, {
		name:         "the control plane declares its own, on the control-plane object",
		machine:      targetsMachine("cp-0", "control-plane", "v1.12.4", nil),
		controlPlane: map[string]string{upgradev1.DesiredTalosVersionAnnotation: "1.13.0"},
		wantVersion:  "v1.13.0", wantSource: upgradev1.VersionSourceObject, wantField: "TalosControlPlane alpha-cp metadata.annotations" + desiredField,
	}, {
		name:        "a control-plane Machine's own annotation is not read: its object is the control plane",
		machine:     targetsMachine("cp-0", "control-plane", "v1.12.4", map[string]string{upgradev1.DesiredTalosVersionAnnotation: "v1.12.4"}),
		wantVersion: "v1.13.0", wantSource: upgradev1.VersionSourcePolicy,
	}, {
		name:        "a Machine that neither makes declares its own",
		machine:     targetsMachine("m-0", "", "v1.12.4", map[string]string{upgradev1.DesiredTalosVersionAnnotation: "v1.12.5"}),
		wantVersion: "v1.12.5", wantSource: upgradev1.VersionSourceObject, wantField: "Machine m-0 metadata.annotations" + desiredField,
	}, {
		name:        "a value that is not a Talos version: the Machine waits, the field named",
		machine:     targetsMachine("w-0", "md-gpu", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "latest")},
		wantVersion: "v1.13.0", wantSource: upgradev1.VersionSourcePolicy, wantReason: upgradev1.DesiredVersionInvalidReason,
		wantBlocked: []string{`MachineDeployment md-gpu spec.template.metadata.annotations` + desiredField + ` is "latest", not a Talos version`},
	}, {
		name:        "a downgrade without allowDowngrade",
		machine:     targetsMachine("w-0", "md-gpu", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.12.0")},
		wantVersion: "v1.12.0", wantSource: upgradev1.VersionSourceObject, wantReason: upgradev1.DesiredVersionUnreachableReason,
		wantBlocked: []string{"MachineDeployment md-gpu declares Talos v1.12.0", "Machine w-0 cannot reach", "allowDowngrade"},
	}, {
		name:        "a downgrade the policy allows",
		machine:     targetsMachine("w-0", "md-gpu", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.12.0")},
		plan:        func(s *upgradev1.TalosUpgradeSpec) { s.AllowDowngrade = true },
		wantVersion: "v1.12.0", wantSource: upgradev1.VersionSourceObject,
	}, {
		name:        "a skip of a minor with upgradePath Direct: a declared version is reached in one upgrade",
		machine:     targetsMachine("w-0", "md-gpu", "v1.9.5", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.13.0")},
		plan:        func(s *upgradev1.TalosUpgradeSpec) { s.UpgradePath = upgradev1.UpgradePathDirect },
		wantVersion: "v1.13.0", wantSource: upgradev1.VersionSourceObject, wantReason: upgradev1.DesiredVersionUnreachableReason,
		wantBlocked: []string{"from v1.9.5 to v1.13.0", "with upgradePath Direct a declared version is reached in one upgrade", "set upgradePath Auto"},
	}, {
		name:        "a skip of a minor with upgradePath Auto: the Machine waits for the preflight to plan the path",
		machine:     targetsMachine("w-0", "md-gpu", "v1.10.9", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.13.0")},
		plan:        func(s *upgradev1.TalosUpgradeSpec) { s.UpgradePath = upgradev1.UpgradePathAuto },
		wantVersion: "v1.13.0", wantSource: upgradev1.VersionSourceObject,
		wantWaiting: "MachineDeployment md-gpu declares Talos v1.13.0 (spec.template.metadata.annotations" + desiredField + "), which Machine w-0 reaches through an upgrade path: it waits for the preflight to plan it",
	}, {
		name:        "a version Tollgate does not know",
		machine:     targetsMachine("w-0", "md-gpu", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.99.0")},
		wantVersion: "v1.99.0", wantSource: upgradev1.VersionSourceObject, wantReason: upgradev1.DesiredVersionUnreachableReason,
		wantBlocked: []string{"v1.99.0"},
	}, {
		name:        "a rollout that also moves Kubernetes takes its Talos from the policy",
		machine:     targetsMachine("w-0", "md-gpu", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.12.4")},
		plan:        func(s *upgradev1.TalosUpgradeSpec) { s.KubernetesVersion = "v1.36.0" },
		wantVersion: "v1.12.4", wantSource: upgradev1.VersionSourceObject, wantReason: upgradev1.DesiredVersionUnreachableReason,
		wantBlocked: []string{"also moves Kubernetes to v1.36.0"},
	}, {
		name:        "a version whose installer image the preflight did not find",
		machine:     targetsMachine("w-0", "md-gpu", "v1.12.4", nil),
		mds:         []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.12.6")},
		wantVersion: "v1.12.6", wantSource: upgradev1.VersionSourceObject, wantReason: upgradev1.DesiredVersionUnreachableReason,
		wantBlocked: []string{"MachineDeployment md-gpu declares Talos v1.12.6", "whose installer image ghcr.io/siderolabs/installer:v1.12.6 was not found: MANIFEST_UNKNOWN"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}
			u.Spec.TalosVersion = "v1.13.0"
			u.Status.UnavailableVersions = []upgradev1.UnavailableVersion{{TalosVersion: "v1.12.6", Image: "ghcr.io/siderolabs/installer:v1.12.6", Message: "MANIFEST_UNKNOWN"}}
			if tt.plan != nil {
				tt.plan(&u.Spec)
			}
			cluster := targetsCluster()
			r := &Rollout{Upgrade: u, Cluster: cluster, Machines: map[string]*clusterv1.Machine{tt.machine.Name: tt.machine}, Declared: DeclaredBy(cluster, tt.controlPlane, tt.mds)}
			got := r.TargetOf(tt.machine)
			g.Expect(got.Version).To(Equal(tt.wantVersion))
			g.Expect(got.Source).To(Equal(tt.wantSource))
			if tt.wantField != "" {
				g.Expect(got.Field).To(Equal(tt.wantField))
			}
			g.Expect(got.Reason).To(Equal(tt.wantReason))
			g.Expect(got.Waiting).To(Equal(tt.wantWaiting))
			if len(tt.wantBlocked) == 0 {
				g.Expect(got.Blocked).To(BeEmpty())
				return
			}
			for _, s := range tt.wantBlocked {
				g.Expect(got.Blocked).To(ContainSubstring(s))
			}
		})
	}
}

// TestDeclaredTargets: status.targets lists, per object, where its Machines
// go and from where; the DesiredVersions condition names the objects whose
// Machines wait; a MachineDeployment that waits holds no group, so the
// next one starts; nothing is listed while no object declares a version.
func TestDeclaredTargets(t *testing.T) {
	g := NewWithT(t)
	cluster := targetsCluster()
	u := &upgradev1.TalosUpgrade{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alpha"}}
	u.Spec.TalosVersion = "v1.13.0"
	machines := map[string]*clusterv1.Machine{}
	for _, m := range []*clusterv1.Machine{
		targetsMachine("cp-0", "control-plane", "v1.13.0", nil),
		targetsMachine("a-0", "md-a", "v1.12.4", nil),
		targetsMachine("b-0", "md-b", "v1.12.4", nil),
		targetsMachine("gpu-0", "md-gpu", "v1.12.4", nil),
		targetsMachine("gpu-1", "md-gpu", "v1.12.4", nil),
	} {
		machines[m.Name] = m
	}
	r := &Rollout{Upgrade: u, Cluster: cluster, Machines: machines}
	targets, c := r.Targets()
	g.Expect(targets).To(BeNil())
	g.Expect(c).To(BeNil(), "no condition while no object declares a version")

	r.Declared = DeclaredBy(cluster, nil, []clusterv1.MachineDeployment{targetsDeployment("md-a", "v1.11.0"), targetsDeployment("md-gpu", "v1.12.4")})
	targets, c = r.Targets()
	g.Expect(targets).To(Equal([]upgradev1.TargetStatus{
		{Kind: "TalosControlPlane", Name: "alpha-cp", TalosVersion: "v1.13.0", Source: upgradev1.VersionSourcePolicy, Field: "TalosUpgrade alpha spec.talosVersion", Machines: 1, OnTarget: 1},
		{Kind: KindMachineDeployment, Name: "md-a", TalosVersion: "v1.11.0", Source: upgradev1.VersionSourceObject, Field: "MachineDeployment md-a spec.template.metadata.annotations" + desiredField, Machines: 1,
			Message: "MachineDeployment md-a declares Talos v1.11.0 (spec.template.metadata.annotations" + desiredField + "), which Machine a-0 cannot reach: downgrade not allowed: v1.11.0 is older than the running v1.12.4; set allowDowngrade to downgrade"},
		{Kind: KindMachineDeployment, Name: "md-b", TalosVersion: "v1.13.0", Source: upgradev1.VersionSourcePolicy, Field: "TalosUpgrade alpha spec.talosVersion", Machines: 1},
		{Kind: KindMachineDeployment, Name: "md-gpu", TalosVersion: "v1.12.4", Source: upgradev1.VersionSourceObject, Field: "MachineDeployment md-gpu spec.template.metadata.annotations" + desiredField, Machines: 2, OnTarget: 2},
	}))
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(upgradev1.DesiredVersionUnreachableReason))
	g.Expect(c.Message).To(And(ContainSubstring("the rest of the Cluster goes on"), ContainSubstring("MachineDeployment md-a declares Talos v1.11.0")))

	// The control plane is done; md-a waits for its object and holds no
	// group: md-b starts.
	u.Status.Machines = []upgradev1.MachineUpgradeStatus{
		record("cp-0", "control-plane", upgradev1.MachinePhaseCompleted),
		record("a-0", "md/md-a", upgradev1.MachinePhasePending),
		record("b-0", "md/md-b", upgradev1.MachinePhasePending),
	}
	u.Status.Machines[1].Message = "waits for its object"
	r.Reachable, r.Nodes = true, map[string]NodeState{}
	for _, st := range u.Status.Machines {
		r.Nodes[st.Node] = NodeUp
	}
	starting, _ := r.NextCandidates()
	g.Expect(starting).To(HaveLen(1))
	g.Expect(starting[0].Machine).To(Equal("b-0"))

	r.Declared = DeclaredBy(cluster, nil, []clusterv1.MachineDeployment{targetsDeployment("md-gpu", "v1.12.4")})
	_, c = r.Targets()
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(upgradev1.DesiredVersionsReachableReason))
}
