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

package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// The paths of the webhooks scenario 5 measures (config/webhook).
const (
	policyValidatePath  = "/validate-upgrade-tollgate-dev-v1alpha1-talosupgradepolicy"
	policyDefaultPath   = "/mutate-upgrade-tollgate-dev-v1alpha1-talosupgradepolicy"
	clusterValidatePath = "/validate-tollgate-cluster-x-k8s-io-v1beta2-cluster"
)

// webhookLatencyMetric is controller-runtime's histogram of the time a
// webhook takes to answer, labelled by path. Its buckets are decades
// (1ms, 10ms, 100ms, ...): its quantiles are coarse, its mean is exact.
const webhookLatencyMetric = "controller_runtime_webhook_latency_seconds"

// errNoWebhooks is returned when scenario 5 runs without the webhooks.
var errNoWebhooks = errors.New("scenario 5 (admission) needs the webhooks served: run without --webhooks=false")

// AdmissionOptions size scenario 5.
type AdmissionOptions struct {
	// PolicyUpdates and ClusterUpdates are the number of requests of each
	// kind, made one after the other: PolicyUpdates of the plan's pace and
	// as many of its target, and ClusterUpdates moves of a Cluster.
	PolicyUpdates, ClusterUpdates int
}

// AdmissionResult is the outcome of scenario 5: how long the policy and
// Cluster webhooks take with the fleet present.
type AdmissionResult struct {
	// Clusters selected by the policy, each with its Machines.
	Clusters int `json:"clusters"`
	// Policy is the round trip of an update of the policy's plan (a
	// change of rollout.delayBetweenMachines, validated against every
	// Cluster the policy selects), as the bench's client sees it;
	// PolicyValidate and PolicyDefault the controller's own time, from its
	// histogram.
	Policy         Stats          `json:"policyUpdate"`
	PolicyValidate HistogramStats `json:"policyValidateWebhook"`
	PolicyDefault  HistogramStats `json:"policyDefaultWebhook"`
	// PolicyTarget is the round trip of a change of the policy's target
	// (talosVersion, validated against every Cluster, with the lookup of
	// the policy's rollouts in progress), and PolicyTargetValidate the
	// webhook's own time.
	PolicyTarget         Stats          `json:"policyTargetUpdate"`
	PolicyTargetValidate HistogramStats `json:"policyTargetValidateWebhook"`
	// Cluster is the round trip of a Cluster moved to another policy (its
	// plan validated against its Machines, its rollouts looked up), and
	// ClusterValidate the webhook's own time.
	Cluster         Stats          `json:"clusterUpdate"`
	ClusterValidate HistogramStats `json:"clusterValidateWebhook"`
	Note            string         `json:"note"`
}

