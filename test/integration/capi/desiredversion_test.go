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

package capi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// deploymentState is what CAPI made for a MachineDeployment: its
// MachineSets and Machines, by name, with their UIDs.
type deploymentState struct {
	md          client.ObjectKey
	machineSets map[string]types.UID
	machines    map[string]types.UID
}

// stateOf reads what CAPI made for the MachineDeployment md.
func (w *world) stateOf(ctx context.Context, g Gomega, md *clusterv1.MachineDeployment) deploymentState {
	s := deploymentState{md: client.ObjectKeyFromObject(md), machineSets: map[string]types.UID{}, machines: map[string]types.UID{}}
	owned := client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md.Name}
	machineSets := &clusterv1.MachineSetList{}
	g.Expect(w.c.List(ctx, machineSets, client.InNamespace(w.ns), owned)).To(Succeed())
	for _, ms := range machineSets.Items {
		s.machineSets[ms.Name] = ms.UID
	}
	machines := &clusterv1.MachineList{}
	g.Expect(w.c.List(ctx, machines, client.InNamespace(w.ns), owned)).To(Succeed())
	for _, m := range machines.Items {
		s.machines[m.Name] = m.UID
	}
	return s
}

// declareTalosVersion writes version in the MachineDeployment md's
// spec.template.metadata.annotations, as a user does; "" removes it.
func (w *world) declareTalosVersion(ctx context.Context, g Gomega, md *clusterv1.MachineDeployment, version string) {
	current := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(md), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	if version == "" {
		delete(current.Spec.Template.Annotations, upgradev1.DesiredTalosVersionAnnotation)
	} else {
		if current.Spec.Template.Annotations == nil {
			current.Spec.Template.Annotations = map[string]string{}
		}
		current.Spec.Template.Annotations[upgradev1.DesiredTalosVersionAnnotation] = version
	}
	g.Expect(w.c.Patch(ctx, current, patch)).To(Succeed())
}

// declares checks that the MachineDeployment of before is still made of
// the MachineSets and Machines of before, none deleting, none replaced;
// that CAPI has carried the desired Talos version (version, or none when
// "") from the MachineDeployment's template into its MachineSet's template
// and onto every Machine, its InfraMachine and its BootstrapConfig; and
// that CAPI counts every Machine up to date and nothing rolling out.
func (w *world) declares(ctx context.Context, g Gomega, before deploymentState, version string) {
	hasVersion := HaveKeyWithValue(upgradev1.DesiredTalosVersionAnnotation, version)
	if version == "" {
		hasVersion = Not(HaveKey(upgradev1.DesiredTalosVersionAnnotation))
	}
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, before.md, md)).To(Succeed())
	now := w.stateOf(ctx, g, md)
	g.Expect(now.machineSets).To(Equal(before.machineSets), "MachineDeployment %s has the same MachineSets: no new one, none replaced", md.Name)
	g.Expect(now.machines).To(Equal(before.machines), "MachineDeployment %s has the same Machines: none replaced", md.Name)

	// The MachineDeployment observed its last change and says so.
	replicas := int32(len(before.machines))
	g.Expect(md.Status.ObservedGeneration).To(Equal(md.Generation), "MachineDeployment %s observed generation %d", md.Name, md.Generation)
	g.Expect(md.Status.Replicas).To(HaveValue(Equal(replicas)))
	g.Expect(md.Status.UpToDateReplicas).To(HaveValue(Equal(replicas)), "MachineDeployment %s counts every Machine up to date", md.Name)
	rollingOut := conditions.Get(md, clusterv1.MachineDeploymentRollingOutCondition)
	g.Expect(rollingOut).NotTo(BeNil())
	g.Expect(rollingOut.Status).To(Equal(metav1.ConditionFalse), "MachineDeployment %s RollingOut: %s %s", md.Name, rollingOut.Reason, rollingOut.Message)

	// The MachineSet carries it in its template, where its Machines get
	// theirs; its own annotations come from the MachineDeployment's own.
	for name := range before.machineSets {
		ms := &clusterv1.MachineSet{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, ms)).To(Succeed())
		g.Expect(ms.DeletionTimestamp.IsZero()).To(BeTrue(), "MachineSet %s is not deleting", name)
		g.Expect(ms.Spec.Template.Annotations).To(hasVersion, "MachineSet %s spec.template.metadata.annotations", name)
		g.Expect(ms.Annotations).NotTo(HaveKey(upgradev1.DesiredTalosVersionAnnotation), "MachineSet %s metadata.annotations", name)
		g.Expect(ms.Status.ObservedGeneration).To(Equal(ms.Generation), "MachineSet %s observed generation %d", name, ms.Generation)
	}

	for name := range before.machines {
		m := &clusterv1.Machine{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m)).To(Succeed())
		g.Expect(m.DeletionTimestamp.IsZero()).To(BeTrue(), "Machine %s is not deleting", name)
		g.Expect(m.Annotations).To(hasVersion, "Machine %s metadata.annotations", name)
		g.Expect(conditions.IsTrue(m, clusterv1.MachineUpToDateCondition)).To(BeTrue(), "Machine %s UpToDate: %v", name, conditions.Get(m, clusterv1.MachineUpToDateCondition))
		for _, ref := range []clusterv1.ContractVersionedObjectReference{m.Spec.InfrastructureRef, m.Spec.Bootstrap.ConfigRef} {
			g.Expect(w.annotationsOf(ctx, g, ref)).To(hasVersion, "%s %s of Machine %s", ref.Kind, ref.Name, name)
		}
	}
}

