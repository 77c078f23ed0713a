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

package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
)

// selectedCluster is a Cluster that selects a policy, with its Machines.
type selectedCluster struct {
	cluster  *clusterv1.Cluster
	machines []clusterv1.Machine
}

// selectedClusters returns the Clusters in namespace whose policy label names
// policyName, each with its Machines. They are the cache's own objects, not
// copies (a policy of 1,000 Clusters would copy 10,000 Machines for every
// admission): read them, never change them.
func selectedClusters(ctx context.Context, c client.Reader, namespace, policyName string) ([]selectedCluster, error) {
	clusters := &clusterv1.ClusterList{}
	if err := c.List(ctx, clusters, client.InNamespace(namespace), client.MatchingFields{index.ClusterPolicyField: policyName}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the Clusters that select TalosUpgradePolicy %q: %w", policyName, err)
	}
	out := make([]selectedCluster, 0, len(clusters.Items))
	for i := range clusters.Items {
		machines, err := clusterMachines(ctx, c, &clusters.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, selectedCluster{cluster: &clusters.Items[i], machines: machines})
	}
	return out, nil
}

// clusterMachines returns the Machines of a Cluster: the cache's own
// objects, not copies; read them, never change them.
func clusterMachines(ctx context.Context, c client.Reader, cluster *clusterv1.Cluster) ([]clusterv1.Machine, error) {
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, client.InNamespace(cluster.Namespace), client.MatchingFields{index.MachineClusterNameField: cluster.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the Machines of Cluster %q: %w", cluster.Name, err)
	}
	return machines.Items, nil
}

// upgradesOf returns the TalosUpgrades in namespace whose indexed field
// (index.UpgradeClusterNameField or index.UpgradePolicyNameField) is value
// and for which match is true.
func upgradesOf(ctx context.Context, c client.Reader, namespace, field, value string, match func(*upgradev1.TalosUpgrade) bool) ([]upgradev1.TalosUpgrade, error) {
	list := &upgradev1.TalosUpgradeList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{field: value}); err != nil {
		return nil, fmt.Errorf("listing TalosUpgrades: %w", err)
	}
	var out []upgradev1.TalosUpgrade
	for i := range list.Items {
		if match(&list.Items[i]) {
			out = append(out, list.Items[i])
		}
	}
	return out, nil
}

// isActive reports whether a TalosUpgrade has not ended: it still covers its
// Cluster, and no other rollout may start there.
func isActive(u *upgradev1.TalosUpgrade) bool {
	return u.Status.Phase != upgradev1.UpgradePhaseCompleted && u.Status.Phase != upgradev1.UpgradePhaseFailed
}

// isInProgress reports whether a TalosUpgrade has started to take Machines
// down, or is about to: its target must not change under it. A rollout still
// Pending or in Preflight has touched nothing and picks up a new target.
func isInProgress(u *upgradev1.TalosUpgrade) bool {
	if !isActive(u) {
		return false
	}
	switch u.Status.Phase {
	case upgradev1.UpgradePhaseInProgress, upgradev1.UpgradePhasePaused, upgradev1.UpgradePhaseWaitingForHealthChecks:
		return true
	}
	return u.Status.StartTime != nil
}

// missingHealthChecks returns the names of the referenced ClusterHealthChecks
// that do not exist in namespace.
func missingHealthChecks(ctx context.Context, c client.Reader, namespace string, refs []upgradev1.HealthCheckRef) ([]string, error) {
	var missing []string
	for _, ref := range refs {
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &upgradev1.ClusterHealthCheck{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, ref.Name)
		case err != nil:
			return nil, fmt.Errorf("getting ClusterHealthCheck %q: %w", ref.Name, err)
		}
	}
	return missing, nil
}
