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
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// comparisonOperators are the operators of a PrometheusComparison.
var comparisonOperators = []string{"<", "<=", "==", "!=", ">", ">="}

// labelName is a Prometheus label name of the classic character set.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ValidateHTTP returns what is wrong with the http check h at fldPath.
func ValidateHTTP(h *upgradev1.HTTPHealthCheck, fldPath *field.Path) field.ErrorList {
	allErrs := validateEndpoint(&h.HealthCheckEndpoint, fldPath)
	switch h.Method {
	case "", "GET", "HEAD":
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("method"), h.Method, []string{"GET", "HEAD"}))
	}
	for i, code := range h.ExpectedStatusCodes {
		if code < 100 || code > 599 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expectedStatusCodes").Index(i), code, "must be an HTTP status code, between 100 and 599"))
		}
	}
	if b := h.Body; b != nil {
		bodyPath := fldPath.Child("body")
		if b.Contains == "" && b.Regex == "" {
			allErrs = append(allErrs, field.Required(bodyPath, "set contains or regex, or remove body to judge the status code alone"))
		}
		if b.Regex != "" {
			if _, err := regexp.Compile(b.Regex); err != nil {
				allErrs = append(allErrs, field.Invalid(bodyPath.Child("regex"), b.Regex, fmt.Sprintf("must be an RE2 regular expression: %v", err)))
			}
		}
		if h.Method == "HEAD" {
			allErrs = append(allErrs, field.Invalid(bodyPath, "", "an answer to HEAD has no body: use GET to match the body"))
		}
	}
	return allErrs
}

// ValidatePrometheus returns what is wrong with the prometheus check p at
// fldPath: an endpoint that is not one, a query that does not parse or
// cannot return numbers, a comparison with a value that is not a number, a
// check that could never fail (a comparison every number satisfies) or never
// pass (a comparison no number satisfies, a query without comparison whose
// empty result fails too).
func ValidatePrometheus(p *upgradev1.PrometheusHealthCheck, fldPath *field.Path) field.ErrorList {
	allErrs := validateEndpoint(&p.HealthCheckEndpoint, fldPath)
	queryPath := fldPath.Child("query")
	switch {
	case p.Query == "" && p.NoFiringAlerts == nil:
		allErrs = append(allErrs, field.Required(queryPath, "set exactly one of query and noFiringAlerts: a PromQL expression, or the labels of alerts that must not fire"))
	case p.Query != "" && p.NoFiringAlerts != nil:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("noFiringAlerts"), "", "set exactly one of query and noFiringAlerts, not both"))
	case p.Query != "":
		if err := checkQuery(p.Query); err != nil {
			allErrs = append(allErrs, field.Invalid(queryPath, p.Query, err.Error()))
		}
	default:
		allErrs = append(allErrs, validateAlertSelector(p.NoFiringAlerts, fldPath.Child("noFiringAlerts"))...)
	}
	allErrs = append(allErrs, validateEmptyResult(p, fldPath.Child("emptyResult"))...)
	if c := p.Comparison; c != nil {
		cmpPath := fldPath.Child("comparison")
		if p.Query == "" {
			allErrs = append(allErrs, field.Invalid(cmpPath, "", "comparison applies to query only: noFiringAlerts passes while no alert fires"))
		}
		if !isOperator(c.Operator) {
			allErrs = append(allErrs, field.NotSupported(cmpPath.Child("operator"), c.Operator, comparisonOperators))
		}
		if want, err := parseNumber(c.Value); err != nil {
			allErrs = append(allErrs, field.Invalid(cmpPath.Child("value"), c.Value, err.Error()))
		} else if err := checkComparison(c.Operator, want, strings.TrimSpace(c.Value)); err != nil && isOperator(c.Operator) {
			allErrs = append(allErrs, field.Invalid(cmpPath.Child("value"), c.Value, err.Error()))
		}
	}
	return allErrs
}

// validateEmptyResult returns what is wrong with the emptyResult of p at
// fldPath: a value that is neither Fail nor Pass, one set on noFiringAlerts,
// or a query without comparison that fails on an empty result too and so
// could never pass.
func validateEmptyResult(p *upgradev1.PrometheusHealthCheck, fldPath *field.Path) field.ErrorList {
	switch p.EmptyResult {
	case "", upgradev1.PrometheusEmptyResultFail, upgradev1.PrometheusEmptyResultPass:
	default:
		return field.ErrorList{field.NotSupported(fldPath, p.EmptyResult,
			[]string{string(upgradev1.PrometheusEmptyResultFail), string(upgradev1.PrometheusEmptyResultPass)})}
	}
	switch {
	case p.Query == "" && p.EmptyResult != "":
		return field.ErrorList{field.Invalid(fldPath, p.EmptyResult, "emptyResult applies to query only: noFiringAlerts passes while no alert fires; remove emptyResult")}
	case p.Query == "" || p.Comparison != nil || p.EmptyResult == upgradev1.PrometheusEmptyResultPass:
		return nil
	}
	msg := "a query without comparison fails on every sample it returns, and an empty result fails unless emptyResult is Pass, so the check could never pass: " +
		"set emptyResult: Pass for an alert-style query that returns only what is wrong (such as kube_deployment_status_replicas_unavailable > 0), " +
		`or set comparison to judge the values it returns (such as operator "==" and value "0")`
	if p.EmptyResult == "" {
		return field.ErrorList{field.Required(fldPath, msg)}
	}
	return field.ErrorList{field.Invalid(fldPath, p.EmptyResult, msg)}
}

