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
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/probe"
)

// TestMeasure judges the measurements of a channel's analysis: an empty
// result fails unless it is to pass, a query without a comparison returns
// what is healthy or what is wrong, and a service needs a Cluster.
func TestMeasure(t *testing.T) {
	envtestOnly(t)
	prom := startPrometheus(t)
	NewWithT(t).Expect(prom.Set(map[string]string{"__name__": "error_ratio", "cluster": "a"}, 0.001)).To(Succeed())
	NewWithT(t).Expect(prom.Set(map[string]string{"__name__": "error_ratio", "cluster": "b"}, 0.2)).To(Succeed())
	p := &probe.Prober{Client: mgmt}
	target := probe.Target{Endpoint: &upgradev1.HealthCheckEndpoint{URL: prom.URL}}
	lt := &upgradev1.PrometheusComparison{Operator: "<", Value: "0.01"}
	for _, tt := range []struct {
		name        string
		query       string
		cmp         *upgradev1.PrometheusComparison
		emptyPasses bool
		want        probe.Outcome
	}{
		{name: "an empty result fails closed", query: `error_ratio{cluster="typo"}`, cmp: lt, want: probe.Outcome{Message: "the query returned no sample (emptyResult is Fail: a metric that is misspelt or not scraped fails closed)"}},
		{name: "an empty result passes when asked", query: `error_ratio{cluster="a"} > 0.01`, emptyPasses: true, want: probe.Outcome{Passed: true}},
		{name: "a filter returns what is healthy", query: `error_ratio{cluster="a"} < 0.01`, want: probe.Outcome{Passed: true}},
		{name: "an alert-style query returns what is wrong", query: `error_ratio > 0.01`, emptyPasses: true, want: probe.Outcome{Message: `1 returned, and only an empty result passes: error_ratio{cluster="b"} 0.2`}},
		{name: "every sample satisfies the comparison", query: `error_ratio{cluster="a"}`, cmp: lt, want: probe.Outcome{Passed: true}},
		{name: "a sample that does not", query: `error_ratio`, cmp: lt, want: probe.Outcome{Message: `1 of 2 not < 0.01: error_ratio{cluster="b"} 0.2`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(p.Measure(t.Context(), target, tt.query, tt.cmp, tt.emptyPasses, 5*time.Second)).To(Equal(tt.want))
		})
	}

	g := NewWithT(t)
	svc := &upgradev1.HealthCheckEndpoint{Service: &upgradev1.HealthCheckService{Namespace: "monitoring", Name: "prometheus"}}
	g.Expect(p.Measure(t.Context(), probe.Target{Endpoint: svc}, `up`, nil, false, 5*time.Second)).To(Equal(probe.Outcome{
		Message: "a service is reached through a Cluster's apiserver: a query for no Cluster needs a url",
	}))
}

// TestMeasureReadsItsSecretsFromTheirNamespace: the headers of a channel's
// query come from the namespace it names, not from a Cluster's.
func TestMeasureReadsItsSecretsFromTheirNamespace(t *testing.T) {
	envtestOnly(t)
	g := NewWithT(t)
	prom := startPrometheus(t)
	g.Expect(prom.Set(map[string]string{"__name__": "up"}, 1)).To(Succeed())
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		prom.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	secret(t, "thanos-token", map[string]string{"Authorization": "Bearer s3cr3t\n"})
	p := &probe.Prober{Client: mgmt}
	out := p.Measure(t.Context(), probe.Target{Endpoint: &upgradev1.HealthCheckEndpoint{URL: srv.URL, HeadersSecretName: "thanos-token"}, SecretNamespace: namespace, ClusterNamespace: "elsewhere", ClusterName: "beta"},
		`up == 1`, nil, false, 5*time.Second)
	g.Expect(out).To(Equal(probe.Outcome{Passed: true}))
	g.Expect(auth).To(Equal("Bearer s3cr3t"))
}

func TestValidateMeasurement(t *testing.T) {
	g := NewWithT(t)
	e := &upgradev1.HealthCheckEndpoint{URL: "https://thanos.example.com"}
	path := field.NewPath("spec", "stages").Index(0).Child("analysis", "queries").Index(0)
	g.Expect(probe.ValidateMeasurement(e, "up", "up", &upgradev1.PrometheusComparison{Operator: "==", Value: "1"}, path)).To(BeEmpty())
	errs := probe.ValidateMeasurement(e, "sum(rate(x[$window])", "sum(rate(x[3600s])", nil, path)
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Field).To(Equal("spec.stages[0].analysis.queries[0].query"))
	g.Expect(errs[0].BadValue).To(Equal("sum(rate(x[$window])"), "the error shows the query as written")
	for _, c := range []upgradev1.PrometheusComparison{{Operator: ">=", Value: "-Inf"}, {Operator: "<=", Value: "+Inf"}, {Operator: "<", Value: "-Inf"}, {Operator: ">", Value: "Inf"}} {
		errs := probe.ValidateMeasurement(e, "up", "up", &c, path)
		g.Expect(errs).To(HaveLen(1), "%s %s", c.Operator, c.Value)
		g.Expect(errs[0].Field).To(Equal("spec.stages[0].analysis.queries[0].comparison"))
	}
}
