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
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/probe"
)

// ceph answers like Ceph's manager: its health as text, 200 when OK and
// 503 otherwise.
func ceph(health *atomic.Value) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h, _ := health.Load().(string)
		if !strings.HasPrefix(h, "HEALTH_OK") {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = fmt.Fprintf(w, "%s\n  (asked for %s)\n", h, r.URL.Path)
	}
}

func TestHTTPStatusAndBody(t *testing.T) {
	envtestOnly(t)
	health := &atomic.Value{}
	srv := serve(t, ceph(health))
	p := &probe.Prober{Client: mgmt}
	for _, tt := range []struct {
		name   string
		health string
		check  upgradev1.HTTPHealthCheck
		want   probe.Outcome
	}{
		{name: "a 2xx passes", health: "HEALTH_OK", check: upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/health")}, want: probe.Outcome{Passed: true}},
		{
			name: "another status fails with the status and the start of the body", health: "HEALTH_WARN 3 pgs degraded",
			check: upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/health")},
			want:  probe.Outcome{Message: "HTTP 503 Service Unavailable: HEALTH_WARN 3 pgs degraded (asked for /health)"},
		},
		{
			name: "an expected status passes", health: "HEALTH_WARN",
			check: upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/health"), ExpectedStatusCodes: []int32{200, 503}}, want: probe.Outcome{Passed: true},
		},
		{
			name: "a 200 not expected fails", health: "HEALTH_OK",
			check: upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/health"), ExpectedStatusCodes: []int32{204}},
			want:  probe.Outcome{Message: "HTTP 200 OK: HEALTH_OK (asked for /health)"},
		},
		{
			name: "a body that contains the text passes", health: "HEALTH_OK",
			check: upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/health"), Body: &upgradev1.HTTPBodyMatch{Contains: "HEALTH_OK"}}, want: probe.Outcome{Passed: true},
		},
		{
			name: "a body without the text fails", health: "HEALTH_OK_ISH",
			check: upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/health"), Body: &upgradev1.HTTPBodyMatch{Regex: `^HEALTH_OK\n`}},
			want:  probe.Outcome{Message: `HTTP 200 OK with a body that does not match "^HEALTH_OK\\n": HEALTH_OK_ISH (asked for /health)`},
		},
		{
			name: "HEAD judges the status alone", health: "HEALTH_OK",
			check: upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/health"), Method: "HEAD"}, want: probe.Outcome{Passed: true},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			health.Store(tt.health)
			NewWithT(t).Expect(p.Run(t.Context(), httpCheck(tt.check), clusterName, 5*time.Second)).To(Equal(tt.want))
		})
	}
}

func TestHTTPLongBodyIsCut(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprint(w, strings.Repeat("é", 1000))
	})
	out := (&probe.Prober{Client: mgmt}).Run(t.Context(), httpCheck(upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL)}), clusterName, 5*time.Second)
	g.Expect(out.Passed).To(BeFalse())
	g.Expect([]rune(out.Message)).To(HaveLen(probe.MaxMessageLength))
	g.Expect(out.Message).To(HavePrefix("HTTP 500 Internal Server Error: éé"))
	g.Expect(out.Message).To(HaveSuffix("é…"))
}

func TestHTTPHeadersFromSecret(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	const token = "Bearer s3cr3t-t0ken"
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != token || r.Header.Get("X-Tenant") != "storage" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprint(w, "who are you?")
		}
	})
	secret(t, "ceph-token", map[string]string{"Authorization": token + "\n", "X-Tenant": " storage "})
	p := &probe.Prober{Client: mgmt}
	check := upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL)}
	out := p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)
	g.Expect(out).To(Equal(probe.Outcome{Message: "HTTP 401 Unauthorized: who are you?"}), "without the Secret's headers")

	check.HeadersSecretName = "ceph-token"
	g.Expect(p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}), "with them, trimmed")

	check.HeadersSecretName = "missing"
	out = p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)
	g.Expect(out.Passed).To(BeFalse())
	g.Expect(out.Message).To(Equal(`reading Secret "missing": secrets "missing" not found`))
}

func TestHTTPRedirects(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	var otherHits atomic.Int32
	other := serve(t, func(http.ResponseWriter, *http.Request) { otherHits.Add(1) })
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/health", http.StatusFound)
		case "/elsewhere":
			http.Redirect(w, r, other.URL+"/health", http.StatusFound)
		default:
			_, _ = fmt.Fprint(w, "HEALTH_OK")
		}
	})
	p := &probe.Prober{Client: mgmt}
	out := p.Run(t.Context(), httpCheck(upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/moved"), Body: &upgradev1.HTTPBodyMatch{Contains: "HEALTH_OK"}}), clusterName, 5*time.Second)
	g.Expect(out).To(Equal(probe.Outcome{Passed: true}), "a redirect within the host is followed")

	out = p.Run(t.Context(), httpCheck(upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL + "/elsewhere")}), clusterName, 5*time.Second)
	g.Expect(out.Passed).To(BeFalse())
	g.Expect(out.Message).To(HavePrefix(fmt.Sprintf("HTTP 302 Found (a redirect to %s/health, not followed: another host)", other.URL)))
	g.Expect(otherHits.Load()).To(BeZero(), "the other host is never asked")
}