// checkComparison says why the comparison <sample> op want, want written
// as written, cannot judge a sample: every number a sample can take
// satisfies it, so the check could never fail (">= -Inf", "<= +Inf",
// "!= +Inf", "<= 1.7976931348623157e308"), or none does, so it could never
// pass ("< -Inf", "== +Inf").
func checkComparison(op string, want float64, written string) error {
	var always, never bool
	switch op {
	case "==":
		never = math.IsInf(want, 0)
	case "!=":
		always = math.IsInf(want, 0)
	default:
		// The other operators are monotonic: a comparison the lowest and the
		// highest finite number both satisfy, every number between does.
		lowest, highest := compare(-math.MaxFloat64, op, want), compare(math.MaxFloat64, op, want)
		always, never = lowest && highest, !lowest && !highest
	}
	instead := `compare with the threshold between healthy and unhealthy instead, such as operator "==" and value "0" for ceph_health_status, or operator ">=" and value "0.95" for a ratio`
	switch {
	case always:
		return fmt.Errorf("every number satisfies %s %s, so the check would pass whatever the query returns and could never hold a rollout: %s; or remove comparison and set emptyResult: Pass for a query that returns only what is wrong",
			op, written, instead)
	case never:
		return fmt.Errorf("no number satisfies %s %s, so the check could never pass and would hold every rollout: %s", op, written, instead)
	}
	return nil
}

// validateEndpoint returns what is wrong with the endpoint of a check.
func validateEndpoint(e *upgradev1.HealthCheckEndpoint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case e.Service == nil && e.URL == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("url"), "set exactly one of service and url: a Service of the workload cluster, reached through its apiserver, or an absolute URL the manager reaches"))
	case e.Service != nil && e.URL != "":
		allErrs = append(allErrs, field.Invalid(fldPath.Child("url"), e.URL, "set exactly one of service and url, not both"))
	case e.URL != "":
		if err := checkURL(e.URL); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("url"), e.URL, err.Error()))
		}
	default:
		allErrs = append(allErrs, validateService(e.Service, fldPath.Child("service"))...)
		if e.TLS != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("tls"), "", "applies to url only: Tollgate reaches a service through its apiserver, verified with the Cluster's kubeconfig"))
		}
	}
	if e.HeadersSecretName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(e.HeadersSecretName) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("headersSecretName"), e.HeadersSecretName, msg))
		}
	}
	if e.TLS != nil && e.TLS.CASecretName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(e.TLS.CASecretName) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("tls", "caSecretName"), e.TLS.CASecretName, msg))
		}
	}
	return allErrs
}

// checkURL says why raw is not an absolute http or https URL of a host,
// without credentials.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("must be an absolute URL: %w", err)
	case !u.IsAbs() || u.Host == "":
		return fmt.Errorf("must be an absolute URL, with a scheme and a host, such as https://prometheus.example.com")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an http or https URL, not %s", u.Scheme)
	case u.User != nil:
		return fmt.Errorf("must not hold credentials, which would be stored and shown in the clear: put an Authorization header in headersSecretName")
	}
	return nil
}

func validateService(s *upgradev1.HealthCheckService, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct{ name, value string }{{"namespace", s.Namespace}, {"name", s.Name}} {
		for _, msg := range validation.IsDNS1123Label(f.value) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	portPath := fldPath.Child("port")
	if s.Port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(s.Port.IntValue()) {
			allErrs = append(allErrs, field.Invalid(portPath, s.Port.IntValue(), msg))
		}
	} else {
		for _, msg := range validation.IsValidPortName(s.Port.StrVal) {
			allErrs = append(allErrs, field.Invalid(portPath, s.Port.StrVal, msg))
		}
	}
	switch s.Scheme {
	case "", "http", "https":
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scheme"), s.Scheme, []string{"http", "https"}))
	}
	if s.Path != "" {
		u, err := url.Parse(s.Path)
		switch {
		case err != nil:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), s.Path, fmt.Sprintf("must be a path: %v", err)))
		case u.IsAbs() || u.Host != "" || !strings.HasPrefix(s.Path, "/"):
			allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), s.Path, "must be a path starting with /, such as /health, not a URL"))
		}
	}
	return allErrs
}

func validateAlertSelector(s *upgradev1.PrometheusAlertSelector, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range sortedKeys(s.Labels) {
		labelPath := fldPath.Child("labels").Key(name)
		switch {
		case !labelName.MatchString(name):
			allErrs = append(allErrs, field.Invalid(labelPath, name, "must be a Prometheus label name: letters, digits and _, not starting with a digit"))
		case name == "alertstate" || name == "__name__":
			allErrs = append(allErrs, field.Invalid(labelPath, name, "is set by Tollgate: the check selects the firing ALERTS series"))
		}
	}
	if len(allErrs) == 0 {
		if err := checkQuery(AlertsQuery(s)); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("labels"), "", err.Error()))
		}
	}
	return allErrs
}

// isOperator reports whether op is an operator of a PrometheusComparison.
func isOperator(op string) bool {
	for _, o := range comparisonOperators {
		if o == op {
			return true
		}
	}
	return false
}

// parseNumber parses the value of a PrometheusComparison: a decimal or
// scientific number, or ±Inf (which checkComparison refuses, as it refuses
// every threshold no sample can cross).
func parseNumber(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("must be a number a sample can take, between -1.7976931348623157e308 and 1.7976931348623157e308: samples are 64-bit floating-point numbers")
	case err != nil:
		return 0, fmt.Errorf("must be a number, such as 0, 0.95, -1 or 1e3: samples are compared with it")
	case math.IsNaN(f):
		return 0, fmt.Errorf("must be a number, not NaN: no sample equals NaN, so == NaN could never pass and != NaN could never fail; compare with a threshold such as 0 or 0.95")
	}
	return f, nil
}
