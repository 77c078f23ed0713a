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
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Channel returns a valid ReleaseChannel carrying v1.13.0 through three
// stages, each the policy of its name in Namespace: lab, then dev (an
// hour's soak and an analysis), then prod (a day's soak and an approval),
// changed by mutate. A ReleaseChannel has no namespace: a runner that
// moves a case to a namespace of its own moves the stages' policies (and
// names the channel after the namespace, to keep cases apart).
func Channel(name string, mutate ...func(*upgradev1.ReleaseChannel)) *upgradev1.ReleaseChannel {
	c := &upgradev1.ReleaseChannel{
		TypeMeta:   metav1.TypeMeta{APIVersion: upgradev1.GroupVersion.String(), Kind: "ReleaseChannel"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: upgradev1.ReleaseChannelSpec{
			Versions: []upgradev1.ChannelVersion{{TalosVersion: "v1.13.0"}},
			Stages: []upgradev1.ChannelStage{
				{Name: "lab", Policies: []upgradev1.PolicyReference{{Namespace: Namespace, Name: "lab"}}, SoakTime: duration(10 * time.Minute)},
				{
					Name: "dev", Policies: []upgradev1.PolicyReference{{Namespace: Namespace, Name: "dev"}}, SoakTime: duration(time.Hour),
					Analysis: &upgradev1.StageAnalysis{Queries: []upgradev1.AnalysisQuery{{
						Name: "error-ratio", HealthCheckEndpoint: upgradev1.HealthCheckEndpoint{URL: "https://thanos.example.com"},
						Query:      `sum(rate(http_requests_total{cluster="$cluster",code=~"5.."}[5m])) / sum(rate(http_requests_total{cluster="$cluster"}[5m]))`,
						Comparison: &upgradev1.PrometheusComparison{Operator: "<", Value: "0.01"},
					}}},
				},
				{
					Name: "prod", Policies: []upgradev1.PolicyReference{{Namespace: Namespace, Name: "prod"}}, SoakTime: duration(24 * time.Hour),
					Approval: &upgradev1.StageApprovalGate{Timeout: duration(72 * time.Hour)},
				},
			},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// ChannelPolicy returns a valid policy of Namespace whose targets come
// from the channel.
func ChannelPolicy(name, channel string) *upgradev1.TalosUpgradePolicy {
	return Policy(name, func(p *upgradev1.TalosUpgradePolicy) {
		p.Spec.TalosVersion, p.Spec.TargetFrom, p.Spec.Channel = "", upgradev1.TargetFromChannel, channel
		p.Spec.HealthChecks = []upgradev1.HealthCheckRef{{Name: "nodes-ready"}}
	})
}

// waitingIn gives a channel the status of v1.13.0 in the stage prod: it
// soaked there and waits for an approval, or stands in phase.
func waitingIn(phase upgradev1.StagePhase, decided ...upgradev1.ApprovalStatus) func(*upgradev1.ReleaseChannel) {
	return func(c *upgradev1.ReleaseChannel) {
		entered := metav1.NewTime(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
		rec := upgradev1.VersionStageStatus{Stage: "prod", Phase: phase, EnteredTime: &entered}
		if phase == upgradev1.StageWaitingForApproval {
			rec.Approval = &upgradev1.ApprovalStatus{WaitingSince: &entered}
		}
		if len(decided) > 0 {
			rec.Approval = &decided[0]
		}
		c.Status.Versions = []upgradev1.ChannelVersionStatus{{
			Name: "v1.13.0", ChannelVersion: upgradev1.ChannelVersion{TalosVersion: "v1.13.0"}, Phase: upgradev1.ChannelVersionPromoting, EnteredTime: entered,
			Stages: []upgradev1.VersionStageStatus{
				{Stage: "lab", Phase: upgradev1.StagePassed, EnteredTime: &entered, PassedTime: &entered},
				{Stage: "dev", Phase: upgradev1.StagePassed, EnteredTime: &entered, PassedTime: &entered},
				rec,
			},
		}}
	}
}

// approve adds an approval of v1.13.0 in stage.
func approve(stage string) func(*upgradev1.ReleaseChannel) {
	return func(c *upgradev1.ReleaseChannel) {
		c.Spec.Approvals = append(c.Spec.Approvals, upgradev1.StageApproval{Stage: stage, Version: "v1.13.0", Reason: "CHG-2042: dev error ratio flat for a day"})
	}
}

// ChannelUnsafe returns channels, and policies of channels, that must be
// refused: a policy in two channels or twice in one, a stage order with a
// cycle, an approval for a stage that is not waiting for one, a soak time
// or window that cannot be met, a query that does not parse.
func ChannelUnsafe() []Case {
	return []Case{
		{
			Name: "channel: a policy twice in one channel",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Stages[2].Policies = append(c.Spec.Stages[2].Policies, upgradev1.PolicyReference{Namespace: Namespace, Name: "lab"})
			}),
			Field:   "spec.stages[2].policies[1]",
			Message: `is in stage "lab" already: a policy belongs to one stage`,
		},
		{
			Name:    "channel: a policy in two channels",
			World:   []client.Object{Channel("other")},
			Object:  Channel("fleet"),
			Field:   "spec.stages[0].policies[0]",
			Message: `is in a stage of ReleaseChannel "other`,
		},
		{
			Name:    "channel: a policy that takes its target from another channel",
			World:   []client.Object{ChannelPolicy("lab", "other")},
			Object:  Channel("fleet"),
			Field:   "spec.stages[0].policies[0]",
			Message: `takes its target from ReleaseChannel "other`,
		},
		{
			Name:    "policy: a channel while another channel's stage names the policy",
			World:   []client.Object{Channel("other")},
			Object:  ChannelPolicy("lab", "fleet"),
			Field:   "spec.channel",
			Message: `a stage of ReleaseChannel "other`,
		},
		{
			Name: "policy: targetFrom Channel with a talosVersion of its own",
			Object: func() client.Object {
				p := ChannelPolicy("lab", "fleet")
				p.Spec.TalosVersion = "v1.13.0"
				return p
			}(),
			Field:   "spec.talosVersion",
			Message: "must not be set with targetFrom: Channel",
			Schema:  "must not be set with targetFrom: Channel",
		},
		{
			Name: "channel: a stage order with a cycle",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Stages[0].After = []string{"prod"}
			}),
			Field:   "spec.stages[0].after",
			Message: "the stages' order has a cycle (lab → dev → prod → lab)",
		},
		{
			Name:    "channel: a stage after one that does not exist",
			Object:  Channel("fleet", func(c *upgradev1.ReleaseChannel) { c.Spec.Stages[2].After = []string{"staging"} }),
			Field:   "spec.stages[2].after[0]",
			Message: `Not found: "staging"`,
		},
		{
			Name:    "channel: an approval for a stage that is not waiting for one (soaking)",
			World:   []client.Object{Channel("fleet", waitingIn(upgradev1.StageSoaking))},
			Object:  Channel("fleet", waitingIn(upgradev1.StageSoaking), approve("prod")),
			Field:   "spec.approvals[0]",
			Message: "stage prod is not waiting for an approval of v1.13.0: it is Soaking",
		},
		{
			Name:    "channel: an approval of a version that has not reached the stage",
			World:   []client.Object{Channel("fleet")},
			Object:  Channel("fleet", approve("prod")),
			Field:   "spec.approvals[0]",
			Message: "stage prod is not waiting for an approval of v1.13.0: the version has not reached it",
		},
		{
			Name: "channel: an approval once the decision was recorded",
			World: []client.Object{Channel("fleet", waitingIn(upgradev1.StageFailed, upgradev1.ApprovalStatus{
				Decision: upgradev1.ApprovalReject, RequestedBy: "bob", Reason: "p99 up", DecidedTime: &metav1.Time{Time: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)},
			}))},
			Object:  Channel("fleet", waitingIn(upgradev1.StageFailed), approve("prod")),
			Field:   "spec.approvals[0]",
			Message: "bob decided Reject",
		},
		{
			Name:    "channel: an approval for a stage that asks for none",
			World:   []client.Object{Channel("fleet", waitingIn(upgradev1.StageWaitingForApproval))},
			Object:  Channel("fleet", waitingIn(upgradev1.StageWaitingForApproval), approve("dev")),
			Field:   "spec.approvals[0].stage",
			Message: "the stage asks for no approval",
		},
		{
			Name: "channel: a soak time the analysis cannot be met in",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Stages[1].SoakTime = duration(30 * time.Second)
			}),
			Field:   "spec.stages[1].soakTime",
			Message: "cannot be met by the analysis, which measures every 1m0s through the soak",
		},
		{
			Name: "channel: an approval window nobody can meet",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Stages[2].Approval.Timeout = duration(20 * time.Second)
			}),
			Field:   "spec.stages[2].approval.timeout",
			Message: "cannot be met: nobody can approve in less than a minute",
			Schema:  "timeout must be at least 1m",
		},
		{
			Name: "channel: a window that never opens",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Stages[2].Window = &upgradev1.MaintenanceSpec{Windows: []upgradev1.MaintenanceWindow{{Start: "09:00", End: "15:00", Days: []upgradev1.Weekday{"Sat"}}}}
				for d := time.Now().UTC(); len(c.Spec.Stages[2].Window.ExcludeDates) < 60; d = d.AddDate(0, 0, 1) {
					if d.Weekday() == time.Saturday {
						c.Spec.Stages[2].Window.ExcludeDates = append(c.Spec.Stages[2].Window.ExcludeDates, d.Format("2006-01-02"))
					}
				}
			}),
			Field:   "spec.stages[2].window",
			Message: "cannot be met: the window does not open within a year",
		},
		{
			Name: "channel: a query that does not parse",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Stages[1].Analysis.Queries[0].Query = `sum(rate(http_requests_total{cluster="$cluster"}[5m])`
			}),
			Field:   "spec.stages[1].analysis.queries[0].query",
			Message: "must be a PromQL expression",
		},
		{
			Name: "channel: a comparison that always holds",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Stages[1].Analysis.Queries[0].Comparison = &upgradev1.PrometheusComparison{Operator: "<=", Value: "+Inf"}
			}),
			Field:   "spec.stages[1].analysis.queries[0].comparison",
			Message: "always holds, whatever the query returns",
		},
		{
			Name: "channel: a Stage query through a service",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				q := &c.Spec.Stages[1].Analysis.Queries[0]
				q.Scope, q.URL = upgradev1.AnalysisStage, ""
				q.Service = &upgradev1.HealthCheckService{Namespace: "monitoring", Name: "prometheus", Port: intstr.FromInt32(9090)}
			}),
			Field:   "spec.stages[1].analysis.queries[0]",
			Message: "a Stage query needs a url",
			Schema:  "a Stage query needs a url",
		},
		{
			Name:  "channel: a new version slipped in before the others",
			World: []client.Object{Channel("fleet")},
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Versions = append([]upgradev1.ChannelVersion{{TalosVersion: "v1.12.6"}}, c.Spec.Versions...)
			}),
			Field:   "spec.versions[0]",
			Message: "a new version goes last",
		},
		{
			Name:    "channel: a Talos and Kubernetes pair no Talos runs",
			Object:  Channel("fleet", func(c *upgradev1.ReleaseChannel) { c.Spec.Versions[0].KubernetesVersion = "v1.13.0" }),
			Field:   "spec.versions[0].kubernetesVersion",
			Message: "Talos v1.13.0 does not run it",
		},
	}
}

