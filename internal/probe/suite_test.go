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

package probe_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/podnetwork"
)

// The suite's world: one control plane that plays both clusters. As the
// management cluster it holds the checks' Secrets and the kubeconfig Secret
// of Cluster "alpha", which points at itself; as the workload cluster it
// proxies to Services on the pod network.
var (
	network  *podnetwork.Network
	cluster  *envtest.Workload
	mgmt     client.Client
	services int
)

const (
	namespace   = "checks"
	clusterName = "alpha"
)

func TestMain(m *testing.M) {
	if envtest.NoteWithoutAssets("the probe suite (its servers sit behind a workload apiserver), running the tests that need none") {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if network, err = podnetwork.New(); err != nil {
		fmt.Fprintf(os.Stderr, "Starting the pod network: %v\n", err)
		return 1
	}
	defer func() { _ = network.Close() }()
	if cluster, err = network.StartWorkload(); err != nil {
		fmt.Fprintf(os.Stderr, "Starting the control plane: %v\n", err)
		return 1
	}
	defer func() { _ = cluster.Stop() }()
	mgmt = cluster.Client
	ctx := context.Background()
	if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		fmt.Fprintf(os.Stderr, "Creating the namespace: %v\n", err)
		return 1
	}
	kc := kubeconfig.GenerateSecretWithOwner(client.ObjectKey{Namespace: namespace, Name: clusterName}, cluster.Kubeconfig, metav1.OwnerReference{})
	kc.OwnerReferences = nil
	if err := mgmt.Create(ctx, kc); err != nil {
		fmt.Fprintf(os.Stderr, "Storing the kubeconfig: %v\n", err)
		return 1
	}
	return m.Run()
}

// serve starts a loopback server until the test ends.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// expose puts srv behind a new Service of the workload cluster, port 80
// named "http", and returns the Service.
func expose(t *testing.T, srv *httptest.Server) *upgradev1.HealthCheckService {
	t.Helper()
	services++
	name := fmt.Sprintf("svc-%d", services)
	_, err := network.Expose(t.Context(), cluster.Client, "workload", name, "http", 80, srv.Listener.Addr().String())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return &upgradev1.HealthCheckService{Namespace: "workload", Name: name, Port: intstr.FromInt32(80)}
}

// secret creates a Secret of the checks' namespace.
func secret(t *testing.T, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, StringData: data}
	NewWithT(t).Expect(mgmt.Create(t.Context(), s)).To(Succeed())
	t.Cleanup(func() { _ = mgmt.Delete(context.Background(), s) })
}

// httpCheck returns an http check of h.
func httpCheck(h upgradev1.HTTPHealthCheck) *upgradev1.ClusterHealthCheck {
	return &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "http"},
		Spec:       upgradev1.ClusterHealthCheckSpec{HTTP: &h},
	}
}

// promCheck returns a prometheus check of p.
func promCheck(p upgradev1.PrometheusHealthCheck) *upgradev1.ClusterHealthCheck {
	return &upgradev1.ClusterHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "prometheus"},
		Spec:       upgradev1.ClusterHealthCheckSpec{Prometheus: &p},
	}
}

// atURL and atService are endpoints.
func atURL(u string) upgradev1.HealthCheckEndpoint { return upgradev1.HealthCheckEndpoint{URL: u} }

func atService(s *upgradev1.HealthCheckService) upgradev1.HealthCheckEndpoint {
	return upgradev1.HealthCheckEndpoint{Service: s}
}

// envtestOnly skips a test of the suite, saying so and naming
// KUBEBUILDER_ASSETS, when the envtest binaries are not set: the suite's world
// was not started, and the tests of the package that need none still run
// (make test-unit).
func envtestOnly(t *testing.T) {
	t.Helper()
	envtest.SkipWithoutAssets(t)
}
