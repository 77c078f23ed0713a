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
	"math"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// TestJudgeFailsClosed is the verdict on the results a query can return: an
// empty result fails unless the check says empty means healthy, and a
// sample that is no number (NaN, a native histogram) satisfies no
// comparison.
func TestJudgeFailsClosed(t *testing.T) {
	status := func(cluster string, v float64) *model.Sample {
		return &model.Sample{Metric: model.Metric{model.MetricNameLabel: "ceph_health_status", "cluster": model.LabelValue(cluster)}, Value: model.SampleValue(v)}
	}
	cephOK := &upgradev1.PrometheusComparison{Operator: "==", Value: "0"}
	query := func(cmp *upgradev1.PrometheusComparison, empty upgradev1.PrometheusEmptyResult) *upgradev1.PrometheusHealthCheck {
		return &upgradev1.PrometheusHealthCheck{Query: "ceph_health_status", Comparison: cmp, EmptyResult: empty}
	}
	alerts := &upgradev1.PrometheusHealthCheck{NoFiringAlerts: &upgradev1.PrometheusAlertSelector{}}
	emptyFails := "the query returned no sample, and an empty result fails the check (a misspelt metric or an exporter that is down returns none too); set emptyResult: Pass if empty means healthy"

	tests := []struct {
		name  string
		value model.Value
		check *upgradev1.PrometheusHealthCheck
		want  Outcome
	}{
		{name: "an empty vector fails a comparison", value: model.Vector{}, check: query(cephOK, ""), want: Outcome{Message: emptyFails}},
		{name: "an empty vector fails with emptyResult Fail", value: model.Vector{}, check: query(cephOK, upgradev1.PrometheusEmptyResultFail), want: Outcome{Message: emptyFails}},
		{name: "an empty matrix fails", value: model.Matrix{}, check: query(cephOK, ""), want: Outcome{Message: emptyFails}},
		{name: "a range vector of series without samples fails", value: model.Matrix{{Metric: model.Metric{"cluster": "a"}}}, check: query(cephOK, ""), want: Outcome{Message: emptyFails}},
		{name: "an empty vector passes with emptyResult Pass", value: model.Vector{}, check: query(nil, upgradev1.PrometheusEmptyResultPass), want: Outcome{Passed: true}},
		{name: "an empty vector passes a comparison with emptyResult Pass", value: model.Vector{}, check: query(cephOK, upgradev1.PrometheusEmptyResultPass), want: Outcome{Passed: true}},
		{name: "no firing alert passes", value: model.Vector{}, check: alerts, want: Outcome{Passed: true}},
		{name: "every sample satisfies the comparison", value: model.Vector{status("a", 0), status("b", 0)}, check: query(cephOK, ""), want: Outcome{Passed: true}},
		{name: "a sample that does not", value: model.Vector{status("a", 0), status("b", 1)}, check: query(cephOK, ""), want: Outcome{Message: `1 of 2 not == 0: ceph_health_status{cluster="b"} 1`}},
		{name: "a NaN sample satisfies not even !=", value: model.Vector{status("a", math.NaN())}, check: query(&upgradev1.PrometheusComparison{Operator: "!=", Value: "1"}, ""), want: Outcome{Message: `1 of 1 not != 1: ceph_health_status{cluster="a"} NaN`}},
		{name: "a NaN scalar fails", value: &model.Scalar{Value: model.SampleValue(math.NaN())}, check: query(&upgradev1.PrometheusComparison{Operator: "<", Value: "1"}, ""), want: Outcome{Message: `1 of 1 not < 1: NaN`}},
		{name: "a native histogram fails", value: model.Vector{{Metric: model.Metric{"cluster": "a"}, Histogram: &model.SampleHistogram{}}}, check: query(cephOK, ""), want: Outcome{Message: `1 of 1 not == 0: {cluster="a"} (a histogram)`}},
		{name: "a sample fails a query without comparison", value: model.Vector{status("a", 1)}, check: query(nil, upgradev1.PrometheusEmptyResultPass), want: Outcome{Message: `1 returned, and only an empty result passes: ceph_health_status{cluster="a"} 1`}},
		{name: "a string is no number", value: &model.String{Value: "HEALTH_OK"}, check: query(cephOK, ""), want: Outcome{Message: "the query returned a string, not numbers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(judge(tt.value, tt.check)).To(Equal(tt.want))
		})
	}
}

// TestCheckComparison is which comparisons can judge a sample: one that
// every number satisfies could never fail, one that none does could never
// pass.
func TestCheckComparison(t *testing.T) {
	tests := []struct {
		op, value string
		want      string
	}{
		{">=", "-Inf", "every number satisfies >= -Inf"},
		{">", "-Inf", "every number satisfies > -Inf"},
		{"<=", "+Inf", "every number satisfies <= +Inf"},
		{"<", "Inf", "every number satisfies < Inf"},
		{"!=", "-Inf", "every number satisfies != -Inf"},
		{"<=", "1.7976931348623157e308", "every number satisfies <= 1.7976931348623157e308"},
		{">=", "-1.7976931348623157e308", "every number satisfies >= -1.7976931348623157e308"},
		{"<", "-Inf", "no number satisfies < -Inf"},
		{"<=", "-Inf", "no number satisfies <= -Inf"},
		{">", "+Inf", "no number satisfies > +Inf"},
		{">=", "+Inf", "no number satisfies >= +Inf"},
		{"==", "-Inf", "no number satisfies == -Inf"},
		{"<", "-1.7976931348623157e308", "no number satisfies < -1.7976931348623157e308"},
		{">", "1.7976931348623157e308", "no number satisfies > 1.7976931348623157e308"},
		{"==", "0", ""},
		{"!=", "0", ""},
		{"<", "1.7976931348623157e308", ""},
		{">=", "0.95", ""},
		{"<=", "-1e300", ""},
	}
	for _, tt := range tests {
		t.Run(tt.op+" "+tt.value, func(t *testing.T) {
			g := NewWithT(t)
			want, err := parseNumber(tt.value)
			g.Expect(err).NotTo(HaveOccurred())
			err = checkComparison(tt.op, want, tt.value)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

// TestParseNumber refuses what is no threshold: NaN and numbers beyond the
// range of a sample.
func TestParseNumber(t *testing.T) {
	for value, want := range map[string]string{
		"NaN":            "must be a number, not NaN",
		"nan":            "must be a number, not NaN",
		"1e999":          "must be a number a sample can take",
		"-1e400":         "must be a number a sample can take",
		"HEALTH_OK":      "must be a number, such as 0",
		"":               "must be a number, such as 0",
		"0.95":           "",
		"\t1e3\n":        "",
		"-Inf":           "",
		"+Inf":           "",
		"0x1p-2":         "",
		"-0":             "",
		"1_000":          "",
		"2.2250738e-308": "",
	} {
		t.Run(value, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseNumber(value)
			if want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(want)))
		})
	}
}
