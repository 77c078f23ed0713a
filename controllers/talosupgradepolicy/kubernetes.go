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

package talosupgradepolicy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/index"
	"github.com/tollgate-dev/tollgate/internal/plan"
)

// versionsRecheck is how often a policy with a kubernetesVersion alone reads
// again the Machines of a Cluster whose rollout it could not make yet: their
// versions come with their status, which it does not watch.
const versionsRecheck = 30 * time.Second

// runningTalos returns the one Talos version the Machines of cluster run, as
// their status.nodeInfo says: the Talos target of the rollout of a policy
// that changes Kubernetes alone (KeepsTalos). "" while no Machine's version
// is known, or while they run several: a Kubernetes upgrade is planned from
// one Talos version, and such a policy upgrades no Talos.
//
// With declared, the Machines that carry a declared version
// (upgradev1.DesiredTalosVersionAnnotation: their own, or their
// MachineDeployment's, which CAPI copies to them) are left out when the
// Machines run several: they go to it, and what the Cluster keeps is what
// the others run (a policy that names no target, TargetsFromObjects).
func (r *Reconciler) runningTalos(ctx context.Context, cluster *clusterv1.Cluster, declared bool) (string, error) {
	list := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(cluster.Namespace), client.MatchingFields{index.MachineClusterNameField: cluster.Name}); err != nil {
		return "", fmt.Errorf("listing the Machines of Cluster %s: %w", klog.KObj(cluster), err)
	}
	machines := make([]*clusterv1.Machine, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			machines = append(machines, &list.Items[i])
		}
	}
	versions := plan.NewClusterVersions(cluster, machines)
	running := versions.TalosVersions()
	if len(running) > 1 && declared {
		undeclared := slices.DeleteFunc(slices.Clone(machines), func(m *clusterv1.Machine) bool {
			_, declared := m.Annotations[upgradev1.DesiredTalosVersionAnnotation]
			return declared
		})
		versions := plan.NewClusterVersions(cluster, undeclared)
		running = versions.TalosVersions()
	}
	if len(running) != 1 {
		ctrl.LoggerFrom(ctx).V(2).Info("Cluster's rollout waits for its Machines to run one known Talos version", "Cluster", klog.KObj(cluster), "versions", running)
		return "", nil
	}
	return running[0], nil
}
