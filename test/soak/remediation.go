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
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// Invariant 11: Tollgate never lets CAPI remediate a Machine it has
// disrupted and not yet given up on, and a Machine it gave up on is
// remediated. Every Cluster's workers are watched by a real
// MachineHealthCheck whose Machines are unhealthy after mhcTimeout with
// their Node NotReady; a Machine Tollgate disrupts carries
// cluster.x-k8s.io/skip-remediation, which the MachineHealthCheck honours,
// until Tollgate completes or fails it.
//
//   - The observer sees a Machine marked for remediation (its
//     OwnerRemediated condition False, set by the MachineHealthCheck before
//     its MachineSet deletes it) while Tollgate's record of it, read before
//     and after the Machine in two samples, says it is disrupted (past its
//     pre-drain holds, cordoned or protected) and neither Completed nor
//     Failed: a violation, unless the record may hold only the intent
//     (Draining, or held before the drain) and the Machine has no
//     skip-remediation annotation: the intent is written ahead of its
//     effects, and the drain waits for them (a kill between the two, seed
//     20261129 at 79fadad).
//   - At the end of a round, a worker whose Node is NotReady and that
//     Tollgate no longer protects (a Machine it failed and released, a node
//     the soak killed) must be gone within remediationTimeout: one that
//     stays is a violation.

const (
	// mhcTimeout is how long a worker's Node is NotReady (False or
	// Unknown) before its MachineHealthCheck marks it for remediation.
	mhcTimeout = 4 * time.Second
	// remediationTimeout bounds the time from a worker's Node going
	// NotReady, without Tollgate's protection, to its Machine gone: the
	// MachineHealthCheck's timeout and requeue, the MachineSet's
	// deletion, CAPI's drain of a node that does not answer, and the
	// infrastructure provider removing the machine.
	remediationTimeout = 2 * time.Minute
)

// machineHealthCheck is the MachineHealthCheck of the Cluster's
// MachineDeployment, as a user writes one: a worker whose Node is NotReady
// for mhcTimeout is remediated (its MachineSet replaces it).
func machineHealthCheck(c *soakCluster) *clusterv1.MachineHealthCheck {
	timeout := ptr.To(int32(mhcTimeout / time.Second))
	return &clusterv1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: sandbox.WorkersName(c.name)},
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: c.name,
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineDeploymentNameLabel: sandbox.WorkersName(c.name)}},
			Checks: clusterv1.MachineHealthCheckChecks{UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: timeout},
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: timeout},
			}},
		},
	}
}

// markedForRemediation reports whether a MachineHealthCheck marked the
// Machine for remediation, and its message.
func markedForRemediation(m *clusterv1.Machine) (bool, string) {
	c := conditions.Get(m, clusterv1.MachineOwnerRemediatedCondition)
	if c == nil || c.Status != metav1.ConditionFalse {
		return false, ""
	}
	msg := c.Reason
	if hc := conditions.Get(m, clusterv1.MachineHealthCheckSucceededCondition); hc != nil {
		msg += ": " + hc.Message
	}
	return true, msg
}

// disruptedNotGivenUp reports whether a record says Tollgate disrupted the
// Machine (past its pre-drain holds: cordoned, protected from remediation,
// draining, upgrading, rebooting, verifying or held before its reboot) and
// has neither completed nor failed it.
func disruptedNotGivenUp(st upgradev1.MachineUpgradeStatus) bool {
	switch st.Phase {
	case "", upgradev1.MachinePhasePending, upgradev1.MachinePhaseCompleted, upgradev1.MachinePhaseFailed:
		return false
	case upgradev1.MachinePhaseWaitingForHold:
		return st.HoldPoint != upgradev1.HoldPointPreDrain || st.Cordoned || st.SkipRemediationSet
	}
	return true
}

// intentOnly reports whether a record that says Tollgate disrupts its
// Machine may hold only the intent of it: in Draining, or held at its
// pre-drain point, Tollgate may have written that it cordons and protects the
// Machine and not done it yet; past Draining, a drain pass made both.
func intentOnly(st upgradev1.MachineUpgradeStatus) bool {
	return st.Phase == upgradev1.MachinePhaseDraining ||
		st.Phase == upgradev1.MachinePhaseWaitingForHold && st.HoldPoint == upgradev1.HoldPointPreDrain
}

