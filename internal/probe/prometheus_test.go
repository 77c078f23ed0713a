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
	"net"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/probe"
	"github.com/tollgate-dev/tollgate/test/framework/promserver"
)

// startPrometheus starts a Prometheus query API over a TSDB until the test
// ends.
func startPrometheus(t *testing.T) *promserver.Server {
	t.Helper()
	prom, err := promserver.Start()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = prom.Close() })
	return prom
}

func alert(name, severity string) map[string]string {
	return map[string]string{"__name__": "ALERTS", "alertname": name, "alertstate": "firing", "severity": severity}
}

func TestPrometheusNoFiringAlerts(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	prom := startPrometheus(t)
	p := &probe.Prober{Client: mgmt}
	check := promCheck(upgradev1.PrometheusHealthCheck{HealthCheckEndpoint: atURL(prom.URL), NoFiringAlerts: &upgradev1.PrometheusAlertSelector{Labels: map[string]string{"severity": "critical"}}})
	g.Expect(p.Run(t.Context(), check, clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}), "no alert at all")

	g.Expect(prom.Set(alert("CephHealthWarning", "warning"), 1)).To(Succeed())
	g.Expect(prom.Set(map[string]string{"__name__": "ALERTS", "alertname": "CephHealthError", "alertstate": "pending", "severity": "critical"}, 1)).To(Succeed())
	g.Expect(p.Run(t.Context(), check, clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}), "a warning fires, a critical alert is only pending")

	g.Expect(prom.Set(alert("CephHealthError", "critical"), 1)).To(Succeed())
	g.Expect(prom.Set(alert("CephMonDown", "critical"), 1)).To(Succeed())
	g.Expect(p.Run(t.Context(), check, clusterName, 5*time.Second)).To(Equal(probe.Outcome{
		Message: `2 firing: CephHealthError{severity="critical"}, CephMonDown{severity="critical"}`,
	}))
	g.Expect(prom.Queries()).To(HaveEach(`ALERTS{alertstate="firing",severity="critical"}`))

	// Prometheus ends a resolved alert's series with a staleness marker.
	g.Expect(prom.Stale(alert("CephHealthError", "critical"))).To(Succeed())
	g.Expect(prom.Stale(alert("CephMonDown", "critical"))).To(Succeed())
	g.Expect(p.Run(t.Context(), check, clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}))
}