// annotationsOf returns the annotations of the object ref names, in the
// world's namespace.
func (w *world) annotationsOf(ctx context.Context, g Gomega, ref clusterv1.ContractVersionedObjectReference) map[string]string {
	mapping, err := w.c.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	g.Expect(err).NotTo(HaveOccurred())
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: ref.Name}, obj)).To(Succeed())
	return obj.GetAnnotations()
}

// TestDesiredVersionAnnotationPropagatesInPlaceWithCAPICore proves with
// CAPI core v1.14, and no Tollgate, what issue 41 builds on: a desired
// Talos version written in a MachineDeployment's
// spec.template.metadata.annotations is no rollout trigger, and CAPI
// carries it in place onto the Machines it has, and takes it off when it
// is removed.
//
// What CAPI does, in sigs.k8s.io/cluster-api@v1.14.2:
//   - core/reconcilers/machinedeployment/mdutil/util.go:
//     MachineTemplateDeepCopyRolloutFields drops the template's labels and
//     annotations before MachineTemplateUpToDate compares a MachineSet's
//     template with the MachineDeployment's (only version, bootstrap,
//     infrastructureRef and failureDomain count), so
//     FindNewAndOldMachineSets keeps the existing MachineSet as the new one
//     and makes none;
//   - core/reconcilers/machinedeployment/machinedeployment_rollout_planner.go:
//     computeDesiredMS copies the MachineDeployment's
//     spec.template.metadata into the MachineSet's spec.template.metadata
//     (the MachineSet's own annotations come from the MachineDeployment's
//     own), applied with server-side apply as capi-machinedeployment, so a
//     removed annotation leaves the MachineSet too;
//   - core/reconcilers/machineset/machineset_controller.go: syncMachines
//     applies computeDesiredMachine to every Machine not deleting, whose
//     annotations are machineAnnotationsFromMachineSet (the MachineSet's
//     spec.template.metadata.annotations), as capi-machineset, and the same
//     labels and annotations onto each InfraMachine and BootstrapConfig
//     (updateLabelsAndAnnotations, as capi-machineset-metadata); an
//     annotation CAPI stops applying is removed, other writers' annotations
//     (Tollgate's holds) are kept;
//   - core/reconcilers/machine/machine_controller_status.go:
//     setUpToDateCondition compares the same rollout fields, so no Machine
//     goes out of date and the MachineDeployment's RollingOut condition
//     stays False.
//
// A second MachineDeployment of the Cluster, whose template declares
// nothing, is not touched: a version is declared per MachineDeployment.
// The control plane's half is in test/providers/talos
// (TestTalosControlPlaneHasNoMachineTemplateMetadata): the released
// TalosControlPlane has no spec.machineTemplate.metadata, so its version
// is written on the TalosControlPlane itself.
func TestDesiredVersionAnnotationPropagatesInPlaceWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w := startWorldWith(ctx, t, worldConfig{
		workers: 2, reboot: time.Second,
		deployments: []deploymentConfig{{name: "alpha-md-1", replicas: 1}},
	})
	w.running(ctx, 3, "v1.12.4")
	moved, held := w.md, w.deployments[0]

	// CAPI settles: one MachineSet per MachineDeployment, every Machine up
	// to date.
	var movedBefore, heldBefore deploymentState
	g.Eventually(func(g Gomega) {
		movedBefore, heldBefore = w.stateOf(ctx, g, moved), w.stateOf(ctx, g, held)
		g.Expect(movedBefore.machineSets).To(HaveLen(1))
		g.Expect(movedBefore.machines).To(HaveLen(2))
		g.Expect(heldBefore.machineSets).To(HaveLen(1))
		g.Expect(heldBefore.machines).To(HaveLen(1))
		w.declares(ctx, g, movedBefore, "")
		w.declares(ctx, g, heldBefore, "")
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return w.describeMachines(ctx) })
	t.Logf("MachineDeployment %s: MachineSets %v, Machines %v", moved.Name, movedBefore.machineSets, movedBefore.machines)

	for _, version := range []string{"v1.13.0", "v1.12.4", ""} {
		step := fmt.Sprintf("declaring %q", version)
		if version == "" {
			step = "removing the declared version"
		}
		start := time.Now()
		w.declareTalosVersion(ctx, g, moved, version)
		g.Eventually(func(g Gomega) {
			w.declares(ctx, g, movedBefore, version)
			w.declares(ctx, g, heldBefore, "")
		}, 3*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return step + ":" + w.describeMachines(ctx) })
		t.Logf("%s on MachineDeployment %s: CAPI carried it in place in %s", strings.ToUpper(step[:1])+step[1:], moved.Name, time.Since(start).Round(time.Millisecond))

		// And it stays so: no late MachineSet, no Machine replaced.
		g.Consistently(func(g Gomega) {
			w.declares(ctx, g, movedBefore, version)
			w.declares(ctx, g, heldBefore, "")
		}, 20*time.Second, time.Second).Should(Succeed(), func() string { return step + ":" + w.describeMachines(ctx) })
	}
}

