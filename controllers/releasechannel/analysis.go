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

package releasechannel

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/channel"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/metrics"
	"github.com/tollgate-dev/tollgate/internal/probe"
)

const (
	// measureConcurrency is how many measurements of one round run at once.
	measureConcurrency = 8
	// queryTimeout bounds one query, as a prometheus check's default.
	queryTimeout = 10 * time.Second
)

// measure takes the measurement rounds that are due: for every version
// soaking in a stage whose next measurement came, each query in every
// Cluster of the stage (or once, for a Stage query) and each health check
// in every Cluster, and records the round in the version's record. A round
// that could not measure a health check (it does not exist, or it is a Job
// check) is recorded without it, and the problem is the Ready condition;
// when it is the last round of the soak, it is not recorded at all, so that
// the soak waits for the check rather than ending without it.
func (r *Reconciler) measure(ctx context.Context, s *scope) {
	ch := s.channel
	for i := range ch.Status.Versions {
		v := &ch.Status.Versions[i]
		if v.Phase != upgradev1.ChannelVersionPromoting {
			continue
		}
		for j := range v.Stages {
			rec := &v.Stages[j]
			stage := stageSpec(ch, rec.Stage)
			if stage == nil || stage.Analysis == nil || !channel.MeasurementDue(rec, s.now) {
				continue
			}
			round, missing := r.round(ctx, s, stage, rec)
			if len(missing) > 0 {
				s.members.problems = append(s.members.problems, problem{upgradev1.AnalysisCheckNotFoundReason, fmt.Sprintf(
					"the analysis of stage %s cannot measure %s: create them as http or prometheus checks in those namespaces", stage.Name, first(missing, 5))})
				if !round.At.Before(rec.SoakUntil.Time) {
					continue
				}
			}
			channel.Record(rec, round, channel.Interval(stage.Analysis))
			ctrl.LoggerFrom(ctx).V(2).Info("Measured the analysis", "ReleaseChannel", klog.KObj(ch), "version", v.Name, "stage", stage.Name)
		}
	}
}

// round takes one measurement round of a stage's analysis. It returns the
// health checks it could not run, as "<namespace>/<name>".
func (r *Reconciler) round(ctx context.Context, s *scope, stage *upgradev1.ChannelStage, rec *upgradev1.VersionStageStatus) (channel.Round, []string) {
	members := s.members.stages[stage.Name]
	at := r.now()
	window := at.Sub(rec.CompletedTime.Time)
	round := channel.Round{At: at}
	for i := range stage.Analysis.Queries {
		q := &stage.Analysis.Queries[i]
		var targets []measurementTarget
		if q.Scope == upgradev1.AnalysisStage {
			targets = append(targets, measurementTarget{query: channel.Expand(q.Query, channel.Placeholders{Stage: stage.Name, Window: window})})
		} else {
			for _, m := range members {
				targets = append(targets, measurementTarget{cluster: m.cluster, query: channel.Expand(q.Query, channel.Placeholders{
					Cluster: m.cluster.Name, Namespace: m.cluster.Namespace, Stage: stage.Name, Window: window})})
			}
		}
		outcomes := r.run(ctx, targets, func(ctx context.Context, t measurementTarget) probe.Outcome {
			return r.Prober.Measure(ctx, probe.Target{Endpoint: &q.HealthCheckEndpoint, SecretNamespace: q.SecretNamespace, ClusterNamespace: t.cluster.Namespace, ClusterName: t.cluster.Name},
				t.query, q.Comparison, q.EmptyResult == upgradev1.EmptyResultPass, queryTimeout)
		})
		round.Queries = append(round.Queries, r.tally(s.channel, stage, "query", q.Name, targets, outcomes))
	}
	var missing []string
	for _, name := range stage.Analysis.HealthChecks {
		var targets []measurementTarget
		checks := map[client.ObjectKey]*upgradev1.ClusterHealthCheck{}
		for _, m := range members {
			key := client.ObjectKey{Namespace: m.cluster.Namespace, Name: name}
			chk, ok := checks[key]
			if !ok {
				chk = r.probeCheck(ctx, key)
				checks[key] = chk
				if chk == nil {
					missing = append(missing, key.String())
				}
			}
			if chk != nil {
				targets = append(targets, measurementTarget{cluster: m.cluster, check: chk})
			}
		}
		outcomes := r.run(ctx, targets, func(ctx context.Context, t measurementTarget) probe.Outcome {
			return r.Prober.Run(ctx, t.check, t.cluster.Name, healthchecks.Timeout(t.check))
		})
		round.HealthChecks = append(round.HealthChecks, r.tally(s.channel, stage, "healthCheck", name, targets, outcomes))
	}
	return round, missing
}

// measurementTarget is one measurement: a query (expanded) or a health
// check, in a Cluster (none for a Stage query).
type measurementTarget struct {
	cluster client.ObjectKey
	query   string
	check   *upgradev1.ClusterHealthCheck
}

// run takes the measurements of targets, measureConcurrency at a time.
func (r *Reconciler) run(ctx context.Context, targets []measurementTarget, measure func(context.Context, measurementTarget) probe.Outcome) []probe.Outcome {
	outcomes := make([]probe.Outcome, len(targets))
	sem := make(chan struct{}, measureConcurrency)
	var wg sync.WaitGroup
	for i := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			outcomes[i] = measure(ctx, targets[i])
		})
	}
	wg.Wait()
	return outcomes
}

// tally counts the outcomes of a round's measurements of one query or
// health check, and the metrics.
func (r *Reconciler) tally(ch *upgradev1.ReleaseChannel, stage *upgradev1.ChannelStage, kind, name string, targets []measurementTarget, outcomes []probe.Outcome) channel.Tally {
	t := channel.Tally{Name: name, Measurements: int32(len(outcomes))}
	for i, o := range outcomes {
		metrics.ChannelMeasurement(ch.Name, stage.Name, kind, name, o.Passed)
		if o.Passed {
			continue
		}
		t.Failures++
		where := "the stage"
		if c := targets[i].cluster; c.Name != "" {
			where = "Cluster " + c.String()
		}
		t.LastFailure = fmt.Sprintf("%s: %s", where, o.Message)
	}
	return t
}

// probeCheck reads a ClusterHealthCheck an analysis names, or nil when it
// does not exist or is not an http or prometheus check (a Job check needs a
// rollout's workload connection, which a soaking stage has not).
func (r *Reconciler) probeCheck(ctx context.Context, key client.ObjectKey) *upgradev1.ClusterHealthCheck {
	chk := &upgradev1.ClusterHealthCheck{}
	if err := r.Client.Get(ctx, key, chk); err != nil {
		if !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "Reading a ClusterHealthCheck of an analysis", "ClusterHealthCheck", key)
		}
		return nil
	}
	if !chk.Spec.IsProbe() {
		return nil
	}
	return chk
}

// stageSpec returns the spec of a stage of the channel, or nil.
func stageSpec(ch *upgradev1.ReleaseChannel, name string) *upgradev1.ChannelStage {
	for i := range ch.Spec.Stages {
		if ch.Spec.Stages[i].Name == name {
			return &ch.Spec.Stages[i]
		}
	}
	return nil
}