func TestPrometheusQueryAndComparison(t *testing.T) {
	envtestOnly(t)
	prom := startPrometheus(t)
	for _, s := range []struct {
		labels map[string]string
		value  float64
	}{
		{map[string]string{"__name__": "ceph_health_status", "cluster": "a"}, 0},
		{map[string]string{"__name__": "ceph_health_status", "cluster": "b"}, 2},
		{map[string]string{"__name__": "replicas_unavailable", "deployment": "api"}, 0},
	} {
		NewWithT(t).Expect(prom.Set(s.labels, s.value)).To(Succeed())
	}
	p := &probe.Prober{Client: mgmt}
	emptyFails := probe.Outcome{Message: "the query returned no sample, and an empty result fails the check (a misspelt metric or an exporter that is down returns none too); set emptyResult: Pass if empty means healthy"}
	for _, tt := range []struct {
		name  string
		query string
		cmp   *upgradev1.PrometheusComparison
		empty upgradev1.PrometheusEmptyResult
		want  probe.Outcome
	}{
		{name: "an empty result passes an alert-style query", query: `replicas_unavailable > 0`, empty: upgradev1.PrometheusEmptyResultPass, want: probe.Outcome{Passed: true}},
		{name: "a misspelt metric fails the comparison", query: `ceph_health_statsu`, cmp: &upgradev1.PrometheusComparison{Operator: "==", Value: "0"}, want: emptyFails},
		{name: "an empty result fails when said so", query: `ceph_health_status{cluster="gone"}`, cmp: &upgradev1.PrometheusComparison{Operator: "==", Value: "0"}, empty: upgradev1.PrometheusEmptyResultFail, want: emptyFails},
		{name: "an empty result passes a comparison with emptyResult Pass", query: `ceph_health_status{cluster="gone"}`, cmp: &upgradev1.PrometheusComparison{Operator: "==", Value: "0"}, empty: upgradev1.PrometheusEmptyResultPass, want: probe.Outcome{Passed: true}},
		{name: "the scalar of an empty vector is NaN, which fails", query: `scalar(ceph_health_statsu)`, cmp: &upgradev1.PrometheusComparison{Operator: "!=", Value: "1"}, want: probe.Outcome{Message: `1 of 1 not != 1: NaN`}},
		{name: "any sample fails without a comparison", query: `ceph_health_status > 0`, empty: upgradev1.PrometheusEmptyResultPass, want: probe.Outcome{Message: `1 returned, and only an empty result passes: ceph_health_status{cluster="b"} 2`}},
		{name: "every sample satisfies the comparison", query: `ceph_health_status`, cmp: &upgradev1.PrometheusComparison{Operator: "<=", Value: "2"}, want: probe.Outcome{Passed: true}},
		{name: "a sample that does not", query: `ceph_health_status`, cmp: &upgradev1.PrometheusComparison{Operator: "==", Value: "0"}, want: probe.Outcome{Message: `1 of 2 not == 0: ceph_health_status{cluster="b"} 2`}},
		{name: "an aggregate", query: `max(ceph_health_status)`, cmp: &upgradev1.PrometheusComparison{Operator: "<", Value: "1e0"}, want: probe.Outcome{Message: `1 of 1 not < 1e0: 2`}},
		{name: "a scalar", query: `scalar(max(ceph_health_status))`, cmp: &upgradev1.PrometheusComparison{Operator: ">=", Value: "2"}, want: probe.Outcome{Passed: true}},
		{name: "a range vector, every sample", query: `ceph_health_status{cluster="b"}[1m]`, cmp: &upgradev1.PrometheusComparison{Operator: "!=", Value: "2"}, want: probe.Outcome{Message: `1 of 1 not != 2: ceph_health_status{cluster="b"} 2`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			check := promCheck(upgradev1.PrometheusHealthCheck{HealthCheckEndpoint: atURL(prom.URL), Query: tt.query, Comparison: tt.cmp, EmptyResult: tt.empty})
			NewWithT(t).Expect(p.Run(t.Context(), check, clusterName, 5*time.Second)).To(Equal(tt.want))
		})
	}
}

func TestPrometheusFailures(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	prom := startPrometheus(t)
	p := &probe.Prober{Client: mgmt}

	// A query Prometheus refuses to run.
	out := p.Run(t.Context(), promCheck(upgradev1.PrometheusHealthCheck{HealthCheckEndpoint: atURL(prom.URL), Query: `label_replace(up, "a", "$1", "b", "(")`}), clusterName, 5*time.Second)
	g.Expect(out.Passed).To(BeFalse())
	g.Expect(out.Message).To(SatisfyAll(HavePrefix("querying Prometheus at "+prom.URL+": "), ContainSubstring("invalid regular expression")))

	// A Prometheus that is not there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	gone := "http://" + l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	out = p.Run(t.Context(), promCheck(upgradev1.PrometheusHealthCheck{HealthCheckEndpoint: atURL(gone), Query: `up`, EmptyResult: upgradev1.PrometheusEmptyResultPass}), clusterName, 5*time.Second)
	g.Expect(out.Passed).To(BeFalse())
	g.Expect(out.Message).To(SatisfyAll(HavePrefix("querying Prometheus at "+gone+": "), ContainSubstring("connection refused")))
}

// TestPrometheusThroughTheServiceProxy queries the Prometheus of the
// workload cluster through its apiserver, as a prometheus check of a
// service does.
func TestPrometheusThroughTheServiceProxy(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	prom := startPrometheus(t)
	srv := httptest.NewServer(prom.Handler())
	t.Cleanup(srv.Close)
	svc := expose(t, srv)
	check := promCheck(upgradev1.PrometheusHealthCheck{HealthCheckEndpoint: atService(svc), NoFiringAlerts: &upgradev1.PrometheusAlertSelector{}})
	p := &probe.Prober{Client: mgmt}
	g.Expect(p.Run(t.Context(), check, clusterName, 5*time.Second)).To(Equal(probe.Outcome{Passed: true}))
	g.Expect(prom.Set(alert("KubeNodeNotReady", "warning"), 1)).To(Succeed())
	g.Expect(p.Run(t.Context(), check, clusterName, 5*time.Second)).To(Equal(probe.Outcome{Message: `1 firing: KubeNodeNotReady{severity="warning"}`}))
}
