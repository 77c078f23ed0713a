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
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/talos"
	"github.com/tollgate-dev/tollgate/internal/talosimage"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	bootstrapv1 "github.com/tollgate-dev/tollgate/test/providers/talos/api/bootstrap/v1alpha3"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

// cloudTemplate is a TalosSimCloudMachineTemplate whose opaque image is
// built from installer, declaring the Talos version it boots when declared
// is not empty.
func cloudTemplate(namespace, name, installer, declared string) *infrav1.TalosSimCloudMachineTemplate {
	t := &infrav1.TalosSimCloudMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: infrav1.TalosSimCloudMachineTemplateSpec{Template: infrav1.TalosSimCloudMachineTemplateResource{Spec: infrav1.TalosSimCloudMachineSpec{
			ImageID: hosts.CloudImageID(installer),
		}}},
	}
	if declared != "" {
		t.Annotations = map[string]string{talosimage.VersionAnnotation: declared}
	}
	return t
}

// metalTemplate is a TalosSimMachineTemplate of image, declaring the Talos
// version it boots when declared is not empty.
func metalTemplate(namespace, name, image, declared string) *infrav1.TalosSimMachineTemplate {
	t := &infrav1.TalosSimMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       infrav1.TalosSimMachineTemplateSpec{Template: infrav1.TalosSimMachineTemplateResource{Spec: infrav1.TalosSimMachineSpec{Image: image}}},
	}
	if declared != "" {
		t.Annotations = map[string]string{talosimage.VersionAnnotation: declared}
	}
	return t
}

// pointWorkersAt creates template and points the MachineDeployment's
// infrastructureRef at it, as a user changes the image of a
// MachineDeployment.
func (w *world) pointWorkersAt(ctx context.Context, template client.Object, kind string) {
	w.t.Helper()
	g := NewWithT(w.t)
	g.Expect(w.c.Create(ctx, template)).To(Succeed())
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.InfrastructureRef.Kind = kind
	md.Spec.Template.Spec.InfrastructureRef.Name = template.GetName()
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
}

// setWorkersVersion sets the MachineDeployment's Kubernetes version.
func (w *world) setWorkersVersion(ctx context.Context, version string) {
	w.t.Helper()
	g := NewWithT(w.t)
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.Version = version
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
}

// neverFailedInPlace fails g when a Machine's in-place update failed: what
// an answer that claims a change Tollgate will not finish leaves.
func (w *world) neverFailedInPlace(ctx context.Context, g Gomega) {
	list := &clusterv1.MachineList{}
	g.Expect(w.c.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
	for i := range list.Items {
		if c := conditions.Get(&list.Items[i], clusterv1.MachineUpdatingCondition); c != nil {
			g.Expect(c.Reason).NotTo(Equal(clusterv1.MachineInPlaceUpdateFailedReason), "Machine %s: %s", list.Items[i].Name, c.Message)
		}
	}
}

// replacedThroughTheGate waits until every worker of before is gone and as
// many new workers run version, checking all along that no in-place update
// failed, and that each old worker's removal went through Tollgate's gate:
// its preRemoval hook ran (driver, removalGate).
func (w *world) replacedThroughTheGate(ctx context.Context, driver *jobdriver.Driver, before map[string]types.UID, version string) []string {
	w.t.Helper()
	g := NewWithT(w.t)
	var workers []string
	g.Eventually(func(g Gomega) {
		w.neverFailedInPlace(ctx, g)
		workers = w.workerNames(ctx, g)
		g.Expect(workers).To(HaveLen(len(before)), "%s", w.describeMachines(ctx))
		for _, name := range workers {
			g.Expect(before).NotTo(HaveKey(name), "Machine %s was replaced", name)
			m := &clusterv1.Machine{}
			g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m)).To(Succeed())
			g.Expect(m.Status.NodeInfo).NotTo(BeNil())
			g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage(version)), "Machine %s", name)
			g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.UpdateInProgressAnnotation), "Machine %s is not handed over", name)
		}
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed())
	runs := gateRuns(driver)
	for name := range before {
		g.Expect(runs).To(HaveKey(name), "the removal of Machine %s went through Tollgate's gate (its preRemoval hook ran)", name)
	}
	return workers
}