// versionsOf returns the Talos version each Machine of the Cluster runs, as
// CAPI reports it (status.nodeInfo), by the MachineDeployment that made
// it ("control plane" for a control-plane Machine).
func (w *world) versionsOf(ctx context.Context, g Gomega) map[string]map[string]string {
	machines := &clusterv1.MachineList{}
	g.Expect(w.c.List(ctx, machines, client.InNamespace(w.ns))).To(Succeed())
	out := map[string]map[string]string{}
	for _, m := range machines.Items {
		owner := m.Labels[clusterv1.MachineDeploymentNameLabel]
		if owner == "" {
			owner = "control plane"
		}
		if out[owner] == nil {
			out[owner] = map[string]string{}
		}
		version := ""
		if m.Status.NodeInfo != nil {
			version = strings.TrimSuffix(strings.TrimPrefix(m.Status.NodeInfo.OSImage, "Talos ("), ")")
		}
		out[owner][m.Name] = version
	}
	return out
}

// allOn checks that every Machine of versions runs version.
func allOn(g Gomega, versions map[string]string, version, what string) {
	g.Expect(versions).NotTo(BeEmpty(), "%s has Machines", what)
	for name, v := range versions {
		g.Expect(v).To(Equal(version), "%s: Machine %s runs %s", what, name, version)
	}
}

