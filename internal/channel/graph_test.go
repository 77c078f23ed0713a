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

package channel_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
)

func TestNewGraph(t *testing.T) {
	g := NewWithT(t)
	gr, err := channel.NewGraph([]upgradev1.ChannelStage{stage("lab"), stage("dev"), stage("eu"), stage("us", after("dev")), stage("prod", after("eu", "us"))})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gr.Order).To(Equal([]string{"lab", "dev", "eu", "us", "prod"}))
	g.Expect(gr.After).To(Equal(map[string][]string{"dev": {"lab"}, "eu": {"dev"}, "us": {"dev"}, "prod": {"eu", "us"}}))
	g.Expect(gr.Roots()).To(Equal([]string{"lab"}))
	g.Expect(gr.Layers()).To(Equal([][]string{{"lab"}, {"dev"}, {"eu", "us"}, {"prod"}}))

	gr, err = channel.NewGraph([]upgradev1.ChannelStage{stage("prod", after("lab")), stage("lab")})
	g.Expect(err).To(HaveOccurred(), "lab comes after prod by default, prod after lab")
	var cycle *channel.CycleError
	g.Expect(errors.As(err, &cycle)).To(BeTrue())
	g.Expect(err.Error()).To(Equal("the order of the stages has a cycle: lab → prod → lab"))
	g.Expect(gr.Order).To(BeEmpty())

	_, err = channel.NewGraph([]upgradev1.ChannelStage{stage("lab"), stage("prod", after("staging"))})
	var unknown *channel.UnknownStageError
	g.Expect(errors.As(err, &unknown)).To(BeTrue())
	g.Expect(err.Error()).To(Equal(`stage "prod" comes after "staging", which is not a stage of the channel`))
}

func TestClaims(t *testing.T) {
	g := NewWithT(t)
	spec := &upgradev1.ReleaseChannelSpec{Stages: []upgradev1.ChannelStage{
		stage("lab"),
		{Name: "eu", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
		{Name: "canary", ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "canary", Operator: metav1.LabelSelectorOpExists}}}},
	}}
	fleet := upgradev1.PolicyReference{Namespace: "fleet", Name: "talos"}
	s, ok := channel.StageOf(spec, upgradev1.PolicyReference{Namespace: "lab", Name: "talos"}, nil)
	g.Expect(ok).To(BeTrue())
	g.Expect(s).To(Equal("lab"))
	s, ok = channel.StageOf(spec, fleet, map[string]string{"region": "eu"})
	g.Expect(ok).To(BeTrue())
	g.Expect(s).To(Equal("eu"))
	_, ok = channel.StageOf(spec, fleet, map[string]string{"region": "us"})
	g.Expect(ok).To(BeFalse(), "no stage claims it")
	g.Expect(channel.Claims(spec, fleet, map[string]string{"region": "eu", "canary": "true"})).To(Equal([]string{"eu", "canary"}))
	_, ok = channel.StageOf(spec, fleet, map[string]string{"region": "eu", "canary": "true"})
	g.Expect(ok).To(BeFalse(), "two stages claim it: it belongs to neither")
}

