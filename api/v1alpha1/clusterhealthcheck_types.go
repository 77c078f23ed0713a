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

package v1alpha1

import (
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ClusterHealthCheck condition types and reasons.
const (
	// HealthCheckReadyCondition is True when the check can run: its Job
	// template, or its http or prometheus probe, is valid. It surfaces False
	// with reason InvalidTemplateReason or InvalidProbeReason otherwise.
	HealthCheckReadyCondition = "Ready"

	// TemplateValidReason surfaces when the Job template is valid.
	TemplateValidReason = "TemplateValid"

	// InvalidTemplateReason surfaces when the Job template cannot be run, or
	// when the check sets no kind at all.
	InvalidTemplateReason = "InvalidTemplate"

	// ProbeValidReason surfaces when the http or prometheus probe is valid.
	ProbeValidReason = "ProbeValid"

	// InvalidProbeReason surfaces when the http or prometheus probe cannot
	// run, or when the check sets more than one kind.
	InvalidProbeReason = "InvalidProbe"
)

// HealthCheckKind is what a ClusterHealthCheck runs: the field of its spec
// that is set.
type HealthCheckKind string

const (
	// HealthCheckKindJob runs spec.template, a Job in the workload cluster.
	HealthCheckKindJob HealthCheckKind = "Job"

	// HealthCheckKindHTTP sends spec.http, a request, and judges the answer.
	HealthCheckKindHTTP HealthCheckKind = "HTTP"

	// HealthCheckKindPrometheus runs spec.prometheus, a PromQL query.
	HealthCheckKindPrometheus HealthCheckKind = "Prometheus"
)

// ClusterHealthCheckSpec is the desired state of a ClusterHealthCheck. It
// sets exactly one kind of check: template (a Job), http or prometheus.
// +kubebuilder:validation:XValidation:rule="[has(self.template), has(self.http), has(self.prometheus)].filter(x, x).size() == 1",message="set exactly one of template (a Job), http or prometheus"
type ClusterHealthCheckSpec struct {
	// template is the Job run in the workload cluster. Tollgate names it
	// (from the check and the Cluster) and adds its labels; the rest (image,
	// command, service account, namespace, "default" when unset) is yours.
	// The check passes when the Job completes and fails when it fails; the
	// failure reason shown in status is the tail of the container's output.
	// A backoffLimit above 0 lets the Job controller retry a failed Pod within
	// one run, so a run that fails and then passes is a pass: the webhook
	// warns of it, and the result's message says at which attempt it passed.
	// Exactly one of template, http and prometheus is set.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template batchv1.JobTemplateSpec `json:"template,omitzero"`

	// http is a request the manager sends, to a Service of the workload
	// cluster through its apiserver or to a URL; the check passes when the
	// answer has an expected status code (and body). It needs no Job, no
	// image and no RBAC in the workload cluster. Exactly one of template,
	// http and prometheus is set.
	// +optional
	HTTP *HTTPHealthCheck `json:"http,omitempty"`

	// prometheus is a PromQL query the manager runs against a Prometheus,
	// a Service of the workload cluster reached through its apiserver or a
	// URL; the check passes when every sample of the result satisfies the
	// comparison, or when the result is empty and emptyResult says that
	// empty is healthy (an alert-style query). Exactly one of template, http
	// and prometheus is set.
	// +optional
	Prometheus *PrometheusHealthCheck `json:"prometheus,omitempty"`

	// interval is how often the check is run while a rollout needs it; while
	// checks fail, the rollout re-checks at the shortest interval among the
	// failing checks. At least 5s.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s')",message="interval must be at least 5s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout is how long one run may take before it counts as failed: 5m
	// for a Job, 10s for an http or prometheus check when unset.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be positive"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// successThreshold is how many consecutive passes the check needs
	// before it counts as passed.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	SuccessThreshold *int32 `json:"successThreshold,omitempty"`

	// labels are added to the Job and its Pods (a Job check only).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to the Job and its Pods (a Job check only).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Kinds returns the kinds of check the spec sets, in the order template,
// http, prometheus: exactly one for a valid check. A template counts as set
// when it is not the zero value, as it is serialised (omitzero).
func (s *ClusterHealthCheckSpec) Kinds() []HealthCheckKind {
	var kinds []HealthCheckKind
	if !reflect.ValueOf(s.Template).IsZero() {
		kinds = append(kinds, HealthCheckKindJob)
	}
	if s.HTTP != nil {
		kinds = append(kinds, HealthCheckKindHTTP)
	}
	if s.Prometheus != nil {
		kinds = append(kinds, HealthCheckKindPrometheus)
	}
	return kinds
}

// Kind returns the kind of check the spec sets, or "" when it sets none or
// more than one.
func (s *ClusterHealthCheckSpec) Kind() HealthCheckKind {
	if kinds := s.Kinds(); len(kinds) == 1 {
		return kinds[0]
	}
	return ""
}

// IsProbe reports whether the check is an http or a prometheus check: a
// request the manager makes, which the ClusterHealthCheck controller runs
// and records in status.results, rather than a Job the rollout runs.
func (s *ClusterHealthCheckSpec) IsProbe() bool {
	k := s.Kind()
	return k == HealthCheckKindHTTP || k == HealthCheckKindPrometheus
}

// HealthCheckEndpoint is where an http or prometheus check sends its
// requests: a Service of the workload cluster, reached through the workload
// apiserver's Service proxy with the Cluster's kubeconfig (CAPI's
// <cluster>-kubeconfig Secret), or a URL the manager reaches itself.
// Exactly one of service and url is set.
type HealthCheckEndpoint struct {
	// service is a Service of the workload cluster, reached through its
	// apiserver's Service proxy: nothing in the workload cluster has to be
	// exposed to the manager.
	// +optional
	Service *HealthCheckService `json:"service,omitempty"`

	// url is an absolute http or https URL the manager reaches directly,
	// for example https://prometheus.example.com or
	// http://ceph-mgr.storage.svc:9283/health. Its host must be the same for
	// every Cluster the check gates.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	URL string `json:"url,omitempty"`

	// headersSecretName is a Secret of the check's namespace whose keys are
	// header names and whose values are their values, added to every
	// request: an Authorization header, for example. Surrounding whitespace
	// (a trailing newline) is trimmed. Tollgate never logs them.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	HeadersSecretName string `json:"headersSecretName,omitempty"`

	// tls says how the manager verifies the server's certificate of an
	// https url; verification is on unless insecureSkipVerify is set. It does
	// not apply to a service, whose apiserver Tollgate verifies with the
	// Cluster's kubeconfig (the apiserver's own connection to the Service's
	// endpoints is not verified, by Kubernetes' design).
	// +optional
	TLS *HealthCheckTLS `json:"tls,omitempty"`
}

// HealthCheckService is a Service of the workload cluster reached through
// the workload apiserver's Service proxy:
// /api/v1/namespaces/<namespace>/services/<scheme>:<name>:<port>/proxy/<path>.
type HealthCheckService struct {
	// namespace is the namespace of the Service in the workload cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// name is the name of the Service.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// port is the Service's port, by number or by name.
	// +required
	Port intstr.IntOrString `json:"port"`

	// scheme is how the apiserver talks to the Service's endpoints: http
	// (the default) or https.
	// +kubebuilder:validation:Enum=http;https
	// +optional
	Scheme string `json:"scheme,omitempty"`

	// path is the path below the Service, with its query if any: for an
	// http check the path requested, for example /health; for a prometheus
	// check the prefix Prometheus serves its API under (its
	// --web.route-prefix), / when empty.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Path string `json:"path,omitempty"`
}

// HealthCheckTLS is how the manager verifies the certificate of an https
// url.
type HealthCheckTLS struct {
	// caSecretName is a Secret of the check's namespace whose key ca.crt
	// holds the PEM certificates of the authorities to trust instead of the
	// system's.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CASecretName string `json:"caSecretName,omitempty"`

	// insecureSkipVerify accepts any certificate. Use it in tests only: a
	// check that cannot tell its server from another cannot hold a rollout
	// safely.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// HTTPHealthCheck is a request whose answer says whether the check passes:
// a status code in expectedStatusCodes and, when body is set, a matching
// body. An endpoint that cannot be reached, answers with another status or
// redirects to another host (redirects are followed within the same host
// only) fails the check, with the status and the start of the body as its
// reason.
// +kubebuilder:validation:XValidation:rule="has(self.service) != has(self.url)",message="set exactly one of service and url"
type HTTPHealthCheck struct {
	// The endpoint: service or url, headers and TLS.
	HealthCheckEndpoint `json:",inline"`

	// method is the request's method: GET (the default) or HEAD. Checks
	// are read-only.
	// +kubebuilder:validation:Enum=GET;HEAD
	// +kubebuilder:default=GET
	// +optional
	Method string `json:"method,omitempty"`

	// expectedStatusCodes are the status codes of a pass; any 2xx when
	// empty.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=100
	// +kubebuilder:validation:items:Maximum=599
	// +optional
	ExpectedStatusCodes []int32 `json:"expectedStatusCodes,omitempty"`

	// body, when set, is what the start of the answer's body (its first
	// 64 KiB) must match for the check to pass.
	// +optional
	Body *HTTPBodyMatch `json:"body,omitempty"`
}

// HTTPBodyMatch is what the body of an answer must match; every field set
// must match.
// +kubebuilder:validation:XValidation:rule="has(self.contains) || has(self.regex)",message="set contains or regex"
type HTTPBodyMatch struct {
	// contains is text the body must contain, for example HEALTH_OK.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Contains string `json:"contains,omitempty"`

	// regex is an RE2 regular expression the body must match, for example
	// '"status":\s*"(ok|pass)"'.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Regex string `json:"regex,omitempty"`
}

// PrometheusHealthCheck is a PromQL instant query whose result says whether
// the check passes. A gate fails closed: a result with samples passes when
// every sample satisfies comparison; an empty result fails, unless
// emptyResult is Pass (an alert-style query, which returns only what is
// wrong) or the check is noFiringAlerts. A Prometheus that cannot be reached
// or refuses the query fails the check, with that reason; a failing result
// names the offending series with their values.
// +kubebuilder:validation:XValidation:rule="has(self.service) != has(self.url)",message="set exactly one of service and url"
// +kubebuilder:validation:XValidation:rule="has(self.query) != has(self.noFiringAlerts)",message="set exactly one of query and noFiringAlerts"
// +kubebuilder:validation:XValidation:rule="!has(self.comparison) || has(self.query)",message="comparison applies to query only"
// +kubebuilder:validation:XValidation:rule="!has(self.emptyResult) || has(self.query)",message="emptyResult applies to query only: noFiringAlerts passes while no alert fires"
// +kubebuilder:validation:XValidation:rule="!has(self.query) || has(self.comparison) || (has(self.emptyResult) && self.emptyResult == 'Pass')",fieldPath=".emptyResult",message="a query without comparison fails on every sample it returns, and an empty result fails unless emptyResult is Pass, so the check could never pass: set emptyResult: Pass for an alert-style query that returns only what is wrong, or set comparison to judge the values"
type PrometheusHealthCheck struct {
	// The endpoint of the Prometheus API: service or url (below which
	// /api/v1/query is served), headers and TLS.
	HealthCheckEndpoint `json:",inline"`

	// query is a PromQL expression, run as an instant query at the time of
	// the check, for example max(ceph_health_status) with a comparison, or
	// the alert-style kube_deployment_status_replicas_unavailable > 0 with
	// emptyResult: Pass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Query string `json:"query,omitempty"`

	// comparison, when set, lets samples in the result pass: the check
	// passes when every sample's value satisfies it. Without it, any sample
	// fails the check, which then passes only on an empty result
	// (emptyResult: Pass). A comparison that no value can fail (">= -Inf",
	// "<= +Inf") is refused: it would let the check pass whatever the query
	// returns.
	// +optional
	Comparison *PrometheusComparison `json:"comparison,omitempty"`

	// emptyResult is the verdict on a query that returns nothing: Fail (the
	// default) or Pass. A misspelt metric, an exporter that is down or
	// series that are gone return nothing too, so an empty result fails the
	// check unless the query is alert-style, one whose every sample is
	// something wrong, where nothing returned means healthy: for example
	// ALERTS{alertstate="firing",severity="critical"} or
	// kube_deployment_status_replicas_unavailable > 0. It applies to query
	// only: noFiringAlerts passes while no alert fires.
	// +kubebuilder:validation:Enum=Fail;Pass
	// +optional
	EmptyResult PrometheusEmptyResult `json:"emptyResult,omitempty"`

	// noFiringAlerts is the ready form of "no alert matching these labels
	// is firing": the query ALERTS{alertstate="firing", <labels>}, which
	// passes while its result is empty.
	// +optional
	NoFiringAlerts *PrometheusAlertSelector `json:"noFiringAlerts,omitempty"`
}

// PrometheusEmptyResult is the verdict on a prometheus query whose result
// is empty.
type PrometheusEmptyResult string

const (
	// PrometheusEmptyResultFail fails the check on an empty result: the
	// query must return samples, and they must satisfy the comparison.
	PrometheusEmptyResultFail PrometheusEmptyResult = "Fail"

	// PrometheusEmptyResultPass passes the check on an empty result: the
	// query is alert-style, and returns only what is wrong.
	PrometheusEmptyResultPass PrometheusEmptyResult = "Pass"
)

// PassesWhenEmpty reports whether the check passes on an empty result: a
// noFiringAlerts check, or a query with emptyResult Pass.
func (p *PrometheusHealthCheck) PassesWhenEmpty() bool {
	return p.NoFiringAlerts != nil || p.EmptyResult == PrometheusEmptyResultPass
}

// PrometheusComparison is a comparison every sample of a query's result
// must satisfy: <value of the sample> <operator> <value>. A sample whose
// value is NaN, or a native histogram, satisfies none.
type PrometheusComparison struct {
	// operator is one of <, <=, ==, !=, > and >=.
	// +required
	// +kubebuilder:validation:Enum="<";"<=";"==";"!=";">";">="
	Operator string `json:"operator"`

	// value is the finite number the samples are compared with, for
	// example "0", "0.95" or "1e3".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Value string `json:"value"`
}

// PrometheusAlertSelector selects firing alerts by their labels.
type PrometheusAlertSelector struct {
	// labels are the labels a firing alert must have to fail the check, for
	// example alertname: CephHealthError or severity: critical; any firing
	// alert fails it when empty.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ClusterHealthCheckStatus is the observed state of a ClusterHealthCheck.
type ClusterHealthCheckStatus struct {
	// conditions describe the state of the check.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// results is the last result per Cluster the check ran in.
	// +listType=map
	// +listMapKey=cluster
	// +kubebuilder:validation:MaxItems=10000
	// +optional
	Results []ClusterHealthCheckResult `json:"results,omitempty"`
}

// ClusterHealthCheckResult is the last result of a check in one Cluster.
type ClusterHealthCheckResult struct {
	// cluster is the name of the CAPI Cluster.
	// +required
	Cluster string `json:"cluster"`

	// result is the last result.
	// +optional
	Result HealthCheckResult `json:"result,omitempty"`

	// lastRunTime is when the last run (a Job, a request) was started.
	// +optional
	LastRunTime *metav1.Time `json:"lastRunTime,omitempty"`

	// consecutiveSuccesses counts the passes in a row.
	// +optional
	ConsecutiveSuccesses int32 `json:"consecutiveSuccesses,omitempty"`

	// nextRunTime is when the check runs again while the Cluster's rollout
	// needs it. An http or prometheus check's pass gates the rollout until
	// then.
	// +optional
	NextRunTime *metav1.Time `json:"nextRunTime,omitempty"`

	// message is the failure reason, at most 256 characters: for a Job the
	// end of the failed container's output ("…" first when cut), for an
	// http check the status and the start of the body, for a prometheus
	// check the offending series with their values, for either the error
	// of a server that could not be reached. Or how the check passes: how
	// many passes in a row it has of successThreshold, and at which attempt
	// of its Job it passed when the Job controller retried a failed Pod
	// (backoffLimit above 0).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusterhealthchecks,scope=Namespaced,categories=tollgate,shortName=chc
// +kubebuilder:printcolumn:name="Interval",type=string,JSONPath=`.spec.interval`,description="How often the check runs"
// +kubebuilder:printcolumn:name="Timeout",type=string,JSONPath=`.spec.timeout`,description="How long one run may take"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterHealthCheck is a check of a workload cluster that must pass before
// a rollout takes down its next Machine, for example "Ceph is HEALTH_OK": a
// Job run in the workload cluster, an HTTP request, or a Prometheus query.
type ClusterHealthCheck struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the check.
	// +required
	Spec ClusterHealthCheckSpec `json:"spec"`

	// status is the last result of the check per Cluster.
	// +optional
	Status ClusterHealthCheckStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the check.
func (c *ClusterHealthCheck) GetConditions() []metav1.Condition {
	return c.Status.Conditions
}

// SetConditions sets the conditions of the check.
func (c *ClusterHealthCheck) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// ClusterHealthCheckList is a list of ClusterHealthCheck.
type ClusterHealthCheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterHealthCheck `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &ClusterHealthCheck{}, &ClusterHealthCheckList{})
}