// checkRemediation checks the first half of invariant 11 on one Machine
// of a sample: marked for remediation while its record, in this sample and
// the one before, says Tollgate disrupted it and has not given up on it.
func (o *observer) checkRemediation(c *soakCluster, m *clusterv1.Machine, tr *machineTrack, st upgradev1.MachineUpgradeStatus, ok bool, t readTimes) {
	disrupted := ok && disruptedNotGivenUp(st)
	defer func() { tr.disrupted, tr.disruptedRead = disrupted, t.recordRead }()
	marked, why := markedForRemediation(m)
	if !marked || tr.remediationSeen {
		return
	}
	tr.remediationSeen = true
	o.s.check(11)
	o.s.cfg.Logf("CAPI: MachineHealthCheck marked Machine %s/%s for remediation (%s); Tollgate's record: %s", c.ns, m.Name, why, describeRecord(st, ok))
	_, skip := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]
	if disrupted && tr.disrupted && !skip && intentOnly(st) {
		// The record holds the intent to disrupt, written ahead of its
		// effects: the round that adds skip-remediation and cordons the
		// node, both before the first drain pass, has not run yet (a kill
		// or failover between them). Nothing has disrupted the node.
		o.s.cfg.Logf("CAPI: Machine %s/%s marked for remediation while its record holds Tollgate's intent to disrupt it, not yet its effects (no skip-remediation annotation; the drain waits for it)", c.ns, m.Name)
		return
	}
	if disrupted && tr.disrupted {
		o.s.violation(11, "Machine %s/%s marked for remediation by its MachineHealthCheck (seen at %s: %s) while Tollgate disrupts it: its record says so at %s and at %s (%s); skip-remediation annotation present: %v",
			c.ns, m.Name, t.machinesRead.Format(timeMillis), why, tr.disruptedRead.Format(timeMillis), t.recordRead.Format(timeMillis), describeRecord(st, ok), skip)
	}
}

// describeRecord says what a Machine's record is, for a message.
func describeRecord(st upgradev1.MachineUpgradeStatus, ok bool) string {
	if !ok {
		return "none"
	}
	return fmt.Sprintf("phase %s %s, target %s, cordoned %v, skipRemediationSet %v: %q", st.Phase, st.HoldPoint, st.TargetVersion, st.Cordoned, st.SkipRemediationSet, st.Message)
}

// unremediated lists, for the second half of invariant 11, the workers of
// the Cluster whose Node is NotReady and that Tollgate does not protect
// from remediation, with since when their Node is NotReady as far as the
// Node says.
func (s *soak) unremediated(ctx context.Context, c *soakCluster) ([]string, error) {
	machines := &clusterv1.MachineList{}
	if err := s.world.mgmt.Client.List(ctx, machines, client.InNamespace(c.ns)); err != nil {
		return nil, err
	}
	var out []string
	for i := range machines.Items {
		m := &machines.Items[i]
		_, protected := m.Annotations[clusterv1.MachineSkipRemediationAnnotation]
		if !workerOf(c, m) || protected || m.Status.NodeRef.Name == "" {
			continue
		}
		node := &corev1.Node{}
		if err := c.wl.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node); err != nil {
			continue // Gone with its Machine.
		}
		if ready(node) {
			continue
		}
		since := "?"
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				since = cond.LastTransitionTime.Format(timeMillis)
			}
		}
		marked, why := markedForRemediation(m)
		deleting := "not deleting"
		if !m.DeletionTimestamp.IsZero() {
			deleting = "deleting since " + m.DeletionTimestamp.Format(timeMillis)
		}
		out = append(out, fmt.Sprintf("Machine %s/%s: Node %s NotReady since %s, no skip-remediation; marked for remediation: %v %s; %s",
			c.ns, m.Name, node.Name, since, marked, why, deleting))
	}
	slices.Sort(out)
	return out, nil
}

// judgeRemediations checks the second half of invariant 11 at the end of a
// round: every worker Tollgate let go of with its Node NotReady is gone
// within remediationTimeout.
func (s *soak) judgeRemediations(ctx context.Context, clusters []*soakCluster) {
	deadline := time.Now().Add(remediationTimeout)
	var left []string
	for {
		left = nil
		for _, c := range clusters {
			u, err := s.unremediated(ctx, c)
			if err != nil {
				left = append(left, fmt.Sprintf("%s: %v", c.ns, err))
			}
			left = append(left, u...)
		}
		if len(left) == 0 || time.Now().After(deadline) || !sleep(ctx, time.Second) {
			break
		}
	}
	for _, l := range left {
		s.violation(11, "not remediated %s after the round's rollouts were over, although Tollgate does not protect it: %s", remediationTimeout, l)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range clusters {
		c.mu.Lock()
		for node := range c.killed {
			if _, gone := c.gone[node]; gone {
				s.report.Checks[11]++
			}
		}
		c.mu.Unlock()
	}
}