// TestValidateSpec checks the rules a channel's spec is judged by on its
// own; the webhook's corpus (webhooks/test/corpus) checks them at admission.
func TestValidateSpec(t *testing.T) {
	query := func(mutate func(*upgradev1.AnalysisQuery)) stageOption {
		return func(s *upgradev1.ChannelStage) {
			analysis(0)(s)
			mutate(&s.Analysis.Queries[0])
		}
	}
	tests := []struct {
		name      string
		stages    []upgradev1.ChannelStage
		versions  []upgradev1.ChannelVersion
		wantField string
		wantMsg   string
	}{
		{name: "valid", stages: []upgradev1.ChannelStage{stage("lab"), stage("prod", soak(time.Hour), analysis(0), approval(time.Hour))}},
		{name: "a cycle", stages: []upgradev1.ChannelStage{stage("lab", after("prod")), stage("prod")}, wantField: "spec.stages[0].after", wantMsg: "the stages' order has a cycle (lab → prod → lab)"},
		{name: "an unknown stage", stages: []upgradev1.ChannelStage{stage("lab"), stage("prod", after("stage"))}, wantField: "spec.stages[1].after[0]", wantMsg: `Not found: "stage"`},
		{name: "a stage after itself", stages: []upgradev1.ChannelStage{stage("lab"), stage("prod", after("prod"))}, wantField: "spec.stages[1].after[0]", wantMsg: "a stage cannot come after itself"},
		{name: "a policy twice", stages: []upgradev1.ChannelStage{stage("lab"), {Name: "prod", Policies: []upgradev1.PolicyReference{{Namespace: "lab", Name: "talos"}}}}, wantField: "spec.stages[1].policies[0]", wantMsg: `policy lab/talos is in stage "lab" already`},
		{name: "a soak shorter than the analysis interval", stages: []upgradev1.ChannelStage{stage("lab", soak(30*time.Second), analysis(0))}, wantField: "spec.stages[0].soakTime", wantMsg: "cannot be met by the analysis, which measures every 1m0s"},
		{
			name: "a window that never opens",
			stages: []upgradev1.ChannelStage{stage("lab", func(s *upgradev1.ChannelStage) {
				s.Window = &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "10:00", End: "11:00", Days: []upgradev1.Weekday{"Mon"}}}, ExcludeDates: mondays(t0, 60)}
			})},
			wantField: "spec.stages[0].window", wantMsg: "cannot be met: the window does not open within a year",
		},
		{name: "a query that does not parse", stages: []upgradev1.ChannelStage{stage("lab", soak(time.Hour), query(func(q *upgradev1.AnalysisQuery) { q.Query = "rate(errors[5m]" }))}, wantField: "spec.stages[0].analysis.queries[0].query", wantMsg: "must be a PromQL expression"},
		{name: "a query with its placeholders parses", stages: []upgradev1.ChannelStage{stage("lab", soak(time.Hour), query(func(q *upgradev1.AnalysisQuery) { q.Query = `max_over_time(errors{cluster="$cluster"}[$window]) < 1` }))}},
		{name: "a comparison that always holds", stages: []upgradev1.ChannelStage{stage("lab", soak(time.Hour), query(func(q *upgradev1.AnalysisQuery) {
			q.Comparison = &upgradev1.PrometheusComparison{Operator: ">=", Value: "-Inf"}
		}))}, wantField: "spec.stages[0].analysis.queries[0].comparison", wantMsg: "always holds"},
		{name: "headers without their namespace", stages: []upgradev1.ChannelStage{stage("lab", soak(time.Hour), query(func(q *upgradev1.AnalysisQuery) { q.HeadersSecretName = "prometheus-token" }))}, wantField: "spec.stages[0].analysis.queries[0].secretNamespace", wantMsg: "a ReleaseChannel has no namespace of its own"},
		{name: "a pre-release", stages: []upgradev1.ChannelStage{stage("lab")}, versions: []upgradev1.ChannelVersion{{TalosVersion: "v1.13.0-beta.1"}}, wantField: "spec.versions[0].talosVersion", wantMsg: "must be a stable release"},
		{name: "a pair Talos does not run", stages: []upgradev1.ChannelStage{stage("lab")}, versions: []upgradev1.ChannelVersion{{TalosVersion: "v1.13.0", KubernetesVersion: "v1.13.0"}}, wantField: "spec.versions[0].kubernetesVersion", wantMsg: "Talos v1.13.0 does not run it"},
		{name: "a version twice", stages: []upgradev1.ChannelStage{stage("lab")}, versions: []upgradev1.ChannelVersion{{TalosVersion: "v1.13.0"}, {TalosVersion: "1.13.0"}}, wantField: "spec.versions[1]", wantMsg: "Duplicate value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := &upgradev1.ReleaseChannelSpec{Stages: tt.stages, Versions: tt.versions}
			if spec.Versions == nil {
				spec.Versions = []upgradev1.ChannelVersion{{TalosVersion: "v1.13.0"}}
			}
			errs := channel.ValidateSpec(spec, t0, field.NewPath("spec"))
			if tt.wantField == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(ContainElement(SatisfyAll(HaveField("Field", tt.wantField), WithTransform(func(e *field.Error) string { return e.Error() }, ContainSubstring(tt.wantMsg)))), "%v", errs)
		})
	}
}

// mondays returns the dates of the n Mondays from t on.
func mondays(t time.Time, n int) []string {
	var out []string
	for d := t; len(out) < n; d = d.AddDate(0, 0, 1) {
		if d.Weekday() == time.Monday {
			out = append(out, d.Format("2006-01-02"))
		}
	}
	return out
}