// guarded waits until Tollgate's deletion hook is on every Machine of the
// Cluster: before that, CAPI deletes a Machine without asking Tollgate, and
// no removal of this test may go by the gate.
func (w *world) guarded(ctx context.Context) {
	w.t.Helper()
	NewWithT(w.t).Eventually(func(g Gomega) {
		machines := w.machines(ctx, g)
		g.Expect(machines).NotTo(BeEmpty())
		for _, m := range machines {
			g.Expect(m.Annotations).To(HaveKey(hooks.DeletionHookAnnotation), "Machine %s", m.Name)
		}
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
}

// removalGateHook is the preRemoval hook of the policies of these tests,
// whose Jobs the driver records: the proof that a removal went through the
// gate.
const removalGateHook = "drain-check"

// removalGate starts a Job driver on the workload cluster (the first run of
// the preRemoval hook takes firstRun), and returns it with what adds the
// hook to a policy.
func (w *world) removalGate(ctx context.Context, firstRun time.Duration) (*jobdriver.Driver, func(*upgradev1.TalosUpgradePolicy)) {
	w.t.Helper()
	driver := jobdriver.New(w.workload.Client, jobdriver.Options{Delay: 100 * time.Millisecond})
	if firstRun > 0 {
		driver.Script(func(job *batchv1.Job) bool {
			return strings.HasPrefix(job.Name, "tollgate-hook-"+removalGateHook+"-preremoval-")
		}, jobdriver.Outcome{Delay: ptr.To(firstRun)})
	}
	driverCtx, stopDriver := context.WithCancel(ctx)
	w.t.Cleanup(stopDriver)
	driver.Start(driverCtx)
	return driver, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Hooks = append(p.Spec.Hooks, upgradev1.ActionHook{Name: removalGateHook, Point: upgradev1.HookPointPreRemoval, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "example.com/drain-check:v1", Command: []string{"check"}}},
		}}}}})
	}
}

// gateRuns counts the runs of the preRemoval hook of removalGate, by
// Machine.
func gateRuns(driver *jobdriver.Driver) map[string]int {
	runs := map[string]int{}
	for _, j := range driver.SeenMatching(jobdriver.NamePrefix("tollgate-hook-" + removalGateHook + "-preremoval-")) {
		runs[j.Env["main"]["TOLLGATE_MACHINE"]]++
	}
	return runs
}

// updatedInPlace waits until every worker of before runs version on the
// same Machine, no Machine handed over any more, and no in-place update
// failed.
func (w *world) updatedInPlace(ctx context.Context, before map[string]types.UID, version string) {
	w.t.Helper()
	NewWithT(w.t).Eventually(func(g Gomega) {
		w.neverFailedInPlace(ctx, g)
		after := w.machineUIDs(ctx, g)
		for name, uid := range before {
			g.Expect(after).To(HaveKeyWithValue(name, uid), "Machine %s was updated in place, not replaced; %s", name, w.describeMachines(ctx))
			m := &clusterv1.Machine{}
			g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m)).To(Succeed())
			g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.UpdateInProgressAnnotation), "Machine %s; %s", name, w.describeMachines(ctx))
			g.Expect(m.Status.NodeInfo).NotTo(BeNil())
			g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage(version)), "Machine %s", name)
		}
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed())
}

// workerUIDs are the UIDs of the MachineDeployments' Machines.
func (w *world) workerUIDs(ctx context.Context, g Gomega) map[string]types.UID {
	all := w.machineUIDs(ctx, g)
	out := map[string]types.UID{}
	for _, name := range w.workerNames(ctx, g) {
		out[name] = all[name]
	}
	return out
}

