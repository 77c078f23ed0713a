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
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// A sharded fleet (FleetOptions.Shards > 1) is run as the sharding page of
// the book says: Cluster i and its TalosUpgrade are labelled
// cluster.x-k8s.io/watch-filter=ShardOf(i), each shard has its own policy
// (ShardPolicy) labelled with it, and one controller process per shard runs
// with --watch-filter=<shard> and its own --leader-election-id. Only the
// first shard's process serves the webhooks: the webhook configurations
// name one Service port, and a second server on it could not listen; the
// others run with --webhook-port=0.

// ShardOf returns the shard of Cluster i of a fleet of shards shards:
// "shard-<i mod shards>", or "" (no label, no watch filter) for one shard.
func ShardOf(i, shards int) string {
	if shards <= 1 {
		return ""
	}
	return fmt.Sprintf("shard-%d", i%shards)
}

// ShardPolicy returns the policy of a shard's Clusters: the fleet's policy,
// suffixed with the shard when there is one.
func ShardPolicy(shard string) string {
	if shard == "" {
		return fleetPolicy
	}
	return fleetPolicy + "-" + shard
}

// shardClusters returns how many of Clusters 0 to clusters-1 are of shard k
// of shards.
func shardClusters(clusters, shards, k int) int {
	if shards <= 1 {
		return clusters
	}
	n := clusters / shards
	if k < clusters%shards {
		n++
	}
	return n
}

// ShardResult is one shard of a sharded fleet at one size: its controller
// process and the Clusters labelled for it.
type ShardResult struct {
	// WatchFilter is the shard's label value and --watch-filter.
	WatchFilter string `json:"watchFilter"`
	// Clusters are the Clusters (and TalosUpgrades) labelled for it, Policy
	// the policy that selects them.
	Clusters int    `json:"clusters"`
	Policy   string `json:"policy"`
	// Webhooks is true for the shard whose process serves the webhooks.
	Webhooks bool `json:"webhooks"`
	// Controller are the flags its process ran with.
	Controller []string `json:"controllerArgs"`
	// Reconciles counts its TalosUpgrade controller's reconciles while the
	// fleet converged, and CPUSeconds its CPU time then.
	Reconciles float64 `json:"reconciles"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// ManagementRequests are its requests while the fleet converged.
	ManagementRequests int64 `json:"managementRequests"`
	// UpgradesWritten counts the TalosUpgrades its processes (the first
	// one and the cold-started one, through the shard's proxy route)
	// updated or patched; every one is of its shard, or the bench fails.
	// Creates are not counted: their path names no object.
	UpgradesWritten int `json:"upgradesWritten"`
	// RSS and Go heap at steady state (converged, after Settle), and their
	// peaks (VmHWM, and the largest heap sampled).
	RSSSteady  float64 `json:"rssSteadyBytes"`
	RSSPeak    float64 `json:"rssPeakBytes"`
	HeapSteady float64 `json:"heapSteadyBytes"`
	HeapPeak   float64 `json:"heapPeakBytes"`
	// IdleRequestsPerSecond and IdleCPUSeconds are its share of scenario 3.
	IdleRequestsPerSecond float64 `json:"idleRequestsPerSecond,omitempty"`
	IdleCPUSeconds        float64 `json:"idleCpuSeconds,omitempty"`
	// ColdStart is a restart of its process over the converged fleet,
	// until every TalosUpgrade of the shard is reconciled.
	ColdStart *ColdStartResult `json:"coldStart,omitempty"`
}

// fleetShard is one controller process of the fleet and what it serves.
type fleetShard struct {
	// value is its --watch-filter, "" without sharding.
	value string
	// policy selects its Clusters.
	policy     string
	controller *Controller
}

// newShardResults returns the results of the shards of a fleet of
// clusters, nil without sharding.
func newShardResults(shards []*fleetShard, clusters int) []*ShardResult {
	if len(shards) <= 1 {
		return nil
	}
	out := make([]*ShardResult, len(shards))
	for k, sh := range shards {
		out[k] = &ShardResult{WatchFilter: sh.value, Clusters: shardClusters(clusters, len(shards), k), Policy: sh.policy, Webhooks: k == 0}
		if sh.controller != nil {
			out[k].Controller = sh.controller.cmd.Args[1:]
		}
	}
	return out
}

// sumMetrics adds scrapes of several processes sample by sample: counters
// and histograms of the fleet's controllers as a whole, gauges such as RSS
// in total.
func sumMetrics(ms []Metrics) Metrics {
	out := Metrics{}
	for _, m := range ms {
		for k, v := range m {
			out[k] += v
		}
	}
	return out
}

// shardedResources are the resources whose objects carry the shard label
// (the TalosUpgrades inherit their Cluster's); a shard writes only its own.
var shardedResources = []string{"clusters", "talosupgrades", "talosupgradepolicies"}

// foreignWrites returns the objects of written ("resource namespace/name",
// Proxy.Written) of a sharded resource whose shard (owners, by the same
// key) is not shard.
func foreignWrites(written []string, owners map[string]string, shard string) []string {
	var out []string
	for _, obj := range written {
		resource, _, _ := strings.Cut(obj, " ")
		if !slices.Contains(shardedResources, resource) {
			continue
		}
		if owner := owners[obj]; owner != shard {
			out = append(out, fmt.Sprintf("%s (of shard %q)", obj, owner))
		}
	}
	return out
}

// checkColdStartReconciles fails when a shard's cold start reconciled
// about as many TalosUpgrades as the fleet has, not as its shard has: its
// watch filter let in the other shards' rollouts. A reconcile of its own
// rollouts more than once is allowed (events of a Cluster and of its
// Machines can each bring one back), up to half the other shards'.
func checkColdStartReconciles(shard string, reconciles float64, own, total int) error {
	others := total - own
	if others <= 0 || reconciles < float64(own)+float64(others)/2 {
		return nil
	}
	return fmt.Errorf("shard %q reconciled %.0f TalosUpgrades in its cold start, but has only %d of the fleet's %d: it reconciles the other shards' rollouts",
		shard, reconciles, own, total)
}

// shardOwners returns the shard of every Cluster, TalosUpgrade (named after
// its Cluster) and policy of the namespace, by "resource namespace/name", as
// their labels say.
func shardOwners(ctx context.Context, c client.Reader, ns string) (map[string]string, error) {
	owners := map[string]string{}
	for _, kind := range []struct{ resource, list string }{
		{"clusters", "ClusterList"}, {"talosupgrades", "TalosUpgradeList"}, {"talosupgradepolicies", "TalosUpgradePolicyList"},
	} {
		list := &metav1.PartialObjectMetadataList{}
		gv := clusterv1.GroupVersion
		if kind.resource != "clusters" {
			gv = upgradev1.GroupVersion
		}
		list.SetGroupVersionKind(gv.WithKind(kind.list))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing %s: %w", kind.resource, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			owners[kind.resource+" "+ns+"/"+o.Name] = o.Labels[clusterv1.WatchLabel]
		}
	}
	return owners, nil
}
