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

package talosupgrade

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/disruption"
	"github.com/tollgate-dev/tollgate/internal/drain"
	"github.com/tollgate-dev/tollgate/internal/talos"
)

// This file answers "what does a Machine do while it drains": a drain pass
// over its node, then, once the node is drained, the reading of what the
// upgrade is measured against from the node itself. A pass is an
// observation of the world (observeDrain, which may evict Pods and cordon
// the node again, both idempotent), which decideDrain (steps.go) asks its
// round for, and a decision on what it saw (decideDrain, in the next round):
// the drains of all the Machines draining are observed at once (see
// rounds.go).

// observeDrain makes one drain pass of a Machine: it makes sure the Machine
// is protected from remediation and its node cordoned, evicts what must go,
// and once nothing is left reads the node's Talos version, boot ID and,
// when the installer needs it, schematic. It reads the scope and writes only
// the world of its own Machine, so that the Machines of a round are
// observed at once.
func (r *Reconciler) observeDrain(ctx context.Context, s *scope, st *upgradev1.MachineUpgradeStatus, m *clusterv1.Machine, disrupted bool) disruption.DrainPass {
	var obs disruption.DrainPass
	if !disrupted {
		if obs.Err = r.disrupt(ctx, s, st, m); obs.Err != nil {
			return obs
		}
	}
	if s.workload == nil {
		return obs
	}
	obs.Reachable = true
	cs, err := r.clientset(ctx, s)
	if err != nil {
		obs.Err = err
		return obs
	}
	// A node whose change restarts no Pod of its own (keepsPodsRunning) is
	// cordoned but not drained.
	drains := st.Node != "" && !hasAnnotation(m, clusterv1.ExcludeNodeDrainingAnnotation) && !st.DrainSkipped && !disruption.KeepsPodsRunning(&s.Upgrade.Spec, st)
	if drains {
		nodes := &corev1.NodeList{}
		if err := s.workload.List(ctx, nodes); err != nil {
			obs.Err = fmt.Errorf("listing the Nodes of the workload cluster: %w", err)
			return obs
		}
		// Evicting the Pods would leave them Pending, or wait on their
		// budgets until the drain times out: the node is only cordoned.
		obs.Skipped = !drain.RoomElsewhere(nodes.Items, st.Node, s.UpgradingNode)
		drains = !obs.Skipped
	}
	if drains {
		rules, err := r.drainRules(ctx, s, m)
		if err != nil {
			obs.Err = err
			return obs
		}
		res, err := drain.Drain(ctx, cs, st.Node, s.Upgrade.Spec.Drain, rules)
		if err != nil {
			obs.Err = fmt.Errorf("draining node %q: %w", st.Node, err)
			return obs
		}
		if !res.Done {
			obs.Pending = res.Message
			return obs
		}
	}
	obs.Drained = true

	obs.TalosErr = r.nodes().ReadDrained(ctx, s.Cluster, m, s.Upgrade.Spec.Installer, &obs)
	if obs.TalosErr != nil {
		return obs
	}
	if lifecycle, err := talos.UsesLifecycleAPI(obs.Version); err == nil && !lifecycle && !talos.SameVersion(obs.Version, st.TargetVersion) {
		obs.PreReboot = &disruption.HeldMachine{Point: upgradev1.HoldPointPreReboot, Machine: &clusterv1.Machine{}}
		obs.PreReboot.Err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(m), obs.PreReboot.Machine)
	}
	return obs
}

// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedrainrules,verbs=get;list;watch

// drainRules reads the MachineDrainRules of the Machine's namespace from the
// manager's cache and keeps those that apply to the Machine and its Cluster,
// by their labels, as CAPI's Machine drain does. A list that fails, or a
// rule that cannot be judged, stops the drain pass: no Pod is evicted on
// rules not read.
func (r *Reconciler) drainRules(ctx context.Context, s *scope, m *clusterv1.Machine) (drain.Rules, error) {
	list := &clusterv1.MachineDrainRuleList{}
	if err := r.Client.List(ctx, list, client.InNamespace(m.Namespace)); err != nil {
		return drain.Rules{}, fmt.Errorf("listing the MachineDrainRules of namespace %q: %w", m.Namespace, err)
	}
	rules, err := drain.RulesFor(list.Items, m.Labels, s.Cluster.Labels)
	if err != nil {
		return drain.Rules{}, fmt.Errorf("reading the MachineDrainRules of Machine %q: %w", m.Name, err)
	}
	if names := rules.Names(); len(names) > 0 {
		ctrl.LoggerFrom(ctx).V(4).Info("Draining node by MachineDrainRules", "Machine", klog.KObj(m), "machineDrainRules", names)
	}
	return rules, nil
}
