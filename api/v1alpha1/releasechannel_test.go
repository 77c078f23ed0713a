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

package v1alpha1_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// validChannel is a channel of two stages, the second with an analysis and
// an approval.
func validChannel(name string) *upgradev1.ReleaseChannel {
	return &upgradev1.ReleaseChannel{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: upgradev1.ReleaseChannelSpec{
			Versions: []upgradev1.ChannelVersion{{TalosVersion: "v1.13.0"}},
			Stages: []upgradev1.ChannelStage{
				{Name: "lab", Policies: []upgradev1.PolicyReference{{Namespace: "lab", Name: "talos"}}, SoakTime: duration(time.Hour)},
				{
					Name:            "prod",
					ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
					SoakTime:        duration(24 * time.Hour),
					Analysis: &upgradev1.StageAnalysis{Queries: []upgradev1.AnalysisQuery{{
						Name: "errors", HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: "https://thanos.example.com"},
						Query: `sum(rate(http_errors_total{cluster="$cluster"}[5m]))`, Comparison: &upgradev1.PrometheusComparison{Operator: "<", Value: "1"},
					}}},
					Approval: &upgradev1.StageApprovalGate{Timeout: duration(72 * time.Hour)},
				},
			},
		},
	}
}

// TestReleaseChannelDefaults checks that the schema defaults a channel:
// supersede Halted, an analysis every minute, queries per Cluster failing
// on an empty result with no failure allowed, no failed Cluster allowed.
func TestReleaseChannelDefaults(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	g := NewWithT(t)
	ctx := context.Background()
	ch := validChannel("defaults")
	g.Expect(mgmt.Client.Create(ctx, ch)).To(Succeed())
	got := &upgradev1.ReleaseChannel{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	g.Expect(got.Spec.Supersede).To(Equal(upgradev1.SupersedeHalted))
	g.Expect(*got.Spec.Stages[0].MaxFailedClusters).To(BeEquivalentTo(0))
	a := got.Spec.Stages[1].Analysis
	g.Expect(a.Interval).To(Equal(duration(time.Minute)))
	g.Expect(a.Queries[0].Scope).To(Equal(upgradev1.AnalysisPerCluster))
	g.Expect(a.Queries[0].EmptyResult).To(Equal(upgradev1.EmptyResultFail))
	g.Expect(*a.Queries[0].FailureLimit).To(BeEquivalentTo(0))
}

// TestReleaseChannelSchemaValidation checks that the schema and its CEL
// rules refuse bad channels with a message naming the field.
func TestReleaseChannelSchemaValidation(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	tests := []struct {
		name    string
		mutate  func(*upgradev1.ReleaseChannel)
		wantErr []string
	}{
		{name: "valid", mutate: func(*upgradev1.ReleaseChannel) {}},
		{
			name: "versions and follow",
			mutate: func(c *upgradev1.ReleaseChannel) {
				c.Spec.Follow = &upgradev1.ChannelFollowSpec{FollowSpec: upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch}}
			},
			wantErr: []string{"spec", "set exactly one of versions"},
		},
		{
			name:    "neither versions nor follow",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Versions = nil },
			wantErr: []string{"spec", "set exactly one of versions"},
		},
		{
			name:    "a version with no target",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Versions = []upgradev1.ChannelVersion{{}} },
			wantErr: []string{"spec.versions[0]", "set talosVersion, kubernetesVersion or both"},
		},
		{
			name:    "a malformed version",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Versions[0].TalosVersion = "latest" },
			wantErr: []string{"spec.versions[0].talosVersion"},
		},
		{
			name:    "a stage of nothing",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Stages[0].Policies = nil },
			wantErr: []string{"spec.stages[0]", "name the policies of the stage"},
		},
		{
			name:    "a stage name that is no DNS label",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Stages[0].Name = "Lab_1" },
			wantErr: []string{"spec.stages[0].name"},
		},
		{
			name:    "a soak of more than 30 days",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Stages[0].SoakTime = duration(721 * time.Hour) },
			wantErr: []string{"spec.stages[0].soakTime", "between 0s and 720h"},
		},
		{
			name:    "an approval window under a minute",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Stages[1].Approval.Timeout = duration(30 * time.Second) },
			wantErr: []string{"spec.stages[1].approval.timeout", "at least 1m"},
		},
		{
			name:    "an analysis of nothing",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Stages[1].Analysis.Queries = nil },
			wantErr: []string{"spec.stages[1].analysis", "name queries, healthChecks or both"},
		},
		{
			name:    "an analysis every second",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Stages[1].Analysis.Interval = duration(time.Second) },
			wantErr: []string{"spec.stages[1].analysis.interval", "at least 5s"},
		},
		{
			name: "a Stage query through a service",
			mutate: func(c *upgradev1.ReleaseChannel) {
				q := &c.Spec.Stages[1].Analysis.Queries[0]
				q.Scope, q.URL = upgradev1.AnalysisStage, ""
				q.Service = &upgradev1.HealthCheckService{Namespace: "monitoring", Name: "prometheus", Port: intstr.FromInt32(9090)}
			},
			wantErr: []string{"spec.stages[1].analysis.queries[0]", "a Stage query needs a url"},
		},
		{
			name:    "an unknown emptyResult",
			mutate:  func(c *upgradev1.ReleaseChannel) { c.Spec.Stages[1].Analysis.Queries[0].EmptyResult = "Ignore" },
			wantErr: []string{"spec.stages[1].analysis.queries[0].emptyResult"},
		},
		{
			name: "an approval without a reason",
			mutate: func(c *upgradev1.ReleaseChannel) {
				c.Spec.Approvals = []upgradev1.StageApproval{{Stage: "prod", Version: "v1.13.0"}}
			},
			wantErr: []string{"spec.approvals[0].reason"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := validChannel(fmt.Sprintf("schema-%d", i))
			tt.mutate(c)
			expectCreate(g, c, tt.wantErr)
		})
	}
}

