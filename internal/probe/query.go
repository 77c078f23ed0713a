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
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// This file runs the PromQL measurements of a ReleaseChannel's analysis:
// the same endpoints, transports and judgement as a prometheus check, with
// what differs said explicitly: the Secrets live in a namespace of their
// own (a ReleaseChannel has none), a query may run for no Cluster (a whole
// stage), and an empty result fails unless the query says otherwise.

var errServiceWithoutCluster = errors.New("a service is reached through a Cluster's apiserver: a query for no Cluster needs a url")

// Target is where Measure sends a query.
type Target struct {
	// Endpoint is the Prometheus API: a service or a url, headers and TLS.
	Endpoint *upgradev1.HealthCheckEndpoint
	// SecretNamespace holds the Endpoint's headers and CA Secrets.
	SecretNamespace string
	// ClusterNamespace and ClusterName name the Cluster whose apiserver
	// proxies a service endpoint; empty for a query of no Cluster.
	ClusterNamespace, ClusterName string
}

// Measurement is what a query answers: the verdict on its result.
type Measurement struct {
	// Query is the PromQL expression that ran.
	Query string
	// Outcome is the verdict.
	Outcome
}

// Measure runs query at t, within timeout, and judges its result. A result
// with no sample passes only when emptyPasses. With a comparison, every
// sample must satisfy it. Without one, the samples are the opposite of an
// empty result: what is healthy when an empty result fails (a filter such
// as error_ratio < 0.01), what is wrong when it passes (an alert-style
// query such as error_ratio > 0.01). Whatever goes wrong is a failed
// measurement with its reason.
func (p *Prober) Measure(ctx context.Context, t Target, query string, comparison *upgradev1.PrometheusComparison, emptyPasses bool, timeout time.Duration) Outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if t.Endpoint.Service != nil && t.ClusterName == "" {
		return fail("%v", errServiceWithoutCluster)
	}
	ep, err := p.resolveIn(ctx, t.SecretNamespace, t.ClusterNamespace, t.ClusterName, t.Endpoint)
	if err != nil {
		return fail("%v", describeError(ctx, err, timeout))
	}
	defer ep.close()
	c, err := api.NewClient(api.Config{Address: ep.url.String(), Client: &http.Client{Transport: ep.transport, CheckRedirect: ep.checkRedirect}})
	if err != nil {
		return fail("creating the Prometheus client of %s: %v", ep, err)
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	value, _, err := promv1.NewAPI(c).Query(ctx, query, now(), promv1.WithTimeout(timeout))
	if err != nil {
		return fail("querying Prometheus at %s: %v", ep, describeError(ctx, err, timeout))
	}
	switch {
	case empty(value) && emptyPasses:
		return Outcome{Passed: true}
	case empty(value):
		return fail("the query returned no sample (emptyResult is Fail: a metric that is misspelt or not scraped fails closed)")
	case comparison == nil && !emptyPasses:
		// The query returns what is healthy, as a filter does.
		return Outcome{Passed: true}
	}
	// With a comparison every sample must satisfy it; without one the query
	// returns what is wrong (emptyResult Pass), and any sample fails.
	return judge(value, &upgradev1.PrometheusHealthCheck{Query: query, Comparison: comparison})
}

// empty reports whether a query's result holds no sample.
func empty(value model.Value) bool {
	switch v := value.(type) {
	case model.Vector:
		return len(v) == 0
	case model.Matrix:
		for _, series := range v {
			if len(series.Values) > 0 || len(series.Histograms) > 0 {
				return false
			}
		}
		return true
	}
	return false
}

// ValidateMeasurement returns what is wrong with a query measured by
// Measure at fldPath: an endpoint that is not one, a query that does not
// parse or cannot return numbers (query is what runs, its placeholders
// replaced; written is what the user wrote, shown in the error), and a
// comparison that is not one, or that cannot fail or cannot pass.
func ValidateMeasurement(e *upgradev1.HealthCheckEndpoint, written, query string, c *upgradev1.PrometheusComparison, fldPath *field.Path) field.ErrorList {
	allErrs := validateEndpoint(e, fldPath)
	if err := checkQuery(query); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("query"), written, err.Error()))
	}
	if c == nil {
		return allErrs
	}
	cmpPath := fldPath.Child("comparison")
	if !isOperator(c.Operator) {
		allErrs = append(allErrs, field.NotSupported(cmpPath.Child("operator"), c.Operator, comparisonOperators))
	}
	want, err := parseNumber(c.Value)
	if err != nil {
		return append(allErrs, field.Invalid(cmpPath.Child("value"), c.Value, err.Error()))
	}
	switch {
	case c.Operator == ">=" && math.IsInf(want, -1), c.Operator == "<=" && math.IsInf(want, 1):
		allErrs = append(allErrs, field.Invalid(cmpPath, fmt.Sprintf("%s %s", c.Operator, c.Value),
			"always holds, whatever the query returns, so the measurement can never fail: compare with a finite value, such as < 0.01"))
	case c.Operator == "<" && math.IsInf(want, -1), c.Operator == ">" && math.IsInf(want, 1):
		allErrs = append(allErrs, field.Invalid(cmpPath, fmt.Sprintf("%s %s", c.Operator, c.Value),
			"never holds, so the measurement can never pass: compare with a finite value"))
	}
	return allErrs
}
