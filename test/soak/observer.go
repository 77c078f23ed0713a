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

package soak

import (
	"context"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
)

// samplePeriod is how often the observer samples the world.
const samplePeriod = 250 * time.Millisecond

// holdGrace is how long before a Machine's drain intent a hold or a failing
// health check must have been visible for the intent to be a violation: the
// controller reads them from caches that lag the apiserver a little.
const holdGrace = time.Second

// checkResult is one finished health-check Job seen by the observer.
type checkResult struct {
	finished time.Time
	failed   bool
}

// machineTrack is what the observer knows of one Machine.
type machineTrack struct {
	// preIntent is the last sample at which the Machine's record had no
	// drain intent yet (Pending, or waiting at preDrain).
	preIntent time.Time
	// intentSeen is when a drain intent was first seen; zero before.
	intentSeen time.Time
	// holdSince is when the observer first saw the current hold; zero
	// when there is none.
	holdSince time.Time
}

// observer samples the workload Nodes, the Machines, the TalosUpgrades and
// the health-check Jobs every samplePeriod, with its own clients (not
// through the gates), and checks invariants 1 and 2.
type observer struct {
	s        *soak
	clusters []*soakCluster
	checks   map[string]map[string]checkResult // cluster -> Job UID -> result
	machines map[string]*machineTrack          // namespace/machine
	// over reports, per Cluster, a violation of invariant 1 once.
	over map[string]bool
}

func (s *soak) observe(ctx context.Context, clusters []*soakCluster) {
	o := &observer{s: s, clusters: clusters, checks: map[string]map[string]checkResult{}, machines: map[string]*machineTrack{}, over: map[string]bool{}}
	start := time.Now()
	for _, c := range clusters {
		for _, m := range c.fixture.Machines {
			o.machines[c.ns+"/"+m.Name] = &machineTrack{preIntent: start}
		}
	}
	t := time.NewTicker(samplePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			o.sample(ctx)
		}
	}
}

func (o *observer) sample(ctx context.Context) {
	mgmt := o.s.world.mgmt.Client
	jobs := map[*workload]*batchv1.JobList{}
	nodes := map[*workload]*corev1.NodeList{}
	for _, c := range o.clusters {
		if _, ok := jobs[c.wl]; ok {
			continue
		}
		jl, nl := &batchv1.JobList{}, &corev1.NodeList{}
		if err := c.wl.Client.List(ctx, jl, client.MatchingLabels{workloadjob.JobKindLabel: workloadjob.JobKindHealthCheck}); err != nil {
			return
		}
		if err := c.wl.Client.List(ctx, nl); err != nil {
			return
		}
		jobs[c.wl], nodes[c.wl] = jl, nl
	}
	for _, jl := range jobs {
		o.recordChecks(jl)
	}
	now := time.Now()
	for _, c := range o.clusters {
		// Machines first, then the record: a hold seen before a record
		// without intent was there before the intent.
		machines := &clusterv1.MachineList{}
		if err := mgmt.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
			continue
		}
		u := &upgradev1.TalosUpgrade{}
		if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
			u = nil
		}
		o.checkMachines(c, machines, u, now)
		o.checkBudget(c, nodes[c.wl])
	}
}

func (o *observer) recordChecks(jl *batchv1.JobList) {
	for _, j := range jl.Items {
		cluster := j.Labels[workloadjob.ClusterLabel]
		for _, cond := range j.Status.Conditions {
			if cond.Status != corev1.ConditionTrue || (cond.Type != batchv1.JobComplete && cond.Type != batchv1.JobFailed) {
				continue
			}
			if o.checks[cluster] == nil {
				o.checks[cluster] = map[string]checkResult{}
			}
			if _, ok := o.checks[cluster][string(j.UID)]; !ok {
				o.checks[cluster][string(j.UID)] = checkResult{finished: cond.LastTransitionTime.Time, failed: cond.Type == batchv1.JobFailed}
			}
		}
	}
}

