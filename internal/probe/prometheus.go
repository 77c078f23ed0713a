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

package probe

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// maxListed is how many offending series a failure reason names at most;
// the reason is cut at MaxMessageLength anyway.
const maxListed = 8

// promParser parses PromQL as a Prometheus without feature flags does.
var promParser = parser.NewParser(parser.Options{})

// checkQuery says why q is not a PromQL expression an instant query can
// judge: it does not parse, or it returns a string.
func checkQuery(q string) error {
	expr, err := promParser.ParseExpr(q)
	if err != nil {
		return fmt.Errorf("must be a PromQL expression: %w", err)
	}
	if expr.Type() == parser.ValueTypeString {
		return fmt.Errorf("must return numbers (a vector, a scalar or a range vector), not a string")
	}
	return nil
}

// AlertsQuery returns the query of noFiringAlerts: the firing ALERTS
// series with the selector's labels, for example
// ALERTS{alertstate="firing",severity="critical"}.
func AlertsQuery(s *upgradev1.PrometheusAlertSelector) string {
	var b strings.Builder
	b.WriteString(`ALERTS{alertstate="firing"`)
	for _, name := range sortedKeys(s.Labels) {
		fmt.Fprintf(&b, ",%s=%s", name, strconv.Quote(s.Labels[name]))
	}
	b.WriteString("}")
	return b.String()
}

// Query returns the PromQL expression a prometheus check runs.
func Query(p *upgradev1.PrometheusHealthCheck) string {
	if p.NoFiringAlerts != nil {
		return AlertsQuery(p.NoFiringAlerts)
	}
	return p.Query
}

// runPrometheus runs the query of p at ep with Prometheus' API client and
// judges its result.
func runPrometheus(ctx context.Context, p *upgradev1.PrometheusHealthCheck, ep *endpoint, now time.Time, timeout time.Duration) Outcome {
	c, err := api.NewClient(api.Config{Address: ep.url.String(), Client: &http.Client{Transport: ep.transport, CheckRedirect: ep.checkRedirect}})
	if err != nil {
		return fail("creating the Prometheus client of %s: %v", ep, err)
	}
	query := Query(p)
	value, _, err := promv1.NewAPI(c).Query(ctx, query, now, promv1.WithTimeout(timeout))
	if err != nil {
		return fail("querying Prometheus at %s: %v", ep, describeError(ctx, err, timeout))
	}
	return judge(value, p)
}

// judge returns the verdict on the result of the query of p.
func judge(value model.Value, p *upgradev1.PrometheusHealthCheck) Outcome {
	var samples []sample
	switch v := value.(type) {
	case model.Vector:
		for _, s := range v {
			samples = append(samples, sample{metric: s.Metric, value: float64(s.Value), histogram: s.Histogram != nil})
		}
	case model.Matrix:
		for _, series := range v {
			for _, pair := range series.Values {
				samples = append(samples, sample{metric: series.Metric, value: float64(pair.Value)})
			}
			for range series.Histograms {
				samples = append(samples, sample{metric: series.Metric, histogram: true})
			}
		}
	case *model.Scalar:
		samples = append(samples, sample{value: float64(v.Value)})
	default:
		return fail("the query returned a %s, not numbers", value.Type())
	}
	switch {
	case len(samples) == 0 && p.PassesWhenEmpty():
		return Outcome{Passed: true}
	case len(samples) == 0:
		// A misspelt metric, an exporter that is down and a healthy
		// alert-style query all return nothing: the gate fails closed.
		return fail("the query returned no sample, and an empty result fails the check (a misspelt metric or an exporter that is down returns none too); set emptyResult: Pass if empty means healthy")
	case p.NoFiringAlerts != nil:
		return fail("%d firing: %s", len(samples), list(samples, alertString))
	case p.Comparison == nil:
		return fail("%d returned, and only an empty result passes: %s", len(samples), list(samples, sampleString))
	}
	want, err := parseNumber(p.Comparison.Value)
	if err != nil {
		return fail("comparison.value %q: %v", p.Comparison.Value, err)
	}
	var offending []sample
	for _, s := range samples {
		// NaN satisfies no comparison but !=: it is no value, and fails.
		if s.histogram || math.IsNaN(s.value) || !compare(s.value, p.Comparison.Operator, want) {
			offending = append(offending, s)
		}
	}
	if len(offending) == 0 {
		return Outcome{Passed: true}
	}
	return fail("%d of %d not %s %s: %s", len(offending), len(samples), p.Comparison.Operator, p.Comparison.Value, list(offending, sampleString))
}

// sample is one sample of a query's result.
type sample struct {
	metric    model.Metric
	value     float64
	histogram bool
}

func compare(v float64, op string, want float64) bool {
	switch op {
	case "<":
		return v < want
	case "<=":
		return v <= want
	case "==":
		return v == want
	case "!=":
		return v != want
	case ">":
		return v > want
	case ">=":
		return v >= want
	}
	return false
}

// list names the first samples, each as format says.
func list(samples []sample, format func(sample) string) string {
	parts := make([]string, 0, min(len(samples), maxListed)+1)
	for i, s := range samples {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(samples)-maxListed))
			break
		}
		parts = append(parts, format(s))
	}
	return strings.Join(parts, ", ")
}

// sampleString is a series and its value, for example
// ceph_health_status{job="ceph"} 1.
func sampleString(s sample) string {
	value := "(a histogram)"
	if !s.histogram {
		value = formatFloat(s.value)
	}
	if len(s.metric) == 0 {
		return value
	}
	return s.metric.String() + " " + value
}

// alertString is a firing alert by its name and labels, for example
// CephHealthWarning{severity="warning"}.
func alertString(s sample) string {
	m := s.metric.Clone()
	name := string(m[model.AlertNameLabel])
	delete(m, model.MetricNameLabel)
	delete(m, model.AlertNameLabel)
	delete(m, "alertstate")
	if len(m) == 0 {
		return name
	}
	return name + m.String()
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
