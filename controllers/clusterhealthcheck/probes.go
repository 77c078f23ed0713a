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

package clusterhealthcheck

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/healthchecks"
	"github.com/tollgate-dev/tollgate/internal/probe"
)

// probeConcurrency is how many Clusters one check runs in at once.
const probeConcurrency = 8

// probePlan is what one reconcile of an http or prometheus check does.
type probePlan struct {
	// results are the check's new results, by Cluster: one per rollout
	// whose status lists the check, the previous result when there was one.
	results []upgradev1.ClusterHealthCheckResult
	// due are the indexes in results of the Clusters where the check runs
	// now.
	due []int
	// next is when the check is due next in a Cluster that needs it; zero
	// when none does.
	next time.Time
}

// planProbes decides, from the rollouts of the check's namespace, where an
// http or prometheus check runs now. A rollout needs the check while it is
// not finished and its status lists the check (the rollout's health-check
// gate evaluated it), and, with a watch filter, while it is of this shard.
// There the check runs when it never ran or its next run time came, and at
// once for a new spec (generation), whose passes start from zero. Results
// of Clusters whose rollouts list the check no more are dropped, as a Job
// check's are.
func planProbes(check *upgradev1.ClusterHealthCheck, upgrades []upgradev1.TalosUpgrade, shard string, now time.Time) probePlan {
	previous := make(map[string]upgradev1.ClusterHealthCheckResult, len(check.Status.Results))
	for _, r := range check.Status.Results {
		previous[r.Cluster] = r
	}
	newSpec := check.Status.ObservedGeneration != check.Generation
	byCluster := map[string]bool{}
	var plan probePlan
	wanted := map[string]bool{}
	for i := range upgrades {
		u := &upgrades[i]
		if !listsCheck(u, check.Name) || u.Spec.ClusterName == "" {
			continue
		}
		if !u.Finished() && (shard == "" || u.Labels[clusterv1.WatchLabel] == shard) {
			wanted[u.Spec.ClusterName] = true
		}
		if byCluster[u.Spec.ClusterName] {
			continue
		}
		byCluster[u.Spec.ClusterName] = true
		r, ok := previous[u.Spec.ClusterName]
		if !ok {
			r = upgradev1.ClusterHealthCheckResult{Cluster: u.Spec.ClusterName, Result: upgradev1.HealthCheckUnknown}
		}
		if newSpec {
			r.NextRunTime, r.ConsecutiveSuccesses = nil, 0
		}
		plan.results = append(plan.results, r)
	}
	sort.Slice(plan.results, func(i, j int) bool { return strings.Compare(plan.results[i].Cluster, plan.results[j].Cluster) < 0 })
	for i := range plan.results {
		r := &plan.results[i]
		if !wanted[r.Cluster] {
			continue
		}
		if healthchecks.ProbeDue(r, now) {
			plan.due = append(plan.due, i)
		} else if plan.next.IsZero() || r.NextRunTime.Time.Before(plan.next) {
			plan.next = r.NextRunTime.Time
		}
	}
	return plan
}

// listsCheck reports whether the status of the rollout u lists the check.
func listsCheck(u *upgradev1.TalosUpgrade, name string) bool {
	for _, st := range u.Status.HealthChecks {
		if st.Name == name {
			return true
		}
	}
	return false
}

// reconcileProbes runs an http or prometheus check in the Clusters where it
// is due, records the results in its status and returns when it is due
// next. A check that is not valid is not run: it fails with its validation
// errors as reason, so that the rollouts hold and say why.
func (r *Reconciler) reconcileProbes(ctx context.Context, check *upgradev1.ClusterHealthCheck, upgrades []upgradev1.TalosUpgrade, invalid field.ErrorList) ctrl.Result {
	plan := planProbes(check, upgrades, r.WatchFilterValue, r.Now())
	log := ctrl.LoggerFrom(ctx).WithValues("ClusterHealthCheck", klog.KObj(check))
	sem := make(chan struct{}, probeConcurrency)
	var wg sync.WaitGroup
	for _, i := range plan.due {
		res := &plan.results[i]
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			before := res.Result
			run := healthchecks.ProbeRun{Started: r.Now()}
			if len(invalid) > 0 {
				run.Message = upgradev1.Truncate("the check is invalid: "+invalid.ToAggregate().Error(), probe.MaxMessageLength)
			} else {
				out := r.Prober.Run(ctx, check, res.Cluster, healthchecks.Timeout(check))
				run.Passed, run.Message = out.Passed, out.Message
			}
			healthchecks.RecordProbe(res, check, run, r.Now())
			log := log.WithValues("Cluster", klog.KRef(check.Namespace, res.Cluster), "result", res.Result)
			if res.Result != before {
				log.Info("Health check changed result", "message", res.Message)
			} else {
				log.V(4).Info("Ran health check", "message", res.Message)
			}
		})
	}
	wg.Wait()
	check.Status.Results = plan.results
	next := plan.next
	for _, i := range plan.due {
		if t := plan.results[i].NextRunTime; t != nil && (next.IsZero() || t.Time.Before(next)) {
			next = t.Time
		}
	}
	if next.IsZero() {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(next.Sub(r.Now()), time.Millisecond)}
}
