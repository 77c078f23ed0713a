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

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/workloadjob"
	"github.com/tollgate-dev/tollgate/test/framework/jobdriver"
)

// samplePeriod is how often the observer samples the world.
const samplePeriod = 250 * time.Millisecond

// holdGrace is how long before a Machine's drain intent a hold or a failing
// health check must have been visible for the intent to be a violation: the
// controller reads them from caches that lag the apiserver a little.
const holdGrace = time.Second

// checkInterval is the interval of the soak's health check.
const checkInterval = 5 * time.Second

// checkResult is one finished health-check Job seen by the observer.
type checkResult struct {
	finished time.Time
	failed   bool
}

// judgement is a drain intent, or a removal released to CAPI's drain, to
// check against the health-check results.
type judgement struct {
	c                     *soakCluster
	machine               string
	preIntent, intentSeen time.Time
	// what is what started the drain: "" for Tollgate's drain intent.
	what string
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
	// phase is the record's phase (and hold point) last seen, since when,
	// and whether its stay was reported too long.
	phase         string
	phaseSince    time.Time
	phaseReported bool
	// pendingSeen is the last sample at which the Machine had no record or
	// a Pending one; started is when it was first seen started towards
	// target.
	pendingSeen, started time.Time
	target               string
	// rebootAfter is the reboot the record answers (its rebootAfter), as
	// last seen: a new one starts the Machine again.
	rebootAfter time.Time
	// disrupted says whether the record read at disruptedRead, in the
	// last sample, said Tollgate disrupted the Machine and had not given
	// up on it; remediationSeen whether the Machine was seen marked for
	// remediation (invariant 11).
	disrupted       bool
	disruptedRead   time.Time
	remediationSeen bool
}

// observer samples the workload Nodes, the Machines, the TalosUpgrades and
// the health-check Jobs every samplePeriod, with its own clients (not
// through the gates), and checks invariants 1 and 2.
type observer struct {
	s        *soak
	clusters []*soakCluster
	// checks are the health-check results the Job controllers wrote, by
	// Cluster and Job UID, with the time the Kubelet saw them.
	checks   map[string]map[string]checkResult
	machines map[string]*machineTrack // namespace/machine
	// pending are drain intents whose health-check judgement waits until
	// every result that could have justified them is seen.
	pending []judgement
	// over reports, per Cluster, a violation of invariant 1 once.
	over map[string]bool
	// served are the Nodes (by Cluster namespace and name) seen Ready at
	// least once: a Node that joins is NotReady until its kubelet reports,
	// which takes nothing down.
	served map[string]bool
	// disruptedSince is when each Node (by Cluster namespace and name) was
	// first seen disrupted by Tollgate, this time (invariant 1).
	disruptedSince map[string]time.Time
	// present are the Machines of each Cluster (by namespace) in the last
	// sample, to see those CAPI deleted between two samples.
	present map[string]map[string]bool
	// handedOver are the Machines (by namespace/name) seen handed over to
	// the in-place update extension, and failedReported those whose failed
	// in-place update was reported (invariant 18).
	handedOver, failedReported map[string]bool
}

func (s *soak) observe(ctx context.Context, clusters []*soakCluster) {
	o := &observer{
		s: s, clusters: clusters, checks: map[string]map[string]checkResult{}, machines: map[string]*machineTrack{}, over: map[string]bool{}, served: map[string]bool{},
		disruptedSince: map[string]time.Time{}, present: map[string]map[string]bool{},
	}
	start := time.Now()
	for _, c := range clusters {
		for _, m := range c.fixture.Machines {
			o.machines[c.ns+"/"+m.Name] = &machineTrack{preIntent: start, pendingSeen: start}
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
	nodes := map[*workload]*corev1.NodeList{}
	now := time.Now()
	for _, c := range o.clusters {
		if _, ok := nodes[c.wl]; ok {
			continue
		}
		nl := &corev1.NodeList{}
		if err := c.wl.Client.List(ctx, nl); err != nil {
			return
		}
		nodes[c.wl] = nl
		o.recordChecks(c.wl.Jobs.SeenMatching(jobdriver.HasLabels(map[string]string{workloadjob.JobKindLabel: workloadjob.JobKindHealthCheck})), now)
	}
	o.judge(now)
	for _, c := range o.clusters {
		// Machines first, then the record: a hold seen before a record
		// without intent was there before the intent.
		// Each read is timed on its own: on a loaded machine a sample of
		// every Cluster takes seconds, and the time it started says nothing
		// of when the last Cluster was read.
		machines := &clusterv1.MachineList{}
		if err := mgmt.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
			continue
		}
		t := readTimes{machinesRead: time.Now()}
		u := &upgradev1.TalosUpgrade{}
		if err := mgmt.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, u); err != nil {
			u = nil
		}
		t.recordRead = time.Now()
		o.noteGone(c, machines, t.machinesRead)
		o.checkRemovals(c, machines, t.machinesRead)
		o.checkMachines(c, machines, u, t)
		o.noteHandovers(c, machines, u)
		o.checkBudget(c, nodes[c.wl], machines, now, t.machinesRead)
		o.s.observeRest(c, u, capiWorking(c, machines), t.recordRead)
	}
	o.s.judgeRest(time.Now())
}

