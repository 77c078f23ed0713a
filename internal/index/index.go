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

// Package index holds the field indexes of the manager's cache that the
// controllers and the webhooks list by. A list by label scans every object
// of a namespace; a list by an indexed field reads only the matching ones.
// At fleet size (a thousand Clusters of ten Machines in one namespace) that
// is the difference between reading ten Machines per reconcile or
// admission and reading ten thousand.
//
// Add registers every index with a manager before it starts; every list by
// one of these fields needs it. Tests with controller-runtime's fake client
// register Indexes with fake.ClientBuilder.WithIndex.
package index

import (
	"context"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Fields of the indexes.
const (
	// MachineClusterNameField indexes Machines by spec.clusterName.
	MachineClusterNameField = "spec.clusterName"
	// ClusterPolicyField indexes Clusters by the policy their
	// upgradev1.PolicyLabel names.
	ClusterPolicyField = "metadata.labels.policy"
	// UpgradeClusterNameField indexes TalosUpgrades by spec.clusterName.
	UpgradeClusterNameField = "spec.clusterName"
	// UpgradePolicyNameField indexes TalosUpgrades by spec.policyName.
	UpgradePolicyNameField = "spec.policyName"
	// UpgradeInProgressPolicyField indexes the TalosUpgrades in progress
	// (TalosUpgrade.InProgress) by spec.policyName: the few rollouts of a
	// policy that a change of its target must wait for, out of one per
	// Cluster.
	UpgradeInProgressPolicyField = "inProgress.spec.policyName"
	// UpgradeHealthCheckField indexes TalosUpgrades by the names of the
	// ClusterHealthChecks they reference.
	UpgradeHealthCheckField = "spec.healthChecks.name"
	// PolicyChannelField indexes TalosUpgradePolicies by the
	// ReleaseChannel their targets come from (spec.channel, with
	// targetFrom: Channel).
	PolicyChannelField = "spec.channel"
)

// Index is one field index: the objects of a kind by the values Extract
// returns for Field.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// Indexes are every index Tollgate lists by.
var Indexes = []Index{
	{Object: &clusterv1.Machine{}, Field: MachineClusterNameField, Extract: machineClusterName},
	{Object: &clusterv1.Cluster{}, Field: ClusterPolicyField, Extract: clusterPolicy},
	{Object: &upgradev1.TalosUpgrade{}, Field: UpgradeClusterNameField, Extract: upgradeClusterName},
	{Object: &upgradev1.TalosUpgrade{}, Field: UpgradePolicyNameField, Extract: upgradePolicyName},
	{Object: &upgradev1.TalosUpgrade{}, Field: UpgradeInProgressPolicyField, Extract: upgradeInProgressPolicyName},
	{Object: &upgradev1.TalosUpgrade{}, Field: UpgradeHealthCheckField, Extract: upgradeHealthChecks},
	{Object: &upgradev1.TalosUpgradePolicy{}, Field: PolicyChannelField, Extract: policyChannel},
}

// Add registers every index with the field indexer of a manager's cache
// (mgr.GetFieldIndexer()), before the manager starts.
func Add(ctx context.Context, indexer client.FieldIndexer) error {
	for _, i := range Indexes {
		if err := indexer.IndexField(ctx, i.Object, i.Field, i.Extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.Object, i.Field, err)
		}
	}
	return nil
}

func machineClusterName(o client.Object) []string {
	m, ok := o.(*clusterv1.Machine)
	if !ok || m.Spec.ClusterName == "" {
		return nil
	}
	return []string{m.Spec.ClusterName}
}

func clusterPolicy(o client.Object) []string {
	if p := o.GetLabels()[upgradev1.PolicyLabel]; p != "" {
		return []string{p}
	}
	return nil
}

func upgradeClusterName(o client.Object) []string {
	u, ok := o.(*upgradev1.TalosUpgrade)
	if !ok || u.Spec.ClusterName == "" {
		return nil
	}
	return []string{u.Spec.ClusterName}
}

func upgradePolicyName(o client.Object) []string {
	u, ok := o.(*upgradev1.TalosUpgrade)
	if !ok || u.Spec.PolicyName == "" {
		return nil
	}
	return []string{u.Spec.PolicyName}
}

func upgradeInProgressPolicyName(o client.Object) []string {
	u, ok := o.(*upgradev1.TalosUpgrade)
	if !ok || !u.InProgress() {
		return nil
	}
	return upgradePolicyName(u)
}

func upgradeHealthChecks(o client.Object) []string {
	u, ok := o.(*upgradev1.TalosUpgrade)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(u.Spec.HealthChecks))
	for _, ref := range u.Spec.HealthChecks {
		names = append(names, ref.Name)
	}
	return names
}

func policyChannel(o client.Object) []string {
	p, ok := o.(*upgradev1.TalosUpgradePolicy)
	if !ok || !p.Spec.ChannelDriven() || p.Spec.Channel == "" {
		return nil
	}
	return []string{p.Spec.Channel}
}