// ChannelValid returns channels, and policies of channels, that must be
// admitted, with the warnings of what does not exist yet.
func ChannelValid() []Case {
	return []Case{
		{
			Name:    "channel: its policies do not exist yet",
			Object:  Channel("fleet"),
			Warning: "/lab does not exist yet: its Clusters join stage lab once it does",
		},
		{
			Name:   "channel: its policies take their target from it",
			World:  []client.Object{ChannelPolicy("lab", "fleet"), ChannelPolicy("dev", "fleet"), ChannelPolicy("prod", "fleet")},
			Object: Channel("fleet"),
		},
		{
			Name:    "policy: its channel does not exist yet",
			Object:  ChannelPolicy("lab", "fleet"),
			Warning: `ReleaseChannel "fleet`,
		},
		{
			Name:  "channel: an approval for the stage that waits for it",
			World: []client.Object{Channel("fleet", waitingIn(upgradev1.StageWaitingForApproval))},
			Object: Channel("fleet", waitingIn(upgradev1.StageWaitingForApproval), approve("prod"), func(c *upgradev1.ReleaseChannel) {
				c.Spec.Approvals[0].Decision = upgradev1.ApprovalReject
			}),
		},
		{
			Name: "channel: stages side by side, selected by label, following patch releases",
			Object: Channel("fleet", func(c *upgradev1.ReleaseChannel) {
				c.Spec.Versions = nil
				c.Spec.Follow = &upgradev1.ChannelFollowSpec{FollowSpec: upgradev1.FollowSpec{Allow: upgradev1.FollowAllowPatch, MinReleaseAge: duration(72 * time.Hour)}}
				c.Spec.Stages = append(c.Spec.Stages,
					upgradev1.ChannelStage{Name: "prod-eu", After: []string{"dev"}, ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
					upgradev1.ChannelStage{Name: "prod-us", After: []string{"dev"}, ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}})
				c.Spec.Stages[2].After = []string{"prod-eu", "prod-us"}
			}),
		},
	}
}
