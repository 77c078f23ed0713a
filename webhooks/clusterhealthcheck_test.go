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

package webhooks_test

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/webhooks"
	"github.com/tollgate-dev/tollgate/webhooks/test/corpus"
)

// TestPrometheusCheckFailsClosed checks that the webhook refuses a
// prometheus check that could never fail (a comparison every number
// satisfies) or never pass, naming the field and what to write instead, and
// admits one that can do both.
func TestPrometheusCheckFailsClosed(t *testing.T) {
	query := func(q string, cmp *upgradev1.PrometheusComparison, empty upgradev1.PrometheusEmptyResult) *upgradev1.ClusterHealthCheck {
		return corpus.PrometheusCheck("check", func(c *upgradev1.ClusterHealthCheck) {
			c.Spec.Prometheus.NoFiringAlerts = nil
			c.Spec.Prometheus.Query, c.Spec.Prometheus.Comparison, c.Spec.Prometheus.EmptyResult = q, cmp, empty
		})
	}
	compared := func(op, value string) *upgradev1.ClusterHealthCheck {
		return query("ceph_health_status", &upgradev1.PrometheusComparison{Operator: op, Value: value}, "")
	}
	tests := []struct {
		name      string
		check     *upgradev1.ClusterHealthCheck
		wantField string
		wantMsg   string
	}{
		{name: ">= -Inf", check: compared(">=", "-Inf"), wantField: "spec.prometheus.comparison.value", wantMsg: `every number satisfies >= -Inf, so the check would pass whatever the query returns and could never hold a rollout: compare with the threshold between healthy and unhealthy instead, such as operator "==" and value "0" for ceph_health_status`},
		{name: "<= +Inf", check: compared("<=", "+Inf"), wantField: "spec.prometheus.comparison.value", wantMsg: "every number satisfies <= +Inf"},
		{name: "> -inf", check: compared(">", "-inf"), wantField: "spec.prometheus.comparison.value", wantMsg: "every number satisfies > -inf"},
		{name: "!= Infinity", check: compared("!=", "Infinity"), wantField: "spec.prometheus.comparison.value", wantMsg: "every number satisfies != Infinity"},
		{name: "<= the largest float64", check: compared("<=", "1.7976931348623157e308"), wantField: "spec.prometheus.comparison.value", wantMsg: "every number satisfies <= 1.7976931348623157e308"},
		{name: ">= the lowest float64", check: compared(">=", "-1.7976931348623157e308"), wantField: "spec.prometheus.comparison.value", wantMsg: "every number satisfies >= -1.7976931348623157e308"},
		{name: "!= NaN", check: compared("!=", "NaN"), wantField: "spec.prometheus.comparison.value", wantMsg: "must be a number, not NaN: no sample equals NaN, so == NaN could never pass and != NaN could never fail; compare with a threshold such as 0 or 0.95"},
		{name: "== NaN", check: compared("==", "NaN"), wantField: "spec.prometheus.comparison.value", wantMsg: "must be a number, not NaN"},
		{name: "< 1e999, beyond a float64", check: compared("<", "1e999"), wantField: "spec.prometheus.comparison.value", wantMsg: "must be a number a sample can take, between -1.7976931348623157e308 and 1.7976931348623157e308"},
		{name: "== +Inf", check: compared("==", "+Inf"), wantField: "spec.prometheus.comparison.value", wantMsg: "no number satisfies == +Inf, so the check could never pass and would hold every rollout"},
		{name: "< -Inf", check: compared("<", "-Inf"), wantField: "spec.prometheus.comparison.value", wantMsg: "no number satisfies < -Inf"},
		{
			name: "a query without comparison, emptyResult unset", check: query("ceph_health_status != 0", nil, ""),
			wantField: "spec.prometheus.emptyResult", wantMsg: "Required value: a query without comparison fails on every sample it returns, and an empty result fails unless emptyResult is Pass, so the check could never pass: set emptyResult: Pass for an alert-style query that returns only what is wrong",
		},
		{
			name: "a query without comparison, emptyResult Fail", check: query("ceph_health_status != 0", nil, upgradev1.PrometheusEmptyResultFail),
			wantField: "spec.prometheus.emptyResult", wantMsg: `Invalid value: "Fail": a query without comparison`,
		},
		{
			name: "emptyResult on noFiringAlerts", check: corpus.PrometheusCheck("check", func(c *upgradev1.ClusterHealthCheck) {
				c.Spec.Prometheus.EmptyResult = upgradev1.PrometheusEmptyResultPass
			}),
			wantField: "spec.prometheus.emptyResult", wantMsg: "emptyResult applies to query only: noFiringAlerts passes while no alert fires",
		},
		{
			name: "an unknown emptyResult", check: query("up == 0", nil, "Ignore"),
			wantField: "spec.prometheus.emptyResult", wantMsg: `Unsupported value: "Ignore": supported values: "Fail", "Pass"`,
		},
		{name: "== 0", check: compared("==", "0")},
		{name: "< 1", check: compared("<", "1")},
		{name: ">= 0.95", check: compared(">=", "0.95")},
		{name: "!= 2", check: compared("!=", "2")},
		{name: "< the largest float64", check: compared("<", "1.7976931348623157e308")},
		{name: "an alert-style query with emptyResult Pass", check: query(`ALERTS{alertstate="firing",severity="critical"}`, nil, upgradev1.PrometheusEmptyResultPass)},
		{name: "a comparison with emptyResult Pass", check: query("ceph_health_status", &upgradev1.PrometheusComparison{Operator: "==", Value: "0"}, upgradev1.PrometheusEmptyResultPass)},
		{name: "noFiringAlerts", check: corpus.PrometheusCheck("check")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := (&webhooks.ClusterHealthCheck{}).ValidateCreate(t.Context(), tt.check)
			if tt.wantField == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(causes(err)).To(ConsistOf(SatisfyAll(
				HaveField("Field", tt.wantField),
				HaveField("Message", ContainSubstring(tt.wantMsg)),
			)), "one cause, at the field, saying what to write")
		})
	}
}
