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

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DesiredTalosVersionAnnotation is where a Cluster's own CAPI objects say
// which Talos version the Machines they make should run, for example
// "v1.13.0":
//
//   - a MachineDeployment, in spec.template.metadata.annotations: no rollout
//     field (CAPI copies the template's annotations in place to the
//     MachineDeployment's MachineSets and their Machines);
//   - the control plane, in the control-plane object's own
//     metadata.annotations (a TalosControlPlane has no metadata for its
//     Machines, and an annotation of its own is no rollout field);
//   - a Machine that neither makes, in its own metadata.annotations.
//
// A version an object declares wins over the rollout's policy target for
// the Machines the object makes; the policy target applies to the others,
// and the policy keeps the gates. It says what the Machines should run, not
// what a template boots: that is the upgrade.tollgate.dev/talos-version
// annotation of an InfraMachine template whose image is opaque.
const DesiredTalosVersionAnnotation = "upgrade.tollgate.dev/desired-talos-version"

// DesiredVersions condition type and reasons.
const (
	// DesiredVersionsCondition is True when every Talos version the
	// Cluster's objects declare (DesiredTalosVersionAnnotation) can be
	// reached by the Machines they make. It is False when one cannot be
	// read or reached, naming the object and the field: no Machine that
	// object makes starts, and the rest of the Cluster goes on. It is
	// absent while no object declares a version.
	DesiredVersionsCondition = "DesiredVersions"

	// DesiredVersionsReachableReason surfaces when every declared version
	// can be reached.
	DesiredVersionsReachableReason = "Reachable"

	// DesiredVersionUnreachableReason surfaces when a declared version
	// cannot be reached from what its Machines run: a version Tollgate does
	// not know, a pre-release not acknowledged, a downgrade without
	// allowDowngrade, a step Talos does not take in one upgrade, or a Talos
	// version that does not run the Cluster's Kubernetes version.
	DesiredVersionUnreachableReason = "Unreachable"

	// DesiredVersionInvalidReason surfaces when an object's
	// DesiredTalosVersionAnnotation is not a Talos version.
	DesiredVersionInvalidReason = "InvalidVersion"
)

// VersionSource says where the Talos version a part of a Cluster goes to
// was written.
// +kubebuilder:validation:Enum=Object;Policy
type VersionSource string

const (
	// VersionSourceObject is the DesiredTalosVersionAnnotation of the
	// Cluster's object that makes the Machines.
	VersionSourceObject VersionSource = "Object"
	// VersionSourcePolicy is the rollout's target: its policy's
	// talosVersion, the release it follows, or the hop of its upgrade path
	// the rollout is on.
	VersionSourcePolicy VersionSource = "Policy"
)

// TargetStatus is where the Machines of one object of a Cluster (its
// control plane, a MachineDeployment, or a Machine that neither makes) go,
// and where that version was written.
type TargetStatus struct {
	// kind is the kind of the object that makes the Machines: the kind of
	// the control plane (for example TalosControlPlane), MachineDeployment,
	// or Machine for a Machine that neither makes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// name is the name of the object, in the Cluster's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// talosVersion is the version its Machines end on; empty when the
	// object declares a value that is not a Talos version.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TalosVersion string `json:"talosVersion,omitempty"`

	// hop is the version its Machines go to now, on the upgrade path to
	// talosVersion (spec.upgradePath Auto); empty when they go straight
	// to talosVersion.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Hop string `json:"hop,omitempty"`

	// source says where talosVersion was written: the object's
	// upgrade.tollgate.dev/desired-talos-version annotation, or the
	// rollout's policy target.
	// +required
	Source VersionSource `json:"source"`

	// field names the object and field talosVersion was read from, for
	// example "MachineDeployment alpha-gpu
	// spec.template.metadata.annotations[upgrade.tollgate.dev/desired-talos-version]"
	// or "TalosUpgrade alpha spec.talosVersion".
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Field string `json:"field,omitempty"`

	// machines is the number of its Machines in the rollout.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Machines int32 `json:"machines,omitempty"`

	// onTarget is the number of its Machines that run talosVersion.
	// +kubebuilder:validation:Minimum=0
	// +optional
	OnTarget int32 `json:"onTarget,omitempty"`

	// message says why its Machines wait when talosVersion cannot be read
	// or reached; empty otherwise.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// UnavailableVersion is a Talos version an object of the Cluster declares
// whose installer image the preflight did not find: the Machines of that
// object do not start, the rest of the Cluster goes on, and the image is
// looked for again every 30 seconds.
type UnavailableVersion struct {
	// talosVersion is the declared version.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	TalosVersion string `json:"talosVersion"`

	// image is the installer image looked for.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// message says why it is not available.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// lastCheckTime is when the image was last looked for.
	// +required
	LastCheckTime metav1.Time `json:"lastCheckTime"`
}

// DeclaredPathStatus is the upgrade path to the Talos version an object of
// the Cluster declares, for its Machines that cannot reach it in one
// upgrade (spec.upgradePath Auto): the latest patch of every minor in
// between, as for the rollout's own path. The object's Machines go through
// its hops together: every one of them runs a hop before any goes to the
// next.
type DeclaredPathStatus struct {
	// kind is the kind of the object that declares the version.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// name is the name of the object, in the Cluster's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// talosVersion is the version the object declares, that the path
	// ends on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	TalosVersion string `json:"talosVersion"`

	// from is the oldest version its Machines ran when the path was
	// planned: a Machine that joins on an older one has the path planned
	// again.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	From string `json:"from"`

	// hops are the versions its Machines go through, in order,
	// talosVersion last; empty when no path was found (message says why).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	Hops []string `json:"hops,omitempty"`

	// message says why no path was found; empty when one was. The
	// preflight looks for a path again 30 seconds after planTime.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// planTime is when the path was planned.
	// +required
	PlanTime metav1.Time `json:"planTime"`
}