// TestDesiredVersionsPerMachineDeploymentWithCAPICore: a policy names
// v1.13.0 for the Cluster and one MachineDeployment holds its Machines
// back on v1.12.4 by declaring it in its spec.template.metadata. Tollgate
// carries the control plane and the other MachineDeployment to v1.13.0
// through its gates and leaves the held one where it is, and says so in
// status.targets; no Machine is replaced and CAPI rolls nothing out. Then
// the held MachineDeployment is moved by editing its declared version
// alone: the finished rollout comes back to life for its Machines. A
// scale-up afterwards boots the template's v1.12.4, joins, and is carried
// to its MachineDeployment's v1.13.0; TemplatesOnTarget names the
// template to change. A declared value that is not a version keeps that
// MachineDeployment's Machines from starting, says which field, and lets
// the rest go on.
func TestDesiredVersionsPerMachineDeploymentWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w := startWorldWith(ctx, t, worldConfig{
		workers: 2, reboot: 200 * time.Millisecond,
		deployments: []deploymentConfig{{name: "alpha-md-1", replicas: 1}},
	})
	w.running(ctx, 3, "v1.12.4")
	held, moved := w.md, w.deployments[0]
	w.declareTalosVersion(ctx, g, held, "v1.12.4")
	var heldBefore, movedBefore deploymentState
	g.Eventually(func(g Gomega) {
		heldBefore, movedBefore = w.stateOf(ctx, g, held), w.stateOf(ctx, g, moved)
		w.declares(ctx, g, heldBefore, "v1.12.4")
		w.declares(ctx, g, movedBefore, "")
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return w.describeMachines(ctx) })

	w.optIn(ctx)
	defer startTollgate(ctx, t, w.mgmt)()
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "rollout %s: %s %v", u.Status.Phase, u.Status.BlockedBy, u.Status.Machines)
		versions := w.versionsOf(ctx, g)
		allOn(g, versions["control plane"], "v1.13.0", "the control plane")
		allOn(g, versions[moved.Name], "v1.13.0", moved.Name)
		allOn(g, versions[held.Name], "v1.12.4", held.Name)
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return w.describeMachines(ctx) })
	g.Eventually(func(g Gomega) {
		g.Expect(w.upgrade(ctx, g).Status.Targets).To(ContainElements(
			upgradev1.TargetStatus{Kind: "MachineDeployment", Name: held.Name, TalosVersion: "v1.12.4", Source: upgradev1.VersionSourceObject,
				Field: "MachineDeployment " + held.Name + " spec.template.metadata.annotations[" + upgradev1.DesiredTalosVersionAnnotation + "]", Machines: 2, OnTarget: 2},
			upgradev1.TargetStatus{Kind: "MachineDeployment", Name: moved.Name, TalosVersion: "v1.13.0", Source: upgradev1.VersionSourcePolicy,
				Field: "TalosUpgrade alpha spec.talosVersion", Machines: 1, OnTarget: 1},
		))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	u := w.upgrade(ctx, g)
	g.Expect(conditions.IsTrue(u, upgradev1.DesiredVersionsCondition)).To(BeTrue(), "DesiredVersions: %v", conditions.Get(u, upgradev1.DesiredVersionsCondition))
	g.Expect(conditions.Get(u, upgradev1.TemplatesOnTargetCondition).Message).NotTo(ContainSubstring(held.Name+" creates"), "the held MachineDeployment's template boots its declared version")
	w.declares(ctx, g, heldBefore, "v1.12.4")
	w.declares(ctx, g, movedBefore, "")

	// The held MachineDeployment moves by its own object alone.
	w.declareTalosVersion(ctx, g, held, "v1.13.0")
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "rollout %s: %s", u.Status.Phase, u.Status.BlockedBy)
		allOn(g, w.versionsOf(ctx, g)[held.Name], "v1.13.0", held.Name)
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return w.describeMachines(ctx) })
	w.declares(ctx, g, heldBefore, "v1.13.0")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(w.upgrade(ctx, g), upgradev1.TemplatesOnTargetCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("MachineDeployment " + held.Name + " creates Machines from TalosSimMachineTemplate " + held.Name + ", which boots v1.12.4"))
		g.Expect(c.Message).To(ContainSubstring("installs v1.13.0"))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())

	// A scale-up boots the template's v1.12.4 and is carried to v1.13.0.
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(held), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To[int32](3)
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		versions := w.versionsOf(ctx, g)[held.Name]
		g.Expect(versions).To(HaveLen(3))
		allOn(g, versions, "v1.13.0", held.Name)
		g.Expect(w.upgrade(ctx, g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return w.describeMachines(ctx) })

	// A value that is not a version: the Machines of that
	// MachineDeployment wait, the field is named, nothing is touched.
	w.declareTalosVersion(ctx, g, moved, "v1.13")
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		c := conditions.Get(u, upgradev1.DesiredVersionsCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(upgradev1.DesiredVersionInvalidReason))
		g.Expect(c.Message).To(ContainSubstring(`MachineDeployment ` + moved.Name + ` spec.template.metadata.annotations[` + upgradev1.DesiredTalosVersionAnnotation + `] is "v1.13", not a Talos version`))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		allOn(g, w.versionsOf(ctx, g)[moved.Name], "v1.13.0", moved.Name)
		for _, st := range w.upgrade(ctx, g).Status.Machines {
			g.Expect(st.Phase).To(BeElementOf(upgradev1.MachinePhasePending, upgradev1.MachinePhaseCompleted), "Machine %s is not disrupted", st.Machine)
		}
	}, 10*time.Second, time.Second).Should(Succeed())
	w.declares(ctx, g, movedBefore, "v1.13")
}