// TestCloudProviderWithCAPICore runs CAPI core, Tollgate's extension and
// the cloud family of infrastructure providers (TalosSimCloudMachine: an
// opaque image, a spec no existing machine may change, as AWS's): a
// Kubernetes version change of the workers goes in place with it (nothing
// of the InfraMachine changes), while a new image is answered "no" (the
// provider refuses CAPI's write of it: a dry-run), which the rollout's
// InPlaceUpdatesReady condition says before CAPI deletes a Machine, and
// CAPI replaces the Machines through Tollgate's removal gate: no Machine is
// left handed over, none fails in place.
func TestCloudProviderWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	w := startWorldWith(ctx, t, worldConfig{workers: 2, reboot: 500 * time.Millisecond, mutate: []func(*clusterv1.MachineDeployment){inPlace}, cloud: true, controlPlaneVersion: "v1.36.0"})
	w.running(ctx, 2, "v1.12.4")
	ext := w.registerExtension(ctx)
	// A preRemoval hook whose first run takes 30s: what CAPI deletes is
	// held that long.
	driver, gate := w.removalGate(ctx, 30*time.Second)
	w.optIn(ctx, capiDriven, gate, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Installer = upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceGHCR}
	})
	defer startTollgate(ctx, t, w.mgmt, ext.options)()
	w.served(ctx)
	w.guarded(ctx)
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())

	// The next Kubernetes minor: in place, with a provider that refuses
	// any change of an existing machine's spec.
	before := w.workerUIDs(ctx, g)
	w.setWorkersVersion(ctx, "v1.36.0")
	g.Eventually(func(g Gomega) {
		w.neverFailedInPlace(ctx, g)
		for name, uid := range before {
			m := &clusterv1.Machine{}
			g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m)).To(Succeed())
			g.Expect(m.UID).To(Equal(uid), "Machine %s updated in place", name)
			g.Expect(m.Annotations).NotTo(HaveKey(clusterv1.UpdateInProgressAnnotation), "Machine %s; %s", name, w.describeMachines(ctx))
			n := &corev1.Node{}
			g.Expect(w.workload.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, n)).To(Succeed())
			g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal("v1.36.0"), "node %s", n.Name)
		}
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed())
	for name := range before {
		g.Expect(upgradeCalls(sim, name)).To(BeZero(), "node %s got no install", name)
	}

	// A new image: the provider refuses to change an existing machine's;
	// Tollgate says "no", the rollout's InPlaceUpdatesReady says CAPI
	// replaces the Machines and why while the first removal is still held
	// (its preRemoval hook runs 30s), and CAPI replaces them through the
	// removal gate.
	w.pointWorkersAt(ctx, cloudTemplate(w.ns, w.name+"-md-0-v1-13", "ghcr.io/siderolabs/installer:v1.13.0", "v1.13.0"), "TalosSimCloudMachineTemplate")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(w.upgrade(ctx, g), upgradev1.InPlaceUpdatesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(upgradev1.ReplacementAheadReason))
		g.Expect(c.Message).To(ContainSubstring("the provider refuses the change of TalosSimCloudMachine"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	for _, m := range w.machines(ctx, g) {
		if _, old := before[m.Name]; old {
			g.Expect(hooks.HasDeletionHook(&m)).To(BeTrue(), "Machine %s is not released before the forecast", m.Name)
		}
	}
	w.replacedThroughTheGate(ctx, driver, before, "v1.13.0")
}

// TestMetalProviderWithCAPICore runs CAPI core, Tollgate's extension and
// the mutable family of infrastructure providers (TalosSimMachine: an image
// that may change, as Metal3's, Proxmox's and Nutanix's): an opaque image
// whose template declares its Talos version goes in place, and so does an
// Image Factory URL that names its version; an opaque image nothing
// declares is answered "no", and CAPI replaces the Machines.
func TestMetalProviderWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	w := startWorldWith(ctx, t, worldConfig{workers: 2, reboot: 500 * time.Millisecond, mutate: []func(*clusterv1.MachineDeployment){inPlace},
		workerImage: "https://factory.talos.dev/image/" + talos.DefaultSchematicID + "/v1.12.4/metal-amd64.raw.zst"})
	w.running(ctx, 2, "v1.12.4")
	ext := w.registerExtension(ctx)
	driver, gate := w.removalGate(ctx, 0)
	w.optIn(ctx, capiDriven, gate, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.Installer = upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceFactory, Platform: "metal"}
	})
	defer startTollgate(ctx, t, w.mgmt, ext.options)()
	w.served(ctx)
	w.guarded(ctx)
	before := w.workerUIDs(ctx, g)

	// A template's opaque image (a VM template ID), declared v1.12.5.
	w.pointWorkersAt(ctx, metalTemplate(w.ns, w.name+"-md-0-opaque", hosts.CloudImageID("factory.talos.dev/metal-installer/"+talos.DefaultSchematicID+":v1.12.5"), "v1.12.5"), "TalosSimMachineTemplate")
	w.updatedInPlace(ctx, before, "v1.12.5")

	// An Image Factory URL that names its version.
	w.pointWorkersAt(ctx, metalTemplate(w.ns, w.name+"-md-0-url", "https://factory.talos.dev/image/"+talos.DefaultSchematicID+"/v1.13.0/metal-amd64.raw.zst", ""), "TalosSimMachineTemplate")
	w.updatedInPlace(ctx, before, "v1.13.0")

	// An opaque image nothing declares: "no", and CAPI replaces.
	w.pointWorkersAt(ctx, metalTemplate(w.ns, w.name+"-md-0-unknown", hosts.CloudImageID("factory.talos.dev/metal-installer/"+talos.DefaultSchematicID+":v1.13.0"), ""), "TalosSimMachineTemplate")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(w.upgrade(ctx, g), upgradev1.InPlaceUpdatesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("names no Talos version (an opaque image); write the version its template boots in the template's annotation " + talosimage.VersionAnnotation))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	w.replacedThroughTheGate(ctx, driver, before, "v1.13.0")
}