// recordChecks records the health-check runs that finished, at the time the
// Kubelet saw the Job controller end them (Complete or Failed): the scripts
// decide every outcome, and Tollgate deletes a finished Job as soon as it
// read it.
func (o *observer) recordChecks(seen []jobdriver.SeenJob, now time.Time) {
	for _, j := range seen {
		if !j.Finished {
			continue
		}
		cluster := j.Labels[workloadjob.ClusterLabel]
		if o.checks[cluster] == nil {
			o.checks[cluster] = map[string]checkResult{}
		}
		if _, ok := o.checks[cluster][string(j.UID)]; !ok {
			// Judged by when the Job ended, not by when this
			// observer, which may lag on a loaded machine, first saw it.
			finished := j.FinishedAt
			if finished.IsZero() {
				finished = now
			}
			o.checks[cluster][string(j.UID)] = checkResult{finished: finished, failed: j.Failed}
		}
	}
}

// judge checks the pending drain intents whose window is over: the intent
// is a violation when the health check's latest result before the intent
// could have been recorded failed, and no run passed within one check
// interval before the intent (a pass the controller may rely on until its
// interval is over) nor until holdGrace after it. The intent was recorded
// somewhere between the last sample without it and the first with it, which
// on a loaded machine are seconds apart: a pass anywhere in that span, or
// one check interval before it, may have justified it.
func (o *observer) judge(now time.Time) {
	var later []judgement
	for _, j := range o.pending {
		if now.Before(j.intentSeen.Add(holdGrace + samplePeriod)) {
			later = append(later, j)
			continue
		}
		results := o.checks[workloadjob.LabelValue(j.c.name)]
		var last checkResult
		found, passed := false, false
		for _, r := range results {
			if !r.finished.After(j.preIntent.Add(-holdGrace)) && (!found || r.finished.After(last.finished)) {
				last, found = r, true
			}
			if !r.failed && r.finished.After(j.preIntent.Add(-checkInterval-holdGrace)) && !r.finished.After(j.intentSeen.Add(holdGrace)) {
				passed = true
			}
		}
		if found && last.failed && !passed {
			o.s.violation(2, "Machine %s/%s: %s (between %s and %s) while health check %q was failing (failed run seen at %s, no pass since)",
				j.c.ns, j.machine, or(j.what, "drain intent recorded"), j.preIntent.Format(timeMillis), j.intentSeen.Format(timeMillis), checkName, last.finished.Format(timeMillis))
		}
	}
	o.pending = later
}

const timeMillis = "15:04:05.000"

// readTimes bound when the Machines and the record of a Cluster were read.
type readTimes struct {
	// machinesRead is when the list of the Machines returned: a hold it
	// shows was there by then.
	machinesRead time.Time
	// recordRead is when the read of the TalosUpgrade returned, after
	// machinesRead: an intent it shows was recorded by then, and an intent
	// it does not show was recorded after machinesRead.
	recordRead time.Time
}

