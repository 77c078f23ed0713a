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
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure"
	infrav1 "github.com/tollgate-dev/tollgate/test/providers/infrastructure/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/providers/infrastructure/hosts"
	"github.com/tollgate-dev/tollgate/test/talossim"
)

var (
	mgmt *envtest.Management
	// workload is the workload control plane every test Cluster shares
	// (machine names are unique across tests).
	workload *envtest.Workload
	// mgmtClient is an uncached client of the management cluster with the
	// provider's kinds.
	mgmtClient client.Client
	// providerWebhooks are the provider's webhook configurations, served by
	// the manager of each test's provider.
	providerWebhooks *envtest.Webhooks
)

func TestMain(m *testing.M) {
	envtest.ExitWithoutAssets("test infrastructure provider suite")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error

	mgmt, err = envtest.StartManagement(envtest.WithCRDDirectories(infrastructure.CRDDirectory()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the management control plane: %v\n", err)

		return 1
	}
	defer mgmt.Stop() //nolint:errcheck // the test process ends.

	if mgmtClient, err = client.New(mgmt.Config, client.Options{Scheme: scheme()}); err != nil {
		fmt.Fprintf(os.Stderr, "Creating a client: %v\n", err)

		return 1
	}

	if providerWebhooks, err = mgmt.ServeWebhooks(infrastructure.WebhookDirectory()); err != nil {
		fmt.Fprintf(os.Stderr, "Installing the webhooks: %v\n", err)

		return 1
	}
	defer providerWebhooks.Cleanup() //nolint:errcheck // the test process ends.

	if workload, err = mgmt.StartWorkload(context.Background(), "shared", "shared"); err != nil {
		fmt.Fprintf(os.Stderr, "Starting the workload control plane: %v\n", err)

		return 1
	}

	return m.Run()
}

func scheme() *kruntime.Scheme {
	s := envtest.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{infrav1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // Programming error: the schemes are static.
		}
	}

	return s
}

// startProvider runs the provider's controllers on machines until the test
// ends.
func startProvider(t *testing.T, machines hosts.Hosts) {
	t.Helper()
	g := NewWithT(t)

	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme:        scheme(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		Controller:    config.Controller{SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(false)}, // As Tollgate's manager: controller-runtime#3538.
		WebhookServer: webhook.NewServer(providerWebhooks.ServerOptions()),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(infrastructure.Setup(ctx, mgr, infrastructure.Options{
		Hosts:      machines,
		Controller: controller.Options{MaxConcurrentReconciles: 2},
	})).To(Succeed())

	done := make(chan struct{})

	go func() {
		defer close(done)

		_ = mgr.Start(ctx)
	}()

	t.Cleanup(func() {
		cancel()
		<-done
	})
	g.Expect(envtest.WaitForWebhookServer(ctx, mgr.GetWebhookServer())).To(Succeed())
}

// newSimulators returns Simulators closed when the test ends.
func newSimulators(t *testing.T) *hosts.Simulators {
	t.Helper()

	s := hosts.NewSimulators(hosts.SimulatorsOptions{Simulator: talossim.Options{RebootDuration: 200 * time.Millisecond, Logf: t.Logf}})
	t.Cleanup(func() { _ = s.Close() })

	return s
}

// fixture is a Cluster with a TalosSimCluster, in a namespace of its own.
type fixture struct {
	namespace, name string
}

// createCluster creates the namespace, a Cluster whose infrastructure is a
// TalosSimCluster owned by it (as CAPI's Cluster controller sets the
// owner), and its kubeconfig Secret for the shared workload cluster.
func createCluster(t *testing.T, namespace string, failureDomains ...string) fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	f := fixture{namespace: namespace, name: "c"}
	g.Expect(mgmtClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())

	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: f.name},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimCluster", Name: f.name,
		}},
	}
	g.Expect(mgmtClient.Create(ctx, cluster)).To(Succeed())

	tsc := &infrav1.TalosSimCluster{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: f.name,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: f.name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: f.name, UID: cluster.UID}},
		},
		Spec: infrav1.TalosSimClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443},
			FailureDomains:       failureDomains,
		},
	}
	g.Expect(mgmtClient.Create(ctx, tsc)).To(Succeed())
	g.Expect(mgmt.StoreKubeconfig(ctx, namespace, f.name, workload.Kubeconfig)).To(Succeed())

	return f
}

