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

package corpus

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// HTTPCheck returns a valid http ClusterHealthCheck asking Ceph's manager
// for its health through the workload apiserver, changed by mutate.
func HTTPCheck(name string, mutate ...func(*upgradev1.ClusterHealthCheck)) *upgradev1.ClusterHealthCheck {
	c := &upgradev1.ClusterHealthCheck{
		TypeMeta:   metav1.TypeMeta{APIVersion: upgradev1.GroupVersion.String(), Kind: "ClusterHealthCheck"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: upgradev1.ClusterHealthCheckSpec{
			HTTP: &upgradev1.HTTPHealthCheck{
				HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{Service: &upgradev1.HealthCheckService{
					Namespace: "rook-ceph", Name: "rook-ceph-mgr", Port: intstr.FromString("http-metrics"), Path: "/health",
				}},
				Body: &upgradev1.HTTPBodyMatch{Contains: "HEALTH_OK"},
			},
			Interval: &metav1.Duration{Duration: 30 * time.Second},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// PrometheusCheck returns a valid prometheus ClusterHealthCheck holding
// while a critical alert fires, changed by mutate.
func PrometheusCheck(name string, mutate ...func(*upgradev1.ClusterHealthCheck)) *upgradev1.ClusterHealthCheck {
	c := &upgradev1.ClusterHealthCheck{
		TypeMeta:   metav1.TypeMeta{APIVersion: upgradev1.GroupVersion.String(), Kind: "ClusterHealthCheck"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: upgradev1.ClusterHealthCheckSpec{
			Prometheus: &upgradev1.PrometheusHealthCheck{
				HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: "https://prometheus.example.com"},
				NoFiringAlerts:      &upgradev1.PrometheusAlertSelector{Labels: map[string]string{"severity": "critical"}},
			},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// UnsafeProbes returns checks of no kind or of two, and http and prometheus
// checks that must be refused.
func UnsafeProbes() []Case {
	return []Case{
		{
			Name:    "health check of no kind",
			Object:  HTTPCheck("none", func(c *upgradev1.ClusterHealthCheck) { c.Spec.HTTP = nil }),
			Field:   "spec",
			Message: "set exactly one of template (a Job), http or prometheus",
			Schema:  "set exactly one of template (a Job), http or prometheus",
		},
		{
			Name: "health check of two kinds: a Job and a request",
			Object: HTTPCheck("two", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Template = JobTemplate("rook-ceph", "quay.io/ceph/ceph:v19", "ceph", "health")
			}),
			Field:   "spec",
			Message: "set exactly one of template (a Job), http or prometheus",
			Schema:  "set exactly one of template (a Job), http or prometheus",
		},
		{
			Name:    "http check with neither service nor url",
			Object:  HTTPCheck("nowhere", func(c *upgradev1.ClusterHealthCheck) { c.Spec.HTTP.Service = nil }),
			Field:   "spec.http",
			Message: "set exactly one of service and url",
			Schema:  "set exactly one of service and url",
		},
		{
			Name:    "http check whose url is not absolute",
			Object:  HTTPCheck("relative", func(c *upgradev1.ClusterHealthCheck) { c.Spec.HTTP.Service, c.Spec.HTTP.URL = nil, "/health" }),
			Field:   "spec.http.url",
			Message: "must be an absolute URL, with a scheme and a host",
		},
		{
			Name: "http check whose url has no scheme",
			Object: HTTPCheck("schemeless", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.HTTP.Service, c.Spec.HTTP.URL = nil, "ceph-mgr.rook-ceph:9283/health"
			}),
			Field:   "spec.http.url",
			Message: "must be an",
		},
		{
			Name: "http check whose url holds a password",
			Object: HTTPCheck("userinfo", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.HTTP.Service, c.Spec.HTTP.URL = nil, "https://admin:hunter2@ceph.example.com/health"
			}),
			Field:   "spec.http.url",
			Message: "put an Authorization header in headersSecretName",
		},
		{
			Name: "http check whose body regex does not compile",
			Object: HTTPCheck("regex", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.HTTP.Body = &upgradev1.HTTPBodyMatch{Regex: "HEALTH_(OK"}
			}),
			Field:   "spec.http.body.regex",
			Message: "must be an RE2 regular expression",
		},
		{
			Name:    "http check whose service path is a URL",
			Object:  HTTPCheck("path", func(c *upgradev1.ClusterHealthCheck) { c.Spec.HTTP.Service.Path = "http://ceph/health" }),
			Field:   "spec.http.service.path",
			Message: "must be a path starting with /",
		},
		{
			Name: "http check to a service with TLS settings",
			Object: HTTPCheck("tls", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.HTTP.TLS = &upgradev1.HealthCheckTLS{InsecureSkipVerify: true}
			}),
			Field:   "spec.http.tls",
			Message: "applies to url only",
		},
		{
			Name:    "http check under the minimum interval",
			Object:  HTTPCheck("fast", func(c *upgradev1.ClusterHealthCheck) { c.Spec.Interval = duration(time.Second) }),
			Field:   "spec.interval",
			Message: "must be at least 5s",
			Schema:  "interval must be at least 5s",
		},
		{
			Name:    "prometheus check whose query does not parse",
			Object:  PrometheusCheck("broken", withQuery(`sum(ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "==", Value: "0"})),
			Field:   "spec.prometheus.query",
			Message: "must be a PromQL expression",
		},
		{
			Name:    "prometheus check whose query returns a string",
			Object:  PrometheusCheck("string", withQuery(`"HEALTH_OK"`, &upgradev1.PrometheusComparison{Operator: "==", Value: "0"})),
			Field:   "spec.prometheus.query",
			Message: "must return numbers",
		},
		{
			Name:    "prometheus comparison with a value that is not a number",
			Object:  PrometheusCheck("nan", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "<", Value: "HEALTH_WARN"})),
			Field:   "spec.prometheus.comparison.value",
			Message: "must be a number",
		},
		// A gate fails closed: a comparison no sample can fail, or a query
		// whose empty result would pass without saying so, is refused.
		{
			Name:    "prometheus comparison every number satisfies: >= -Inf",
			Object:  PrometheusCheck("ge-minus-inf", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: ">=", Value: "-Inf"})),
			Field:   "spec.prometheus.comparison.value",
			Message: `every number satisfies >= -Inf, so the check would pass whatever the query returns and could never hold a rollout: compare with the threshold between healthy and unhealthy instead, such as operator "==" and value "0"`,
		},
		{
			Name:    "prometheus comparison every number satisfies: <= +Inf",
			Object:  PrometheusCheck("le-plus-inf", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "<=", Value: "+Inf"})),
			Field:   "spec.prometheus.comparison.value",
			Message: "every number satisfies <= +Inf",
		},
		{
			Name:    "prometheus comparison every number satisfies: != Inf",
			Object:  PrometheusCheck("ne-inf", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "!=", Value: "Inf"})),
			Field:   "spec.prometheus.comparison.value",
			Message: "every number satisfies != Inf",
		},
		{
			Name:    "prometheus comparison every number satisfies: <= the largest float64",
			Object:  PrometheusCheck("le-max", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "<=", Value: "1.7976931348623157e308"})),
			Field:   "spec.prometheus.comparison.value",
			Message: "every number satisfies <= 1.7976931348623157e308",
		},
		{
			Name:    "prometheus comparison with NaN: != NaN",
			Object:  PrometheusCheck("ne-nan", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "!=", Value: "NaN"})),
			Field:   "spec.prometheus.comparison.value",
			Message: "must be a number, not NaN: no sample equals NaN, so == NaN could never pass and != NaN could never fail",
		},
		{
			Name:    "prometheus comparison beyond the range of a sample",
			Object:  PrometheusCheck("huge", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "<", Value: "1e999"})),
			Field:   "spec.prometheus.comparison.value",
			Message: "must be a number a sample can take",
		},
		{
			Name:    "prometheus comparison no number satisfies: == +Inf",
			Object:  PrometheusCheck("eq-inf", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "==", Value: "+Inf"})),
			Field:   "spec.prometheus.comparison.value",
			Message: "no number satisfies == +Inf, so the check could never pass",
		},
		{
			Name:    "prometheus query without comparison or emptyResult",
			Object:  PrometheusCheck("ceph-status", withQuery(`ceph_health_status != 0`, nil)),
			Field:   "spec.prometheus.emptyResult",
			Message: "a query without comparison fails on every sample it returns, and an empty result fails unless emptyResult is Pass, so the check could never pass: set emptyResult: Pass for an alert-style query",
			Schema:  "a query without comparison fails on every sample it returns, and an empty result fails unless emptyResult is Pass",
		},
		{
			Name: "prometheus query without comparison whose empty result fails",
			Object: PrometheusCheck("ceph-status-fail", withQuery(`ceph_health_status != 0`, nil), func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Prometheus.EmptyResult = upgradev1.PrometheusEmptyResultFail
			}),
			Field:   "spec.prometheus.emptyResult",
			Message: "so the check could never pass",
			Schema:  "so the check could never pass",
		},
		{
			Name: "prometheus emptyResult on noFiringAlerts",
			Object: PrometheusCheck("alerts-empty", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Prometheus.EmptyResult = upgradev1.PrometheusEmptyResultPass
			}),
			Field:   "spec.prometheus",
			Message: "emptyResult applies to query only",
			Schema:  "emptyResult applies to query only",
		},
		{
			Name: "prometheus comparison on noFiringAlerts",
			Object: PrometheusCheck("alerts-compared", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Prometheus.Comparison = &upgradev1.PrometheusComparison{Operator: "<", Value: "1"}
			}),
			Field:   "spec.prometheus",
			Message: "comparison applies to query only",
			Schema:  "comparison applies to query only",
		},
		{
			Name:    "prometheus check with both a query and noFiringAlerts",
			Object:  PrometheusCheck("both", func(c *upgradev1.ClusterHealthCheck) { c.Spec.Prometheus.Query = "up == 0" }),
			Field:   "spec.prometheus",
			Message: "set exactly one of query and noFiringAlerts",
			Schema:  "set exactly one of query and noFiringAlerts",
		},
		{
			Name: "prometheus alert selector on alertstate",
			Object: PrometheusCheck("alertstate", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Prometheus.NoFiringAlerts.Labels = map[string]string{"alertstate": "pending"}
			}),
			Field:   "spec.prometheus.noFiringAlerts.labels[alertstate]",
			Message: "is set by Tollgate",
		},
	}
}

// ValidProbes returns http and prometheus checks that must be admitted.
func ValidProbes() []Case {
	return []Case{
		{Name: "http check: Ceph's manager through the workload apiserver", Object: HTTPCheck("ceph-mgr")},
		{
			Name: "http check: a URL with headers, a CA and expected codes, defaults left unset",
			Object: HTTPCheck("app-health", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.HTTP.Service, c.Spec.HTTP.URL = nil, "https://app.example.com/healthz?verbose=1"
				c.Spec.HTTP.HeadersSecretName = "app-health-token"
				c.Spec.HTTP.TLS = &upgradev1.HealthCheckTLS{CASecretName: "app-ca"}
				c.Spec.HTTP.ExpectedStatusCodes = []int32{200, 204}
				c.Spec.HTTP.Body = &upgradev1.HTTPBodyMatch{Regex: `"status":\s*"(ok|pass)"`}
				c.Spec.Interval = nil
			}),
		},
		{
			Name: "http check: HEAD, a numbered https port",
			Object: HTTPCheck("head", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.HTTP.Method, c.Spec.HTTP.Body = "HEAD", nil
				c.Spec.HTTP.Service.Port, c.Spec.HTTP.Service.Scheme = intstr.FromInt32(8443), "https"
			}),
		},
		{Name: "prometheus check: no critical alert firing", Object: PrometheusCheck("no-critical-alerts")},
		{
			Name:   "prometheus check: a query and a comparison, through the workload apiserver",
			Object: PrometheusCheck("ceph-ok", withQuery(`max(ceph_health_status)`, &upgradev1.PrometheusComparison{Operator: "==", Value: "0"}), throughService),
		},
		{
			Name: "prometheus check: an alert-style query, whose empty result passes",
			Object: PrometheusCheck("no-unavailable", withQuery(`kube_deployment_status_replicas_unavailable{namespace="payments"} > 0`, nil), func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Prometheus.EmptyResult = upgradev1.PrometheusEmptyResultPass
			}),
		},
		{
			Name: "prometheus check: a comparison and an empty result that fails, said explicitly",
			Object: PrometheusCheck("ceph-ok-explicit", withQuery(`ceph_health_status`, &upgradev1.PrometheusComparison{Operator: "<", Value: "1"}), func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Prometheus.EmptyResult = upgradev1.PrometheusEmptyResultFail
			}),
		},
		{
			Name:   "prometheus check: a ratio at least 0.95",
			Object: PrometheusCheck("ratio", withQuery(`avg(up{job="ceph"})`, &upgradev1.PrometheusComparison{Operator: ">=", Value: "0.95"})),
		},
		{
			Name: "prometheus check: labels and annotations are warned about",
			Object: PrometheusCheck("labelled", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Labels = map[string]string{"team": "storage"}
			}),
			Warning: "apply to the Job of a Job check only",
		},
	}
}

// withQuery makes a prometheus check run query, compared with cmp if set.
func withQuery(query string, cmp *upgradev1.PrometheusComparison) func(*upgradev1.ClusterHealthCheck) {
	return func(c *upgradev1.ClusterHealthCheck) {
		c.Spec.Prometheus.NoFiringAlerts = nil
		c.Spec.Prometheus.Query, c.Spec.Prometheus.Comparison = query, cmp
	}
}

// throughService sends a prometheus check to the workload cluster's
// Prometheus through its apiserver.
func throughService(c *upgradev1.ClusterHealthCheck) {
	c.Spec.Prometheus.URL = ""
	c.Spec.Prometheus.Service = &upgradev1.HealthCheckService{Namespace: "monitoring", Name: "prometheus-k8s", Port: intstr.FromString("web")}
}