// checkMachines checks invariant 2: no drain intent recorded while a hold
// is present or the health check fails.
func (o *observer) checkMachines(c *soakCluster, machines *clusterv1.MachineList, u *upgradev1.TalosUpgrade, t readTimes) {
	now := t.recordRead
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
			// A Machine that joined: nothing of it was started before now.
			tr = &machineTrack{preIntent: t.machinesRead, pendingSeen: now}
			o.machines[c.ns+"/"+m.Name] = tr
		}
		st, ok := records[m.Name]
		o.checkPhase(c, m.Name, tr, st, ok, now)
		o.checkStart(c, m.Name, tr, st, ok, now)
		o.checkRemediation(c, m, tr, st, ok, t)
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
			tr.holdSince = t.machinesRead
		}
		if ok && !tr.intentSeen.IsZero() && st.Phase == upgradev1.MachinePhasePending {
			// The record started again (a new target, a reboot asked
			// for): its next drain is judged too.
			tr.intentSeen = time.Time{}
		}
		if !ok || !tr.intentSeen.IsZero() {
			continue
		}
		if st.Phase == upgradev1.MachinePhasePending || st.Phase == "" ||
			st.Phase == upgradev1.MachinePhaseWaitingForHold && st.HoldPoint == upgradev1.HoldPointPreDrain {
			tr.preIntent = t.machinesRead
			continue
		}
		if (st.Phase == upgradev1.MachinePhaseFailed || st.Phase == upgradev1.MachinePhaseCompleted) &&
			!st.Cordoned && st.UpgradeRequestedTime == nil && st.RebootRequestedTime == nil && st.PhaseDurations == nil {
			// Failed before any disruption (a drain never started), or
			// completed without one: a Machine CAPI made on the target.
			tr.preIntent = t.machinesRead
			continue
		}
		tr.intentSeen = now
		// The intent was recorded in (preIntent, now]. It is a violation
		// only if the hold or the failure was visible holdGrace before
		// the earliest instant it could have been recorded, and still is.
		if !tr.holdSince.IsZero() && tr.holdSince.Before(tr.preIntent.Add(-holdGrace)) {
			o.s.violation(2, "Machine %s/%s: drain intent recorded while the pre-drain hold seen since %s was present",
				c.ns, m.Name, tr.holdSince.Format(timeMillis))
		}
		o.pending = append(o.pending, judgement{c: c, machine: m.Name, preIntent: tr.preIntent, intentSeen: now})
	}
}

