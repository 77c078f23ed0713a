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

package infrastructure_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	talosclient "github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/contract"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

const timeout = 30 * time.Second

// talosVersion asks a simulated node its version over the Talos API, with
// the talosconfig of its Cluster's simulator.
func talosVersion(ctx context.Context, sim *talossim.Simulator, address string) (string, error) {
	raw, err := sim.TalosConfig("test")
	if err != nil {
		return "", err
	}

	cfg, err := clientconfig.FromBytes(raw)
	if err != nil {
		return "", err
	}

	c, err := talosclient.New(ctx, talosclient.WithConfig(cfg), talosclient.WithEndpoints(address))
	if err != nil {
		return "", err
	}
	defer c.Close() //nolint:errcheck // a read-only client.

	resp, err := c.Version(ctx)
	if err != nil {
		return "", err
	}

	return resp.GetMessages()[0].GetVersion().GetTag(), nil
}

func reboot(ctx context.Context, sim *talossim.Simulator, address string) error {
	raw, err := sim.TalosConfig("test")
	if err != nil {
		return err
	}

	cfg, err := clientconfig.FromBytes(raw)
	if err != nil {
		return err
	}

	c, err := talosclient.New(ctx, talosclient.WithConfig(cfg), talosclient.WithEndpoints(address))
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck // the reboot was asked.

	return c.Reboot(ctx)
}

func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}

	return corev1.ConditionUnknown
}