// TestInPlaceNotClaimedWithCAPICore: what Tollgate would not finish is
// answered "no", and CAPI replaces the Machines instead of waiting on
// Tollgate for good: an image from outside the policy's repository, a new
// TalosConfigTemplate (the Talos bootstrap provider refuses any change of a
// TalosConfig's spec, 400), and a change of a Cluster no policy selects in
// a namespace that opts in. No Machine is left handed over, none fails in
// place.
func TestInPlaceNotClaimedWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 2, 500*time.Millisecond, inPlace)
	w.running(ctx, 2, "v1.12.4")
	ext := w.registerExtension(ctx)
	driver, gate := w.removalGate(ctx, 0)
	w.optIn(ctx, capiDriven, gate)
	defer startTollgate(ctx, t, w.mgmt, ext.options)()
	w.served(ctx)
	w.guarded(ctx)

	// An image from a mirror the policy does not install from.
	before := w.workerUIDs(ctx, g)
	w.pointWorkersAt(ctx, metalTemplate(w.ns, w.name+"-md-0-mirror", "mirror.example/siderolabs/installer:v1.13.0", ""), "TalosSimMachineTemplate")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(w.upgrade(ctx, g), upgradev1.InPlaceUpdatesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring(`image "mirror.example/siderolabs/installer:v1.13.0" is not from the policy's installer`))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	before = mapOf(w.replacedThroughTheGate(ctx, driver, before, "v1.13.0"), w.workerUIDs(ctx, g))

	// A new TalosConfigTemplate, under RollingUpdate.
	g.Expect(w.c.Create(ctx, &bootstrapv1.TalosConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name + "-md-0-patched"},
		Spec: bootstrapv1.TalosConfigTemplateSpec{Template: bootstrapv1.TalosConfigTemplateResource{Spec: bootstrapv1.TalosConfigSpec{
			GenerateType: "worker", TalosVersion: "v1.12",
			StrategicPatches: []string{"machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n"},
		}}},
	})).To(Succeed())
	md := &clusterv1.MachineDeployment{}
	g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.Bootstrap.ConfigRef.Name = w.name + "-md-0-patched"
	g.Expect(w.c.Patch(ctx, md, patch)).To(Succeed())
	before = mapOf(w.replacedThroughTheGate(ctx, driver, before, "v1.13.0"), w.workerUIDs(ctx, g))

	// The Cluster leaves its policy; its namespace still opts in.
	cluster := &clusterv1.Cluster{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, cluster)).To(Succeed())
	cpatch := client.MergeFrom(cluster.DeepCopy())
	delete(cluster.Labels, upgradev1.PolicyLabel)
	g.Expect(w.c.Patch(ctx, cluster, cpatch)).To(Succeed())
	w.pointWorkersAt(ctx, metalTemplate(w.ns, w.name+"-md-0-v1-13-0-again", "ghcr.io/siderolabs/installer:v1.13.0", "v1.13.0"), "TalosSimMachineTemplate")
	g.Eventually(func(g Gomega) {
		w.neverFailedInPlace(ctx, g)
		workers := w.workerNames(ctx, g)
		g.Expect(workers).To(HaveLen(2))
		for _, name := range workers {
			g.Expect(before).NotTo(HaveKey(name), "Machine %s was replaced; %s", name, w.describeMachines(ctx))
		}
	}, 5*time.Minute, 500*time.Millisecond).Should(Succeed())
}

