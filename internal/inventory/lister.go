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

package inventory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// Lister is a Reader that lists Clusters and Machines through Reader, by
// the field indexes of package index (which Reader must have), at every
// call: for a caller without informers, such as a test's fake client. The
// manager uses an Inventory.
type Lister struct {
	Reader client.Reader
}

var _ Reader = Lister{}

// ClustersOfPolicy returns the versions of the Clusters of namespace whose
// policy label names policy, sorted by name.
func (l Lister) ClustersOfPolicy(ctx context.Context, namespace, policy string) ([]plan.ClusterVersions, error) {
	clusters := &clusterv1.ClusterList{}
	if err := l.Reader.List(ctx, clusters, client.InNamespace(namespace), client.MatchingFields{index.ClusterPolicyField: policy}); err != nil {
		return nil, fmt.Errorf("listing the Clusters that select TalosUpgradePolicy %q: %w", policy, err)
	}
	out := make([]plan.ClusterVersions, 0, len(clusters.Items))
	for i := range clusters.Items {
		v, err := l.Cluster(ctx, &clusters.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b plan.ClusterVersions) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Cluster returns the versions of cluster, as given, and of its Machines.
func (l Lister) Cluster(ctx context.Context, cluster *clusterv1.Cluster) (plan.ClusterVersions, error) {
	machines := &clusterv1.MachineList{}
	if err := l.Reader.List(ctx, machines, client.InNamespace(cluster.Namespace), client.MatchingFields{index.MachineClusterNameField: cluster.Name}); err != nil {
		return plan.ClusterVersions{}, fmt.Errorf("listing the Machines of Cluster %q: %w", cluster.Name, err)
	}
	return plan.VersionsOf(cluster, machines.Items), nil
}