// TestMachineBootsAndRegistersItsNode boots a control-plane machine from
// the stock installer and a worker from an Image Factory image in a failure
// domain: each node runs its image's version (and schematic) and answers on
// the Talos API at the machine's address, its Node is registered Ready with
// the provider ID, and the TalosSimMachine reports what the contract asks.
// A reboot of the worker takes its Node NotReady and back, and deleting it
// removes the node and the Node.
func TestMachineBootsAndRegistersItsNode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	machines := newSimulators(t)
	startProvider(t, machines)

	f := createCluster(t, "boot", "fd-a", "fd-b")
	f.provisionInfrastructure(t)

	tsc := &infrav1.TalosSimCluster{}
	g.Expect(mgmtClient.Get(ctx, f.key(f.name), tsc)).To(Succeed())
	g.Expect(tsc.Status.FailureDomains).To(Equal([]clusterv1.FailureDomain{
		{Name: "fd-a", ControlPlane: ptr.To(true)}, {Name: "fd-b", ControlPlane: ptr.To(true)},
	}))
	g.Expect(conditions.IsTrue(tsc, infrav1.ReadyCondition)).To(BeTrue())

	schematic := strings.Repeat("c0", 32)
	f.createBootstrapData(t, "boot-data")
	f.createMachine(t, "boot-cp-0", machineOptions{controlPlane: true, dataSecret: "boot-data", image: "ghcr.io/siderolabs/installer:v1.12.4"})
	f.createMachine(t, "boot-w-0", machineOptions{dataSecret: "boot-data", image: "factory.talos.dev/metal-installer/" + schematic + ":v1.13.0", failureDomain: "fd-b"})

	cluster := client.ObjectKey{Namespace: f.namespace, Name: f.name}

	for _, want := range []struct {
		name, version, schematic string
		controlPlane             bool
	}{
		{name: "boot-cp-0", version: "v1.12.4", controlPlane: true},
		{name: "boot-w-0", version: "v1.13.0", schematic: schematic},
	} {
		var tsm *infrav1.TalosSimMachine

		g.Eventually(func(g Gomega) {
			tsm = f.tsm(g, want.name)
			g.Expect(tsm.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
			g.Expect(conditions.IsTrue(tsm, infrav1.ReadyCondition)).To(BeTrue(), "Ready: %v", conditions.Get(tsm, infrav1.ReadyCondition))
		}, timeout, 100*time.Millisecond).Should(Succeed())

		sim, err := machines.Simulator(cluster)
		g.Expect(err).NotTo(HaveOccurred())

		node := sim.Node(want.name)
		g.Expect(node).NotTo(BeNil())
		g.Expect(node.Version()).To(Equal(want.version))
		g.Expect(node.Schematic()).To(Equal(want.schematic))
		g.Expect(node.ControlPlane()).To(Equal(want.controlPlane))
		g.Expect(talosVersion(ctx, sim, node.Address())).To(Equal(want.version), "the node answers on the Talos API at the machine's address")

		g.Expect(tsm.Spec.ProviderID).To(Equal("talossim://boot/c/" + want.name))
		g.Expect(tsm.Status.Addresses).To(ConsistOf(
			clusterv1.MachineAddress{Type: clusterv1.MachineInternalIP, Address: node.Address()},
			clusterv1.MachineAddress{Type: clusterv1.MachineHostName, Address: want.name},
		))
		g.Expect(tsm.Status.Version).To(Equal(want.version))
		g.Expect(tsm.Finalizers).To(ContainElement(infrav1.MachineFinalizer))

		kn := &corev1.Node{}
		g.Expect(workload.Client.Get(ctx, client.ObjectKey{Name: want.name}, kn)).To(Succeed())
		g.Expect(kn.Spec.ProviderID).To(Equal(tsm.Spec.ProviderID))
		g.Expect(nodeReady(kn)).To(Equal(corev1.ConditionTrue))
		g.Expect(kn.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage(want.version)))
		g.Expect(kn.Status.NodeInfo.KubeletVersion).To(Equal("v1.34.1"))
		g.Expect(kn.Status.Addresses).To(ContainElement(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: node.Address()}))

		if want.controlPlane {
			g.Expect(kn.Labels).To(HaveKey("node-role.kubernetes.io/control-plane"))
		} else {
			g.Expect(kn.Labels).NotTo(HaveKey("node-role.kubernetes.io/control-plane"))
			g.Expect(tsm.Status.FailureDomain).To(Equal("fd-b"))
		}
	}

	// The stand-in kubelet of the Cluster's simulator reports the reboot.
	sim, err := machines.Simulator(cluster)
	g.Expect(err).NotTo(HaveOccurred())

	worker := sim.Node("boot-w-0")
	g.Expect(reboot(ctx, sim, worker.Address())).To(Succeed())
	g.Eventually(func(g Gomega) {
		kn := &corev1.Node{}
		g.Expect(workload.Client.Get(ctx, client.ObjectKey{Name: "boot-w-0"}, kn)).To(Succeed())
		g.Expect(nodeReady(kn)).To(Equal(corev1.ConditionFalse))
	}, timeout, 20*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		kn := &corev1.Node{}
		g.Expect(workload.Client.Get(ctx, client.ObjectKey{Name: "boot-w-0"}, kn)).To(Succeed())
		g.Expect(nodeReady(kn)).To(Equal(corev1.ConditionTrue))
		g.Expect(worker.Boots()).To(Equal(1))
	}, timeout, 50*time.Millisecond).Should(Succeed())

	// Deleting the TalosSimMachine, as CAPI's Machine controller does,
	// removes the node and the Node.
	g.Expect(mgmtClient.Delete(ctx, f.tsm(g, "boot-w-0"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := mgmtClient.Get(ctx, f.key("boot-w-0"), &infrav1.TalosSimMachine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the TalosSimMachine is gone: %v", err)
	}, timeout, 100*time.Millisecond).Should(Succeed())
	g.Expect(sim.Node("boot-w-0")).To(BeNil())
	g.Expect(apierrors.IsNotFound(workload.Client.Get(ctx, client.ObjectKey{Name: "boot-w-0"}, &corev1.Node{}))).To(BeTrue())
	g.Expect(sim.Node("boot-cp-0")).NotTo(BeNil(), "the other machine runs on")
}

// TestMachineWaits says why a machine does not boot yet: the Cluster's
// infrastructure, then no data Secret named on the Machine, then a named
// Secret that does not exist; it boots once the Secret is written.
func TestMachineWaits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	machines := newSimulators(t)
	startProvider(t, machines)

	f := createCluster(t, "waits")
	machine, _ := f.createMachine(t, "waits-0", machineOptions{image: "ghcr.io/siderolabs/installer:v1.12.4"})

	expectWaiting := func(reason, message string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			tsm := f.tsm(g, "waits-0")
			c := conditions.Get(tsm, infrav1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(reason))
			g.Expect(c.Message).To(ContainSubstring(message))
			g.Expect(tsm.Status.Initialization.Provisioned).To(BeNil())
			g.Expect(tsm.Spec.ProviderID).To(BeEmpty())
		}, timeout, 100*time.Millisecond).Should(Succeed())
	}

	expectWaiting(infrav1.WaitingForClusterInfrastructureReason, "Waiting for the infrastructure of Cluster c")

	f.provisionInfrastructure(t)
	expectWaiting(infrav1.WaitingForBootstrapDataReason, "spec.bootstrap.dataSecretName of Machine waits-0")

	patched := machine.DeepCopy()
	g.Expect(mgmtClient.Get(ctx, f.key("waits-0"), patched)).To(Succeed())
	before := patched.DeepCopy()
	patched.Spec.Bootstrap.DataSecretName = ptr.To("waits-data")
	g.Expect(mgmtClient.Patch(ctx, patched, client.MergeFrom(before))).To(Succeed())
	expectWaiting(infrav1.WaitingForBootstrapDataReason, "Secret waits-data, which does not exist")

	sim, err := machines.Simulator(client.ObjectKey{Namespace: f.namespace, Name: f.name})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sim.Nodes()).To(BeEmpty(), "no machine boots without its configuration")

	f.createBootstrapData(t, "waits-data")
	g.Eventually(func(g Gomega) {
		tsm := f.tsm(g, "waits-0")
		g.Expect(tsm.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
		g.Expect(conditions.IsTrue(tsm, infrav1.ReadyCondition)).To(BeTrue())
	}, timeout, 100*time.Millisecond).Should(Succeed())
	g.Expect(sim.Node("waits-0")).NotTo(BeNil())
}