// checkMachines checks invariant 2: no drain intent recorded while a hold
// is present or the health check fails.
func (o *observer) checkMachines(c *soakCluster, machines *clusterv1.MachineList, u *upgradev1.TalosUpgrade, now time.Time) {
	records := map[string]upgradev1.MachineUpgradeStatus{}
	if u != nil {
		for _, st := range u.Status.Machines {
			records[st.Machine] = st
		}
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		tr := o.machines[c.ns+"/"+m.Name]
		if tr == nil {
			continue
		}
		held := false
		for k := range m.Annotations {
			if strings.HasPrefix(k, hooks.PreDrainHookAnnotationPrefix+"/") {
				held = true
			}
		}
		switch {
		case !held:
			tr.holdSince = time.Time{}
		case tr.holdSince.IsZero():
			tr.holdSince = now
		}
		st, ok := records[m.Name]
		if !ok || !tr.intentSeen.IsZero() {
			continue
		}
		if st.Phase == upgradev1.MachinePhasePending || st.Phase == "" ||
			st.Phase == upgradev1.MachinePhaseWaitingForHold && st.HoldPoint == upgradev1.HoldPointPreDrain {
			tr.preIntent = now
			continue
		}
		if st.Phase == upgradev1.MachinePhaseFailed && !st.Cordoned && st.UpgradeRequestedTime == nil && st.RebootRequestedTime == nil && st.PhaseDurations == nil {
			// Failed before any disruption (a drain never started).
			tr.preIntent = now
			continue
		}
		tr.intentSeen = now
		// The intent was recorded in (preIntent, now]. It is a violation
		// only if the hold or the failure was visible holdGrace before
		// the earliest instant it could have been recorded, and still is.
		if !tr.holdSince.IsZero() && tr.holdSince.Before(tr.preIntent.Add(-holdGrace)) {
			o.s.violation(2, "Machine %s/%s: drain intent recorded while the pre-drain hold seen since %s was present",
				c.ns, m.Name, tr.holdSince.Format(time.TimeOnly))
		}
		if last, ok := o.lastCheck(c, now); ok && last.failed && last.finished.Before(tr.preIntent.Add(-holdGrace)) {
			o.s.violation(2, "Machine %s/%s: drain intent recorded while health check %q was failing (last run failed at %s, intent between %s and %s)",
				c.ns, m.Name, checkName, last.finished.Format(time.TimeOnly), tr.preIntent.Format(time.TimeOnly), now.Format(time.TimeOnly))
		}
	}
}

// lastCheck returns the latest health-check result of a Cluster finished
// before t.
func (o *observer) lastCheck(c *soakCluster, t time.Time) (checkResult, bool) {
	var last checkResult
	found := false
	for _, r := range o.checks[workloadjob.LabelValue(c.name)] {
		if r.finished.After(t) {
			continue
		}
		if !found || r.finished.After(last.finished) {
			last, found = r, true
		}
	}
	return last, found
}

// checkBudget checks invariant 1 on the Cluster's Nodes: at most
// maxUnavailable workers and one control-plane node disrupted (cordoned or
// NotReady), never both kinds at once.
func (o *observer) checkBudget(c *soakCluster, nodes *corev1.NodeList) {
	var cps, workers []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !strings.HasPrefix(n.Name, c.name+"-") || !disrupted(n) {
			continue
		}
		if c.controlPlane(n.Name) {
			cps = append(cps, n.Name)
		} else {
			workers = append(workers, n.Name)
		}
	}
	if len(cps) > 1 || len(workers) > c.maxUnavailable || len(cps) > 0 && len(workers) > 0 {
		key := c.ns + strings.Join(cps, ",") + strings.Join(workers, ",")
		if !o.over[key] {
			o.over[key] = true
			o.s.violation(1, "Cluster %s/%s: disrupted at once: control plane %v, workers %v (maxUnavailable %d)", c.ns, c.name, cps, workers, c.maxUnavailable)
		}
	}
}

// disrupted reports whether a Node is cordoned or not Ready.
func disrupted(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return true
}