// mapOf is names with their UIDs from uids.
func mapOf(names []string, uids map[string]types.UID) map[string]types.UID {
	out := map[string]types.UID{}
	for _, n := range names {
		out[n] = uids[n]
	}
	return out
}

// TestPolicyTargetWithExtensionCAPICore: a policy that names its own target
// (targetFrom: Policy) rolls its Cluster's workers to v1.13.0; then the
// MachineDeployment's template is changed to that version, as a user makes
// the templates tell the truth. CAPI hands the workers to Tollgate, whose
// rollout verified them already: each is answered done, although the
// workers' spec.version asks for a kubelet the policy never moved (it runs
// it), and nothing is installed again.
func TestPolicyTargetWithExtensionCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 2, 500*time.Millisecond, inPlace)
	w.running(ctx, 2, "v1.12.4")
	ext := w.registerExtension(ctx)
	w.optIn(ctx)
	defer startTollgate(ctx, t, w.mgmt, ext.options)()
	w.served(ctx)
	sim, err := w.sims.Simulator(client.ObjectKey{Namespace: w.ns, Name: w.name})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(w.upgrade(ctx, g).Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted))
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	w.running(ctx, 2, "v1.13.0")
	before := w.workerUIDs(ctx, g)
	calls := map[string]int{}
	for name := range before {
		calls[name] = upgradeCalls(sim, name)
	}

	w.changeTemplate(ctx, "ghcr.io/siderolabs/installer:v1.13.0")
	g.Eventually(func(g Gomega) {
		md := &clusterv1.MachineDeployment{}
		g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
		g.Expect(md.Status.UpToDateReplicas).To(HaveValue(BeEquivalentTo(2)), "%s", w.describeMachines(ctx))
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed())
	w.updatedInPlace(ctx, before, "v1.13.0")
	for name, n := range calls {
		g.Expect(upgradeCalls(sim, name)).To(Equal(n), "node %s is not installed again", name)
	}
}