// TestMachineFailures: an image that names no version, a failure domain the
// TalosSimCluster does not have, and a node that fails to boot (its
// simulators are closed) are each a condition with a reason, and no
// machine is provisioned.
func TestMachineFailures(t *testing.T) {
	g := NewWithT(t)

	machines := newSimulators(t)
	g.Expect(machines.Close()).To(Succeed())
	startProvider(t, machines)

	f := createCluster(t, "failures", "fd-a")
	f.provisionInfrastructure(t)
	f.createBootstrapData(t, "failures-data")
	f.createMachine(t, "failures-image", machineOptions{dataSecret: "failures-data", image: "ghcr.io/siderolabs/installer:latest"})
	f.createMachine(t, "failures-fd", machineOptions{dataSecret: "failures-data", image: "ghcr.io/siderolabs/installer:v1.12.4", failureDomain: "fd-z"})
	f.createMachine(t, "failures-boot", machineOptions{dataSecret: "failures-data", image: "ghcr.io/siderolabs/installer:v1.12.4"})

	for name, want := range map[string]struct{ reason, message string }{
		"failures-image": {infrav1.InvalidImageReason, "is not a Talos version"},
		"failures-fd":    {infrav1.FailureDomainNotFoundReason, "Failure domain \"fd-z\" is not one of TalosSimCluster c's"},
		"failures-boot":  {infrav1.BootFailedReason, "the simulators are closed"},
	} {
		g.Eventually(func(g Gomega) {
			tsm := f.tsm(g, name)
			c := conditions.Get(tsm, infrav1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(want.reason))
			g.Expect(c.Message).To(ContainSubstring(want.message))
			g.Expect(tsm.Status.Initialization.Provisioned).To(BeNil())
		}, timeout, 100*time.Millisecond).Should(Succeed(), name)
	}

	// A machine that never booted is deleted at once.
	g.Expect(mgmtClient.Delete(context.Background(), f.tsm(g, "failures-image"))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmtClient.Get(context.Background(), f.key("failures-image"), &infrav1.TalosSimMachine{}))
	}, timeout, 100*time.Millisecond).Should(BeTrue())
}

// TestCRDsFollowTheContract: each CRD is named as CAPI computes it from the
// group and kind (util/contract.CalculateCRDName, so core finds it without
// a lookup) and maps the v1beta2 contract to v1alpha1, a served and stored
// version, which is how CAPI resolves an apiGroup+kind reference.
func TestCRDsFollowTheContract(t *testing.T) {
	g := NewWithT(t)

	for _, kind := range []string{"TalosSimCluster", "TalosSimMachine", "TalosSimMachineTemplate", "TalosSimCloudMachine", "TalosSimCloudMachineTemplate"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(mgmtClient.Get(context.Background(), client.ObjectKey{Name: contract.CalculateCRDName(infrav1.GroupVersion.Group, kind)}, crd)).To(Succeed(), kind)
		g.Expect(crd.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/v1beta2", infrav1.GroupVersion.Version), kind)
		g.Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped), kind)
		g.Expect(crd.Spec.Versions).To(ConsistOf(And(
			HaveField("Name", infrav1.GroupVersion.Version), HaveField("Served", true), HaveField("Storage", true),
		)), kind)
	}
}