// TestPolicyTargetFromChannel checks the schema of a policy whose targets
// come from a channel.
func TestPolicyTargetFromChannel(t *testing.T) {
	envtest.SkipWithoutAssets(t)
	channelPolicy := func(name string, mutate func(*upgradev1.TalosUpgradePolicy)) *upgradev1.TalosUpgradePolicy {
		p := validPolicy(name)
		p.Spec.TalosVersion, p.Spec.TargetFrom, p.Spec.Channel = "", upgradev1.TargetFromChannel, "fleet"
		mutate(p)
		return p
	}
	tests := []struct {
		name    string
		mutate  func(*upgradev1.TalosUpgradePolicy)
		wantErr []string
	}{
		{name: "valid", mutate: func(*upgradev1.TalosUpgradePolicy) {}},
		{
			name:    "no channel",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.Channel = "" },
			wantErr: []string{"spec.channel", "set it with targetFrom: Channel"},
		},
		{
			name: "a channel without targetFrom: Channel",
			mutate: func(p *upgradev1.TalosUpgradePolicy) {
				p.Spec.TargetFrom = upgradev1.TargetFromPolicy
				p.Spec.TalosVersion = "v1.13.0"
			},
			wantErr: []string{"spec.channel", "and only then"},
		},
		{
			name:    "a talosVersion too",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.TalosVersion = "v1.13.0" },
			wantErr: []string{"spec.talosVersion", "must not be set with targetFrom: Channel"},
		},
		{
			name:    "a kubernetesVersion too",
			mutate:  func(p *upgradev1.TalosUpgradePolicy) { p.Spec.KubernetesVersion = "v1.36.0" },
			wantErr: []string{"spec.kubernetesVersion", "must not be set with targetFrom: Channel"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectCreate(NewWithT(t), channelPolicy(fmt.Sprintf("channel-%d", i), tt.mutate), tt.wantErr)
		})
	}
}