// TestPolicyTargetMovesAfterHandoverWithCAPICore: a policy that names its
// own target (targetFrom: Policy) holds a worker at preDrain; the
// MachineDeployment's template is changed to the policy's target, and CAPI
// hands the worker over; then the policy moves on to v1.13.1. CAPI never
// takes a Machine back once it moved it, so the worker is not failed (that
// would leave it marked InPlaceUpdateFailed for ever, seed 20261218 of the
// soak): its update answers that the policy's target wins, and once the
// hold is gone the worker runs v1.13.1, updated in place, not replaced.
func TestPolicyTargetMovesAfterHandoverWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 1, 500*time.Millisecond, inPlace)
	w.running(ctx, 1, "v1.12.4")
	ext := w.registerExtension(ctx)
	worker := w.workerNames(ctx, g)[0]
	hold := hooks.HoldAnnotation(upgradev1.HoldPointPreDrain, "backup")
	setAnnotation(ctx, g, w.c, w.ns, worker, hold, "snapshot in progress")
	w.optIn(ctx)
	defer startTollgate(ctx, t, w.mgmt, ext.options)()
	w.served(ctx)
	before := w.workerUIDs(ctx, g)

	w.changeTemplate(ctx, "ghcr.io/siderolabs/installer:v1.13.0")
	g.Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: worker}, m)).To(Succeed())
		g.Expect(m.Annotations).To(HaveKey(clusterv1.UpdateInProgressAnnotation), "CAPI hands the worker over; %s", w.describeMachines(ctx))
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed())

	policy := &upgradev1.TalosUpgradePolicy{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "to-1-13"}, policy)).To(Succeed())
	patch := client.MergeFrom(policy.DeepCopy())
	policy.Spec.TalosVersion = "v1.13.1"
	g.Expect(w.c.Patch(ctx, policy, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		w.neverFailedInPlace(ctx, g)
		m := &clusterv1.Machine{}
		g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: worker}, m)).To(Succeed())
		c := conditions.Get(m, clusterv1.MachineUpdatingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("moved to v1.13.1 since CAPI handed it over, and the policy's target wins: change the template to v1.13.1"))
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed())

	removeAnnotation(ctx, g, w.c, w.ns, worker, hold)
	w.updatedInPlace(ctx, before, "v1.13.1")
}

// TestReplacementsRefusedWithCAPICore: a policy with spec.replacements:
// Refuse makes the admission refuse a change of its Cluster's
// MachineDeployment that CAPI would carry out by replacing the Machines (no
// in-place update extension serves the namespace), naming the field and
// what to change instead; by default (and with Warn) it is admitted.
func TestReplacementsRefusedWithCAPICore(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := startWorld(ctx, t, 1, 500*time.Millisecond)
	w.running(ctx, 1, "v1.12.4")
	w.optIn(ctx, func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Replacements = upgradev1.ReplacementsRefuse })
	tollgateHooks, err := w.mgmt.ServeWebhooks(filepath.Join(envtest.RepoRoot(), "config", "webhook"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = tollgateHooks.Cleanup() }()
	defer startTollgate(ctx, t, w.mgmt, func(o *manager.Options) {
		hooks := tollgateHooks.ServerOptions()
		o.WebhookHost, o.WebhookPort, o.WebhookCertDir = hooks.Host, hooks.Port, hooks.CertDir
	})()

	template := metalTemplate(w.ns, w.name+"-md-0-v1-13", "ghcr.io/siderolabs/installer:v1.13.0", "")
	g.Expect(w.c.Create(ctx, template)).To(Succeed())
	change := func() error {
		md := &clusterv1.MachineDeployment{}
		g.Expect(w.c.Get(ctx, client.ObjectKeyFromObject(w.md), md)).To(Succeed())
		patch := client.MergeFrom(md.DeepCopy())
		md.Spec.Template.Spec.InfrastructureRef.Name = template.Name
		return w.c.Patch(ctx, md, patch)
	}
	g.Eventually(func(g Gomega) {
		err := change()
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("spec.template.spec: Forbidden: CAPI would replace the Machines of MachineDeployment alpha-md-0"))
		g.Expect(err.Error()).To(ContainSubstring("spec.infrastructureRef TalosSimMachineTemplate alpha-md-0, TalosSimMachineTemplate alpha-md-0-v1-13 required"))
		g.Expect(err.Error()).To(ContainSubstring("which TalosUpgradePolicy to-1-13 keeps (spec.replacements: Refuse)"))
		g.Expect(err.Error()).To(ContainSubstring("move the Talos (and Kubernetes) version with the policy's target instead of the template"))
	}, time.Minute, 500*time.Millisecond).Should(Succeed())

	policy := &upgradev1.TalosUpgradePolicy{}
	g.Expect(w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "to-1-13"}, policy)).To(Succeed())
	patch := client.MergeFrom(policy.DeepCopy())
	policy.Spec.Replacements = ""
	g.Expect(w.c.Patch(ctx, policy, patch)).To(Succeed())
	g.Eventually(change, time.Minute, 500*time.Millisecond).Should(Succeed(), "off by default")
}
