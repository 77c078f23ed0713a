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
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// phaseSlack is how much longer than its timeout a Machine may stay in a
// phase, beyond the time the controllers could not act (no leader, the
// management apiserver or a workload apiserver cut, the ClusterCache
// waiting to connect again to the Cluster's workload cluster): reconciles
// come back every few seconds, and some requests are failed or held by the
// fault proxies.
const phaseSlack = 15 * time.Second

// workloadReconnect is how long after a workload apiserver comes back the
// controllers may still be unable to act on its Clusters: CAPI's
// ClusterCache connects again only after its own health probe and back-off.
const workloadReconnect = 30 * time.Second

// connectRetryLine matches the line CAPI's ClusterCache logs when it could
// not connect to a Cluster's workload cluster and waits before it tries
// again (30s by default): one request failed by a fault proxy as a
// controller starts is enough. It captures the wait and the Cluster.
var connectRetryLine = regexp.MustCompile(`"Requeuing after ([0-9.]+)s \(connection creation failed\)".*Cluster="([^"]+)"`)

// connectRetries are the intervals in which the controllers' ClusterCache
// waited to connect again to a Cluster's workload cluster, by Cluster
// (namespace/name): the controllers cannot act on the Cluster meanwhile.
type connectRetries struct {
	mu    sync.Mutex
	waits map[string][]interval
}

func newConnectRetries() *connectRetries {
	return &connectRetries{waits: map[string][]interval{}}
}

// line records the wait a controller's log line announces, if it does.
func (c *connectRetries) line(l string, now time.Time) {
	m := connectRetryLine.FindStringSubmatch(l)
	if m == nil {
		return
	}
	secs, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits[m[2]] = append(c.waits[m[2]], interval{from: now, to: now.Add(time.Duration(secs * float64(time.Second)))})
}

// of returns the waits of a Cluster.
func (c *connectRetries) of(cluster string) []interval {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits[cluster])
}

// leaveGrace is how long after its Cluster left its policy a Machine may
// still start: the controllers read the Cluster from caches that lag the
// apiserver (more so while watches are being cut).
const leaveGrace = 2 * time.Second

// phaseTimeout is the longest the policy lets a Machine stay in a phase
// before it fails it; false for phases without one (Pending, and
// WaitingForHold: a hold may last as long as its owner wants).
//   - Draining: drain.timeout, or nodeUnreachableTimeout if the node's
//     Talos API is silent;
//   - Upgrading: nodeUnreachableTimeout (the soak's image pulls are
//     immediate, so only a silent node keeps a Machine there);
//   - Rebooting and Verifying: rebootTimeout, counted from the reboot.
func phaseTimeout(phase upgradev1.MachinePhase) (time.Duration, bool) {
	switch phase {
	case upgradev1.MachinePhaseDraining:
		return max(drainTimeout, nodeUnreachableTimeout), true
	case upgradev1.MachinePhaseUpgrading:
		return nodeUnreachableTimeout, true
	case upgradev1.MachinePhaseRebooting, upgradev1.MachinePhaseVerifying:
		return rebootTimeout, true
	}
	return 0, false
}

// checkPhase checks invariant 8 on one Machine's record.
func (o *observer) checkPhase(c *soakCluster, machine string, tr *machineTrack, st upgradev1.MachineUpgradeStatus, ok bool, now time.Time) {
	if !ok {
		return
	}
	phase := string(st.Phase) + " " + string(st.HoldPoint)
	if phase != tr.phase {
		tr.phase, tr.phaseSince, tr.phaseReported = phase, now, false
		if _, bounded := phaseTimeout(st.Phase); bounded {
			o.s.check(8)
		}
	}
	timeout, bounded := phaseTimeout(st.Phase)
	if !bounded || tr.phaseReported {
		return
	}
	o.s.mu.Lock()
	blackouts := slices.Clone(o.s.blackouts)
	o.s.mu.Unlock()
	if o.s.connects != nil {
		blackouts = append(blackouts, o.s.connects.of(c.ns+"/"+c.name)...)
	}
	blackout := overlap(blackouts, tr.phaseSince, now)
	if stay := now.Sub(tr.phaseSince); stay > timeout+phaseSlack+blackout {
		tr.phaseReported = true
		o.s.violation(8, "Machine %s/%s: in phase %s for %s since %s, more than its timeout %s + %s slack + %s the controllers could not act: %s",
			c.ns, machine, st.Phase, stay.Round(time.Second), tr.phaseSince.Format(timeMillis), timeout, phaseSlack, blackout.Round(time.Second), st.Message)
	}
}

// checkStart checks invariant 9: a Machine seen Pending (or without a
// record) and then started, between two samples that both fall in an
// interval in which its Cluster was out of its policy (from leaveGrace
// after it left), started while the Cluster was out.
func (o *observer) checkStart(c *soakCluster, machine string, tr *machineTrack, st upgradev1.MachineUpgradeStatus, ok bool, now time.Time) {
	if ok && st.TargetVersion != tr.target {
		// A new target: the Machine starts again from Pending.
		tr.target, tr.started = st.TargetVersion, time.Time{}
	}
	if ok && st.RebootAfter != nil && !st.RebootAfter.Time.Equal(tr.rebootAfter) {
		// A reboot asked for: the Machine starts again from Pending.
		tr.rebootAfter, tr.started = st.RebootAfter.Time, time.Time{}
	}
	if !tr.started.IsZero() {
		return
	}
	if !ok || st.Phase == upgradev1.MachinePhasePending || st.Phase == "" ||
		st.Phase == upgradev1.MachinePhaseFailed && st.StartTime == nil {
		tr.pendingSeen = now
		return
	}
	tr.started = now
	o.s.check(9)
	if c.detachedAt(tr.pendingSeen.Add(-leaveGrace), now) {
		o.s.violation(9, "Machine %s/%s started (between %s and %s, phase %s) while Cluster %s was out of its policy",
			c.ns, machine, tr.pendingSeen.Format(timeMillis), now.Format(timeMillis), st.Phase, c.name)
	}
}