// noteGone records the Machines of the Cluster that CAPI deletes: seen
// deleting, or gone since the last sample.
func (o *observer) noteGone(c *soakCluster, machines *clusterv1.MachineList, at time.Time) {
	now := map[string]bool{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range machines.Items {
		m := &machines.Items[i]
		now[m.Name] = true
		if _, ok := c.gone[m.Name]; !ok && !m.DeletionTimestamp.IsZero() {
			c.gone[m.Name] = at
		}
	}
	for name := range o.present[c.ns] {
		if _, ok := c.gone[name]; !ok && !now[name] {
			c.gone[name] = at
		}
	}
	o.present[c.ns] = now
}

// killGrace is how long after the soak killed a node Tollgate may still
// start a Machine without counting it: it reads the Nodes from a cache.
const killGrace = 2 * time.Second

// checkBudget checks invariant 1 on the Cluster: at most maxUnavailable
// workers and one control-plane Machine disrupted at once, whatever
// disrupts them, and never a control-plane and a worker node disrupted at
// once by the rollout (which goes group by group). A Node counts as
// disrupted while it is cordoned, or NotReady after it served: an upgrade,
// a reboot (asked for by the soak, by an upgrade or by a configuration
// change), a configuration change, a drain. A Machine
// CAPI deletes counts from the moment Tollgate's removal gate released it
// to CAPI's drain (its deletion hook gone) until it is gone, against its
// own group's budget only (a removal waits for no other group); one held by
// the hook takes nothing down, unless its node is cordoned or NotReady.
//
// Disruptions that are not Tollgate's doing count against the budget, but
// the overrun is Tollgate's only if it started one of the workers it
// disrupts after them (plus killGrace): a node the soak killed (Tollgate
// counts a NotReady worker against the budget; a node that dies while the
// budget is spent is not Tollgate's doing), and a Machine CAPI deleted
// while its Cluster was out of its policy, which Tollgate did not gate. A
// dead worker is no disruption beside the control plane either (its budget
// is its own, one Machine, for etcd).
func (o *observer) checkBudget(c *soakCluster, nodes *corev1.NodeList, machines *clusterv1.MachineList, sampleStart, at time.Time) {
	byNode := map[string]*clusterv1.Machine{}
	for i := range machines.Items {
		if m := &machines.Items[i]; m.Status.NodeRef.Name != "" {
			byNode[m.Status.NodeRef.Name] = m
		}
	}
	var cps, workers, removedCPs, removedWorkers, outside []string
	// heldDisrupted are the Nodes of cps and workers whose Machine CAPI
	// deletes and Tollgate's hook still holds: an upgrade CAPI took the
	// Machine from left its node cordoned (see KnownBugs).
	var heldDisrupted []string
	var lastOutside, lastStart time.Time
	since := func(key string) time.Time {
		if _, ok := o.disruptedSince[key]; !ok {
			o.disruptedSince[key] = at
		}
		return o.disruptedSince[key]
	}
	// Removals released to CAPI's drain. The Nodes were read at the start
	// of this sample, before the Machines: a Machine seen released in this
	// sample may have been released after the Nodes were read, and the
	// disruption it is counted beside may have ended before. One already
	// seen released in an earlier sample, whose Machines were read before
	// these Nodes, and still there now, was released all along while the
	// Nodes were read (a released Machine is never held again): only those
	// count, so that a removal and a disruption that followed each other
	// between two reads of a loaded observer are not taken for two at once.
	for i := range machines.Items {
		m := &machines.Items[i]
		node := m.Status.NodeRef.Name
		if !released(m) || node == "" || !o.served[c.ns+"/"+node] {
			continue // A Machine that never served takes nothing down.
		}
		c.mu.Lock()
		var releasedSeen, deleting time.Time
		exempt := ""
		if tr := c.removals[m.Name]; tr != nil {
			releasedSeen, deleting, exempt = tr.released, tr.deleting, tr.exempt
		}
		c.mu.Unlock()
		if releasedSeen.IsZero() || !releasedSeen.Before(sampleStart) {
			continue
		}
		if killed, ok := c.killedAt(node); ok {
			outside = append(outside, node)
			lastOutside = maxTime(lastOutside, killed)
			continue
		}
		if exempt != "" {
			outside = append(outside, node)
			lastOutside = maxTime(lastOutside, deleting)
			continue
		}
		key := c.ns + "/" + node
		if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp {
			removedCPs = append(removedCPs, node)
			since(key)
			continue
		}
		removedWorkers = append(removedWorkers, node)
		lastStart = maxTime(lastStart, since(key))
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		m := byNode[n.Name]
		if m == nil {
			continue // Not this Cluster's, or its Machine is gone.
		}
		key := c.ns + "/" + n.Name
		if ready(n) {
			o.served[key] = true
		}
		if released(m) {
			continue // Counted above, once seen released in two samples.
		}
		if !n.Spec.Unschedulable && (ready(n) || !o.served[key]) {
			delete(o.disruptedSince, key)
			continue
		}
		if killed, ok := c.killedAt(n.Name); ok && (!n.Spec.Unschedulable || !m.DeletionTimestamp.IsZero()) {
			outside = append(outside, n.Name)
			lastOutside = maxTime(lastOutside, killed)
			continue
		}
		if !m.DeletionTimestamp.IsZero() {
			heldDisrupted = append(heldDisrupted, n.Name)
		}
		if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp {
			cps = append(cps, n.Name)
			since(key)
			continue
		}
		workers = append(workers, n.Name)
		lastStart = maxTime(lastStart, since(key))
	}
	tollgates := len(workers) + len(removedWorkers)
	overrun := tollgates > c.maxUnavailable ||
		tollgates+len(outside) > c.maxUnavailable && tollgates > 0 && lastStart.After(lastOutside.Add(killGrace))
	if len(cps)+len(removedCPs) <= 1 && !overrun && (len(cps) == 0 || len(workers) == 0) {
		return
	}
	key := c.ns + strings.Join(cps, ",") + "|" + strings.Join(workers, ",") + "|" + strings.Join(removedCPs, ",") + "|" + strings.Join(removedWorkers, ",") + "|" + strings.Join(outside, ",")
	if !o.over[key] {
		o.over[key] = true
		o.s.violation(1, "Cluster %s/%s: disrupted at once: control plane %v, workers %v (cordoned or NotReady; of them, Machines CAPI deletes whose removal Tollgate holds: %v), removals released to CAPI's drain: control plane %v, workers %v, and disruptions not Tollgate's (nodes the soak killed, Machines deleted while the Cluster was out of its policy) %v (maxUnavailable %d; the last worker started %s, the last disruption not Tollgate's %s)",
			c.ns, c.name, cps, workers, heldDisrupted, removedCPs, removedWorkers, outside, c.maxUnavailable, lastStart.Format(timeMillis), lastOutside.Format(timeMillis))
	}
}

// ready reports whether a Node is Ready.
func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