// TestMachineFamilies: the two families of real infrastructure providers.
// A TalosSimCloudMachine boots an opaque cloud image ID (hosts.CloudImageID)
// and, as CAPA's AWSMachine webhook, refuses any change of its spec (422
// Invalid) once it exists, by update or by server-side apply as CAPI's
// MachineSet controller writes it (a dry run is refused alike), but for its
// tags; its template is immutable. A TalosSimMachine boots an Image Factory
// disk image URL as well as an installer, and a change of its image is
// admitted (and upgrades nothing), as CAPM3's and CAPMOX's webhooks admit
// it.
func TestMachineFamilies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	machines := newSimulators(t)
	startProvider(t, machines)

	f := createCluster(t, "families")
	f.provisionInfrastructure(t)
	f.createBootstrapData(t, "families-data")

	schematic := strings.Repeat("cd", 32)
	cloudImage := hosts.CloudImageID("factory.talos.dev/installer/" + schematic + ":v1.12.4")
	cloud := f.createCloudMachine(t, "families-cloud", cloudImage, "families-data")
	_, metal := f.createMachine(t, "families-metal", machineOptions{dataSecret: "families-data", image: "https://factory.talos.dev/image/" + schematic + "/v1.13.0/metal-amd64.raw.zst"})

	sim, err := machines.Simulator(client.ObjectKey{Namespace: f.namespace, Name: f.name})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		got := &infrav1.TalosSimCloudMachine{}
		g.Expect(mgmtClient.Get(ctx, f.key(cloud.Name), got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, infrav1.ReadyCondition)).To(BeTrue(), "Ready: %v", conditions.Get(got, infrav1.ReadyCondition))
		g.Expect(got.Spec.ProviderID).To(Equal("talossim://families/c/families-cloud"), "the controller sets the provider ID of an existing machine")
		g.Expect(f.tsm(g, metal.Name).Status.Version).To(Equal("v1.13.0"))
	}, timeout, 100*time.Millisecond).Should(Succeed())
	g.Expect(sim.Node(cloud.Name).Version()).To(Equal("v1.12.4"))
	g.Expect(sim.Node(cloud.Name).Schematic()).To(Equal(schematic))
	g.Expect(sim.Node(metal.Name).Schematic()).To(Equal(schematic))

	// The cloud family: the image cannot change, the tags can. Each update
	// is made on the machine as read just before: its controller may write
	// it meanwhile (a 409, not the webhook's answer).
	update := func(mutate func(*infrav1.TalosSimCloudMachine)) (err error) {
		g.Eventually(func(g Gomega) {
			got := &infrav1.TalosSimCloudMachine{}
			g.Expect(mgmtClient.Get(ctx, f.key(cloud.Name), got)).To(Succeed())
			mutate(got)
			err = mgmtClient.Update(ctx, got)
			g.Expect(apierrors.IsConflict(err)).To(BeFalse(), "written meanwhile: read again")
		}, timeout, 100*time.Millisecond).Should(Succeed())
		return err
	}
	newImage := hosts.CloudImageID("ghcr.io/siderolabs/installer:v1.13.0")
	err = update(func(m *infrav1.TalosSimCloudMachine) { m.Spec.ImageID = newImage })
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "an image change is a 422: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec: Forbidden: cannot be modified"))
	applied := &infrav1.TalosSimCloudMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "TalosSimCloudMachine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: cloud.Name},
		Spec:       infrav1.TalosSimCloudMachineSpec{ImageID: newImage},
	}
	err = mgmtClient.Apply(ctx, applyConfiguration(g, applied), client.FieldOwner("capi-machineset"), client.ForceOwnership, client.DryRunAll)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a dry-run apply of another image, as Tollgate asks before it claims one, is a 422: %v", err)
	g.Expect(update(func(m *infrav1.TalosSimCloudMachine) { m.Spec.AdditionalTags = map[string]string{"team": "a"} })).To(Succeed(), "the tags may change")

	template := &infrav1.TalosSimCloudMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: "families-cloud"},
		Spec:       infrav1.TalosSimCloudMachineTemplateSpec{Template: infrav1.TalosSimCloudMachineTemplateResource{Spec: infrav1.TalosSimCloudMachineSpec{ImageID: cloudImage}}},
	}
	g.Expect(mgmtClient.Create(ctx, template)).To(Succeed())
	template.Spec.Template.Spec.ImageID = newImage
	err = mgmtClient.Update(ctx, template)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a template is immutable: %v", err)

	// The mutable family: the image may change; the node runs on.
	m := f.tsm(g, metal.Name)
	m.Spec.Image = "ghcr.io/siderolabs/installer:v1.13.1"
	g.Expect(mgmtClient.Update(ctx, m)).To(Succeed())
	g.Consistently(func() string { return sim.Node(metal.Name).Version() }, time.Second, 100*time.Millisecond).Should(Equal("v1.13.0"), "a changed image upgrades nothing")
}

// applyConfiguration returns obj as a server-side apply configuration.
func applyConfiguration(g Gomega, obj client.Object) kruntime.ApplyConfiguration {
	u, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	g.Expect(err).NotTo(HaveOccurred())

	return client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
}