func TestHTTPTLSIsVerified(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	srv := httptestTLS(t)
	p := &probe.Prober{Client: mgmt}
	check := upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL)}
	out := p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)
	g.Expect(out.Passed).To(BeFalse(), "a certificate of an unknown authority fails")
	g.Expect(out.Message).To(ContainSubstring("certificate signed by unknown authority"))

	secret(t, "test-ca", map[string]string{probe.CASecretKey: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))})
	check.TLS = &upgradev1.HealthCheckTLS{CASecretName: "test-ca"}
	g.Expect(p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}), "trusted through caSecretName")

	check.TLS = &upgradev1.HealthCheckTLS{InsecureSkipVerify: true}
	g.Expect(p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}), "not verified with insecureSkipVerify")
}

func TestHTTPUnreachableAndSlowFail(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	closed := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	p := &probe.Prober{Client: mgmt}
	out := p.Run(t.Context(), httpCheck(upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL("http://" + closed + "/health")}), clusterName, 5*time.Second)
	g.Expect(out.Passed).To(BeFalse())
	g.Expect(out.Message).To(SatisfyAll(HavePrefix("GET http://"+closed+"/health: "), ContainSubstring("connection refused")))

	release := make(chan struct{})
	slow := serve(t, func(http.ResponseWriter, *http.Request) { <-release })
	defer close(release)
	start := time.Now()
	out = p.Run(t.Context(), httpCheck(upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(slow.URL)}), clusterName, 300*time.Millisecond)
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
	g.Expect(out.Passed).To(BeFalse())
	g.Expect(out.Message).To(ContainSubstring("no answer within the timeout of 300ms"))
}

// TestHTTPThroughTheServiceProxy asks a Service of the workload cluster
// through its apiserver (see package podnetwork for how the apiserver
// reaches the test's server).
func TestHTTPThroughTheServiceProxy(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	health := &atomic.Value{}
	health.Store("HEALTH_OK")
	srv := serve(t, ceph(health))
	svc := expose(t, srv)
	svc.Path = "/health?detail=1"
	p := &probe.Prober{Client: mgmt}
	check := upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atService(svc), Body: &upgradev1.HTTPBodyMatch{Contains: "HEALTH_OK"}}
	g.Expect(p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}))

	health.Store("HEALTH_ERR mon down")
	g.Expect(p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)).To(Equal(probe.Outcome{Message: "HTTP 503 Service Unavailable: HEALTH_ERR mon down (asked for /health)"}))

	// The Service's port by name gives the same.
	svc.Port = intstr.FromString("http")
	health.Store("HEALTH_OK")
	g.Expect(p.Run(t.Context(), httpCheck(check), clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}))
}

func TestHTTPServiceProxyFailures(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := &probe.Prober{Client: mgmt}

	// A Service without endpoints: the apiserver says so.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "workload", Name: "no-endpoints"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	g.Expect(cluster.Client.Create(ctx, svc)).To(Succeed())
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), svc) })
	check := upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atService(&upgradev1.HealthCheckService{Namespace: "workload", Name: "no-endpoints", Port: intstr.FromInt32(80)})}
	out := p.Run(ctx, httpCheck(check), clusterName, 5*time.Second)
	g.Expect(out).To(Equal(probe.Outcome{Message: `HTTP 503 Service Unavailable: the workload apiserver says: no endpoints available for service "no-endpoints"`}))

	// A Cluster without a kubeconfig.
	out = p.Run(ctx, httpCheck(check), "beta", 5*time.Second)
	g.Expect(out.Passed).To(BeFalse())
	g.Expect(out.Message).To(HavePrefix(`reading the kubeconfig of Cluster "beta"`))

	// An Authorization header cannot pass the apiserver.
	secret(t, "bearer", map[string]string{"Authorization": "Bearer x"})
	check.HeadersSecretName = "bearer"
	out = p.Run(ctx, httpCheck(check), clusterName, 5*time.Second)
	g.Expect(out.Message).To(HavePrefix(`Secret "bearer" sets an Authorization header, which cannot reach a Service through the workload apiserver`))
}

// TestEndpointSlicesRefuseLoopback is why package podnetwork tunnels: the
// apiserver proxies to Pods only, and no Pod may be at a loopback address.
func TestEndpointSlicesRefuseLoopback(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	err := cluster.Client.Create(t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "workload", Name: "loopback", Labels: map[string]string{discoveryv1.LabelServiceName: "loopback"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("may not be in the loopback range"))
}

// cancelled is a context already done.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestRunNeverPassesWithoutAnAnswer(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	srv := serve(t, func(http.ResponseWriter, *http.Request) {})
	out := (&probe.Prober{Client: mgmt}).Run(cancelled(), httpCheck(upgradev1.HTTPHealthCheck{HealthCheckEndpoint: atURL(srv.URL)}), clusterName, 5*time.Second)
	g.Expect(out.Passed).To(BeFalse())
	g.Expect(out.Message).NotTo(BeEmpty())
	out = (&probe.Prober{Client: mgmt}).Run(t.Context(), &upgradev1.ClusterHealthCheck{}, clusterName, time.Second)
	g.Expect(out).To(Equal(probe.Outcome{Message: "the check is neither an http nor a prometheus check"}))
}

// httptestTLS serves HEALTH_OK over TLS with httptest's own certificate.
func httptestTLS(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, "HEALTH_OK") }))
	t.Cleanup(srv.Close)
	return srv
}