// TestDesiredVersionsWithoutPolicyTargetWithCAPICore: a policy that names no
// target keeps the gates and each Cluster's Talos, and the Cluster's
// objects say where their Machines go: the MachineDeployment that declares
// v1.13.0 moves, through the gates, and the control plane and the other
// MachineDeployment keep the v1.12.4 they run.
func TestDesiredVersionsWithoutPolicyTargetWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := startWorldWith(ctx, t, worldConfig{
		workers: 1, reboot: 200 * time.Millisecond,
		deployments: []deploymentConfig{{name: "alpha-md-1", replicas: 2}},
	})
	w.running(ctx, 3, "v1.12.4")
	kept, moved := w.md, w.deployments[0]
	w.declareTalosVersion(ctx, g, moved, "v1.13.0")
	w.optIn(ctx, func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TalosVersion = "" })
	defer startTollgate(ctx, t, w.mgmt)()
	g.Eventually(func(g Gomega) {
		u := w.upgrade(ctx, g)
		g.Expect(u.Spec.TalosVersion).To(Equal("v1.12.4"), "the rollout keeps the Talos the Cluster runs")
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "rollout %s: %s", u.Status.Phase, u.Status.BlockedBy)
		versions := w.versionsOf(ctx, g)
		allOn(g, versions[moved.Name], "v1.13.0", moved.Name)
		allOn(g, versions[kept.Name], "v1.12.4", kept.Name)
		allOn(g, versions["control plane"], "v1.12.4", "the control plane")
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return w.describeMachines(ctx) })
	policy := &upgradev1.TalosUpgradePolicy{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "to-1-13"}, policy)).To(Succeed())
	g.Expect(policy.TargetName()).To(Equal("the versions its Clusters' objects declare"))
}
