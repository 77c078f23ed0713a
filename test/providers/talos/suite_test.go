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

package talos_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
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
	talosproviders "github.com/tollgate-dev/tollgate/test/providers/talos"
)

var (
	mgmt *envtest.Management
	// mgmtClient is an uncached client of the management cluster with the
	// stand-ins' kinds.
	mgmtClient client.Client
)

func TestMain(m *testing.M) {
	envtest.ExitWithoutAssets("Talos provider stand-ins suite")
	os.Exit(run(m))
}

// run starts a management control plane with the stand-ins' CRDs (and the
// Talos-simulator provider's, for an infrastructure template to clone) and
// the stand-ins' controllers; CAPI core does not run: the tests do what it
// would (owner references, nodeRef, addresses, Ready).
func run(m *testing.M) int {
	var err error

	mgmt, err = envtest.StartManagement(envtest.WithCRDDirectories(talosproviders.CRDDirectory(), infrastructure.CRDDirectory()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "Starting the management control plane: %v\n", err)

		return 1
	}
	defer mgmt.Stop() //nolint:errcheck // the test process ends.

	if mgmtClient, err = client.New(mgmt.Config, client.Options{Scheme: scheme()}); err != nil {
		fmt.Fprintf(os.Stderr, "Creating a client: %v\n", err)

		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	hooks, err := mgmt.ServeWebhooks(talosproviders.WebhookDirectory())
	if err != nil {
		fmt.Fprintf(os.Stderr, "Installing the webhooks: %v\n", err)

		return 1
	}
	defer hooks.Cleanup() //nolint:errcheck // the test process ends.

	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme: scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(hooks.ServerOptions()),
		// As Tollgate's manager: controller-runtime#3538.
		Controller: config.Controller{UsePriorityQueue: ptr.To(false)},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "Creating the manager: %v\n", err)

		return 1
	}

	if err := talosproviders.Setup(ctx, mgr, talosproviders.Options{Controller: controller.Options{MaxConcurrentReconciles: 2}}); err != nil {
		fmt.Fprintf(os.Stderr, "Setting up the providers: %v\n", err)

		return 1
	}

	done := make(chan struct{})

	go func() {
		defer close(done)

		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "The manager stopped: %v\n", err)
		}
	}()
	defer func() { cancel(); <-done }()

	if err := envtest.WaitForWebhookServer(ctx, mgr.GetWebhookServer()); err != nil {
		fmt.Fprintf(os.Stderr, "Waiting for the webhook server: %v\n", err)

		return 1
	}

	return m.Run()
}

func scheme() *kruntime.Scheme {
	s := envtest.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{talosproviders.AddToScheme, infrav1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // Programming error: the schemes are static.
		}
	}

	return s
}

// createCluster creates the namespace and a Cluster with an endpoint whose
// control plane is the TalosControlPlane "cp".
func createCluster(t *testing.T, namespace string) *clusterv1.Cluster {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	g.Expect(mgmtClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())

	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "c"},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443},
			ControlPlaneRef:      clusterv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "TalosControlPlane", Name: "cp"},
		},
	}
	g.Expect(mgmtClient.Create(ctx, cluster)).To(Succeed())

	return cluster
}

// provision reports the Cluster's infrastructure provisioned, as CAPI's
// Cluster controller does.
func provision(t *testing.T, cluster *clusterv1.Cluster) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	g.Expect(mgmtClient.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)).To(Succeed())
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	g.Expect(mgmtClient.Status().Update(ctx, cluster)).To(Succeed())
}

// ownedBy is an owner reference to a CAPI core object.
func ownedBy(o client.Object, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: kind, Name: o.GetName(), UID: o.GetUID()}
}

// eventually is Eventually with this suite's timeouts.
func eventually(g *WithT, f any) AsyncAssertion {
	return g.Eventually(f, 60*time.Second, 100*time.Millisecond)
}
