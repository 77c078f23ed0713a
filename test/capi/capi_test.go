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
	"errors"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/cmd/manager"
	"github.com/tollgate-dev/tollgate/test/envtest"
	"github.com/tollgate-dev/tollgate/test/infrastructure"
	infrav1 "github.com/tollgate-dev/tollgate/test/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/infrastructure/hosts"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

func scheme() *kruntime.Scheme {
	s := envtest.NewScheme()
	if err := infrav1.AddToScheme(s); err != nil {
		panic(err) // Programming error: the schemes are static.
	}
	return s
}

// TestMachineDeploymentWithCAPICore runs CAPI core and the Talos-simulator
// provider: a MachineDeployment's Machines are created by CAPI's
// MachineDeployment and MachineSet controllers, booted by the provider on
// the Talos version of their template's image, and CAPI's Machine
// controller finds each Machine's Node by its providerID and copies its
// nodeRef, nodeInfo and addresses into the Machine: what the Tollgate tests
// wrote by hand so far. A scale-up boots a new machine on the template's
// version. Then Tollgate's manager, as installed, rolls a Talos upgrade over
// those Machines: CAPI reports the new version in every Machine's nodeInfo
// and no Machine is replaced.
func TestMachineDeploymentWithCAPICore(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	mgmt, err := envtest.StartManagement(envtest.WithCRDDirectories(infrastructure.CRDDirectory()))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(mgmt.Stop()).To(Succeed()) }()
	capi, err := mgmt.StartCAPI(envtest.CAPIOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(capi.Stop()).To(Succeed()) }()
	c, err := client.New(mgmt.Config, client.Options{Scheme: scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	ns, name := "fleet", "alpha"
	workload, err := mgmt.StartWorkload(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())

	sims := hosts.NewSimulators(hosts.SimulatorsOptions{Simulator: talossim.Options{RebootDuration: 200 * time.Millisecond, Logf: t.Logf}})
	defer func() { _ = sims.Close() }()
	mgrCtx, stopProvider := context.WithCancel(ctx)
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme:     scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(infrastructure.Setup(mgrCtx, mgr, infrastructure.Options{Hosts: sims, Controller: controller.Options{MaxConcurrentReconciles: 2}})).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(mgrCtx)
	}()
	defer func() {
		stopProvider()
		<-done
	}()

	// The Cluster, its infrastructure and a MachineDeployment, as a user
	// applies them; the bootstrap data is one Secret (the Talos bootstrap
	// provider's stand-in is not part of this world).
	endpoint, err := url.Parse(workload.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())
	port, err := strconv.Atoi(endpoint.Port())
	g.Expect(err).NotTo(HaveOccurred())
	template := &infrav1.TalosSimMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-md-0"},
		Spec: infrav1.TalosSimMachineTemplateSpec{Template: infrav1.TalosSimMachineTemplateResource{Spec: infrav1.TalosSimMachineSpec{
			Image: "ghcr.io/siderolabs/installer:v1.12.4",
		}}},
	}
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-md-0"},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: name,
			Replicas:    ptr.To[int32](2),
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{}},
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: name,
				Version:     "v1.35.0",
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimMachineTemplate", Name: template.Name,
				},
			}},
		},
	}
	for _, obj := range []client.Object{
		&clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimCluster", Name: name,
			}},
		},
		&infrav1.TalosSimCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       infrav1.TalosSimClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: endpoint.Hostname(), Port: int32(port)}},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-bootstrap", Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
			Type:       clusterv1.ClusterSecretType,
			Data:       map[string][]byte{"value": []byte("version: v1alpha1\n"), "format": []byte("cloud-config")},
		},
		template, md,
	} {
		g.Expect(c.Create(ctx, obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
	}

	running := func(replicas int, version string) {
		g.Eventually(func(g Gomega) {
			machines := &clusterv1.MachineList{}
			g.Expect(c.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
			g.Expect(machines.Items).To(HaveLen(replicas))
			for _, m := range machines.Items {
				g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "Machine %s has its Node", m.Name)
				g.Expect(m.Status.NodeInfo).NotTo(BeNil())
				g.Expect(m.Status.NodeInfo.OSImage).To(Equal(talossim.OSImage(version)), "Machine %s runs %s", m.Name, version)
				g.Expect(m.Status.Addresses).NotTo(BeEmpty())
				g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)))
			}
		}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	}
	running(2, "v1.12.4")

	// A scale-up is replicas on the MachineDeployment.
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(md), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To[int32](3)
	g.Expect(c.Patch(ctx, md, patch)).To(Succeed())
	running(3, "v1.12.4")
	before := machineNames(ctx, g, c, ns)

	// Tollgate, as installed (its ServiceAccount's RBAC), rolls v1.13.0
	// over the Machines CAPI made; CAPI's Machine controller then reports
	// the new version in every Machine's nodeInfo, from the Nodes, and no
	// Machine was replaced.
	sim, err := sims.Simulator(client.ObjectKey{Namespace: ns, Name: name})
	g.Expect(err).NotTo(HaveOccurred())
	talosconfig, err := sim.TalosConfigSecret(ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Create(ctx, talosconfig)).To(Succeed())
	one := intstr.FromInt32(1)
	g.Expect(c.Create(ctx, &upgradev1.TalosUpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-1-13"},
		Spec: upgradev1.TalosUpgradePolicySpec{UpgradePlan: upgradev1.UpgradePlan{
			TalosVersion: "v1.13.0",
			Installer:    upgradev1.InstallerSpec{Source: upgradev1.InstallerSourceImage, Repository: "ghcr.io/siderolabs/installer"},
			Rollout:      upgradev1.RolloutSpec{Workers: upgradev1.WorkerRollout{MaxUnavailable: &one}},
		}},
	})).To(Succeed())
	cluster := &clusterv1.Cluster{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cluster)).To(Succeed())
	clusterPatch := client.MergeFrom(cluster.DeepCopy())
	cluster.Labels = map[string]string{upgradev1.PolicyLabel: "to-1-13"}
	g.Expect(c.Patch(ctx, cluster, clusterPatch)).To(Succeed())
	defer startTollgate(ctx, t, mgmt)()

	g.Eventually(func(g Gomega) {
		u := &upgradev1.TalosUpgrade{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
		g.Expect(u.Status.Phase).To(Equal(upgradev1.UpgradePhaseCompleted), "rollout %s: %v", u.Status.Phase, u.Status.Conditions)
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	running(3, "v1.13.0")
	g.Expect(machineNames(ctx, g, c, ns)).To(Equal(before), "the Machines were upgraded in place, none replaced")
}

// machineNames returns the names of the Machines of namespace, sorted.
func machineNames(ctx context.Context, g Gomega, c client.Client, namespace string) []string {
	machines := &clusterv1.MachineList{}
	g.Expect(c.List(ctx, machines, client.InNamespace(namespace))).To(Succeed())
	names := make([]string, 0, len(machines.Items))
	for _, m := range machines.Items {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// startTollgate runs Tollgate's production manager (cmd/manager) as its
// ServiceAccount, with the RBAC of config/default, and returns what stops
// it (before the control plane). Installer images are taken as present: no
// registry serves them here.
func startTollgate(ctx context.Context, t *testing.T, mgmt *envtest.Management) (stop func()) {
	t.Helper()
	g := NewWithT(t)
	cfg, err := mgmt.ManagerConfig(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(ctx)
	mgr, err := manager.New(mgrCtx, cfg, manager.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		TalosAPIPort: talossim.DefaultPort, SkipControllerNameValidation: true, TalosCallTimeout: 3 * time.Second,
		CheckImage: func(context.Context, string, *corev1.Secret) error { return nil },
	})
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Tollgate's manager stopped with an error: %v", err)
		}
	}
}