// RunAdmission runs scenario 5 on a converged fleet: f.Result.Admission.
// The updates are dry runs (dryRun=All): the apiserver calls the webhooks
// as for any update and stores nothing, so the fleet is not rolled out
// again by a new plan between two requests.
func RunAdmission(ctx context.Context, w *World, f *Fleet, o AdmissionOptions, logf func(string, ...any)) error {
	if w.Webhooks == nil {
		return errNoWebhooks
	}
	const other = "to-1-13-other"
	res := &AdmissionResult{
		Clusters: f.Result.Clusters,
		Note: "dry-run updates (dryRun=All): the webhooks run as for any update, nothing is stored; " +
			"client times are the bench's round trips to the management apiserver, webhook times the controller's histogram (decade buckets: p50/p99 are coarse, the mean is exact)",
	}
	// A fleet measured at several sizes has it already.
	if err := w.CreatePolicy(ctx, PolicySpec{Namespace: f.Namespace, Name: other, MaxUnavailable: f.opts.MaxUnavailable, MaxClustersInProgress: 1}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	before, err := f.Controller().Scrape(ctx)
	if err != nil {
		return err
	}
	logf("Scenario 5: %d policy updates validated against %d Clusters", o.PolicyUpdates, f.Result.Clusters)
	if res.Policy, err = timePolicyUpdates(ctx, w, f, o.PolicyUpdates, func(p *upgradev1.TalosUpgradePolicy, i int) {
		p.Spec.Rollout.DelayBetweenMachines = &metav1.Duration{Duration: time.Duration(1+i%2) * time.Second}
	}); err != nil {
		return err
	}
	middle, err := f.Controller().Scrape(ctx)
	if err != nil {
		return err
	}
	logf("Scenario 5: %d changes of the policy's target validated against %d Clusters", o.PolicyUpdates, f.Result.Clusters)
	if res.PolicyTarget, err = timePolicyUpdates(ctx, w, f, o.PolicyUpdates, func(p *upgradev1.TalosUpgradePolicy, i int) {
		p.Spec.TalosVersion = fmt.Sprintf("v1.13.%d", 1+i%2)
	}); err != nil {
		return err
	}
	afterPolicy, err := f.Controller().Scrape(ctx)
	if err != nil {
		return err
	}

	logf("Scenario 5: %d Clusters moved to another policy", o.ClusterUpdates)
	clusters := &clusterv1.ClusterList{}
	if err := w.Mgmt.Client.List(ctx, clusters, client.InNamespace(f.Namespace)); err != nil {
		return err
	}
	if len(clusters.Items) == 0 {
		return errors.New("scenario 5: the fleet has no Cluster")
	}
	times := make([]float64, 0, o.ClusterUpdates)
	for i := range o.ClusterUpdates {
		stored := &clusters.Items[i%len(clusters.Items)]
		c := stored.DeepCopy()
		c.Labels[upgradev1.PolicyLabel] = other
		d, err := timeUpdate(ctx, w.Mgmt.Client, c, func() error {
			if err := w.Mgmt.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
				return err
			}
			stored.DeepCopyInto(c)
			c.Labels[upgradev1.PolicyLabel] = other
			return nil
		})
		if err != nil {
			return fmt.Errorf("moving Cluster %s to policy %s (dry run): %w", c.Name, other, err)
		}
		times = append(times, d)
	}
	res.Cluster = NewStats(times)

	after, err := f.Controller().Scrape(ctx)
	if err != nil {
		return err
	}
	res.PolicyValidate = HistogramStatsOf(middle, before, webhookLatencyMetric, fmt.Sprintf("webhook=%q", policyValidatePath))
	res.PolicyDefault = HistogramStatsOf(middle, before, webhookLatencyMetric, fmt.Sprintf("webhook=%q", policyDefaultPath))
	res.PolicyTargetValidate = HistogramStatsOf(afterPolicy, middle, webhookLatencyMetric, fmt.Sprintf("webhook=%q", policyValidatePath))
	res.ClusterValidate = HistogramStatsOf(after, afterPolicy, webhookLatencyMetric, fmt.Sprintf("webhook=%q", clusterValidatePath))
	if res.PolicyValidate.Count < float64(o.PolicyUpdates) || res.PolicyTargetValidate.Count < float64(o.PolicyUpdates) || res.ClusterValidate.Count < float64(o.ClusterUpdates) {
		return fmt.Errorf("scenario 5: the controller served %.0f + %.0f policy and %.0f Cluster validations for %d + %d and %d requests",
			res.PolicyValidate.Count, res.PolicyTargetValidate.Count, res.ClusterValidate.Count, o.PolicyUpdates, o.PolicyUpdates, o.ClusterUpdates)
	}
	f.Result.Admission = res
	logf("Scenario 5: policy update p50 %.1fms p99 %.1fms (webhook mean %.1fms), target change p50 %.1fms p99 %.1fms (webhook mean %.1fms), Cluster update p50 %.1fms p99 %.1fms (webhook mean %.1fms)",
		1000*res.Policy.P50, 1000*res.Policy.P99, 1000*res.PolicyValidate.Mean, 1000*res.PolicyTarget.P50, 1000*res.PolicyTarget.P99, 1000*res.PolicyTargetValidate.Mean,
		1000*res.Cluster.P50, 1000*res.Cluster.P99, 1000*res.ClusterValidate.Mean)
	return nil
}

// timePolicyUpdates times n dry-run updates of the fleet's policy, the
// i-th changed by change.
func timePolicyUpdates(ctx context.Context, w *World, f *Fleet, n int, change func(p *upgradev1.TalosUpgradePolicy, i int)) (Stats, error) {
	policy := &upgradev1.TalosUpgradePolicy{}
	if err := w.Mgmt.Client.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: f.Policy}, policy); err != nil {
		return Stats{}, err
	}
	times := make([]float64, 0, n)
	for i := range n {
		p := policy.DeepCopy()
		change(p, i)
		d, err := timeUpdate(ctx, w.Mgmt.Client, p, func() error {
			if err := w.Mgmt.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
				return err
			}
			policy.DeepCopyInto(p)
			change(p, i)
			return nil
		})
		if err != nil {
			return Stats{}, fmt.Errorf("updating TalosUpgradePolicy %s (dry run): %w", f.Policy, err)
		}
		times = append(times, d)
	}
	return NewStats(times), nil
}

// timeUpdate times a dry-run update of obj; on a conflict (the controller
// wrote the object meanwhile) refresh brings obj up to date and the
// update is timed again.
func timeUpdate(ctx context.Context, c client.Client, obj client.Object, refresh func() error) (float64, error) {
	for attempt := 0; ; attempt++ {
		start := time.Now()
		err := c.Update(ctx, obj, client.DryRunAll)
		if err == nil {
			return time.Since(start).Seconds(), nil
		}
		if !apierrors.IsConflict(err) || attempt == 3 {
			return 0, err
		}
		if err := refresh(); err != nil {
			return 0, err
		}
	}
}