// provisionInfrastructure waits for the TalosSimCluster to be provisioned,
// then sets the Cluster's infrastructureProvisioned, as CAPI's Cluster
// controller would.
func (f fixture) provisionInfrastructure(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	g.Eventually(func(g Gomega) {
		tsc := &infrav1.TalosSimCluster{}
		g.Expect(mgmtClient.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: f.name}, tsc)).To(Succeed())
		g.Expect(tsc.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	cluster := &clusterv1.Cluster{}
	g.Expect(mgmtClient.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: f.name}, cluster)).To(Succeed())
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	g.Expect(mgmtClient.Status().Update(ctx, cluster)).To(Succeed())
}

// machineOptions adjust a Machine and its TalosSimMachine.
type machineOptions struct {
	controlPlane  bool
	dataSecret    string // the Machine's spec.bootstrap.dataSecretName, none when empty
	image         string
	failureDomain string
}

// createMachine creates a Machine and its TalosSimMachine, owned by it and
// labelled with the Cluster's name, as CAPI's Machine controller leaves
// them.
func (f fixture) createMachine(t *testing.T, name string, o machineOptions) (*clusterv1.Machine, *infrav1.TalosSimMachine) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	labels := map[string]string{clusterv1.ClusterNameLabel: f.name}
	if o.controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}

	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: f.name,
			Version:     "v1.34.1",
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: "bootstrap.cluster.x-k8s.io", Kind: "TalosConfig", Name: name,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimMachine", Name: name,
			},
			FailureDomain: o.failureDomain,
		},
	}
	if o.dataSecret != "" {
		machine.Spec.Bootstrap.DataSecretName = ptr.To(o.dataSecret)
	}

	g.Expect(mgmtClient.Create(ctx, machine)).To(Succeed())

	tsm := &infrav1.TalosSimMachine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: f.namespace, Name: name,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: f.name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: name, UID: machine.UID}},
		},
		Spec: infrav1.TalosSimMachineSpec{Image: o.image},
	}
	g.Expect(mgmtClient.Create(ctx, tsm)).To(Succeed())

	return machine, tsm
}

// createCloudMachine creates a Machine and its TalosSimCloudMachine of
// image, as createMachine does.
func (f fixture) createCloudMachine(t *testing.T, name, image, dataSecret string) *infrav1.TalosSimCloudMachine {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: f.name}},
		Spec: clusterv1.MachineSpec{
			ClusterName: f.name,
			Version:     "v1.34.1",
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(dataSecret)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "TalosSimCloudMachine", Name: name,
			},
		},
	}
	g.Expect(mgmtClient.Create(ctx, machine)).To(Succeed())

	m := &infrav1.TalosSimCloudMachine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: f.namespace, Name: name,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: f.name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: name, UID: machine.UID}},
		},
		Spec: infrav1.TalosSimCloudMachineSpec{ImageID: image},
	}
	g.Expect(mgmtClient.Create(ctx, m)).To(Succeed())

	return m
}

// createBootstrapData creates the bootstrap data Secret name, in the shape
// a bootstrap provider writes it.
func (f fixture) createBootstrapData(t *testing.T, name string) {
	t.Helper()

	NewWithT(t).Expect(mgmtClient.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: f.name}},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": []byte("version: v1alpha1\nmachine:\n  type: worker\n"), "format": []byte("cloud-config")},
	})).To(Succeed())
}

// key is the key of object name of the fixture's namespace.
func (f fixture) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: f.namespace, Name: name}
}

// tsm reads a TalosSimMachine.
func (f fixture) tsm(g Gomega, name string) *infrav1.TalosSimMachine {
	tsm := &infrav1.TalosSimMachine{}
	g.Expect(mgmtClient.Get(context.Background(), f.key(name), tsm)).To(Succeed())

	return tsm
}
